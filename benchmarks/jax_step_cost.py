"""Which part of the callback's per-step path costs what on JAX: fits of the
same model alternating without the callback, with it, and with one part
switched off at a time (the training thread's completion polls; the clock
reads around Keras's callback list). Prints the median ratio to no callback
per variant, figure last.

Usage: python benchmarks/jax_step_cost.py [--batch 32] [--steps 1000] [--rounds 8]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from tb_devicecost.backends import asynchronous  # noqa: E402
from tb_devicecost.backends import keras_loop  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((args.batch * args.steps, 100), dtype=np.float32)
    y = rng.integers(0, 10, args.batch * args.steps)
    model = keras.Sequential([keras.Input((100,)), keras.layers.Dense(128, activation="relu"),
                              keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=args.batch, verbose=0)
    real_poll, real_list = asynchronous.AsyncSteps.poll, keras_loop.callback_list

    def fit(variant):
        asynchronous.AsyncSteps.poll = real_poll if variant != "no_polls" else (lambda self, now: None)
        keras_loop.callback_list = real_list if variant != "no_loop_clock" else (lambda: None)
        callbacks = [] if variant == "none" else [
            tb_devicecost.DeviceCostCallback(f"/tmp/jax_step_cost/{variant}", device_busy=False)]
        began = time.perf_counter()
        model.fit(x, y, batch_size=args.batch, verbose=0, callbacks=callbacks)
        return time.perf_counter() - began

    variants = ["full", "no_polls", "no_loop_clock"]
    ratios = {variant: [] for variant in variants}
    for index in range(args.rounds):
        order = variants if index % 2 == 0 else variants[::-1]
        for variant in order:
            base = fit("none")
            ratios[variant].append(fit(variant) / base)
    for variant in variants:
        print(f"{variant}: median ratio {statistics.median(ratios[variant]):.3f} "
              f"({', '.join(f'{r:.3f}' for r in ratios[variant])})")


if __name__ == "__main__":
    main()
