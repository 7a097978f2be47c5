"""What the completion polls cost a JAX fit, one fit per variant a round.

Fits of one model alternate (the order reversed every other round), each
variant under a function of its own name (`fit_<variant>`), so a sampling
profiler's stacks tell them apart (`benchmarks/py_spy_by_variant.py`):

- `none`: no callback;
- `full`: the callback as users get it (on a GPU, polls in one step's
  fetch in eight; on the CPU in every step's);
- `every_step_polls`: polls in every step's fetch on a GPU too;
- `no_polls`: no completion probe at all (completions from Keras's worker);
- `untimed_step`: Keras's step function called through a plain wrapper:
  the callback's hooks and its fixed cost per fit only.

Reported per variant: medians of the training thread's CPU time and of
the wall time a step, and the median over rounds of the wall ratio to
`none` with its interquartile range, figure last.

Target: `full` at most 1.03 (docs/PERFORMANCE.md).

Usage: python benchmarks/jax_poll_cost.py STEPS ROUNDS [VARIANTS]
    e.g. python benchmarks/jax_poll_cost.py 1000 36 none,full,every_step_polls,no_polls,untimed_step
    py-spy record -r 500 --nonblocking --format raw -o spy.txt -- python benchmarks/jax_poll_cost.py 1500 12
"""

import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tb_devicecost  # noqa: E402
from models import build, data  # noqa: E402
from tb_devicecost.backends import jax as jax_backend  # noqa: E402

VARIANTS = ("none", "full", "every_step_polls", "no_polls", "untimed_step")


def main():
    steps, rounds = int(sys.argv[1]), int(sys.argv[2])
    variants = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)
    x, y = data("mlp", 32 * steps)
    model = build("mlp")
    model.fit(x[:3200], y[:3200], batch_size=32, verbose=0, shuffle=False)  # compiles
    probe, wrap = jax_backend.CompletionProbe.__call__, jax_backend.JaxBackend.wrap_step
    poll_every = jax_backend.ACCELERATOR_POLL_EVERY
    figures = {variant: [] for variant in variants}

    def run(variant, index):
        jax_backend.CompletionProbe.__call__, jax_backend.JaxBackend.wrap_step = probe, wrap
        jax_backend.ACCELERATOR_POLL_EVERY = 1 if variant == "every_step_polls" else poll_every
        if variant == "no_polls":
            jax_backend.CompletionProbe.__call__ = lambda self, logs: None
        elif variant == "untimed_step":
            # A new function: Keras's own would be marked as our wrapper.
            jax_backend.JaxBackend.wrap_step = lambda self, callback, original, role: (
                lambda state, iterator: original(state, iterator))
        callbacks = [] if variant == "none" else [tb_devicecost.DeviceCostCallback(
            f"/tmp/jax_poll_cost/{variant}{index}", device_busy=False)]
        cpu, wall = time.thread_time(), time.perf_counter()
        model.fit(x, y, batch_size=32, verbose=0, shuffle=False, callbacks=callbacks)
        figures[variant].append(((time.thread_time() - cpu) / steps * 1e6,
                                 (time.perf_counter() - wall) / steps * 1e6))

    # One function per variant, named for it: the profiler's stacks say which.
    named = {}
    for variant in variants:
        exec(f"def fit_{variant}(index): run({variant!r}, index)", {"run": run}, named)
    for index in range(rounds):
        for variant in (variants if index % 2 == 0 else variants[::-1]):
            named[f"fit_{variant}"](index)
    print(f"mlp batch 32, {steps} steps a fit, {rounds} rounds")
    for variant, rows in figures.items():
        ratios = [row[1] / base[1] for row, base in zip(rows, figures["none"])]
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        print(f"{variant:17s} training-thread CPU {statistics.median(r[0] for r in rows):7.1f} us/step, "
              f"wall {statistics.median(r[1] for r in rows):7.1f} us/step, wall ratio to none "
              f"{statistics.median(ratios):.3f} (interquartile {quartiles[0]:.3f}-{quartiles[2]:.3f})")


if __name__ == "__main__":
    main()
