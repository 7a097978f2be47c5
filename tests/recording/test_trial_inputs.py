"""What `try_fixes` may try on each backend (`recording/trial_inputs.py`),
read from `format/backend_facts.py`: the same changes, and the same reasons
for those it does not try, as when each backend was named in place."""

import numpy as np
import pytest

from tb_devicecost.recording import trial_inputs


ARRAYS = (np.zeros((64, 4), "float32"), np.zeros((64, 1), "float32"))


def _applicable(backend, on_accelerator=False):
    return trial_inputs.applicable("arrays", ARRAYS, backend, on_accelerator, {})


def test_tensorflow_tries_a_tf_data_pipeline_and_steps_per_execution():
    found = _applicable("tensorflow")
    assert "tf.data" in found["prefetch"]
    assert {"use_multiprocessing", "steps_per_execution", "jit_compile"} <= set(found)


def test_jax_never_forks_its_worker_processes_in_a_trial():
    found = _applicable("jax")
    assert "use_multiprocessing" not in found and "prefetch" not in found
    assert {"workers", "steps_per_execution", "jit_compile"} <= set(found)
    assert "keras #20619" in trial_inputs.not_tried("use_multiprocessing", "arrays", "jax")


def test_pytorch_tries_neither_steps_per_execution_nor_jit_compile():
    found = _applicable("torch")
    assert not {"steps_per_execution", "jit_compile", "prefetch"} & set(found)
    assert "use_multiprocessing" in found
    assert "steps_per_execution" in trial_inputs.not_tried("steps_per_execution", "arrays", "torch")
    assert "torch.compile" in trial_inputs.not_tried("jit_compile", "arrays", "torch")


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_the_cpu_is_tried_only_from_an_accelerator(backend):
    assert "device" not in _applicable(backend)
    assert "device" in _applicable(backend, on_accelerator=True)
