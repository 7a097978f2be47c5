"""Which part of the callback's per-step path costs what on JAX.

Fits of the same model alternate without the callback, with it, and with
one part switched off at a time:

- `no_polls`: the training thread's completion polls (`AsyncSteps.poll`);
- `one_poll`: the poll before each fetch (the one after it stays);
- `every_step_polls`: on a GPU, polls in every step's fetch instead of one
  in eight (`jax.ACCELERATOR_POLL_EVERY`; the CPU polls every step);
- `no_rows`: the dispatched steps' bookkeeping and rows
  (`AsyncSteps.dispatched`);
- `no_loop_clock`: the clock reads around Keras's callback list;
- `untimed_step`: Keras's step function called through a plain wrapper:
  the callback's hooks and its fixed cost per fit only.

Each round runs every variant `--repeats` times, alternating, and keeps
each variant's fastest fit: interference (other processes, the GC, a burst
of the device's clocks) only ever adds time, so the minimum is the fit's
own cost, and a round's ratio of minima is far steadier than a ratio of
two single fits. Reported per variant: the median over rounds of the ratio
to no callback (wall time) and the training thread's CPU time per step
over no callback (`time.thread_time`), figure last.

Target: `full` at most 1.03 (docs/PERFORMANCE.md).

Usage: python benchmarks/jax_step_cost.py [--model mlp] [--batch 32]
    [--steps 1000] [--rounds 10] [--repeats 3]
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tb_devicecost  # noqa: E402
from models import build, data  # noqa: E402
from tb_devicecost.backends import asynchronous  # noqa: E402
from tb_devicecost.backends import jax as jax_backend  # noqa: E402
from tb_devicecost.backends import keras_loop  # noqa: E402
from tb_devicecost.backends import timed_iterator  # noqa: E402

VARIANTS = ("full", "no_polls", "one_poll", "every_step_polls", "no_rows", "no_loop_clock",
            "untimed_step")
POLL_EVERY = jax_backend.ACCELERATOR_POLL_EVERY


def _next_polling_once(self):
    """`TimedIterator.__next__` with its poll before the fetch left out."""
    started = self._clock()
    batch = next(self.iterator)
    self.fetched = fetched = self._clock()
    if self._poll is not None and self._unready:
        self._poll(fetched)
    if self.count == 0:
        self.start, self.first = started, batch
    self.count += 1
    return batch


def _switch(variant, real):
    """Puts back the real parts, then switches off `variant`'s."""
    steps, loop, backend = asynchronous.AsyncSteps, keras_loop, jax_backend.JaxBackend
    jax_backend.ACCELERATOR_POLL_EVERY = 1 if variant == "every_step_polls" else POLL_EVERY
    (steps.poll, steps.dispatched, loop.callback_list, backend.wrap_step,
     timed_iterator.TimedIterator.__next__) = real
    if variant == "one_poll":
        timed_iterator.TimedIterator.__next__ = _next_polling_once
    elif variant == "no_polls":
        steps.poll = lambda self, now: None
    elif variant == "no_rows":
        steps.dispatched = lambda self, *args, **kwargs: None
    elif variant == "no_loop_clock":
        loop.callback_list = lambda: None
    elif variant == "untimed_step":
        # A new function: Keras's own would be marked as our wrapper.
        backend.wrap_step = lambda self, callback, original, role: (
            lambda state, iterator: original(state, iterator))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=("mlp", "cnn"))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--scratch", default="/tmp/jax_step_cost")
    args = parser.parse_args()
    variants = ["none"] + args.variants.split(",")
    x, y = data(args.model, args.batch * args.steps)
    model = build(args.model)
    model.fit(x, y, batch_size=args.batch, verbose=0, shuffle=False)  # compiles
    real = (asynchronous.AsyncSteps.poll, asynchronous.AsyncSteps.dispatched,
            keras_loop.callback_list, jax_backend.JaxBackend.wrap_step,
            timed_iterator.TimedIterator.__next__)

    def fit(variant):
        _switch(variant, real)
        callbacks = [] if variant == "none" else [tb_devicecost.DeviceCostCallback(
            os.path.join(args.scratch, variant), device_busy=False)]
        wall, cpu = time.perf_counter(), time.thread_time()
        model.fit(x, y, batch_size=args.batch, verbose=0, shuffle=False, callbacks=callbacks)
        return time.perf_counter() - wall, time.thread_time() - cpu

    ratios = {variant: [] for variant in variants[1:]}
    cpu_us = {variant: [] for variant in variants[1:]}
    for index in range(args.rounds):
        fastest = {variant: (float("inf"), float("inf")) for variant in variants}
        for repeat in range(args.repeats):
            order = variants if (index + repeat) % 2 == 0 else variants[::-1]
            for variant in order:
                wall, cpu = fit(variant)
                fastest[variant] = (min(fastest[variant][0], wall), min(fastest[variant][1], cpu))
        base_wall, base_cpu = fastest["none"]
        for variant in variants[1:]:
            ratios[variant].append(fastest[variant][0] / base_wall)
            cpu_us[variant].append((fastest[variant][1] - base_cpu) / args.steps * 1e6)
    _switch("full", real)
    print(f"{args.model} batch {args.batch}, {args.steps} steps a fit, {args.rounds} rounds "
          f"of the fastest of {args.repeats}")
    for variant in variants[1:]:
        q1, _, q3 = statistics.quantiles(ratios[variant], n=4)
        print(f"{variant:16s} wall ratio median {statistics.median(ratios[variant]):.3f} "
              f"(interquartile {q1:.3f}-{q3:.3f}); training-thread CPU "
              f"{statistics.median(cpu_us[variant]):+.1f} us/step")


if __name__ == "__main__":
    main()
