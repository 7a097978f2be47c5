"""The callback's cost on the JAX and PyTorch backends, on a GPU and its CPU.

Target: on every GPU case, the median ratio of a fit's time with the
callback to without it is at most 1.03 (a callback that overrides a batch
hook without `async_safe` costs up to 1.47x: docs/PERFORMANCE.md).

Cases: the common MLP (100 -> 128 -> 10) at batch 32 and 8192, and a CNN on
64x64x3 images at batch 128, each trained from arrays in memory. Per case:
one warm-up fit (compilation) and one kept fit with the callback as users
get it, then ROUNDS rounds, each REPEATS fits without and REPEATS with
`DeviceCostCallback(device_busy=False)` (a new one each fit, as most users
do), alternating so drift hits both alike. A round's ratio is its fastest
fit with the callback over its fastest without: interference (other
processes, the GC, the host's bursts) only ever adds time, so the minima
are the fits' own cost, where single fits here vary by +-30%. The median of
the per-round ratios is reported, with its interquartile range. The device-busy window (on by default on the GPU) is a
one-off per run, measured apart: the median fit with the default callback
(3 rounds) minus the median fit with `device_busy=False`. The recorded runs are kept (`--out`), and a sweep of the MLP over
batch sizes is recorded too (the crossover data of docs/PERFORMANCE.md).

Also checked, per case, against a clock outside Keras: each round adds
fits of half the steps with the callback (the fastest counts), and the difference of the two
fits' median times over the difference of their steps is the steady time
per step (the fixed cost of a fit cancels). The median of the timed fits'
recorded mean steps over the steps it counts (each full fit's last
`steps - half`: a fit's first steps run slower than its last) must be within 5% of it. That
difference of two medians moves by several percent with the host's noise
(single fits vary by +-15%): the gap is printed with a bootstrap 95%
interval of its own, the rounds resampled whole, and paired: the median of
each round's recorded mean step over its own full less half fit (fits back
to back, so the host's drift cancels: on the H200 host intervals 2.8 to
5.2 points wide against 6.5 to 11.0 for the same fits). Each kept fit is
also set against its own
span, read by a callback outside ours from its first epoch's start to its
end: the share of that span no recorded step covers ("fit span not in a
step"; issue 36's target: within 2%).

Beside each pair's wall ratio, the ratio of its CPU time: the training
thread's (`time.thread_time`), where a host-bound loop's pace is set, and
the process's. On the H200 host's KVM vCPUs single fits vary by +-15% in
wall time; CPU time holds no wake-up latency, so its median moves less
(pinning the threads instead halved the spread and slowed JAX's step by
7-24%: tests/data/h200/overhead/pinning_*).

Each backend and device runs in a process of its own (Keras fixes its
backend at import; the CPU runs hide the GPU from the framework).

With `--segments N` a fit is N epochs, and its time is its median epoch
period (from one epoch's start to the next's, by a callback outside ours):
the steady cost per step, with the callback's epoch end in it; the whole
fits' ratio is reported beside it (`fit_ratio`), and the outside clock is
that period over its steps.

One run's interval does not hold the next run's median on those hosts
(the host drifts over minutes; a run takes its pairs as independent), so
runs of the same step code are the measure together: `--pool FILE ...`
reads kept `--json` files and prints, per case, each run's median, the
median of every pair pooled, and a two-level bootstrap 95% interval of it
(runs resampled, then each chosen run's pairs), which widens with the
runs' spread.

Usage: python benchmarks/gpu_backends.py --out DIR [--rounds 3] [--repeats 2]
    [--steps-factor 1.0] [--segments 1] [--json FILE]
       python benchmarks/gpu_backends.py --pool FILE [FILE ...]
Each case's figures go to `results_<backend>_<device>.json` under `--out`
(and to FILE with `--json`); the summary table is printed last.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time

# (model, batch, steps per fit on the GPU, on the CPU)
CASES = (
    ("mlp", 32, 1000, 1000),
    ("mlp", 8192, 400, 200),
    ("cnn", 128, 400, 24),
)
SWEEP_BATCHES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
SWEEP_STEPS = 60


def worker(backend, device, out, rounds, sweep=True, cases=None, repeats=1, steps_factor=1.0,
           segments=1):
    os.environ["KERAS_BACKEND"] = backend
    import keras

    import tb_devicecost
    from tb_devicecost import words
    from tb_devicecost.reading import reader
    from models import build, data

    class EpochPeriods(keras.callbacks.Callback):
        """When each epoch began, and when the fit ended: the periods hold
        everything between, every callback's epoch hooks included,
        whatever their order. Not ours: a clock outside the callback."""

        def __init__(self):
            super().__init__()
            self.marks = []

        def on_epoch_begin(self, epoch, logs=None):
            self.marks.append(time.perf_counter())

        def on_train_end(self, logs=None):
            self.marks.append(time.perf_counter())

    fit_epochs = max(1, segments)

    spans = {}
    # The last fit's CPU seconds: `(training thread, whole process)`.
    last_cpu = [None]

    def fit_seconds(model, x, y, batch, callbacks, epochs=1):
        """`(whole fit, median epoch period)` in seconds; a fit of one
        epoch is its own period (the whole-fit estimator). The span from
        the first epoch's start to the fit's end, read outside our
        callback, is kept by our callback's log directory (`spans`), and
        the fit's CPU time in `last_cpu`."""
        periods = EpochPeriods()
        thread_cpu, process_cpu = time.thread_time(), time.process_time()
        started = time.perf_counter()
        model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, shuffle=False,
                  callbacks=callbacks + [periods])
        whole = time.perf_counter() - started
        last_cpu[0] = (time.thread_time() - thread_cpu, time.process_time() - process_cpu)
        for callback in callbacks:
            spans[getattr(callback, "log_dir", None)] = periods.marks[-1] - periods.marks[0]
        if epochs == 1:
            return whole, whole
        return whole, statistics.median(b - a for a, b in zip(periods.marks, periods.marks[1:]))

    tag = f"{backend}_{device}"
    results = []
    for kind, batch, gpu_steps, cpu_steps in CASES:
        if cases and f"{kind}{batch}" not in cases:
            continue
        steps = max(2, int((gpu_steps if device == "gpu" else cpu_steps) * steps_factor))
        # With segments, a fit is that many epochs of `per_epoch` steps.
        per_epoch = max(2, steps // segments) if segments > 1 else steps
        steps = per_epoch * segments if segments > 1 else steps
        half = steps // 2
        x, y = data(kind, batch * steps)
        model = build(kind)
        fit_seconds(model, x, y, batch, [])  # compile
        if segments > 1:
            x, y = x[: batch * per_epoch], y[: batch * per_epoch]
        run_dir = os.path.join(out, "runs", f"{tag}_{kind}_b{batch}")

        def timed(directory):
            # The per-step cost: the device-busy window, a one-off per run,
            # is measured apart (`busy_window_s`).
            return tb_devicecost.DeviceCostCallback(
                os.path.join(out, "scratch", directory), device_busy=False
            )

        # The kept run: the callback as users get it (default settings,
        # the device-busy window included on the GPU).
        with_default = [fit_seconds(model, x, y, batch, [tb_devicecost.DeviceCostCallback(run_dir)],
                                    fit_epochs)[0]]
        without, with_callback, with_half, kept, single_ratios = [], [], [], [], []
        # Each pair's ratios of CPU time: `(training thread, process)`.
        cpu_ratios = []
        # Per round, the fastest epoch period of each kind (`--segments`).
        period_without, period_with = [], []
        for index in range(rounds):
            # The fastest of `repeats` fits each, alternating: interference
            # only ever adds time, so a round's ratio of minima measures the
            # callback, not the host's bursts.
            pair, fastest = [float("inf"), float("inf")], 0
            periods = [float("inf"), float("inf")]
            for repeat in range(repeats):
                single, cpu = [None, None], [None, None]
                for which in ((0, 1) if (index + repeat) % 2 == 0 else (1, 0)):
                    callbacks = [timed(f"{tag}_{kind}_{index}_{repeat}")] if which else []
                    seconds, period = fit_seconds(model, x, y, batch, callbacks, fit_epochs)
                    if which and period < periods[1]:
                        fastest = repeat  # Its record is the one compared.
                    pair[which] = min(pair[which], seconds)
                    periods[which] = min(periods[which], period)
                    single[which], cpu[which] = seconds, last_cpu[0]
                # Single whole fits back to back, as a user feels them.
                single_ratios.append(single[1] / single[0])
                cpu_ratios.append(tuple(b / a if a > 0 else float("nan")
                                        for a, b in zip(cpu[0], cpu[1])))
            without.append(pair[0])
            with_callback.append(pair[1])
            period_without.append(periods[0])
            period_with.append(periods[1])
            kept.append(os.path.join(out, "scratch", f"{tag}_{kind}_{index}_{fastest}"))
            if segments <= 1:
                # The half-length fit, by the same estimator (its fastest).
                with_half.append(min(
                    fit_seconds(model, x[: batch * half], y[: batch * half], batch,
                                [timed(f"h{tag}_{kind}_{index}_{repeat}")])[0]
                    for repeat in range(repeats)
                ))
            if index < 3:
                with_default.append(fit_seconds(
                    model, x, y, batch,
                    [tb_devicecost.DeviceCostCallback(os.path.join(out, "scratch", f"d{tag}_{kind}_{index}"))],
                    fit_epochs,
                )[0])
        [record] = [
            r for r in reader.read_runs(reader.local_provider(run_dir)) if r.run == "train"
        ]
        aggregate = record.aggregate
        if segments > 1:
            # The steady time per step: an epoch's period over its steps.
            outside_ms = statistics.median(period_with) / per_epoch * 1e3
        else:
            outside_ms = (statistics.median(with_callback) - statistics.median(with_half)) / (steps - half) * 1e3
        # The recorded mean step of the fits the outside clock counted (each
        # round's fastest with the callback), their median: fit times vary
        # by tens of percent from one fit to the next here, so another fit's
        # record against these minima would say little.
        recorded, counted, own_us, uncovered = [], [], [], []
        for directory in kept:
            # Every step's point (the series is sampled to
            # `DEFAULT_SERIES_POINTS` otherwise): the last half is counted.
            [timed_record] = [
                r for r in reader.read_runs(
                    reader.local_provider(directory),
                    series_points=max(steps, reader.DEFAULT_SERIES_POINTS))
                if r.run == "train"
            ]
            recorded.append(timed_record.aggregate["components"]["step"]["mean_ms"])
            # Against the half fits' difference, the steps it counts: the
            # full fit's last `steps - half`, like with like (a fit's first
            # steps run 5-7% slower than its last on this project's CPU).
            counted.append(_last_steps_mean_ms(timed_record, steps - half)
                           if segments <= 1 else recorded[-1])
            # The same fit's own clock, outside ours: the share of its span
            # (first epoch's start to the fit's end) that no recorded step
            # covers (our hooks outside the steps, the drains and writes
            # kept out of them, Keras's epoch and train ends).
            span_s = spans.get(directory)
            if span_s:
                covered_s = timed_record.aggregate["components"]["step"]["sum_ms"] / 1e3
                uncovered.append((span_s - covered_s) / span_s)
            # What the run says measuring took of each step (issue 36).
            own = words.analyze_run(timed_record).get("self_us_per_step")
            if own is not None:
                own_us.append(own)
        recorded_ms = statistics.median(recorded)
        counted_ms = statistics.median(counted)
        result = {
            "backend": backend,
            "device": device,
            "case": f"{kind} b{batch}",
            "steps_per_fit": steps,
            "ms_per_step_without": statistics.median(without) / steps * 1e3,
            "ms_per_step_with": statistics.median(with_callback) / steps * 1e3,
            # Each round's pair ran back to back: the median of their ratios
            # is steadier than the ratio of medians on a shared machine.
            "ratio": statistics.median(b / a for a, b in zip(period_without, period_with)),
            # The whole fits' ratio, each fit's fixed cost included (the same
            # as `ratio` without `--segments`).
            "fit_ratio": statistics.median(b / a for a, b in zip(without, with_callback)),
            "segments": segments,
            # The default callback's fit minus the per-step one's: the
            # device-busy window's one-off cost (about 0 on the CPU).
            "busy_window_s": statistics.median(with_default) - statistics.median(with_callback),
            "ratios": [b / a for a, b in zip(period_without, period_with)],
            "ratio_interquartile": statistics.quantiles(
                [b / a for a, b in zip(period_without, period_with)], n=4)[::2] if rounds > 1 else None,
            "repeats": repeats,
            # Every pair of single whole fits: the median ratio and a
            # bootstrap 95% interval of that median (issue 36's measure).
            "single_ratios": single_ratios,
            "single_ratio": statistics.median(single_ratios),
            "single_ratio_ci95": bootstrap_median_interval(single_ratios),
            # The same pairs' CPU time with / without: the training thread's
            # (where a host-bound loop's pace is set; no wake-up latency of
            # the host's vCPUs in it) and the process's, each with its
            # bootstrap 95% interval of the median.
            "single_thread_cpu_ratios": [r[0] for r in cpu_ratios],
            "single_thread_cpu_ratio": statistics.median(r[0] for r in cpu_ratios),
            "single_thread_cpu_ratio_ci95": bootstrap_median_interval([r[0] for r in cpu_ratios]),
            "single_process_cpu_ratio": statistics.median(r[1] for r in cpu_ratios),
            "single_process_cpu_ratio_ci95": bootstrap_median_interval([r[1] for r in cpu_ratios]),
            "recorded_mean_step_ms": recorded_ms,
            "outside_clock_step_ms": outside_ms,
            # The recorded mean of the steps the outside clock counts.
            "recorded_counted_step_ms": counted_ms,
            "accounting_gap": abs(counted_ms - outside_ms) / outside_ms,
            "accounting_gap_signed": counted_ms / outside_ms - 1.0,
            # The across-fits clock's own noise: a bootstrap 95% interval of
            # the signed gap, rounds resampled whole (each round's full and
            # half fit and its record together). Two medians of fits that
            # vary by +-15% differ by several percent from run to run.
            "accounting_gap_ci95": (
                across_fits_gap_interval(counted, with_callback, with_half, steps - half)
                if segments <= 1 else None),
            # The same clock round by round: each round's recorded mean step
            # against its own full and half fits' difference, the median of
            # those ratios (signed), with its bootstrap 95% interval. Fits
            # of one round run back to back, so the host's drift over
            # minutes cancels: a narrower interval on the same fits.
            "paired_gap": paired_gap(counted, with_callback, with_half, steps - half)
            if segments <= 1 else None,
            # Every fit's seconds, in round order (the half fits' too).
            "fit_seconds": {"without": without, "with": with_callback, "half": with_half},
            "recorded_mean_steps_ms": recorded,
            "recorded_counted_steps_ms": counted,
            # Per kept fit against its own span: no fit-to-fit noise.
            "uncovered_share": statistics.median(uncovered) if uncovered else None,
            "self_us_per_step": statistics.median(own_us) if own_us else None,
            "p50_ms": {
                name: aggregate["components"][name]["p50_ms"]
                for name in ("step", "data_wait", "compute", "host_overhead")
            },
            "fetch_floor_ms": aggregate["fetch_floor_ms"],
            "device_model": [
                d.get("model") for d in record.placement["devices"]["physical"] if d["kind"] != "CPU"
            ] if record.placement else None,
        }
        results.append(result)
        print(json.dumps(result), flush=True)

    # The sweep: the MLP over batch sizes, recorded.
    for batch in SWEEP_BATCHES if sweep else ():
        x, y = data("mlp", batch * SWEEP_STEPS)
        model = build("mlp")
        callback = tb_devicecost.DeviceCostCallback(
            os.path.join(out, "sweep", f"{tag}_b{batch}")
        )
        model.fit(x, y, batch_size=batch, epochs=2, verbose=0, shuffle=False, callbacks=[callback])
    with open(os.path.join(out, f"results_{tag}.json"), "w", encoding="utf-8") as file:
        json.dump(results, file)


def _last_steps_mean_ms(record, count):
    """The mean of a run's last `count` recorded steps (ms), or its whole
    mean where it recorded fewer; `record` read with a point per step."""
    import numpy as np

    series = record.series
    parts = sum(np.asarray(series[name], dtype=float)
                for name in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    if len(parts) < count or count < 1:
        return record.aggregate["components"]["step"]["mean_ms"]
    return float(np.mean(parts[-count:]))


def across_fits_gap_interval(recorded_ms, full_s, half_s, extra_steps, resamples=10000, seed=0):
    """A bootstrap 95% interval of `(recorded - outside) / outside`, the
    across-fits clock's signed gap: `outside` the difference of the full
    and half fits' medians over their `extra_steps`, `recorded` the median
    of the full fits' recorded mean steps (ms), the rounds resampled whole
    (percentile method, seeded). `None` for fewer than two rounds."""
    import numpy as np

    recorded, full, half = (np.asarray(v, dtype=float) for v in (recorded_ms, full_s, half_s))
    if not len(recorded) == len(full) == len(half) or len(full) < 2:
        return None
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(full), size=(resamples, len(full)))
    outside = (np.median(full[index], axis=1) - np.median(half[index], axis=1)) / extra_steps * 1e3
    gaps = np.median(recorded[index], axis=1) / outside - 1.0
    low, high = np.percentile(gaps, [2.5, 97.5])
    return float(low), float(high)


def paired_gap(recorded_ms, full_s, half_s, extra_steps):
    """`(median, [low, high])` of the rounds' signed gaps
    `recorded / outside - 1`, each round's `outside` its own full less half
    fit over their `extra_steps` (ms), with the median's bootstrap 95%
    interval; `None` without two rounds whose full fit outlasted the half."""
    gaps = [
        recorded / ((full - half) / extra_steps * 1e3) - 1.0
        for recorded, full, half in zip(recorded_ms, full_s, half_s) if full > half
    ]
    interval = bootstrap_median_interval(gaps)
    return None if interval is None else (statistics.median(gaps), interval)


def bootstrap_median_interval(values, resamples=10000, seed=0):
    """A bootstrap 95% interval of the median of `values` (percentile
    method, seeded: the same values give the same interval)."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return None
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(values, size=(resamples, len(values))), axis=1)
    return [float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))]


def pooled_median_interval(runs, resamples=4000, seed=0):
    """`(median, [low, high])`: the median of every run's values pooled,
    and a two-level bootstrap 95% interval of it: each resample draws as
    many runs as there are, with replacement, then each drawn run's
    values, with replacement (seeded: the same runs give the same
    interval). `None` for fewer than two values."""
    import numpy as np

    runs = [np.asarray(run, dtype=float) for run in runs if len(run)]
    if sum(len(run) for run in runs) < 2:
        return None
    rng = np.random.default_rng(seed)
    medians = np.empty(resamples)
    for index in range(resamples):
        drawn = rng.integers(len(runs), size=len(runs))
        medians[index] = np.median(np.concatenate(
            [rng.choice(runs[run], size=len(runs[run])) for run in drawn]))
    median = float(np.median(np.concatenate(runs)))
    return median, [float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))]


def pool(paths):
    """Rows of `pooled_median_interval` over kept `--json` files, one per
    `(backend, device, case)`: `(key, [(file, median, pairs)], median,
    interval)`. Raises `ValueError` on a file that is not such a list."""
    runs = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as file:
                results = json.load(file)
            for result in results:
                key = (result["backend"], result["device"], result["case"])
                ratios = [float(ratio) for ratio in result["single_ratios"]]
                runs.setdefault(key, []).append((os.path.basename(path), ratios))
        except (OSError, ValueError, TypeError, KeyError) as error:
            raise ValueError(f"{path}: not a kept `--json` file of this benchmark ({error})")
    rows = []
    for key, kept in runs.items():
        pooled = pooled_median_interval([ratios for _, ratios in kept])
        if pooled is None:
            continue
        each = [(name, statistics.median(ratios), len(ratios)) for name, ratios in kept if ratios]
        rows.append((key, each, pooled[0], pooled[1]))
    return rows


def _print_pooled(paths):
    try:
        rows = pool(paths)
    except ValueError as error:
        sys.exit(f"gpu_backends.py: {error}")
    print("| backend | device | case | runs (median, pairs) | pooled median (two-level 95% interval, pairs) |")
    print("|---|---|---|---|---|")
    for (backend, device, case), each, median, (low, high) in rows:
        runs = "; ".join(f"{name} {value:.3f} ({pairs})" for name, value, pairs in each)
        pairs = sum(pairs for _, _, pairs in each)
        print(f"| {backend} | {device} | {case} | {runs} | {median:.3f} ({low:.3f}-{high:.3f}, {pairs}) |")


def _gap_interval(result):
    interval = result.get("accounting_gap_ci95")
    text = f" ({interval[0] * 100:+.1f} to {interval[1] * 100:+.1f})" if interval else ""
    paired = result.get("paired_gap")
    if paired:
        gap, (low, high) = paired
        text += f"; paired {gap * 100:+.1f}% ({low * 100:+.1f} to {high * 100:+.1f})"
    return text


def _interquartile(result):
    quartiles = result.get("ratio_interquartile")
    return f" ({quartiles[0]:.3f}-{quartiles[1]:.3f})" if quartiles else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--pool", nargs="+", metavar="FILE",
                        help="kept --json files of runs of the same code: each case's runs "
                             "and their pairs pooled, with a two-level bootstrap interval")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="mlp32,mlp8192,cnn128",
                        help="comma-separated subset of mlp32, mlp8192, cnn128")
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "DEVICE"))
    parser.add_argument("--backends", default="jax,torch")
    parser.add_argument("--devices", default="gpu,cpu")
    parser.add_argument("--no-sweep", action="store_true", help="skip the batch-size sweep")
    parser.add_argument("--json", metavar="FILE",
                        help="also write every case's figures, each pair's ratios included, to FILE")
    parser.add_argument("--repeats", type=int, default=2,
                        help="fits of each kind per round, alternating; the fastest counts")
    parser.add_argument("--steps-factor", type=float, default=1.0,
                        help="scales every case's steps per fit (PyTorch's steps are slower)")
    parser.add_argument("--segments", type=int, default=1,
                        help="epochs a fit is cut into: a fit's time is then its median "
                             "epoch period (the steady cost per step; the fixed cost of a "
                             "fit is reported apart, `fit_ratio`)")
    args = parser.parse_args()
    if args.pool:
        _print_pooled(args.pool)
        return
    if not args.out:
        parser.error("--out is required (or --pool FILE ...)")
    if args.worker:
        worker(*args.worker, args.out, args.rounds, sweep=not args.no_sweep,
               cases=args.cases.split(","), repeats=args.repeats, steps_factor=args.steps_factor,
               segments=args.segments)
        return
    os.makedirs(args.out, exist_ok=True)
    results = []
    for backend in args.backends.split(","):
        for device in args.devices.split(","):
            env = dict(os.environ, KERAS_BACKEND=backend, PYTHONUNBUFFERED="1")
            if device == "cpu":
                env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
            log = os.path.join(args.out, f"log_{backend}_{device}.txt")
            with open(log, "w", encoding="utf-8") as output:
                code = subprocess.call(
                    [sys.executable, __file__, "--out", args.out, "--rounds", str(args.rounds),
                     "--repeats", str(args.repeats), "--steps-factor", str(args.steps_factor),
                     "--segments", str(args.segments),
                     "--cases", args.cases, "--worker", backend, device] + (["--no-sweep"] if args.no_sweep else []),
                    stdout=output, stderr=subprocess.STDOUT, env=env,
                )
            path = os.path.join(args.out, f"results_{backend}_{device}.json")
            if code != 0 or not os.path.exists(path):
                print(f"{backend} {device}: failed (exit {code}); see {log}")
                with open(log, encoding="utf-8") as output:
                    print(output.read()[-3000:])
                continue
            with open(path, encoding="utf-8") as file:
                results.extend(json.load(file))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(results, file)
    with tarfile.open(os.path.join(args.out, "recorded_runs.tar.gz"), "w:gz") as archive:
        for folder in ("runs", "sweep"):
            if os.path.isdir(os.path.join(args.out, folder)):
                archive.add(os.path.join(args.out, folder), arcname=folder)
    print("| backend | device | case | fit ms/step without | with | ratio (median, interquartile) | whole fits | single fits (median, 95% interval, pairs) | their CPU, training thread; process | recorded mean step (over the steps the outside clock counts) | outside clock | their gap (95% interval, signed; paired by round) | fit span not in a step | measuring, µs a step | device-busy window, once |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        interval = r.get("single_ratio_ci95")
        single = (f"{r['single_ratio']:.3f} ({interval[0]:.3f}-{interval[1]:.3f}, {len(r['single_ratios'])})"
                  if interval else "-")
        cpu = "; ".join(
            f"{r[f'single_{which}_cpu_ratio']:.3f} ({r[f'single_{which}_cpu_ratio_ci95'][0]:.3f}-"
            f"{r[f'single_{which}_cpu_ratio_ci95'][1]:.3f})"
            for which in ("thread", "process") if r.get(f"single_{which}_cpu_ratio_ci95")) or "-"
        print(
            f"| {r['backend']} | {r['device']} | {r['case']} | {r['ms_per_step_without']:.3f} | "
            f"{r['ms_per_step_with']:.3f} | {r['ratio']:.3f}{_interquartile(r)} | {r['fit_ratio']:.3f} | "
            f"{single} | {cpu} | "
            f"{r['recorded_mean_step_ms']:.3f}"
            + (f" ({r['recorded_counted_step_ms']:.3f})" if "recorded_counted_step_ms" in r else "")
            + " | "
            f"{r['outside_clock_step_ms']:.3f} | {r.get('accounting_gap_signed', r['accounting_gap']) * 100:+.1f}%{_gap_interval(r)} | "
            + (f"{r['uncovered_share'] * 100:.1f}% | " if r.get("uncovered_share") is not None else "- | ")
            + (f"{r['self_us_per_step']:.1f} | " if r.get("self_us_per_step") is not None else "- | ")
            + f"{r['busy_window_s']:+.2f} s |"
        )
    gpu = [r["ratio"] for r in results if r["device"] == "gpu"]
    if gpu:
        print(f"worst GPU ratio with/without, fastest of repeats: {max(gpu):.3f} (target <= 1.03)")
    single = [r for r in results if r["device"] == "gpu" and r.get("single_ratio_ci95")]
    if single:
        worst = max(single, key=lambda r: r["single_ratio_ci95"][1])
        print(f"worst GPU single-fit ratio: median {max(r['single_ratio'] for r in single):.3f} "
              f"(target <= 1.02), 95% interval's upper end {worst['single_ratio_ci95'][1]:.3f} "
              f"(target <= 1.04)")


if __name__ == "__main__":
    main()
