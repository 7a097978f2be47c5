"""Traced fits on one Keras backend, run in a process of their own.

The Keras backend is fixed when Keras is imported, so
`test_backend_traces.py` runs this script once per backend:
`python backend_trace_fits.py BACKEND LOGDIR`. It trains small fits with
`DeviceCostCallback(profile_steps=...)` into LOGDIR and prints one JSON
object of facts (the tests read the recorded runs back themselves).
"""

import json
import os
import sys
import tempfile
import time

BACKEND, LOGDIR = sys.argv[1], sys.argv[2]
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from seeding import set_random_seed  # noqa: E402
from backend_models import Delayed, arrays, mlp  # noqa: E402

if BACKEND == "torch":
    import torch

    # As in backend_fits.py: one thread keeps a small shared machine steady.
    torch.set_num_threads(1)

WINDOW = (3, 6)
DELAY_S = 0.02


def profiler_running():
    """Whether a profiler is still running, asked of the backend itself."""
    if BACKEND == "torch":
        return bool(torch._C._autograd._profiler_enabled())
    import jax

    try:
        jax.profiler.start_trace(tempfile.mkdtemp())
    except RuntimeError:
        return True
    jax.profiler.stop_trace()
    return False


def fit_weights(callbacks, x, y):
    set_random_seed(3)
    model = mlp()
    model.fit(x, y, batch_size=32, epochs=2, verbose=0, validation_data=(x[:64], y[:64]),
              callbacks=callbacks)
    return [np.asarray(w) for w in model.get_weights()], model.history.history


def main():
    facts = {"backend": keras.backend.backend(), "window": WINDOW}
    x, y = arrays(320)  # 10 steps an epoch

    # The same fit without the callback, with it, and with it tracing.
    runs = {
        "none": fit_weights([], x, y),
        "callback": fit_weights([tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "plain"))], x, y),
        "traced": fit_weights(
            [tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "traced"), profile_steps=WINDOW)], x, y
        ),
    }
    facts["weights_identical"] = {
        name: all(np.array_equal(a, b) for a, b in zip(runs["none"][0], weights))
        for name, (weights, _) in runs.items()
    }
    facts["histories_identical"] = {
        name: history == runs["none"][1] for name, (_, history) in runs.items()
    }
    facts["profiler_running_after_fit"] = profiler_running()

    # A second fit, its own callback and window: the profiler was free.
    mlp().fit(x, y, batch_size=32, epochs=1, verbose=0,
              callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "again"), profile_steps=WINDOW)])

    # A window across an epoch's end and its validation (steps 8-11).
    mlp().fit(x, y, batch_size=32, epochs=2, verbose=0, validation_data=(x[:64], y[:64]),
              callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "across"), profile_steps=(8, 12))])

    # A window from the fit's first step: the profiler starts before it.
    mlp().fit(x, y, batch_size=32, epochs=1, verbose=0,
              callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "first"), profile_steps=(0, 2))])

    # A callback that is not `async_safe`: Keras reports each step complete
    # on the main thread, after the step's call.
    mlp().fit(x, y, batch_size=32, epochs=1, verbose=0,
              callbacks=[_Blocking(), tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "blocking"), profile_steps=WINDOW)])

    # An input-bound fit: the trace's fetch should hold most of each step.
    mlp().fit(Delayed(x, y, 32, DELAY_S), epochs=1, verbose=0,
              callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "slow"), profile_steps=WINDOW)])
    facts["delay_ms"] = DELAY_S * 1e3
    facts["profiler_running_at_exit"] = profiler_running()
    print(json.dumps(facts))


class _Blocking(keras.callbacks.Callback):
    """A batch-end hook without `async_safe`: Keras runs batch ends on the
    main thread."""

    def on_train_batch_end(self, batch, logs=None):
        pass


if __name__ == "__main__":
    main()
