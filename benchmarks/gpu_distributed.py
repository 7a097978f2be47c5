"""A distributed fit recorded per process: the straggler named, and the cost.

Keras 3 on JAX with `keras.distribution.DataParallel` over one process per
GPU (`jax.distributed` on 127.0.0.1, each process seeing its own GPU), the
seeds' MLP (batch 32 per process) and the CNN of `gpu_backends.py` (batch
128 per process), each once balanced and once with the last process's input
slowed by 20 ms per batch. The report must name that process as the
straggler with cause `input_bound` in the slowed case and no straggler in
the balanced one. The callback's overhead: balanced fits with and without
it, alternating, the median of the per-round ratios.

On a machine with fewer than two GPUs the same job runs as two CPU
processes (gloo collectives), the MLP only, so the script itself is checked
anywhere.

Target: the straggler named in every slowed case and none in the balanced
ones; the callback's ratio at most 1.03 on every GPU case.

Usage: python benchmarks/gpu_distributed.py --out DIR [--rounds 5]
Prints a line per case, then the overhead summary with its target last.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

BATCHES = {"mlp": 32, "cnn": 128}
STEPS = {"mlp": 300, "cnn": 150}
CPU_STEPS = {"mlp": 60}
# The slowed process's delay per batch.
DELAY_MS = 20.0
TARGET = 1.03


def child(index, count, port, logdir, delay_ms, kind, steps, record):
    """One process of the job: prints `{"fit_s": ...}` last."""
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
    keras.utils.set_random_seed(0)
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
    callbacks = [tb_devicecost.DeviceCostCallback(logdir)] if record else []
    started = time.perf_counter()
    model.fit(Batches(), epochs=1, verbose=0, callbacks=callbacks)
    print(json.dumps({"fit_s": time.perf_counter() - started}), flush=True)


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


def run_job(out, name, kind, delay_ms, record, gpus, timeout=600):
    """All processes of one job; returns their fit times (seconds)."""
    count = gpus if gpus >= 2 else 2
    steps = STEPS[kind] if gpus >= 2 else CPU_STEPS[kind]
    port = _free_port()
    logdir = os.path.join(out, "runs", name)
    processes, logs = [], []
    try:
        for index in range(count):
            env = dict(os.environ, KERAS_BACKEND="jax", PYTHONUNBUFFERED="1")
            if gpus >= 2:
                env["CUDA_VISIBLE_DEVICES"] = str(index)
            else:
                env.update(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
            # Files, not pipes: a full pipe would stop a process inside a
            # collective, and every other process with it.
            log = open(os.path.join(out, f"{name}_{index}.log"), "w", encoding="utf-8")
            logs.append(log)
            processes.append(subprocess.Popen(
                [sys.executable, __file__, "--child", str(index), str(count), str(port),
                 logdir, str(delay_ms), kind, str(steps), str(int(record))],
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
        path = os.path.join(out, f"{name}_{index}.log")
        with open(path, encoding="utf-8") as log:
            lines = log.read().strip().splitlines()
        if process.returncode != 0 or not lines:
            raise SystemExit(f"{name}: process {index} failed (exit {process.returncode}); see {path}")
        times.append(json.loads(lines[-1])["fit_s"])
    return times, logdir


def workers_of(logdir):
    from tb_devicecost import analysis
    from tb_devicecost import reader

    records = reader.read_runs(reader.local_provider(logdir))
    report = analysis.build_report(records)
    [job] = report["workers"]
    # Each process's device busy share, from its device-busy trace window
    # (GPUs only: a CPU run traces none).
    busy = {
        entry["process_index"]: entry["device_busy_fraction"] for entry in job["runs"]
    }
    return job, busy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=8)
    args = parser.parse_args()
    if args.child:
        index, count, port, logdir, delay, kind, steps, record = args.child
        child(int(index), int(count), int(port), logdir, float(delay), kind, int(steps), record == "1")
        return
    if not args.out:
        parser.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    gpus = _gpus()
    where = f"{gpus} GPUs, one process each" if gpus >= 2 else "2 CPU processes (fewer than 2 GPUs here)"
    print(f"Job: {where}")
    results = []
    # On CPUs the CNN's step (about a second here) overlaps any delay
    # shorter than itself, so no process holds the others back: the
    # fallback runs the MLP only.
    kinds = ("mlp", "cnn") if gpus >= 2 else ("mlp",)
    for kind in kinds:
        for delay in (0.0, DELAY_MS):
            name = f"{kind}_{'slowed' if delay else 'balanced'}"
            _, logdir = run_job(args.out, name, kind, delay, True, gpus)
            job, busy = workers_of(logdir)
            named = job["straggler"]
            ok = (named is not None and job["cause"] == "input_bound") if delay else named is None
            results.append(ok)
            print(
                f"{name}: straggler {named} cause {job['cause']} share "
                f"{job['straggler_share']} skew p50/p90 {job['skew_ms']} ms; "
                f"device busy {busy}: {'as expected' if ok else 'NOT as expected'}",
                flush=True,
            )
    ratios = {}
    for kind in kinds:
        per_round = []
        for index in range(args.rounds):
            without, _ = run_job(args.out, f"{kind}_without_{index}", kind, 0.0, False, gpus)
            with_callback, _ = run_job(args.out, f"{kind}_with_{index}", kind, 0.0, True, gpus)
            # The job's pace is its slowest process's.
            per_round.append(max(with_callback) / max(without))
        ratios[kind] = statistics.median(per_round)
        print(f"{kind}: with/without {ratios[kind]:.3f} (rounds {', '.join(f'{r:.3f}' for r in per_round)})")
    worst = max(ratios.values())
    print(
        f"stragglers as expected in {sum(results)} of {len(results)} cases; "
        f"worst callback ratio with/without {worst:.3f} (target <= {TARGET})"
    )


if __name__ == "__main__":
    main()
