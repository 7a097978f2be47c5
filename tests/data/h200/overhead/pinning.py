"""Single whole fits with and without DeviceCostCallback, the process's
threads on every CPU or on a few, the CPU sets rotating from one round to
the next in one process (a one-off probe for issue 36; see README.md here).

Why: single fits on the H200 host's 16 KVM vCPUs vary by +-15% from one to
the next, so a median of 150 per-pair ratios is +-3% wide. Whether the
spread is the threads' wandering over vCPUs, and what pinning them costs
the step, is measured here in one process, against the same drift.

Each round sets every thread's affinity (`/proc/self/task`) to one CPU set,
then runs a fit without the callback and one with it, in ABBA order over
rounds; the sets rotate. Printed per set: the median fit, the spread of
single fits, and the median of the per-pair ratios with a bootstrap 95%
interval.

Usage: KERAS_BACKEND=jax python3 tests/data/h200/overhead/pinning.py
    STEPS ROUNDS SETS [FILE [KIND BATCH]]   (from the checkout's root;
    SETS like `all,2-5,2-9`; KIND `mlp` or `cnn`, `benchmarks/models.py`)
"""

import json
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tb_devicecost  # noqa: E402

sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models  # noqa: E402


def cpus(spec):
    if spec == "all":
        return set(range(os.cpu_count()))
    chosen = set()
    for part in spec.split("+"):
        first, _, last = part.partition("-")
        chosen.update(range(int(first), int(last or first) + 1))
    return chosen


def pin(chosen):
    """Every thread of the process on `chosen` (threads made later inherit
    their creator's set)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), chosen)
        except OSError:
            pass  # A thread that ended meanwhile.


def interval(ratios, draws=2000, seed=0):
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws)]


def main(steps, rounds, sets, path=None, kind="mlp", batch=32):
    x, y = models.data(kind, steps * batch)
    model = models.build(kind)
    model.fit(x, y, batch_size=batch, verbose=0, shuffle=False)  # compile
    root = tempfile.mkdtemp()
    fits = {name: {"without": [], "with": []} for name in sets}
    for index in range(rounds):
        name = sets[index % len(sets)]
        pin(cpus(name))
        order = ("without", "with") if (index // len(sets)) % 2 == 0 else ("with", "without")
        for which in order:
            callbacks = ([tb_devicecost.DeviceCostCallback(os.path.join(root, str(index)),
                                                           device_busy=False)]
                         if which == "with" else [])
            started = time.perf_counter()
            model.fit(x, y, batch_size=batch, verbose=0, shuffle=False, callbacks=callbacks)
            fits[name][which].append(time.perf_counter() - started)
    pin(cpus("all"))
    summary = {}
    for name in sets:
        without, with_ = fits[name]["without"], fits[name]["with"]
        ratios = [b / a for a, b in zip(without, with_)]
        spread = statistics.pstdev(without) / statistics.mean(without)
        summary[name] = {
            "ms_per_step_without": statistics.median(without) / steps * 1e3,
            "ms_per_step_with": statistics.median(with_) / steps * 1e3,
            "fit_spread_without": spread,
            "ratio": statistics.median(ratios),
            "ratio_ci95": interval(ratios),
            "ratio_spread": statistics.pstdev(ratios),
            "ratios": ratios,
            "without_s": without,
            "with_s": with_,
        }
        low, high = summary[name]["ratio_ci95"]
        print(f"{kind}{batch} {name:>6}: step {summary[name]['ms_per_step_without']:.3f} ms, "
              f"fits without +-{spread:.3f}, ratio {summary[name]['ratio']:.3f} "
              f"({low:.3f}-{high:.3f}, {len(ratios)} pairs), ratios +-{summary[name]['ratio_spread']:.3f}",
              flush=True)
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump({"kind": kind, "batch": batch, "steps": steps, "sets": summary}, file)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]), int(args[1]), args[2].split(","), *(args[3:4] or [None]),
         *(args[4:5] or ["mlp"]), *[int(a) for a in args[5:6]])
