"""A distributed fit recorded per process: each process's verdict, and the cost.

Keras 3 on JAX with `keras.distribution.DataParallel` over one process per
GPU (`jax.distributed` on 127.0.0.1, each process seeing its own GPU), the
seeds' MLP (batch 32 per process) and the CNN of `gpu_backends.py` (batch
128 per process), 300 steps a fit, each once balanced and once with the
last process's input slowed by 20 ms per batch. Those recorded fits trace
steps 10-19 (`device_busy=True`) for each process's device split (compute,
collectives, copies).

Expected (issue 22): in a slowed job the slowed process is the straggler
(cause `input_bound`) and every other process is `waiting_for_others`; in
a balanced job there is no straggler and the processes' device busy
(compute) is within 20% of each other. The callback's cost: fits with the
callback's defaults and without it, alternating, the ratio of the slowest
process's fit times per round, the median over the rounds (at least 5):
one job whose processes each alternate fits without and with a new
callback (ABBA), as every benchmark here alternates A and B in one process;
target (issue 36): the median at most 1.02 and the upper end of its
bootstrap 95% interval at most 1.04, on the MLP and the CNN.

Keras's torch backend cannot run a multi-process `fit` (Keras 3.15: its
`distribution_lib` is `None` on torch, and its trainer wraps no
DistributedDataParallel), so this benchmark is JAX only; docs/SCALE.md.

On a machine with fewer than two GPUs the same job runs as two CPU
processes (gloo collectives), the MLP only and 60 steps a fit, so the
script itself is checked anywhere.

Usage:
    python benchmarks/gpu_distributed.py --out DIR [--processes N] [--rounds 15]

Writes `DIR/results.json` (`RESULT_FILE`) and the recorded runs under
`DIR/runs/<case>/process_<i>/train`; prints a line per case and per
process, then the summary with its targets last.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

BATCHES = {"mlp": 32, "cnn": 128}
STEPS = {"mlp": 300, "cnn": 300}
CPU_STEPS = {"mlp": 60}
# The slowed process's delay per batch.
DELAY_MS = 20.0
TARGET_RATIO = 1.02
# The upper end of the median's bootstrap 95% interval.
TARGET_UPPER = 1.04
# Balanced processes' device busy (compute) within this share of each other.
BUSY_SPREAD = 0.20
RESULT_FILE = "results.json"
RESULT_KEY = "fit_s"


def child(index, count, port, logdir, delay_ms, kind, steps, mode):
    """One process of the job: prints `{"fit_s": ...}` once its fit is done.

    `mode`: `none` (no callback), `default` (the callback's defaults) or
    `traced` (`device_busy=True`: steps 10-19 traced).
    """
    import jax

    # Asking JAX for its backend would start it before `initialize`.
    if os.environ.get("JAX_PLATFORMS") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=count, process_id=index,
        initialization_timeout=120,
    )
    import keras

    import models
    import tb_devicecost

    # The same seed in every process: DataParallel replicates the weights.
    models.set_random_seed(0)
    distribution = keras.distribution.DataParallel()
    distribution.auto_shard_dataset = False
    keras.distribution.set_distribution(distribution)
    batch = BATCHES[kind]
    delay = delay_ms / 1e3 if index == count - 1 else 0.0

    class Batches(keras.utils.PyDataset):
        """This process's part of the data; the last one sleeps per batch."""

        def __init__(self):
            super().__init__()
            self.x, self.y = models.data(kind, batch, seed=index)

        def __len__(self):
            return steps

        def __getitem__(self, item):
            if delay:
                time.sleep(delay)
            return self.x, self.y

    model = models.build(kind)
    model.fit(Batches(), epochs=1, verbose=0)  # compile outside the timing
    if mode.startswith("pairs:"):
        # Fits without and with a new callback (its defaults), alternating
        # in this process (ABBA), so the machine's drift hits both alike.
        pairs = []
        for index in range(int(mode.split(":")[1])):
            times = {}
            for which in (("none", "default") if index % 2 == 0 else ("default", "none")):
                callbacks = []
                if which == "default":
                    callbacks = [tb_devicecost.DeviceCostCallback(os.path.join(logdir, str(index)))]
                started = time.perf_counter()
                model.fit(Batches(), epochs=1, verbose=0, callbacks=callbacks)
                times[which] = time.perf_counter() - started
            pairs.append([times["none"], times["default"]])
        print(json.dumps({RESULT_KEY: sum(map(sum, pairs)), "pairs": pairs}), flush=True)
        return
    callbacks = []
    if mode == "default":
        callbacks = [tb_devicecost.DeviceCostCallback(logdir)]
    elif mode == "traced":
        callbacks = [tb_devicecost.DeviceCostCallback(logdir, device_busy=True)]
    started = time.perf_counter()
    model.fit(Batches(), epochs=1, verbose=0, callbacks=callbacks)
    print(json.dumps({RESULT_KEY: time.perf_counter() - started}), flush=True)


def result_of(text, key=RESULT_KEY):
    """The fit time a child printed (or its `key`), found by content: JAX's
    distributed shutdown writes warnings after it. `None` when no line
    holds it."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if not (line.startswith("{") and RESULT_KEY in line):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get(RESULT_KEY), (int, float)):
            return value.get(key) if key != RESULT_KEY else float(value[RESULT_KEY])
    return None


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gpus():
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in listing.stdout.splitlines())


def run_job(out, name, kind, delay_ms, mode, count, on_gpus, logdir, timeout=600):
    """All `count` processes of one job; returns their fit times (seconds)."""
    steps = STEPS[kind] if on_gpus else CPU_STEPS[kind]
    port = _free_port()
    logs_dir = os.path.join(out, "logs")
    os.makedirs(logs_dir, exist_ok=True)
    processes, logs = [], []
    try:
        for index in range(count):
            env = dict(os.environ, KERAS_BACKEND="jax", PYTHONUNBUFFERED="1")
            if on_gpus:
                env["CUDA_VISIBLE_DEVICES"] = str(index)
            else:
                env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
            # Files, not pipes: a full pipe would stop a process inside a
            # collective, and every other process with it.
            log = open(os.path.join(logs_dir, f"{name}_{index}.log"), "w", encoding="utf-8")
            logs.append(log)
            processes.append(subprocess.Popen(
                [sys.executable, __file__, "--child", str(index), str(count), str(port),
                 logdir, str(delay_ms), kind, str(steps), mode],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            ))
        deadline = time.monotonic() + timeout
        for process in processes:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in logs:
            log.close()
    times = []
    for index, process in enumerate(processes):
        path = os.path.join(logs_dir, f"{name}_{index}.log")
        with open(path, encoding="utf-8") as log:
            text = log.read()
        fit_s = result_of(text)
        if process.returncode != 0 or fit_s is None:
            raise SystemExit(f"{name}: process {index} failed (exit {process.returncode}); see {path}")
        times.append(result_of(text, "pairs") if mode.startswith("pairs:") else fit_s)
    return times


def job_report(logdir):
    """The job's group in the report, and each process's run object."""
    from tb_devicecost import words
    from tb_devicecost.reading import reader

    records = reader.read_runs(reader.local_provider(logdir))
    report = words.build_report(records)
    [job] = report["workers"]
    runs = {run["run"]: run for run in report["runs"]}
    return job, runs


def case_result(name, kind, delay_ms, count, job, runs, on_gpus=True):
    """One recorded case: per process its verdict and device split, and
    whether the job reads as expected.

    On the CPU fallback the others' wait for the slowed process is partly
    covered by their own step (asynchronous dispatch overlaps the fetch):
    they need not be `waiting_for_others` there, only the straggler named.
    """
    processes = []
    for entry in job["runs"]:
        run = runs.get(entry["run"]) or {}
        processes.append({
            "process_index": entry["process_index"],
            "run": entry["run"],
            "verdict": run.get("verdict"),
            "steady_verdict": run.get("steady_verdict"),
            "own_verdict": run.get("own_verdict"),
            "step_ms_p50": (entry.get("step_ms") or {}).get("p50"),
            "wait_ms_p50": (entry.get("wait_ms") or {}).get("p50"),
            "wait_share": entry.get("wait_share"),
            "device_busy_fraction": run.get("device_busy_fraction"),
            "device_compute_ms": run.get("device_compute_ms"),
            "device_split": run.get("device_split"),
            "device_figures": run.get("device_figures"),
        })
    slowed = count - 1
    # The devices' compute per traced step (median, ms), as the report
    # compares them: a share of the step differs with where a trace cut it.
    spread = job["device_busy_spread"]
    if delay_ms:
        waiting = all(p["steady_verdict"] == "waiting_for_others"
                      for p in processes if p["process_index"] != slowed)
        expected = (
            job["straggler_index"] == slowed and job["cause"] == "input_bound"
            and (waiting or not on_gpus)
        )
    else:
        # Busy shares are compared only where the processes were traced (GPUs).
        expected = job["straggler"] is None and (spread is None or spread <= BUSY_SPREAD)
    return {
        "case": name,
        "kind": kind,
        "delay_ms": delay_ms,
        "slowed_process": slowed if delay_ms else None,
        "straggler_index": job["straggler_index"],
        "cause": job["cause"],
        "straggler_share": job["straggler_share"],
        "skew_ms": job["skew_ms"],
        "aligned_steps": job["aligned_steps"],
        "device_busy_spread": spread,
        "processes": processes,
        "as_expected": bool(expected),
    }


def _print_case(case):
    print(
        f"{case['case']}: straggler {case['straggler_index']} cause {case['cause']} "
        f"share {case['straggler_share']} skew p50 {case['skew_ms']['p50']} ms; "
        f"busy spread {case['device_busy_spread']}: "
        f"{'as expected' if case['as_expected'] else 'NOT as expected'}",
        flush=True,
    )
    for process in case["processes"]:
        split = process["device_split"] or {}
        print(
            f"  process {process['process_index']}: {process['steady_verdict']} "
            f"(own {process['own_verdict']}), wait share {process['wait_share']}, "
            f"device compute {split.get('compute')} collectives {split.get('communication')} "
            f"copies {split.get('memory')}",
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--processes", type=int, default=None,
                        help="processes, one per GPU (default: every GPU here, else 2 on the CPU)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--kinds", default=None, help="comma-separated: mlp,cnn")
    parser.add_argument("--child", nargs=8)
    args = parser.parse_args()
    if args.child:
        index, count, port, logdir, delay, kind, steps, mode = args.child
        child(int(index), int(count), int(port), logdir, float(delay), kind, int(steps), mode)
        return
    if not args.out:
        parser.error("--out is required")
    gpus = _gpus()
    on_gpus = gpus >= 2
    count = args.processes or (gpus if on_gpus else 2)
    if on_gpus and count > gpus:
        parser.error(f"--processes {count} needs {count} GPUs; this machine has {gpus}")
    if count < 2:
        parser.error(f"--processes must be at least 2. Received: {count}")
    os.makedirs(args.out, exist_ok=True)
    where = f"{count} processes, one GPU each" if on_gpus else f"{count} CPU processes (gloo)"
    print(f"Job: {where}", flush=True)
    # On CPUs the CNN's step (about a second here) overlaps any delay
    # shorter than itself, so no process holds the others back: the
    # fallback runs the MLP only.
    kinds = args.kinds.split(",") if args.kinds else (["mlp", "cnn"] if on_gpus else ["mlp"])
    cases = []
    for kind in kinds:
        for delay in (0.0, DELAY_MS):
            name = f"{kind}_{'slowed' if delay else 'balanced'}"
            logdir = os.path.join(args.out, "runs", name)
            shutil.rmtree(logdir, ignore_errors=True)
            run_job(args.out, name, kind, delay, "traced", count, on_gpus, logdir)
            job, runs = job_report(logdir)
            cases.append(case_result(name, kind, delay, count, job, runs, on_gpus))
            _print_case(cases[-1])
    import gpu_backends  # The bootstrap interval of a median (this script's folder).

    overhead = {}
    scratch = os.path.join(args.out, "scratch")
    for kind in kinds:
        # One job; in each process, fits without and with a new callback
        # alternate (`child`, mode `pairs:N`).
        pairs = run_job(args.out, f"{kind}_pairs", kind, 0.0, f"pairs:{args.rounds}", count,
                        on_gpus, scratch)
        shutil.rmtree(scratch, ignore_errors=True)
        # The job's pace is its slowest process's, round by round.
        without_s = [max(process[index][0] for process in pairs) for index in range(args.rounds)]
        with_s = [max(process[index][1] for process in pairs) for index in range(args.rounds)]
        per_round = [b / a for a, b in zip(without_s, with_s)]
        overhead[kind] = {
            "ratio": statistics.median(per_round),
            "ratio_ci95": gpu_backends.bootstrap_median_interval(per_round),
            "rounds": per_round,
            "without_s": without_s,
            "with_s": with_s,
            "steps": STEPS[kind] if on_gpus else CPU_STEPS[kind],
        }
        interval = overhead[kind]["ratio_ci95"] or [float("nan")] * 2
        print(f"{kind}: with/without {overhead[kind]['ratio']:.3f} "
              f"(95% interval of the median {interval[0]:.3f}-{interval[1]:.3f}; "
              f"rounds {', '.join(f'{r:.3f}' for r in per_round)})", flush=True)
    worst = max(entry["ratio"] for entry in overhead.values())
    worst_upper = max((entry["ratio_ci95"] or [0.0, 0.0])[1] for entry in overhead.values())
    result = {
        "command": [os.path.basename(sys.argv[0])] + sys.argv[1:],
        "backend": "jax",
        "on_gpus": on_gpus,
        "gpus": gpus,
        "processes": count,
        "delay_ms": DELAY_MS,
        "rounds": args.rounds,
        "cases": cases,
        "overhead": overhead,
        "targets": {"ratio": TARGET_RATIO, "ratio_upper": TARGET_UPPER, "busy_spread": BUSY_SPREAD},
        "worst_ratio": worst,
        "worst_ratio_upper": worst_upper,
        "cases_as_expected": sum(case["as_expected"] for case in cases),
    }
    with open(os.path.join(args.out, RESULT_FILE), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, allow_nan=False)
    print(
        f"cases as expected: {result['cases_as_expected']} of {len(cases)}; "
        f"worst callback ratio with/without {worst:.3f} (target <= {TARGET_RATIO}), "
        f"its interval's upper end {worst_upper:.3f} (target <= {TARGET_UPPER})",
        flush=True,
    )


if __name__ == "__main__":
    main()
