"""What a trace window costs: trace size and the slowdown of traced steps.

The seeds' MLP (100 -> 128 -> 10), batch 32, on the CPU, with
`DeviceCostCallback(profile_steps=(start, start + N))`. Our own per-step
records give the median step inside the window and outside it (the steps
just before and after), in the same fit; repeated for several fits and both
pipelines (cached and an input-bound `py_function` one).

Target: traced steps at most 2x the untraced ones (the profiler records every
op); a 100-step window's trace under 5 MB.

Usage: python benchmarks/trace_cost.py [--window 100] [--rounds 3]
"""

import argparse
import os
import sys
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tb_devicecost  # noqa: E402

# The repository's root, for the demo's models (benchmarks run as scripts).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from demo import scenarios  # noqa: E402
from tb_devicecost.reading import reader  # noqa: E402

TARGET_RATIO = 2.0
TARGET_BYTES = 5 * 1024 * 1024


def build_model():
    """The common small MLP (100 -> 128 -> 10), as the demo builds it."""
    return scenarios.mlp()


def datasets(steps):
    rng = np.random.default_rng(0)
    x = rng.random((steps * 32, 100), dtype=np.float32)
    y = rng.integers(0, 10, steps * 32)

    def sleep(a, b):
        time.sleep(0.002)
        return a, b

    return {
        "cached": tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE),
        "input_bound": tf.data.Dataset.from_tensor_slices((x, y))
        .batch(32)
        .map(lambda a, b: tf.py_function(sleep, [a, b], [tf.float32, tf.int64])),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = 500
    stop = start + args.window
    steps = stop + 500
    scratch = tempfile.mkdtemp(prefix="devicecost-trace-")
    worst_ratio, largest = 0.0, 0
    for round_index in range(args.rounds):
        for name, dataset in datasets(steps).items():
            log_dir = os.path.join(scratch, f"{name}{round_index}")
            build_model().fit(
                dataset, epochs=1, verbose=0,
                callbacks=[tb_devicecost.DeviceCostCallback(log_dir, profile_steps=(start, stop))],
            )
            [record] = reader.read_runs(reader.local_provider(log_dir), series_points=0)
            [window] = record.trace["windows"]
            recorded = {entry["step"]: entry for entry in window["recorded_steps"]}
            traced = [sum(e[k] for k in ("data_wait_ms", "compute_ms", "host_overhead_ms")) for e in recorded.values()]
            # Untraced neighbours, from the full series (read without sampling).
            provider = reader.local_provider(log_dir)
            full = reader.read_runs(provider, series_points=100_000)[0].series
            total = full["data_wait_ms"] + full["compute_ms"] + full["host_overhead_ms"]
            neighbours = [t for s, t in zip(full["step"], total) if start - 200 <= s < start or stop <= s < stop + 200]
            ratio = statistics.median(traced) / statistics.median(neighbours)
            worst_ratio = max(worst_ratio, ratio)
            largest = max(largest, window["trace_bytes"])
            print(
                f"round {round_index + 1} {name}: traced median {statistics.median(traced):.3f} ms, "
                f"untraced median {statistics.median(neighbours):.3f} ms, ratio {ratio:.2f}, "
                f"trace {window['trace_bytes'] / 1024:.0f} KiB for {len(window['steps'])} steps, "
                f"trace input-wait share {window['summary'].get('input_wait_fraction', 0):.2f}"
            )
    print(f"target: traced/untraced <= {TARGET_RATIO}, trace <= {TARGET_BYTES // 2**20} MiB per {args.window} steps")
    print(f"trace cost: worst traced/untraced step ratio {worst_ratio:.2f}, largest trace {largest / 1024:.0f} KiB "
          f"per {args.window} steps ({'PASS' if worst_ratio <= TARGET_RATIO and largest <= TARGET_BYTES else 'FAIL'})")


if __name__ == "__main__":
    main()
