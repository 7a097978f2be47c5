"""Fixes tried on a real GPU: `try_fixes` recorded on an NVIDIA H100
(`benchmarks/record_gpu.sh OUT tried`: JAX and PyTorch, no TensorFlow
installed there), read again here: `tests/data/h100_tried/<backend>/
<scenario>/tried/<change>/train`, the scenarios of `demo/tried.py`.

The bar of issue 34: every prediction within 0.67-1.5x of what its change
measured, or no prediction with the reason; the change advised is the best
measured of those that keep the training's arithmetic and is never slower
than the baseline beyond the noise; no finding advises tf.data where
TensorFlow was not importable."""

import os

import pytest

from tb_devicecost import words
from tb_devicecost.reading import reader
from tests.support import paths

ROOT = os.path.join(paths.DATA, "h100_tried")
BACKENDS = ("jax", "torch")


def test_the_recording_is_kept():
    """Recorded on an H100 and kept: CI reads it, never skips it."""
    for backend in BACKENDS:
        assert os.path.isdir(os.path.join(ROOT, backend)), backend


def _report(backend):
    logdir = os.path.join(ROOT, backend)
    return words.build_report(reader.read_runs(reader.local_provider(logdir)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_prediction_is_within_the_bar_or_says_why_there_is_none(backend):
    report = _report(backend)
    entries = report["fixes_tried"]
    sessions = {entry["session"] for entry in entries}
    # The arrays-in-memory MLP at batch 10 and 32 and the Python-input pipeline.
    assert {os.path.basename(session) for session in sessions} >= {
        "mlp_b10", "mlp_b32", "python_input"}, sessions
    tried = {(os.path.basename(e["session"]), e["change"]) for e in entries}
    for scenario in ("mlp_b10", "mlp_b32"):
        assert {(scenario, change) for change in (
            "data_on_device", "workers", "batch_size")} <= tried, tried
        if backend == "jax":
            assert (scenario, "steps_per_execution") in tried
        else:
            # Keras 3.15 has no steps_per_execution on PyTorch.
            assert (scenario, "steps_per_execution") not in tried
    for entry in entries:
        assert entry["measured"] is not None and entry["noise"] is not None, entry
        if entry["predicted"] is None:
            assert entry["predicted_basis"], entry
            continue
        ratio = entry["measured"] / entry["predicted"]
        assert 0.67 <= ratio <= 1.5, (entry["session"], entry["change"], entry["predicted"],
                                      entry["measured"], entry["predicted_basis"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_advised_change_is_the_best_measured_that_keeps_the_arithmetic(backend):
    report = _report(backend)
    by_session = {}
    for entry in report["fixes_tried"]:
        by_session.setdefault(entry["session"], []).append(entry)
    for session, entries in by_session.items():
        candidates = [e for e in entries if e["keeps_arithmetic"] and not e["ceiling"]
                      and e["measured"] is not None]
        advised = [e for e in entries if e["advised"]]
        assert len(advised) <= 1, session
        if advised:
            [best] = advised
            assert best["measured"] == max(e["measured"] for e in candidates), session
            # Never slower than the baseline beyond the noise: it beat it.
            assert best["measured"] > 1.0 + best["noise"], (session, best)
        else:
            assert all(e["measured"] <= 1.0 + e["noise"] for e in candidates), session
        base = next(run for run in report["runs"] if run["run"] == entries[0]["baseline"])
        assert (base["advised"] or {}).get("change") == (advised[0]["change"] if advised else None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_finding_advises_tf_data_without_tensorflow(backend):
    logdir = os.path.join(ROOT, backend)
    records = reader.read_runs(reader.local_provider(logdir))
    report = words.build_report(records)
    importable = {record.run: (record.info or {}).get("importable") or {} for record in records}
    for run in report["runs"]:
        if importable[run["run"]].get("tensorflow") is False:
            for finding in run["findings"]:
                assert "tf.data" not in finding["fix"], (run["run"], finding["id"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_python_input_pipeline_tried_worker_threads_and_processes_or_says_why(backend):
    """Issue 34: the Python-input PyDataset has `workers` (threads) tried on
    both backends, `use_multiprocessing` on PyTorch; on JAX worker
    processes are advised, never tried (a fork of a process running JAX
    can deadlock), and the summary `python -m demo.tried` wrote says so."""
    import json

    report = _report(backend)
    tried = {entry["change"] for entry in report["fixes_tried"]
             if entry["session"].startswith("python_input")}
    assert "workers" in tried
    with open(os.path.join(ROOT, backend, "python_input.json"), encoding="utf-8") as handle:
        summary = json.load(handle)["python_input"]
    if backend == "torch":
        assert "use_multiprocessing" in tried
    else:
        assert "use_multiprocessing" not in tried
        assert "keras #20619" in summary["failed"]["use_multiprocessing"]
