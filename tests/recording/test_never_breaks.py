"""A failure of ours inside the step function never breaks training.

`failing_fits.py` makes our own code raise where it runs inside the timed
step function (on JAX inside Keras's call, through the timed iterator, and
before it, in the usual step's own poll; on JAX and PyTorch after it; on
Keras's worker thread), each backend in a process of its own: the fit
goes on to the end with the same weights and `history` as without the
callback, and the callback says once that it stopped recording. It stops
on the training thread, never on the worker while a step is being recorded.
"""

import pytest

from tests.support.scripts import run_backend_script


pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_failure_of_ours_inside_the_step_switches_the_callback_off(backend, tmp_path):
    facts, _ = run_backend_script("failing_fits.py", backend, tmp_path)
    assert facts["backend"] == backend
    for name, case in facts["cases"].items():
        assert case["epochs"] == 2, name
        assert case["same_weights"] and case["same_history"], name
        if name in ("poll", "usual_poll", "dispatched") and backend == "torch":
            continue  # PyTorch's steps are timed without polls, each its usual row.
        assert case["stopped_on_training_thread"], name
        assert len(case["warnings"]) == 1, (name, case["warnings"])
        assert "injected fault" in case["warnings"][0]
        assert "Training goes on unaffected" in case["warnings"][0]
