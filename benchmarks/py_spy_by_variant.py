"""Where each variant of `benchmarks/jax_poll_cost.py` spends its training
thread's time, from a py-spy recording of it (`--format raw`).

Each sample is given to the variant whose `fit_<variant>` frame it holds;
per function (the innermost Python frame: time in C code is its caller's),
microseconds a step are the samples over the rate and the steps of that
variant, the first variant the baseline; largest differences first.

Usage: python benchmarks/py_spy_by_variant.py RAW RATE STEPS VARIANTS [ROWS]
    e.g. python benchmarks/py_spy_by_variant.py spy.txt.gz 500 18000 none,full,no_polls
    (STEPS: steps a variant ran in all: steps a fit times rounds)
"""

import collections
import gzip
import sys


def main():
    path, rate, steps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    variants = sys.argv[4].split(",")
    rows = int(sys.argv[5]) if len(sys.argv) > 5 else 25
    samples = {variant: collections.Counter() for variant in variants}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as raw:
        for line in raw:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            frames = stack.split(";")
            variant = next((v for v in variants if any(f"fit_{v} " in f for f in frames)), None)
            if variant is None:
                continue
            counter, count = samples[variant], int(count)
            counter[frames[-1].split(" (")[0]] += count
            counter["TOTAL"] += count
            if "tb_devicecost" in frames[-1]:
                counter["OURS (innermost frame in tb_devicecost)"] += count
    scale = 1e6 / rate / steps
    base = variants[0]
    names = sorted(set().union(*samples.values()),
                   key=lambda name: -max(abs(samples[v][name] - samples[base][name]) for v in variants))
    print("us/step " + " ".join(f"{v:>16s}" for v in variants))
    for name in names[:rows]:
        print(" ".join(f"{samples[v][name] * scale:16.2f}" for v in variants), name[:70])


if __name__ == "__main__":
    main()
