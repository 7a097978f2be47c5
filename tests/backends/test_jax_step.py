"""The usual JAX step calls Keras's own step on the batch it fetched.

Keras's JAX `train_function` for one step an execution is
`iterator_step(state, iterator)`, returning `step_function(state,
next(iterator))` (`JAXTrainer._make_function`). The callback's lean lane
fetches the batch itself and calls that step on it
(`keras_loop.keras_step_of`), without the frame, the one-batch iterator
and the `next()` around it. These
tests build the functions with Keras's own `_make_function`; the same
weights and `history` with and without the callback in real fits are in
`test_backends.py` and the same-seed tests.
"""

import types

from keras.src.backend.jax.trainer import JAXTrainer

from tb_devicecost.backends.keras_loop import keras_step_of


def _keras_function(steps_per_execution, step):
    trainer = types.SimpleNamespace(
        steps_per_execution=steps_per_execution, run_eagerly=False, jit_compile=True)
    return JAXTrainer._make_function(trainer, step)


def _step(state, data):
    return {"loss": data * 2}, state + 1


def test_the_step_found_gives_what_keras_s_function_gives_on_one_batch():
    function = _keras_function(1, _step)
    found = keras_step_of(function)
    assert found is _step
    assert found(10, 3) == function(10, iter([3])) == ({"loss": 6}, 11)


def test_several_steps_an_execution_keep_keras_s_function():
    """Keras's function then fetches further batches itself: no step is
    taken out of it, and the callback calls it with an iterator."""
    assert keras_step_of(_keras_function(2, _step)) is None


def test_other_functions_are_called_as_they_are():
    def wrapper(state, iterator):
        return _step(state, next(iterator))

    offset = 1

    def other_closure(state, iterator):
        return _step(state + offset, next(iterator))

    assert keras_step_of(wrapper) is None  # No closure.
    assert keras_step_of(other_closure) is None  # Another name in it.
    assert keras_step_of(len) is None  # No Python code.
