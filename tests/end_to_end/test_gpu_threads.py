"""Python input on the input pipeline's own threads, on a real GPU.

`tests/data/h200_threads/` holds what `tests/support/truth_fits.py` recorded
on an NVIDIA H200 (the borrowed device machine, one GPU; Keras 3.15.1
carried as a wheel; JAX and PyTorch) for three cases: `python_input` (20 ms
of Python per batch on the training thread), `python_threads` (the same
`PyDataset` on four threads of the process) and `validation_threads`
(validation fed by those threads, training by arrays). CI has no GPU, so the
runs are read back here through the same analysis as the tab and the report.

Recorded with:

    for b in jax torch; do
        python3 tests/support/truth_fits.py $b OUT/$b python_threads \\
            python_input validation_threads > OUT/$b.json
    done

The threads hold the GIL that the training thread needs to launch its step,
so the GPU idles while they run: before the launch's wait for the GIL was
metered, PyTorch's `python_threads` read `compute_bound` at 19.8 ms of
compute a step, its launch 3.6 ms outside the fit; with the wait bounded by
the other threads' time, 9.9 ms; counted whole (a CUDA launch sleeps for
nothing else), 5.4 ms against 4.6 ms outside, in the PyTorch run kept here.
"""

import os

import pytest

from tests.support import paths
from tests.support.recorded_truth import read_recorded


DATA = os.path.join(paths.DATA, "h200_threads")


@pytest.fixture(scope="module", params=["jax", "torch"])
def recorded(request):
    backend = request.param
    facts, _, runs = read_recorded(DATA, backend)
    return backend, facts, {run["run"]: run for run in runs}


def test_the_runs_ran_on_the_gpu(recorded):
    backend, facts, runs = recorded
    assert facts["backend"] == backend
    assert set(facts["cases"]) == {"python_input", "python_threads", "validation_threads"}
    for name in ("python_input", "python_threads"):
        assert runs[f"{name}/train"]["device"].startswith("GPU"), runs[f"{name}/train"]["device"]


def test_python_on_the_input_s_threads_is_input_bound_on_the_gpu(recorded):
    """The threads' 20 ms of Python a batch set the pace. On JAX the data
    wait is the largest part of the step; on PyTorch some steps' launch
    waits still read as compute (a mean of 9.9 ms in an 18.6 ms mean step,
    against a p50 of 5.4 ms), the verdict holds by the steady steps'
    shares."""
    backend, facts, runs = recorded
    run = runs["python_threads/train"]
    assert run["steady_verdict"] == "input_bound"
    assert run["step_ms"]["mean"] > 0.5 * facts["cases"]["python_threads"]["data_ms"]
    assert run["data_wait_ms"]["mean"] > run["host_overhead_ms"]["mean"]
    if backend == "jax":
        assert run["data_wait_ms"]["mean"] > run["compute_ms"]["mean"]


def test_the_launch_s_wait_for_the_gil_is_not_compute(recorded):
    """The step's compute at p50 is the model's: within 1 ms (JAX) or 50%
    (PyTorch, whose launch is Python for each kernel and is slowed by the
    threads' Python between its waits too) of the same model's step timed
    outside the fit, and under half the step."""
    backend, facts, runs = recorded
    outside = facts["cases"]["python_threads"]["outside_step_ms"]
    compute = runs["python_threads/train"]["compute_ms"]["p50"]
    assert compute < 0.5 * runs["python_threads/train"]["step_ms"]["p50"]
    if backend == "jax":
        assert compute < outside + 1.0, (compute, outside)
    else:
        assert compute < 1.5 * outside, (compute, outside)


def test_validation_s_own_threads_are_its_data_wait(recorded):
    _, _, runs = recorded
    run = runs["validation_threads/validation"]
    assert run["steady_verdict"] == "input_bound"
    assert run["host_overhead_ms"]["p50"] < 0.25 * run["step_ms"]["mean"]
