"""`python failing_fits.py BACKEND LOGDIR`: fits where our own recording
fails inside the step function, against the same fit without the callback.

Each case makes one of our functions raise (`FAULTS`), fits a seeded model
with `DeviceCostCallback` and without it, and prints one JSON object: per
case, whether the weights and `history` are the same, how many steps ran,
and the warnings the callback gave.
"""

import json
import os
import sys
import threading
import warnings

BACKEND, LOGDIR = sys.argv[1], sys.argv[2]
os.environ["KERAS_BACKEND"] = BACKEND

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from seeding import set_random_seed  # noqa: E402
from tb_devicecost.backends import asynchronous  # noqa: E402
from tb_devicecost.recording import step_wrappers  # noqa: E402


def _broken(*args, **kwargs):
    raise RuntimeError("injected fault")


# Where our code runs: inside Keras's call (the timed iterator's poll, on
# JAX, where an execution runs two steps: the general lane), before it (the
# usual JAX step's own poll, around the fetch it makes itself), after it
# (the step's row: the general `dispatched`, again two steps an execution,
# and each backend's usual one; on JAX that row is two list appends, and
# what may fail after them is the drain it asks for every few steps), and
# on Keras's worker thread where the step's logs are converted (the
# completion's clock read, written there by the callback's `loop_results`
# itself, on JAX and PyTorch). Each case: the function made to raise and
# the fit's steps per execution (PyTorch's loop runs one).
SEVERAL = 2 if BACKEND == "jax" else 1
FAULTS = {
    "poll": (asynchronous.AsyncSteps, "poll", SEVERAL),
    "usual_poll": (asynchronous.AsyncSteps, "poll", 1),
    "dispatched": (asynchronous.AsyncSteps, "dispatched", SEVERAL),
    "usual_row": (asynchronous.AsyncSteps,
                  "lean_due" if BACKEND == "jax" else "dispatched_call", 1),
    "completion": (step_wrappers.StepRecording, "loop_results", 1),
}


def fit(callbacks, steps_per_execution=1):
    set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    model.compile("adam", "mse", steps_per_execution=steps_per_execution)
    rng = np.random.default_rng(0)
    x, y = rng.random((256, 8), dtype=np.float32), rng.random((256, 1), dtype=np.float32)
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False, callbacks=callbacks)
    return model.get_weights(), history.history


def main():
    facts = {"backend": keras.backend.backend(), "cases": {}}
    # The fit without the callback, by steps per execution.
    without = {count: fit([], count) for count in sorted({case[2] for case in FAULTS.values()})}
    # Which threads switched the callback off: the training thread only,
    # never while it may be recording a step.
    stopped_on = []
    disable = tb_devicecost.DeviceCostCallback._disable

    def recorded_disable(self, error):
        stopped_on.append(threading.current_thread() is threading.main_thread())
        return disable(self, error)

    tb_devicecost.DeviceCostCallback._disable = recorded_disable
    for name, (owner, attribute, steps_per_execution) in FAULTS.items():
        weights, history = without[steps_per_execution]
        original = getattr(owner, attribute)
        setattr(owner, attribute, _broken)
        stopped_on.clear()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got, got_history = fit([tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, name))],
                                       steps_per_execution)
        finally:
            setattr(owner, attribute, original)
        facts["cases"][name] = {
            "stopped_on_training_thread": all(stopped_on) and bool(stopped_on),
            "same_weights": all(np.array_equal(a, b) for a, b in zip(weights, got)),
            "same_history": got_history == history,
            "epochs": len(got_history.get("loss", [])),
            "warnings": [str(w.message) for w in caught if "DeviceCostCallback" in str(w.message)],
        }
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
