"""Whether timing the fetch inside TensorFlow's graph is what a fit pays.

`tf_step_output.py` compares step bodies call by call; this script asks
the whole fit. It alternates, in one process, 2,000-step fits of the seeds'
MLP at batch 32 from arrays (one model per variant, warmed up first):

- `none`: no callback;
- `full`: `DeviceCostCallback(device_busy=False)`, as it is;
- `kerasstep`: the same callback with Keras's own step function
  (`fetch_timed_step` answering `None`, as for another Keras: the fetch
  untimed, inside compute), everything else of the recording kept;
- `off`: the same callback, its training run's recording switched off
  once its `on_train_begin` ran (the accounting's `enabled`): what stays
  is what that hook installed, the loop clock standing in for Keras's
  batch hooks, the SIGTERM watch and the step wrapper's frame, which
  calls Keras's function straight away.

Per fit, the wall time and the training thread's CPU time a step from the
start of step 50 to the epoch's end (a callback outside ours); printed,
each variant's median a step and the median of its per-round ratios to
`none`, with a bootstrap 95% interval and their range, and each other
variant's to `full`.

A one-off probe for issue 36, kept with its output (README.md here).

Usage: python tests/data/tf_step_output/whole_fits.py [--rounds 24]
    [--steps 2000] [--variants none,full,kerasstep]   (from the
    checkout's root; `none` first: the ratios are to it)
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

VARIANTS = ("none", "full", "kerasstep", "off")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--variants", default="none,full,kerasstep",
                        help=f"comma-separated, `none` first, of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    variants = tuple(args.variants.split(","))
    if variants[0] != "none" or not set(variants) <= set(VARIANTS):
        parser.error(f"--variants: `none` first, then any of {', '.join(VARIANTS[1:])}")

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

    class Off(keras.callbacks.Callback):
        """Switches the training run's recording off after the callback's
        `on_train_begin` (this one comes after it in the list)."""

        def __init__(self, callback):
            super().__init__()
            self.callback = callback

        def on_train_begin(self, logs=None):
            self.callback._train.enabled = False  # pylint: disable=protected-access

    built = {variant: models.build("mlp") for variant in variants}

    def fit(variant):
        steady = Steady()
        callbacks = [steady]
        if variant != "none":
            callback = tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)
            callbacks[:0] = [callback, Off(callback)] if variant == "off" else [callback]
        tf_backend.fetch_timed_step = (
            (lambda original, model: None) if variant == "kerasstep" else timed_step)
        try:
            built[variant].fit(x, y, batch_size=32, epochs=1, verbose=0,
                               callbacks=callbacks, shuffle=False)
        finally:
            tf_backend.fetch_timed_step = timed_step
        return {clock: (steady.ended[index] - steady.began[index]) / (steps - 50) * 1e6
                for index, clock in enumerate(("wall", "thread"))}

    for variant in variants:
        fit(variant)  # Traced and warm.
    rounds = {variant: [] for variant in variants}
    for index in range(args.rounds):
        for variant in (variants if index % 2 == 0 else variants[::-1]):
            rounds[variant].append(fit(variant))

    from gpu_backends import bootstrap_median_interval  # pylint: disable=import-outside-toplevel

    def ratio_cell(clock, of, to):
        ratios = [a[clock] / b[clock] for a, b in zip(rounds[of], rounds[to])]
        low, high = bootstrap_median_interval(ratios) or (float("nan"),) * 2
        return (f"x{statistics.median(ratios):.3f} ({low:.3f}-{high:.3f}; "
                f"range {min(ratios):.3f}-{max(ratios):.3f})")

    print(f"{args.rounds} rounds of {steps}-step fits, from step 50 to the epoch's end, "
          "µs a step (median) and the per-round ratio to none (median, its bootstrap 95% "
          "interval; range):")
    for variant in variants:
        cells = [f"{clock} {statistics.median(r[clock] for r in rounds[variant]):.1f} "
                 f"{ratio_cell(clock, variant, 'none')}" for clock in ("wall", "thread")]
        print(f"  {variant:9s} " + ", ".join(cells))
    if "full" in variants:
        # Each variant against the whole callback, round by round.
        for variant in variants[1:]:
            if variant != "full":
                print(f"  {variant} / full: wall {ratio_cell('wall', variant, 'full')}, "
                      f"thread {ratio_cell('thread', variant, 'full')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
