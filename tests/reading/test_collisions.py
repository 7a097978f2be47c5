"""Fits sharing one run directory: each said, however short (issue 35)."""

import os
import time

from tb_devicecost import words
from tb_devicecost.format import writer as writer_module
from tb_devicecost.reading import collisions
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting


def steps(recorder, count, batch):
    for _ in range(count):
        recorder.begin_step()
        recorder.end_fetch(batch_size=batch)
        recorder.end_compute()
    recorder.boundary()


def within_one_second():
    """Waits for the start of a second: what follows in 0.5 s shares its
    whole second, which the event files' names alone cannot tell apart."""
    while time.time() % 1.0 > 0.3:
        time.sleep(0.01)


def read(logdir):
    scan = reader.scan_logdir(str(logdir))
    records, _ = reader.read_logdir(reader.local_provider(str(logdir), scan), scan)
    return {record.run: record for record in records}


def test_two_tiny_fits_at_once_within_one_second_are_said(tmp_path):
    # Item 3: two recordings of 3 steps, open at the same time and all
    # within one second (the whole seconds of the files' names are equal):
    # the header's exact time tells them apart.
    run_dir = tmp_path / "logs" / "same" / "train"
    within_one_second()
    first = accounting.StepAccounting(run_dir)
    second = accounting.StepAccounting(run_dir)
    first.begin_session({"model": "a"})
    second.begin_session({"model": "b"})
    steps(first, 3, 8)
    steps(second, 4, 16)
    first.end_session()
    second.end_session()
    problems = read(tmp_path / "logs")["same/train"].problems
    assert any("at once" in problem for problem in problems), problems
    [said] = [problem for problem in problems if "This run holds 2 fits" in problem]
    assert "3 steps, batch 8" in said and "4 steps, batch 16" in said, said


def test_a_file_opened_across_a_second_keeps_its_exact_time(tmp_path, monkeypatch):
    """Opening an event file can take long enough (a busy disk) to cross
    into the next second: its header still carries the name's time, read
    once, so the collision check keeps it exact (a header of another second
    than its name is not, and two tiny fits at once then read as one after
    another: seen once in a full suite on a busy machine)."""
    clock = iter([1_700_000_000.9999, 1_700_000_001.5])
    monkeypatch.setattr(writer_module.time, "time", lambda: next(clock, 1_700_000_002.0))
    summary = writer_module.SummaryWriter(str(tmp_path / "run"))
    summary.write_event(writer_module.event_pb2.Event(step=0))
    summary.close()
    [name] = os.listdir(tmp_path / "run")
    assert ".1700000000." in name
    [file] = collisions._files([str(tmp_path / "run" / name)])
    assert file.exact and file.opened == 1_700_000_000.9999


def test_a_rerun_in_one_process_is_a_fit_of_its_own(tmp_path):
    # Item 1: a new callback on the same log_dir (a notebook cell run
    # again): its steps start at 0 again; both fits are said, one after
    # another, never at once, and the report carries it.
    run_dir = tmp_path / "logs" / "same" / "train"
    for count, batch in ((30, 32), (10, 64)):
        recorder = accounting.StepAccounting(run_dir)
        recorder.begin_session({"model": "m"})
        steps(recorder, count, batch)
        recorder.end_session()
        time.sleep(0.05)
    records = read(tmp_path / "logs")
    problems = records["same/train"].problems
    assert not [problem for problem in problems if "at once" in problem], problems
    [said] = [problem for problem in problems if "This run holds 2 fits" in problem]
    assert "one after another" in said
    assert "30 steps, batch 32" in said and "10 steps, batch 64" in said, said
    assert "its figures are fit 2's" in said
    [run] = words.build_report(list(records.values()))["runs"]
    assert said in run["problems"]


def test_one_recording_over_several_fits_is_one_fit(tmp_path):
    # One callback fitted twice: one global step, one cumulative aggregate
    # (its sessions): nothing to say.
    run_dir = tmp_path / "logs" / "one" / "train"
    recorder = accounting.StepAccounting(run_dir)
    for _ in range(2):
        recorder.begin_session({"model": "m"})
        steps(recorder, 5, 8)
        recorder.end_session()
        time.sleep(0.05)
    paths = sorted(str(path) for path in run_dir.iterdir())
    assert len(paths) == 2
    assert collisions.collided(paths) == []
    record = read(tmp_path / "logs")["one/train"]
    assert record.aggregate["sessions"] == 2 and record.aggregate["steps"] == 10


def test_a_file_opened_after_a_failed_write_is_the_same_fit(tmp_path, monkeypatch):
    # A full disk: the write that failed is cut off, and the last aggregate
    # goes into a file of its own, which starts with no run info. It is the
    # same recording (its aggregate carries the identity), not a second fit.
    import errno

    from tb_devicecost.format import writer

    run_dir = tmp_path / "logs" / "full" / "train"
    recorder = accounting.StepAccounting(run_dir, flush_steps=8)
    recorder.on_failure = lambda error: None
    recorder.begin_session({"model": "m"})
    steps(recorder, 10, 8)
    real = writer.SummaryWriter._write
    failed = []

    def full(self, payloads):
        if failed:
            return real(self, payloads)
        failed.append(True)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.SummaryWriter, "_write", full)
    steps(recorder, 10, 8)
    paths = sorted(str(path) for path in run_dir.iterdir())
    assert len(paths) == 2
    assert collisions.collided(paths) == []
    assert read(tmp_path / "logs")["full/train"].aggregate["error"].startswith("OSError")
