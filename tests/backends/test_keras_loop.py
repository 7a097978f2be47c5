"""The loop clock's stand-ins for Keras's batch hooks call every callback
whose hook does something, and leave Keras's no-ops out
(`tb_devicecost/backends/keras_loop.py`)."""

import keras
import numpy as np

import tb_devicecost
from demo.scenarios import mlp
from tb_devicecost.backends import keras_loop


class _Legacy(keras.callbacks.Callback):
    """Only Keras 2's aliases, which `Callback.on_train_batch_*` call."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_batch_begin(self, batch, logs=None):
        self.seen.append(("begin", batch))

    def on_batch_end(self, batch, logs=None):
        self.seen.append(("end", batch, type(logs["loss"]) is float))


class _TestEndOnly(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_test_batch_end(self, batch, logs=None):
        self.seen.append(batch)


class _DuckTyped:
    """Not a Keras callback: its hooks carry no mark of Keras's no-ops."""

    def on_train_batch_begin(self, batch, logs=None):
        pass


class _Marked(keras.callbacks.Callback):
    """A hook replaced on the instance: called, whatever its class has."""


def test_only_callbacks_with_a_hook_of_their_own_are_called():
    ours, history, plain = object(), keras.callbacks.History(), keras.callbacks.Callback()
    legacy, test_end, duck = _Legacy(), _TestEndOnly(), _DuckTyped()
    patched = _Marked()
    patched.on_train_batch_begin = lambda batch, logs=None: None
    listed = [ours, history, plain, legacy, test_end, duck, patched]
    train_begin = keras_loop._HOOKS["train", "begin"]  # pylint: disable=protected-access
    assert keras_loop.hooked(listed, train_begin, ours) == (legacy, duck, patched)
    train_end = keras_loop._HOOKS["train", "end"]  # pylint: disable=protected-access
    # `duck` has no batch-end hook: kept, and Keras's own call would fail as
    # this one does.
    assert keras_loop.hooked(listed, train_end, ours) == (legacy, duck)
    test_end_names = keras_loop._HOOKS["test", "end"]  # pylint: disable=protected-access
    assert keras_loop.hooked(listed, test_end_names, ours) == (test_end, duck)
    # `ProgbarLogger` draws at each batch's end: called.
    progress = keras.callbacks.ProgbarLogger()
    assert keras_loop.hooked([progress], train_end, ours) == (progress,)
    # A `LambdaCallback` sets the hooks it is given on the instance.
    given = keras.callbacks.LambdaCallback(on_train_batch_begin=lambda batch, logs: None)
    bare = keras.callbacks.LambdaCallback()
    assert keras_loop.hooked([given, bare], train_begin, ours) == (given,)
    assert keras_loop.hooked([given, bare], train_end, ours) == ()


def test_legacy_and_test_only_hooks_still_run_beside_ours(tmp_path):
    """A fit of 10 steps with 3 validation steps: the aliases get every
    training batch, with Python numbers at its end, and the validation-only
    hook every validation batch, as in a fit without our callback."""
    rng = np.random.default_rng(0)
    x, y = rng.random((416, 100), dtype=np.float32), rng.integers(0, 10, 416)
    legacy, test_end = _Legacy(), _TestEndOnly()
    model = mlp()
    model.fit(x[:320], y[:320], batch_size=32, validation_data=(x[320:], y[320:]), epochs=1,
              verbose=0, callbacks=[legacy, tb_devicecost.DeviceCostCallback(tmp_path), test_end])
    expected = []
    for batch in range(10):
        expected += [("begin", batch), ("end", batch, True)]
    assert legacy.seen == expected
    assert test_end.seen == [0, 1, 2]
