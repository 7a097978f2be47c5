"""Single whole JAX fits without DeviceCostCallback and with it in
variants, in a random order each round, as `gpu_backends.py` times them
(wall time of `fit()`, no other callback): where the callback's cost on a
GPU goes (a probe for issue 36; see README.md here). No test reads it.

Variants: none (no callback); full; nopoll (the training thread never
polls for completions: `jax.POLL_EVERY` 10**9, no first turns); nofloor (no fetch-floor
samples after the first step); off (switched off in `on_train_begin`: the
once-a-fit hooks and the wrappers' frames only); wide (the usual step's
row packed into the rows' buffer as it is added, a frame of ours a step,
as before 17a080e, not appended to `AsyncSteps.lean` and made rows at the
drain).

Prints, per variant, the median of the per-round ratios to `none` and to
`full`, with bootstrap 95% intervals; writes every fit's seconds to FILE
every 10 rounds, so a run cut short keeps what it measured.

With `PREAMBLE=1` in the environment, one fit with the callback as users
get it (its device-busy trace window: the profiler started and stopped)
runs before the rounds, as `gpu_backends.py` runs its kept fit before its
pairs: whether a profiler session earlier in the process moves the ratio.

Usage (from the checkout's root): KERAS_BACKEND=jax python3
    tests/data/h200/overhead/variant_fits.py STEPS ROUNDS VARIANTS FILE
    [KIND BATCH]   (KIND `mlp` or `cnn`, `benchmarks/models.py`)
"""

import json
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_backends  # noqa: E402
import keras  # noqa: E402
import models  # noqa: E402
import tb_devicecost  # noqa: E402
from tb_devicecost.backends import asynchronous  # noqa: E402
from tb_devicecost.backends import jax as jax_backend  # noqa: E402
from tb_devicecost.recording import fetch_floor  # noqa: E402
from variants import Off  # noqa: E402  (switched off in `on_train_begin`)

START_PYTHON = fetch_floor.FetchFloor.start_python
# The step code's own interval, for every variant that polls as users get it.
DEFAULT_POLL_EVERY, DEFAULT_FIRST_POLLS = jax_backend.POLL_EVERY, jax_backend.FIRST_POLLS
NO_FLOOR = [False]


def _start_python(self, batch, handover):
    if NO_FLOOR[0]:
        return False
    return START_PYTHON(self, batch, handover)


fetch_floor.FetchFloor.start_python = _start_python

LEAN_LANE = asynchronous.AsyncSteps.lean_lane
WIDE = [False]


def _lean_lane(self):
    if not WIDE[0]:
        return LEAN_LANE(self)
    pack, add, nan = asynchronous._ROW.pack, self._rows.frombytes, float("nan")

    def add_row(row):
        # As `dispatched_step` did before 17a080e: the row packed, in a frame.
        key, start, fetched, size, excluded, returned = row
        self._count += 1
        self._upcoming += 1
        add(pack(key, start, fetched, fetched, 1.0, size, excluded, nan, returned, nan,
                 0.0, 0.0, 0.0))

    return add_row, self._probes.append


asynchronous.AsyncSteps.lean_lane = _lean_lane


def summary(seconds, variants):
    lines = []
    for base in ("none", "full"):
        if base not in seconds:
            continue
        for variant in variants:
            if variant == base:
                continue
            ratios = [b / a for a, b in zip(seconds[base], seconds[variant])]
            interval = gpu_backends.bootstrap_median_interval(ratios) or [float("nan")] * 2
            lines.append(f"{variant}/{base}: {statistics.median(ratios):.4f} "
                         f"({interval[0]:.4f}-{interval[1]:.4f}), {len(ratios)} rounds")
    return lines


def main(steps, rounds, variants, path, kind="mlp", batch=32):
    x, y = models.data(kind, steps * batch)
    model = models.build(kind)
    model.fit(x, y, batch_size=batch, verbose=0, shuffle=False)  # compiles
    seconds = {variant: [] for variant in variants}
    scratch = tempfile.mkdtemp()
    preamble = os.environ.get("PREAMBLE") == "1"
    if preamble:
        model.fit(x, y, batch_size=batch, verbose=0, shuffle=False, callbacks=[
            tb_devicecost.DeviceCostCallback(os.path.join(scratch, "default"))])
    for index in range(rounds):
        order = list(variants)
        random.shuffle(order)
        for variant in order:
            callbacks = []
            jax_backend.POLL_EVERY = 10**9 if variant == "nopoll" else DEFAULT_POLL_EVERY
            jax_backend.FIRST_POLLS = 0 if variant == "nopoll" else DEFAULT_FIRST_POLLS
            NO_FLOOR[0] = variant == "nofloor"
            WIDE[0] = variant == "wide"
            if variant != "none":
                callback = tb_devicecost.DeviceCostCallback(
                    os.path.join(scratch, f"{variant}_{index}"), device_busy=False)
                callbacks.append(callback)
                if variant == "off":
                    callbacks.append(Off(callback))
            started = time.perf_counter()
            model.fit(x, y, batch_size=batch, verbose=0, shuffle=False, callbacks=callbacks)
            seconds[variant].append(time.perf_counter() - started)
        if (index + 1) % 10 == 0 or index + 1 == rounds:
            with open(path, "w", encoding="utf-8") as file:
                json.dump({"backend": keras.backend.backend(), "kind": kind, "batch": batch,
                           "steps": steps, "preamble": preamble, "rounds": index + 1,
                           "seconds": seconds,
                           "summary": summary(seconds, variants)}, file)
    print(f"{kind} at {batch}, {steps} steps; median fit without "
          f"{statistics.median(seconds[variants[0]]) * 1e3:.1f} ms")
    for line in summary(seconds, variants):
        print(line)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4],
         *(sys.argv[5:6] + [int(a) for a in sys.argv[6:7]]))
