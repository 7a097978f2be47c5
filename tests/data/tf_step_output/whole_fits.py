"""Whether timing the fetch inside TensorFlow's graph is what a fit pays.

`tf_step_output.py` compares step bodies call by call; this script asks
the whole fit. It alternates, in one process, 2,000-step fits of the seeds'
MLP at batch 32 from arrays (one model per variant, warmed up first):

- `none`: no callback;
- `full`: `DeviceCostCallback(device_busy=False)`, as it is;
- `kerasstep`: the same callback with Keras's own step function
  (`fetch_timed_step` answering `None`, as for another Keras: the fetch
  untimed, inside compute), everything else of the recording kept.

Per fit, the wall time and the training thread's CPU time a step from the
start of step 50 to the epoch's end (a callback outside ours); printed,
each variant's median a step and the median of its per-round ratios to
`none`, with their range.

A one-off probe for issue 36, kept with its output (README.md here).

Usage: python tests/data/tf_step_output/whole_fits.py [--rounds 24]
    [--steps 2000]   (from the checkout's root)
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

VARIANTS = ("none", "full", "kerasstep")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()

    import keras

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    sys.path[:0] = [root, os.path.join(root, "benchmarks")]
    import models  # pylint: disable=import-outside-toplevel
    import tb_devicecost
    from tb_devicecost.backends import tensorflow as tf_backend

    steps = args.steps
    x, y = models.data("mlp", steps * 32)
    timed_step = tf_backend.fetch_timed_step

    class Steady(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 50:
                self.began = (time.perf_counter(), time.thread_time())

        def on_epoch_end(self, epoch, logs=None):
            self.ended = (time.perf_counter(), time.thread_time())

    built = {variant: models.build("mlp") for variant in VARIANTS}

    def fit(variant):
        steady = Steady()
        callbacks = [steady]
        if variant != "none":
            callbacks.insert(0, tb_devicecost.DeviceCostCallback(
                tempfile.mkdtemp(), device_busy=False))
        tf_backend.fetch_timed_step = (
            (lambda original, model: None) if variant == "kerasstep" else timed_step)
        try:
            built[variant].fit(x, y, batch_size=32, epochs=1, verbose=0,
                               callbacks=callbacks, shuffle=False)
        finally:
            tf_backend.fetch_timed_step = timed_step
        return {clock: (steady.ended[index] - steady.began[index]) / (steps - 50) * 1e6
                for index, clock in enumerate(("wall", "thread"))}

    for variant in VARIANTS:
        fit(variant)  # Traced and warm.
    rounds = {variant: [] for variant in VARIANTS}
    for index in range(args.rounds):
        for variant in (VARIANTS if index % 2 == 0 else VARIANTS[::-1]):
            rounds[variant].append(fit(variant))

    print(f"{args.rounds} rounds of {steps}-step fits, from step 50 to the epoch's end, "
          "µs a step (median) and the per-round ratio to none (median, range):")
    for variant in VARIANTS:
        cells = []
        for clock in ("wall", "thread"):
            ratios = [a[clock] / b[clock] for a, b in zip(rounds[variant], rounds["none"])]
            cells.append(f"{clock} {statistics.median(r[clock] for r in rounds[variant]):.1f} "
                         f"x{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
        print(f"  {variant:9s} " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
