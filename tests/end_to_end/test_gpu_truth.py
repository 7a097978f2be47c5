"""The injected-cost matrix on a real GPU, read from runs recorded there.

`tests/data/h100_truth/` holds what `tests/support/truth_fits.py` recorded on an
NVIDIA H100 (PyTorch on the borrowed `nvidia-h100-x4` machine, one GPU used;
JAX again on an `nvidia-h100-x1`, once it polled for completions in one
step in eight on a GPU; Keras 3.15.1 carried as a wheel; no TensorFlow
there) with `benchmarks/record_gpu.sh OUT truth`: each backend's facts (`<backend>.json`,
the injected costs and outside clocks) and its runs. CI has no GPU, so the
runs are read back here through the same analysis as the tab and the
report. On the GPU each step also pays the backend's fixed cost (PyTorch's
is about 5 ms on an H100), so a step's compute is compared with the same
backend's step timed from outside, not with zero.
"""

import os

import numpy as np
import pytest

from tests.support import paths
from tests.support.recorded_truth import read_recorded


DATA = os.path.join(paths.DATA, "h100_truth")
RELATIVE = 0.15
ABSOLUTE_MS = 1.0
INPUT_CASES = ("sleep_input", "python_input", "generator", "dataloader")
HOST_CASES = ("callback_before", "callback_after", "batch_begin_callback")


@pytest.fixture(scope="module", params=["jax", "torch"])
def recorded(request):
    backend = request.param
    facts, records, report_runs = read_recorded(DATA, backend)
    # Each case's training run; a case that validates has a second run.
    runs = {run["run"].split("/")[0]: run for run in report_runs if run["run"].endswith("/train")}
    records = {record.run.split("/")[0]: record for record in records
               if record.run.endswith("/train")}
    return backend, facts, records, runs


def close(measured, injected):
    return abs(measured - injected) <= max(RELATIVE * injected, ABSOLUTE_MS)


def test_the_runs_ran_on_the_gpu(recorded):
    backend, facts, _, runs = recorded
    assert facts["backend"] == backend
    for name in facts["cases"]:
        assert runs[name]["device"].startswith("GPU"), (name, runs[name]["device"])


def test_injected_input_is_data_wait_on_the_gpu(recorded):
    _, facts, _, runs = recorded
    allowance = 1.5 * facts["cases"]["compute"]["outside_step_ms"]
    wrong = []
    for name in [case for case in INPUT_CASES if case in facts["cases"]]:
        injected, run = facts["cases"][name]["data_ms"], runs[name]
        wait, compute = run["data_wait_ms"]["p50"], run["compute_ms"]["p50"]
        if not close(wait, injected) or compute > max(injected / 3, allowance):
            wrong.append((name, wait, compute))
        if run["steady_verdict"] != "input_bound":
            wrong.append((name, run["steady_verdict"]))
    assert not wrong


def test_a_users_callback_is_host_overhead_on_the_gpu(recorded):
    _, facts, _, runs = recorded
    allowance = 1.5 * facts["cases"]["compute"]["outside_step_ms"]
    for name in HOST_CASES:
        run, injected = runs[name], facts["cases"][name]["host_ms"]
        assert close(run["host_overhead_ms"]["p50"], injected), (name, run["host_overhead_ms"])
        assert run["compute_ms"]["p50"] <= max(injected / 3, allowance), name
        assert run["steady_verdict"] == "host_overhead_bound", name


def test_a_mix_on_the_gpu(recorded):
    _, facts, _, runs = recorded
    run, fact = runs["mix"], facts["cases"]["mix"]
    assert close(run["data_wait_ms"]["p50"], fact["data_ms"]), run["data_wait_ms"]
    assert close(run["host_overhead_ms"]["p50"], fact["host_ms"]), run["host_overhead_ms"]
    assert 0.33 < run["step_ms"]["p50"] / (fact["outside_step_ms"] + 12.0) < 3.0
    assert run["steady_verdict"] == "input_bound"


def test_compute_against_the_outside_clock_on_the_gpu(recorded):
    _, facts, records, runs = recorded
    run, fact = runs["compute"], facts["cases"]["compute"]
    assert 0.33 < run["step_ms"]["p50"] / fact["outside_step_ms"] < 3.0
    wall = records["compute"].aggregate["wall_ms"]
    assert wall["steps"] + wall["warmup"] <= wall["total"] <= fact["fit_s"] * 1e3


def test_the_parts_add_up_on_the_gpu(recorded):
    _, facts, records, runs = recorded
    for name in facts["cases"]:
        series = records[name].series
        parts = [series[key] for key in ("data_wait_ms", "compute_ms", "host_overhead_ms")]
        step = sum(parts)
        assert (step > 0).all(), name
        assert all((part >= 0).all() and (part <= step + 1e-9).all() for part in parts), name
        assert runs[name]["pace"] is not None
    # A sleeping input leaves the GPU idle: the training thread sets the pace.
    assert runs["sleep_input"]["pace"]["set_by"] == "training_thread"
    assert np.isfinite(runs["compute"]["compute_ms"]["p50"])


def test_python_on_the_input_s_threads_is_not_compute_on_the_gpu():
    """A `PyDataset` on four threads of the process, 20 ms of Python a
    batch, on JAX (the PyTorch runs predate the case): the GPU idles while
    the training thread waits for the GIL those threads hold, so the step's
    compute stays the model's and the verdict names the input. JAX there
    polls for completions in one step in eight."""
    facts, _, report_runs = read_recorded(DATA, "jax")
    [run] = [run for run in report_runs if run["run"] == "python_threads/train"]
    fact = facts["cases"]["python_threads"]
    assert run["compute_ms"]["p50"] < 2.0 * fact["outside_step_ms"] + 1.0, run["compute_ms"]
    assert run["steady_verdict"] == "input_bound", run["steady_verdict"]
