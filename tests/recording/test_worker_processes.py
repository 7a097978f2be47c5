"""Fits that start processes: never hung, never changed, never written to by a
child (issue 33).

A `PyDataset` with `use_multiprocessing=True` hung with the callback: the
callback's look at Keras's frames (`backends/keras_loop.caller_local`) left
a reference cycle holding Keras's frames and the TensorFlow iterators in
their locals; a forked pool worker's garbage collector freed them without
TensorFlow's threads, and the worker died of SIGSEGV with a batch Keras
waited for forever. Each backend's clients run in a process of their own
(`support/process_fits.py`) under `run_backend_script`'s timeout, so a hang
fails the test instead of CI.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from tb_devicecost.reading import reader

from tests.support.scripts import run_backend_script

pytestmark = pytest.mark.slow

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "support")


@pytest.fixture(scope="module", params=["tensorflow", "jax", "torch"])
def facts(request, tmp_path_factory):
    logdir = tmp_path_factory.mktemp(f"processes_{request.param}")
    facts, records = run_backend_script("process_fits.py", request.param, logdir)
    return request.param, facts, records, logdir


def test_fits_with_worker_processes_finish_unchanged(facts):
    """`PyDataset(workers=2, use_multiprocessing=True)` for training and
    validation at `verbose` 0, 1 and 2, a pool inside `__getitem__`, and per
    backend `tf.py_function` or a `DataLoader`'s forked and spawned workers:
    the same weights and `history` with and without the callback."""
    backend, found, _, _ = facts
    expected = {"pydataset_processes", "pool_in_getitem"}
    expected |= {"tensorflow": {"tf_py_function"}, "jax": set(),
                 "torch": {"dataloader_fork", "dataloader_spawn"}}[backend]
    assert set(found["clients"]) == expected
    differs = {
        name: [part for part in ("weights", "history") if not same[part]]
        for name, same in found["clients"].items()
    }
    assert {name: parts for name, parts in differs.items() if parts} == {}


def test_a_forked_child_collects_its_garbage_and_ends_by_sigterm(facts):
    """A child forked during the fit (as a pool's worker is) collects the
    garbage it inherited without crashing (SIGSEGV before the fix: a cycle
    of ours held TensorFlow iterators), finds SIGTERM's default disposition
    (not our handler), and ends by it."""
    _, found, _, _ = facts
    children = found["forked_child"]["children"]
    assert len(children) == 2
    assert children == [{"ended": "SIGTERM", "default_sigterm": True}] * 2


def test_children_never_write_to_the_fit_s_runs(facts):
    """Pool workers stopped by SIGTERM at each epoch's end no longer write an
    `interrupted` state into the running fit's files: every run ends
    `complete`, in event files of the fit's own process only."""
    _, _, records, logdir = facts
    assert records
    for name, record in records.items():
        assert record.aggregate is not None, name
        assert record.aggregate.get("status") == "complete", (name, record.aggregate.get("status"))
    pids = {
        path.split(".")[-3]
        for folder, _, files in os.walk(logdir)
        for path in files
        if path.startswith("events.out.tfevents") and path.endswith(".devicecost")
    }
    assert len(pids) == 1, pids


def _stuck_fit(tmp_path, with_callback):
    """Starts `stuck_fit.py`, sends SIGTERM once its fit waits in C, and
    returns its exit code (`None`: still running 30 s later)."""
    marker = tmp_path / f"waiting_{with_callback}"
    command = [sys.executable, os.path.join(SUPPORT, "stuck_fit.py"), str(tmp_path / "logs"), str(marker)]
    if with_callback:
        command.append("callback")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            assert process.poll() is None, "the fit ended before it waited"
            assert time.monotonic() < deadline, "the fit never reached its wait"
            time.sleep(0.1)
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            return None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_kill_ends_a_fit_stuck_in_c_as_it_would_without_the_callback(tmp_path):
    """A TensorFlow fit waiting in its iterator's `next()` (C code, where no
    Python handler runs) ends by SIGTERM with the callback as without it
    (before: only SIGKILL ended it), and its run says it was interrupted."""
    assert _stuck_fit(tmp_path, with_callback=False) == -signal.SIGTERM
    assert _stuck_fit(tmp_path, with_callback=True) == -signal.SIGTERM
    records = {
        record.run: record for record in reader.read_runs(reader.local_provider(str(tmp_path / "logs")))
    }
    assert records["train"].aggregate["status"] == "interrupted"
