"""How late a TensorFlow `fit` returns after its last `on_train_end` hook.

Found while measuring issue 36: in some fits with `DeviceCostCallback`,
`fit()` returns 2.3-2.6 s after every callback's `on_train_end` has run,
with the training thread asleep. Attached with gdb, the thread was freeing
Keras's `tf.data` iterator (`RootDataset::Iterator::~Iterator`), waiting for
tf.data's autotune model thread (`model::Model::OptimizeLoop`), which slept
on its condition variable. The steady per-step figures of `step_cpu.py`
leave it out; its whole-fit wall ratio does not.

Fits of the seeds' MLP at batch 32 from arrays, `--steps` steps each, on
one model warmed up first, in the order the variants are given, `--fits`
times: `none` (no callback), `full` (`DeviceCostCallback(device_busy=False)`)
and `keras_step` (the callback, Keras's own step function under its
wrapper: the fetch untimed inside the step). Prints each fit's delay in
seconds and how many were over 0.5 s.

Usage: python benchmarks/tf_fit_end.py [--fits 10] [--steps 2000]
       [--variants none,full,keras_step]
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402

import tb_devicecost  # noqa: E402
from tb_devicecost.backends import tensorflow as tf_backend  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

LATE_S = 0.5


class _TrainEnd(keras.callbacks.Callback):
    """Listed last: when the last `on_train_end` ran."""

    def on_train_end(self, logs=None):
        self.at = time.perf_counter()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=10)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--variants", default="none,full,keras_step")
    args = parser.parse_args()
    x, y = models.data("mlp", args.steps * 32)
    model = models.build("mlp")
    model.fit(x[:50 * 32], y[:50 * 32], batch_size=32, verbose=0)
    fetch_timed_step = tf_backend.fetch_timed_step
    for variant in args.variants.split(","):
        if variant not in ("none", "full", "keras_step"):
            sys.exit(f"tf_fit_end.py: unknown variant {variant!r}")
        # `keras_step`: no fetch-timed step, so the wrapper calls Keras's own.
        tf_backend.fetch_timed_step = (
            (lambda original, model: None) if variant == "keras_step" else fetch_timed_step)
        delays = []
        for _ in range(args.fits):
            end = _TrainEnd()
            callbacks = [] if variant == "none" else [
                tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)]
            model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False,
                      callbacks=callbacks + [end])
            delays.append(time.perf_counter() - end.at)
        late = sum(delay > LATE_S for delay in delays)
        print(f"{variant:10s} {late} of {len(delays)} fits over {LATE_S} s late; delays (s): "
              + ", ".join(f"{delay:.2f}" for delay in delays))


if __name__ == "__main__":
    main()
