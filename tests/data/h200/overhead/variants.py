"""Fits without DeviceCostCallback and with it in variants, in a random
order each round: the steady CPU and wall time a step, the epoch end and
the whole fit (a one-off probe for issue 36; see README.md here).

Variants: none (no callback), off (switched off after `on_train_begin`:
its hooks only), full, nopoll (JAX: never polling for completions), poll1
(JAX: polling every step), noevent (PyTorch: no CUDA event a step, each
step read complete at its return: a bound on what the events cost, not a
recording).

Usage: KERAS_BACKEND=jax python3 tests/data/h200/overhead/variants.py
    STEPS ROUNDS VARIANTS [FILE [KIND BATCH]]   (from the checkout's root;
    KIND `mlp` or `cnn`, `benchmarks/models.py`; by default the MLP at 32)
"""

import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import tb_devicecost  # noqa: E402
from tb_devicecost.backends import jax as jax_backend  # noqa: E402

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models  # noqa: E402

WARM = 50
POLL_EVERY = {"nopoll": 10**9, "poll1": 1}
DEFAULT_POLL_EVERY, DEFAULT_FIRST_POLLS = jax_backend.POLL_EVERY, jax_backend.FIRST_POLLS
NO_EVENT = [False]


class Off(keras.callbacks.Callback):
    """Switches `callback` off once its `on_train_begin` ran (after it in
    the list): its hooks and wrappers' frames only."""

    def __init__(self, callback):
        super().__init__()
        self.callback = callback

    def on_train_begin(self, logs=None):
        self.callback._enabled = False


def main(steps, rounds, variants, path=None, kind="mlp", batch=32):
    x, y = models.data(kind, steps * batch)
    tid = threading.get_native_id()

    def thread_us():
        with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as stat:
            return int(stat.read().split()[0]) / 1e3

    class Clock(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == WARM:
                self.a = (thread_us(), time.perf_counter())
            elif batch == steps - 1:
                self.b = (thread_us(), time.perf_counter())

        def on_epoch_end(self, epoch, logs=None):
            self.c = (thread_us(), time.perf_counter())

    built = {v: models.build(kind) for v in variants}
    for model in built.values():
        model.fit(x[: WARM * batch], y[: WARM * batch], batch_size=batch, verbose=0)
    if keras.backend.backend() == "torch":
        from tb_devicecost.backends import torch as torch_backend

        source = torch_backend.Completions.source

        def no_event(self, logs, returned):
            if NO_EVENT[0]:
                return None, returned
            return source(self, logs, returned)

        torch_backend.Completions.source = no_event
    results = {v: [] for v in variants}
    for _ in range(rounds):
        order = list(variants)
        random.shuffle(order)
        for variant in order:
            clock, callbacks = Clock(), []
            jax_backend.POLL_EVERY = POLL_EVERY.get(variant, DEFAULT_POLL_EVERY)
            jax_backend.FIRST_POLLS = 0 if variant == "nopoll" else DEFAULT_FIRST_POLLS
            NO_EVENT[0] = variant == "noevent"
            if variant != "none":
                callback = tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)
                callbacks.append(callback)
                if variant == "off":
                    callbacks.append(Off(callback))
            wall0, cpu0 = time.perf_counter(), thread_us()
            built[variant].fit(x, y, batch_size=batch, verbose=0, shuffle=False,
                               callbacks=callbacks + [clock])
            wall1, cpu1 = time.perf_counter(), thread_us()
            n = steps - 1 - WARM
            results[variant].append({
                "cpu_step_us": (clock.b[0] - clock.a[0]) / n,
                "wall_step_us": (clock.b[1] - clock.a[1]) * 1e6 / n,
                "end_cpu_ms": (clock.c[0] - clock.b[0]) / 1e3,
                "fit_cpu_ms": (cpu1 - cpu0) / 1e3,
                "fit_wall_ms": (wall1 - wall0) * 1e3,
            })
    for variant in variants:
        medians = {k: round(statistics.median(e[k] for e in results[variant]), 2)
                   for k in results[variant][0]}
        print(keras.backend.backend(), variant, medians)
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump({"backend": keras.backend.backend(), "kind": kind, "batch": batch,
                       "steps": steps, "rounds": rounds, "res": results}, file)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","),
         sys.argv[4] if len(sys.argv) > 4 else None,
         *(sys.argv[5:6] + [int(a) for a in sys.argv[6:7]]))
