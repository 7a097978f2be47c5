"""What DeviceCostCallback costs a fit's wall time on the CPU, and a trace window.

The seeds' MLP (100 -> 128 -> 10), batch 32, about 2000 steps per fit on
the CPU. Fits with and without the callback alternate in one process, for
several rounds, so machine noise hits both alike; the figure is the median
of the per-round ratios. For reference, the same is measured for
`keras.callbacks.TensorBoard(update_freq="batch")` (`--keras-tensorboard`).

On TensorFlow a third variant isolates the cost of recording itself: a
callback that runs the step the same way (the same step path,
`FetchTimedStep`) and records nothing. On `--backend jax` or
`torch` the fits read NumPy arrays (Keras's own loop hands batches over)
and there is no such variant.

Targets (issue 15): fit with / without the callback and recording alone at
most 1.02; with `--short-fits`, a fit's fixed cost at most 10 ms with a
reused callback and 30 ms with a new one. The last line is the fit ratio.

With `--trace-window N` (TensorFlow) it measures instead what a trace
window costs: `DeviceCostCallback(profile_steps=(500, 500 + N))` on a
cached and on an input-bound `tf.py_function` pipeline (2 ms a batch), the
median recorded step inside the window against the 200 steps on each side,
per fit. Targets: traced steps at most 2x the others, an N=100-step trace
under 5 MiB; the last line gives the worst ratio and the largest trace.

Usage: python benchmarks/overhead.py [--backend tensorflow|jax|torch]
       [--rounds 7] [--steps 2000] [--keras-tensorboard] [--short-fits N]
       python benchmarks/overhead.py --trace-window 100 [--rounds 2]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The repository's root, for the demo's models (benchmarks run as scripts).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET = 1.02
TRACE_TARGET_RATIO = 2.0
TRACE_TARGET_BYTES = 5 * 1024 * 1024


def build_model():
    """The common small MLP (100 -> 128 -> 10), as the demo builds it."""
    from demo import scenarios

    return scenarios.mlp()


def fetch_timed_only():
    """The callback's step path without any recording (for the baseline):
    Keras's step run through the callback's own `FetchTimedStep`, the
    fetch timed inside the graph."""
    import keras

    from tb_devicecost.backends.tensorflow import fetch_timed_step  # the same step path

    class FetchTimedOnly(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            original = self.model.train_function
            self._original = original
            step = fetch_timed_step(original, self.model)

            def train_function(iterator):
                return step(iterator)[0]

            self.model.train_function = train_function

        def on_train_end(self, logs=None):
            self.model.train_function = self._original

    return FetchTimedOnly()


def timed_fit(model, data, callbacks):
    started = time.perf_counter()
    if isinstance(data, tuple):
        model.fit(*data, batch_size=32, epochs=1, verbose=0, shuffle=False, callbacks=callbacks)
    else:
        model.fit(data, epochs=1, verbose=0, callbacks=callbacks)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tensorflow", choices=("tensorflow", "jax", "torch"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="write the callback's runs into DIR (one per round) and keep them")
    parser.add_argument("--keras-tensorboard", action="store_true",
                        help="also measure keras.callbacks.TensorBoard(update_freq='batch')")
    parser.add_argument("--short-fits", type=int, default=0, metavar="N",
                        help="also measure the fixed cost of a fit: N rounds of 20-step fits "
                             "without, with a reused and with a new callback")
    parser.add_argument("--trace-window", type=int, default=0, metavar="N",
                        help="measure instead what an N-step trace window costs (TensorFlow)")
    args = parser.parse_args()
    if args.trace_window and args.backend != "tensorflow":
        parser.error("--trace-window measures TensorFlow's profiler: leave --backend out")
    # Keras fixes its backend at import.
    os.environ["KERAS_BACKEND"] = args.backend
    if args.trace_window:
        return trace_cost(args.trace_window, args.rounds)
    import keras
    import numpy as np

    import tb_devicecost

    rng = np.random.default_rng(0)
    x = rng.random((args.steps * 32, 100), dtype=np.float32)
    y = rng.integers(0, 10, args.steps * 32)
    tensorflow = args.backend == "tensorflow"
    if tensorflow:
        import tensorflow as tf

        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE)
        warmup_data = dataset.take(20)
    else:
        dataset = (x, y)
        warmup_data = (x[: 20 * 32], y[: 20 * 32])
    scratch = tempfile.mkdtemp(prefix="devicecost-bench-")
    kept = iter(range(10**6))

    def devicecost_dir():
        if args.keep_logs:
            return os.path.join(args.keep_logs, f"round{next(kept)}")
        return tempfile.mkdtemp(dir=scratch)

    # One model per variant, warmed up once, so tracing is not measured.
    variants = {
        "without": (build_model(), lambda: []),
        "fetch_timed_only": (build_model(), lambda: [fetch_timed_only()]),
        "devicecost": (
            build_model(),
            lambda: [tb_devicecost.DeviceCostCallback(devicecost_dir())],
        ),
    }
    if args.keras_tensorboard:
        variants["keras_tensorboard"] = (
            build_model(),
            lambda: [keras.callbacks.TensorBoard(tempfile.mkdtemp(dir=scratch), update_freq="batch")],
        )
    if not tensorflow:
        del variants["fetch_timed_only"]
    for model, callbacks in variants.values():
        timed_fit(model, warmup_data, callbacks())

    seconds = {name: [] for name in variants}
    for round_index in range(args.rounds):
        for name, (model, callbacks) in variants.items():
            seconds[name].append(timed_fit(model, dataset, callbacks()))
        print(
            f"round {round_index + 1}: "
            + ", ".join(f"{name} {values[-1] * 1e3 / args.steps:.3f} ms/step" for name, values in seconds.items())
        )

    for name in variants:
        if name == "without":
            continue
        ratios = [a / b for a, b in zip(seconds[name], seconds["without"])]
        print(f"{name}: median ratio {statistics.median(ratios):.3f} (per round: "
              + ", ".join(f"{r:.3f}" for r in ratios) + ")")
    recording = None
    if "fetch_timed_only" in seconds:
        recording = [a / b for a, b in zip(seconds["devicecost"], seconds["fetch_timed_only"])]
        print(f"recording alone (devicecost / fetch_timed_only): median ratio "
              f"{statistics.median(recording):.3f}")
    fixed = fixed_cost_per_fit(args, x, y, tensorflow, scratch) if args.short_fits else None
    ratios = [a / b for a, b in zip(seconds["devicecost"], seconds["without"])]
    print(f"median step without callback: {statistics.median(seconds['without']) * 1e3 / args.steps:.3f} ms")
    shutil.rmtree(scratch, ignore_errors=True)

    # Last, the figures of issue 15's table with their targets.
    def ratio(values):
        return (f"{statistics.median(values):.3f} (per round {min(values):.3f}-"
                f"{max(values):.3f}; target <= {TARGET})")

    print(f"SUMMARY {args.backend}, {args.steps}-step fits, {args.rounds} rounds:")
    if recording is not None:
        print(f"  recording alone (devicecost / the same step path recording nothing): "
              f"{ratio(recording)}")
    print(f"  fit with / without DeviceCostCallback (a new callback each fit): {ratio(ratios)}")
    if fixed is not None:
        print(f"  fixed cost per fit (20-step fits of {fixed['base_ms']:.1f} ms): reused callback "
              f"{fixed['reused']:+.1f} ms (target <= 10), new callback {fixed['new']:+.1f} ms "
              "(target <= 30), medians")
    print(f"overhead ratio with/without DeviceCostCallback ({args.backend}): {statistics.median(ratios):.3f}")
    return 0


def fixed_cost_per_fit(args, x, y, tensorflow, scratch):
    """What a fit costs beyond its steps: 20-step fits, alternating."""
    import tb_devicecost

    if tensorflow:
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((x[: 20 * 32], y[: 20 * 32])).batch(32).cache()
    else:
        data = (x[: 20 * 32], y[: 20 * 32])
    model = build_model()
    reused = tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(dir=scratch))
    for callbacks in ([], [reused]):
        timed_fit(model, data, callbacks)  # trace and warm up
    times = {"without": [], "reused": [], "new": []}
    for _ in range(args.short_fits):
        times["without"].append(timed_fit(model, data, []))
        times["reused"].append(timed_fit(model, data, [reused]))
        times["new"].append(
            timed_fit(model, data, [tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(dir=scratch))])
        )
    base = statistics.median(times["without"])
    print(f"20-step fit without a callback: {base * 1e3:.1f} ms (median)")
    medians = {"base_ms": base * 1e3}
    for name in ("reused", "new"):
        extra = [(a - b) * 1e3 for a, b in zip(times[name], times["without"])]
        medians[name] = statistics.median(extra)
        print(f"fixed cost per fit, {name} callback: {statistics.median(extra):+.1f} ms median "
              f"({min(extra):+.1f} to {max(extra):+.1f}; targets: reused <= 10, new <= 30)")
    return medians


def trace_datasets(steps):
    """A cached pipeline and an input-bound one (2 ms of Python a batch)."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((steps * 32, 100), dtype=np.float32)
    y = rng.integers(0, 10, steps * 32)

    def sleep(a, b):
        time.sleep(0.002)
        return a, b

    def slowed(a, b):
        # Keras needs the shapes a `py_function` loses.
        a2, b2 = tf.py_function(sleep, [a, b], [tf.float32, tf.int64])
        return tf.ensure_shape(a2, [None, 100]), tf.ensure_shape(b2, [None])

    return {
        "cached": tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE),
        "input_bound": tf.data.Dataset.from_tensor_slices((x, y)).batch(32).map(slowed),
    }


def trace_cost(window, rounds):
    """Traced against untraced recorded steps, and the trace's size."""
    import tb_devicecost
    from tb_devicecost.reading import reader

    start, stop = 500, 500 + window
    scratch = tempfile.mkdtemp(prefix="devicecost-trace-")
    worst_ratio, largest = 0.0, 0
    for round_index in range(rounds):
        for name, dataset in trace_datasets(stop + 500).items():
            log_dir = os.path.join(scratch, f"{name}{round_index}")
            build_model().fit(
                dataset, epochs=1, verbose=0,
                callbacks=[tb_devicecost.DeviceCostCallback(log_dir, profile_steps=(start, stop))],
            )
            [record] = reader.read_runs(reader.local_provider(log_dir), series_points=0)
            [trace] = record.trace["windows"]
            parts = ("data_wait_ms", "compute_ms", "host_overhead_ms")
            traced = [sum(entry[k] for k in parts) for entry in trace["recorded_steps"]]
            # Untraced neighbours, from the full series (read without sampling).
            full = reader.read_runs(reader.local_provider(log_dir), series_points=100_000)[0].series
            total = full["data_wait_ms"] + full["compute_ms"] + full["host_overhead_ms"]
            neighbours = [t for s, t in zip(full["step"], total)
                          if start - 200 <= s < start or stop <= s < stop + 200]
            ratio = statistics.median(traced) / statistics.median(neighbours)
            worst_ratio = max(worst_ratio, ratio)
            largest = max(largest, trace["trace_bytes"])
            print(f"round {round_index + 1} {name}: traced median {statistics.median(traced):.3f} ms, "
                  f"untraced median {statistics.median(neighbours):.3f} ms, ratio {ratio:.2f}, "
                  f"trace {trace['trace_bytes'] / 1024:.0f} KiB for {len(trace['steps'])} steps, "
                  f"trace input-wait share {trace['summary'].get('input_wait_fraction', 0):.2f}")
    shutil.rmtree(scratch, ignore_errors=True)
    met = worst_ratio <= TRACE_TARGET_RATIO and largest <= TRACE_TARGET_BYTES
    print(f"trace window cost: worst traced/untraced step ratio {worst_ratio:.2f} (target <= "
          f"{TRACE_TARGET_RATIO}), largest trace {largest / 1024:.0f} KiB per {window} steps "
          f"(target <= {TRACE_TARGET_BYTES // 2**20} MiB per 100): {'met' if met else 'not met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
