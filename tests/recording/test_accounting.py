"""StepAccounting: step accounting under a fake clock, bounded memory, failures."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

from tb_devicecost.format import document_limits
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting

from tests.support import paths
from tests.support.clock import FakeClock


def record_steps(recorder, clock, steps):
    """Drives the low-level API with (data_wait, compute, host) ms triples."""
    for data_wait, compute, host in steps:
        recorder.begin_step()
        clock.advance(data_wait)
        recorder.end_fetch(batch_size=32)
        clock.advance(compute)
        recorder.end_compute()
        clock.advance(host)
    recorder.boundary()


def read_back(run_dir, logdir):
    records = reader.read_runs(reader.local_provider(logdir))
    return {record.run: record for record in records}


def test_a_write_due_as_an_epoch_ends_is_taken_from_no_later_step(tmp_path):
    """A write falls due at the step an epoch's end closes, and runs there,
    between steps: the next epoch's steps start where they start, and
    nothing is kept out of them. (It was: its start moved by the write's
    time, and so did the callback's own time, below zero in a real fit.)"""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    flush = recorder.flush

    def slow_flush(*args, **kwargs):
        clock.advance(50.0)  # A write of 50 ms.
        return flush(*args, **kwargs)

    recorder.flush = slow_flush
    recorder.begin_session({"backend": "test"})
    record_steps(recorder, clock, [(3.0, 10.0, 1.0)] * 3)
    recorder.write_due_s = clock() - 0.020  # Due since the epoch's last step began.
    recorder.begin_step()
    clock.advance(3.0)
    recorder.end_fetch(batch_size=32)
    clock.advance(10.0)
    recorder.end_compute()
    clock.advance(1.0)
    recorder.boundary()  # The epoch ends: the step closes, the write runs.
    # The next epoch: its steps' starts are their own, none keeps time out.
    for data_wait in (4.0, 5.0):
        assert recorder.begin_step() == 0.0
        clock.advance(data_wait)
        recorder.end_fetch(batch_size=32)
        clock.advance(10.0)
        recorder.end_compute()
    recorder.boundary()
    recorder.end_session()

    series = read_back(tmp_path / "run", tmp_path)["run"].series
    np.testing.assert_allclose(series["data_wait_ms"][-3:], [3.0, 4.0, 5.0], rtol=1e-5)


def test_components_add_up_to_wall_time_and_read_back_exactly(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session({"backend": "test"})
    steps = [(500.0, 40.0, 2.0)] + [(3.0, 10.0, 1.0)] * 9 + [(5.0, 12.0, 1.5)] * 10
    record_steps(recorder, clock, steps)
    recorder.end_session()

    record = read_back(tmp_path / "run", tmp_path)["run"]
    series = record.series
    np.testing.assert_array_equal(series["step"], np.arange(len(steps)))
    expected = np.array(steps)
    np.testing.assert_allclose(series["data_wait_ms"], expected[:, 0], rtol=1e-5)
    np.testing.assert_allclose(series["compute_ms"], expected[:, 1], rtol=1e-5)
    np.testing.assert_allclose(series["host_overhead_ms"], expected[:, 2], rtol=1e-5)
    np.testing.assert_array_equal(series["batch_size"], np.full(len(steps), 32))

    aggregate = record.aggregate
    steady = expected[1:]
    assert aggregate["status"] == "complete"
    assert aggregate["steps"] == len(steps)
    assert aggregate["steady_steps"] == len(steps) - 1
    assert aggregate["warmup"] == {
        "count": 1,
        "sum_ms": pytest.approx(542.0),
        "max_ms": pytest.approx(542.0),
        "steps": [0],
    }
    components = aggregate["components"]
    for column, name in enumerate(metadata.COMPONENTS):
        assert components[name]["sum_ms"] == pytest.approx(steady[:, column].sum())
    assert components["step"]["sum_ms"] == pytest.approx(steady.sum())
    assert aggregate["samples"] == 32 * len(steady)
    assert aggregate["samples_per_s"] == pytest.approx(
        32 * len(steady) / (steady.sum() / 1e3)
    )
    assert record.info["backend"] == "test"


def test_executions_of_several_steps_are_written_as_their_steps(tmp_path):
    """Records closed by `begin_step` are worked out together at the write:
    an execution of 4 steps (40 ms fetch, 80 ms compute, 4 ms host) is 4
    rows of a quarter each, in order after the one-step record before it;
    one that ran no step (the end of the data) has no row and leaves the
    warm-up flag to the next; time we excluded comes out of host overhead."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session()
    # (data wait, compute, host, steps, excluded) ms.
    plan = [(1.0, 2.0, 3.0, 0, 0.0), (1.0, 2.0, 3.0, 1, 0.0), (40.0, 80.0, 4.0, 4, 0.0),
            (2.0, 4.0, 6.0, 1, 1.5)]
    for data_wait, compute, host, steps, excluded in plan:
        recorder.begin_step()
        recorder.set_steps(steps)
        clock.advance(data_wait)
        recorder.end_fetch(batch_size=32)
        clock.advance(compute)
        recorder.end_compute()
        recorder.exclude(excluded / 1e3)
        clock.advance(host)
    recorder.boundary()
    recorder.end_session()
    series = read_back(tmp_path / "run", tmp_path)["run"].series
    np.testing.assert_array_equal(series["step"], np.arange(6))
    np.testing.assert_allclose(series["data_wait_ms"], [1, 10, 10, 10, 10, 2], rtol=1e-6)
    np.testing.assert_allclose(series["compute_ms"], [2, 20, 20, 20, 20, 4], rtol=1e-6)
    np.testing.assert_allclose(series["host_overhead_ms"], [3, 1, 1, 1, 1, 4.5], rtol=1e-6)
    # The execution's rows start a quarter of its time apart.
    starts = np.diff(series["wall_time"][1:5]) * 1e3
    np.testing.assert_allclose(starts, 31.0, rtol=1e-4)
    np.testing.assert_array_equal(series["warmup"], [1, 0, 0, 0, 0, 0])


def test_percentiles_stay_within_one_percent_of_numpy(tmp_path):
    rng = np.random.default_rng(0)
    compute = rng.lognormal(mean=1.0, sigma=0.6, size=5000)
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session()
    record_steps(recorder, clock, [(0.0, 1.0, 0.0)] + [(0.5, c, 0.1) for c in compute])
    recorder.end_session()
    summary = recorder.aggregate()["components"]["compute"]
    for q in (50, 90, 99):
        # The order statistic the recorder estimates: the ceil(q * n)-th value.
        exact = np.percentile(compute, q, method="inverted_cdf")
        assert summary[f"p{q}_ms"] == pytest.approx(exact, rel=0.0101)


def test_memory_is_bounded_by_flush_steps(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=64, clock=clock)
    recorder.begin_session()
    largest = 0
    for _ in range(3000):
        recorder.begin_step()
        clock.advance(1.0)
        recorder.end_fetch()
        clock.advance(2.0)
        recorder.end_compute()
        largest = max(largest, len(recorder._pending))  # Steps not written.
    recorder.end_session()
    assert largest <= 64
    assert recorder.aggregate()["steps"] == 3000


def test_an_epoch_end_writes_at_most_once_every_few_seconds(tmp_path):
    """`flush_due`, at an epoch's end: one less than `FLUSH_EVERY_S` after
    the last write writes nothing; a step that ends `FLUSH_EVERY_S` after
    it writes the steps so far, mid-epoch; the fit's end always writes."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session()

    def epoch(steps):
        record_steps(recorder, clock, [(1.0, 2.0, 0.5)] * steps)
        recorder.flush_due()
        found = read_back(tmp_path / "run", str(tmp_path)).get("run")
        return 0 if found is None or found.aggregate is None else found.aggregate["steps"]

    assert epoch(10) == 0  # 35 ms after the session began: not due.
    clock.advance(accounting.FLUSH_EVERY_S * 1e3)
    # The epoch's first step ends past the due time: it writes the 11
    # steps so far; the epoch's end, 31.5 ms later, does not.
    assert epoch(10) == 11
    assert epoch(10) == 11
    clock.advance(accounting.FLUSH_EVERY_S * 1e3)
    assert epoch(10) == 31
    record_steps(recorder, clock, [(1.0, 2.0, 0.5)] * 10)
    recorder.end_session()
    aggregate = read_back(tmp_path / "run", str(tmp_path))["run"].aggregate
    assert aggregate["steps"] == 50 and aggregate["closed"] is True


def test_the_first_aggregate_comes_within_the_first_second_of_a_fit(tmp_path):
    """A fit that dies in its first epoch (kill -9, before any epoch end)
    leaves an aggregate that says it was not closed: written by the first
    step that ends `FIRST_WRITE_S` into the session, then every
    `FLUSH_EVERY_S`; the identity of the fit is in it and in the run info."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session({"backend": "test"})
    # 300 steps of 3.5 ms: past the first second at step 286.
    record_steps(recorder, clock, [(1.0, 2.0, 0.5)] * 300)
    found = read_back(tmp_path / "run", str(tmp_path))["run"]
    assert found.aggregate is not None
    assert found.aggregate["status"] == "running" and found.aggregate["closed"] is False
    assert 280 <= found.aggregate["steps"] <= 300
    assert found.aggregate["fit_id"] == found.info["fit_id"]
    assert found.aggregate["recording_id"] == found.info["recording_id"]
    assert len(found.info["fit_id"]) == 16 and found.info["fit_first_step"] == 0
    # The write's time is measurement, kept out of the steps: each still
    # reads its 3.5 ms.
    assert found.series["host_overhead_ms"].max() == pytest.approx(0.5)
    recorder.begin_session()
    assert read_back(tmp_path / "run", str(tmp_path))["run"].info["fit_id"] != found.info["fit_id"]


def test_spikes_are_counted_against_the_running_median(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=16, clock=clock)
    recorder.begin_session()
    steps = [(1.0, 2.0, 0.1)] * 40
    steps[20] = (1.0, 2.0 * 25, 0.1)  # a retrace-sized step
    steps[33] = (1.0, 2.0 * 11, 0.1)
    record_steps(recorder, clock, [(0.0, 300.0, 0.0)] + steps)
    recorder.end_session()
    spikes = recorder.aggregate()["spikes"]
    assert spikes["count"] == 2
    assert spikes["steps"] == [21, 34]


def test_each_session_starts_with_a_warmup_step(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for _ in range(2):
        recorder.begin_session()
        record_steps(recorder, clock, [(0.0, 200.0, 0.0)] + [(1.0, 1.0, 1.0)] * 5)
    recorder.end_session()
    aggregate = recorder.aggregate()
    assert aggregate["warmup"]["steps"] == [0, 6]
    assert aggregate["steady_steps"] == 10
    assert aggregate["sessions"] == 2


def test_a_failing_writer_warns_once_and_switches_recording_off(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=4, clock=clock)
    recorder.begin_session()

    def broken(rows):
        raise OSError("disk full")

    recorder._writer.write_steps = broken
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 20)
        recorder.end_session()
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert len(messages) == 1
    assert "OSError: disk full" in messages[0]
    assert not recorder.enabled


def test_a_recorder_that_saw_nothing_writes_no_file(tmp_path):
    recorder = accounting.StepAccounting(tmp_path / "unused")
    recorder.end_session()
    assert not (tmp_path / "unused").exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"run_dir": ""}, "`run_dir` must be a non-empty path"),
        ({"run_dir": 3}, "Received: run_dir=3"),
        ({"run_dir": "x", "flush_steps": 0}, "Received: flush_steps=0"),
        ({"run_dir": "x", "flush_steps": True}, "`flush_steps` must be a positive"),
    ],
)
def test_invalid_arguments_say_what_was_received(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        accounting.StepAccounting(**kwargs)


def test_documents_carry_the_schema_version(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session({"backend": "x"})
    recorder.write_placement({"ops": {"CPU:0": 3}})
    record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 3)
    recorder.end_session()
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.placement == {"ops": {"CPU:0": 3}, "schema": metadata.SCHEMA_VERSION}
    assert json.loads(json.dumps(record.aggregate)) == record.aggregate


def test_files_of_one_run_sort_in_the_order_they_were_written(tmp_path):
    """TensorBoard reads a run's event files in name order; a later file
    that sorted first would make the older data look newest."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for session in range(12):  # past 9 -> 10, where unpadded names misorder
        recorder.begin_session()
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 2)
        recorder.end_session()
    names = sorted(os.listdir(tmp_path / "run"))
    assert len(names) == 12
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.aggregate["sessions"] == 12
    assert record.aggregate["steps"] == 24


def test_the_warmup_flag_is_written_per_step(tmp_path):
    """Readers take warm-up from the data, never from "step 0 is warm-up"."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for _ in range(2):  # two fits: each starts with a warm-up step
        recorder.begin_session()
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 3)
    recorder.end_session()
    record = read_back(tmp_path / "run", tmp_path)["run"]
    np.testing.assert_array_equal(record.series["warmup"], [1, 0, 0, 1, 0, 0])


# Issue 16: failures, signals and large documents.


def test_one_failure_handler_for_recorders_that_share_an_owner(tmp_path):
    """With `on_failure` set (the callback sets it on its train, validation
    and evaluation recorders), a recorder does not warn itself."""
    calls = []
    clock = FakeClock()
    recorders = [accounting.StepAccounting(tmp_path / name, flush_steps=2, clock=clock)
                 for name in ("train", "validation")]
    for recorder in recorders:
        recorder.on_failure = calls.append
        recorder.begin_session()
        recorder._writer.write_steps = lambda rows: (_ for _ in ()).throw(OSError("disk full"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_steps(recorders[0], clock, [(1.0, 1.0, 1.0)] * 4)
    assert [str(error) for error in calls] == ["disk full"]
    assert not [w for w in caught if w.category is RuntimeWarning]


def test_a_failing_log_dir_warns_once_per_callback_and_stops_every_run(tmp_path):
    """`log_dir` is a file: train and validation both fail; one warning."""
    import keras

    import tb_devicecost

    log_dir = tmp_path / "a_file"
    log_dir.write_text("not a directory")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.zeros((64, 4), "float32"), np.zeros((64, 1), "float32")
    callback = tb_devicecost.DeviceCostCallback(str(log_dir))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x, y),
                  callbacks=[callback])
    ours = [str(w.message) for w in caught if "stopped recording" in str(w.message)]
    assert len(ours) == 1, ours
    assert ours[0].startswith("DeviceCostCallback stopped recording")
    assert not callback._train.enabled and not callback._validation.enabled


class FullDisk:
    """TensorBoard's gfile over a disk that holds `capacity` bytes: a write
    past it writes what fits, then fails as a full disk does."""

    def __init__(self, directory, capacity):
        self.directory, self.capacity = str(directory), capacity

    def used(self):
        return sum(os.path.getsize(os.path.join(root, name))
                   for root, _, names in os.walk(self.directory) for name in names)

    def makedirs(self, path):
        os.makedirs(path, exist_ok=True)

    def GFile(self, path, mode):  # pylint: disable=invalid-name
        disk = self

        class File:
            def __init__(self):
                open(path, "wb").close()

            def write(self, data):
                room = max(0, disk.capacity - disk.used())
                with open(path, "ab") as handle:
                    handle.write(data[:room])
                if len(data) > room:
                    import errno

                    raise OSError(errno.ENOSPC, "No space left on device")

            def flush(self):
                pass

            def close(self):
                pass

        return File()


def test_after_a_full_disk_the_run_says_it_was_interrupted_and_why(tmp_path, monkeypatch):
    from tb_devicecost.format import writer as writer_module

    disk = FullDisk(tmp_path, capacity=12_000)
    def full_disk_file(run_dir, path):
        disk.makedirs(run_dir)
        return disk.GFile(path, "wb")

    monkeypatch.setattr(writer_module, "_open", full_disk_file)
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=256, clock=clock)
    recorder.begin_session({"backend": "test"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_steps(recorder, clock, [(1.0, 2.0, 0.5)] * 1000)
        recorder.end_session()  # The fit finished.
    assert len([w for w in caught if w.category is RuntimeWarning]) == 1
    monkeypatch.undo()
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.aggregate["status"] == "interrupted"
    assert "No space left on device" in record.aggregate["error"]
    # The aggregate covers the steps recorded until the disk filled.
    assert 64 <= record.aggregate["steps"] < 1000
    from tb_devicecost import words

    [run] = words.build_report([record])["runs"]
    assert run["status"] == "interrupted"
    assert any("Recording stopped before the fit ended" in p for p in run["problems"])


SIGTERM_SCRIPT = """
import os, signal, sys, time
sys.path.insert(0, {repo!r})
from tests.support.clock import FakeClock
from tb_devicecost.recording import accounting
{handler}
clock = FakeClock()
recorder = accounting.StepAccounting({run_dir!r}, flush_steps=256, clock=clock)
recorder.begin_session({{"backend": "test"}})
for step in range(1000):
    recorder.begin_step(); clock.advance(1.0)
    recorder.end_fetch(batch_size=8); clock.advance(2.0)
    recorder.end_compute(); clock.advance(0.5)
    if step == 300:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
print("not stopped")
recorder.end_session()
"""


def run_until_sigterm(tmp_path, handler=""):
    script = SIGTERM_SCRIPT.format(repo=paths.REPO,
                                   run_dir=str(tmp_path / "run"), handler=handler)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)


def test_sigterm_flushes_and_marks_the_run_interrupted_then_ends_the_process(tmp_path):
    completed = run_until_sigterm(tmp_path)
    # The default disposition still applies: the process ends by the signal.
    assert completed.returncode == -signal.SIGTERM, completed.stderr
    assert "not stopped" not in completed.stdout
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.aggregate["status"] == "interrupted"
    # Steps 0..300 began; 300 is still open: the 300 before it, none lost
    # in the buffer (256 were flushed, 44 waited for the next flush).
    assert record.aggregate["steps"] == 300
    assert len(record.series["step"]) == 300


def test_sigterm_goes_on_to_the_users_own_handler(tmp_path):
    handler = (
        "def mine(signum, frame):\n"
        "    print('user handler', signum, flush=True)\n"
        "    sys.exit(3)\n"
        "signal.signal(signal.SIGTERM, mine)\n"
    )
    completed = run_until_sigterm(tmp_path, handler)
    assert completed.returncode == 3, completed.stderr
    assert f"user handler {int(signal.SIGTERM)}" in completed.stdout
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.aggregate["status"] in ("interrupted",)
    assert record.aggregate["steps"] >= 300


@pytest.mark.slow
def test_sigterm_during_a_real_fit_is_recorded_as_an_interruption(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal
        import keras, numpy as np
        import tb_devicecost

        class Terminate(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if batch == 40:
                    os.kill(os.getpid(), signal.SIGTERM)

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x = np.zeros((16 * 500, 8), "float32"); y = np.zeros((16 * 500, 1), "float32")
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, callbacks=[
            tb_devicecost.DeviceCostCallback({str(tmp_path / "fit")!r}), Terminate()])
        print("not stopped")
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow"),
    )
    assert completed.returncode == -signal.SIGTERM, completed.stderr[-2000:]
    assert "not stopped" not in completed.stdout
    record = read_back(tmp_path / "fit", tmp_path)["fit/train"]
    assert record.aggregate["status"] == "interrupted"
    assert 40 <= record.aggregate["steps"] < 500
    assert len(record.series["step"]) == record.aggregate["steps"]


def test_documents_are_bounded_and_cost_the_loop_little(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session()
    record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 3)
    # About 5 MB of JSON in small objects, a long string, a long list.
    windows = [{"start_step": index, "steps": [
        {"step": step, "step_ms": 1.5, "input_wait_ms": 0.25, "compute_ms": 1.0}
        for step in range(2000)]} for index in range(40)]
    started = time.perf_counter()
    recorder.write_document(metadata.TAG_TRACE, {"windows": windows, "note": "x" * 3_000_000})
    recorder.write_document(metadata.TAG_PLACEMENT, {"blob": "y" * 1_000_000})
    elapsed = time.perf_counter() - started
    recorder.end_session()
    assert elapsed < 1.0, elapsed
    record = read_back(tmp_path / "run", tmp_path)["run"]
    trace = record.trace
    assert trace["truncated"] is True
    assert len(metadata.encode_json(trace)) <= document_limits.MAX_DOCUMENT_BYTES
    assert len(trace["note"]) <= document_limits.MAX_DOCUMENT_STRING + 1
    # The newest items are the ones kept.
    assert trace["windows"][-1]["start_step"] == 39
    assert trace["windows"][-1]["steps"][-1]["step"] == 1999
    assert len(record.placement["blob"]) <= document_limits.MAX_DOCUMENT_STRING + 1
    # A document within the bounds is written as it is.
    assert document_limits.bounded_document({"a": [1] * 10}) == {"a": [1] * 10}


@pytest.mark.parametrize("document", [
    {"a": [1] * 10, "b": "x" * 100},
    {"a": [1] * (document_limits.MAX_DOCUMENT_ITEMS + 1)},  # the shortest list over the bounds
    {"a": [1] * document_limits.MAX_DOCUMENT_ITEMS},
    {"s": "x" * (document_limits.MAX_DOCUMENT_STRING + 1)},
    {"s": "x" * document_limits.MAX_DOCUMENT_STRING, "n": None},
])
def test_a_short_document_is_encoded_once_and_written_as_the_walk_would(document):
    """`bounded_json` skips the walk for a document too short to hold
    anything over the bounds; what it writes is what the walk gives."""
    assert document_limits.bounded_json(document) == metadata.encode_json(
        document_limits.bounded_document(document))
