"""Does a sweep's "at your batch" say what fits without the callback say?

Target: at `--batch`, the sweep (`tb_devicecost.sweep` over five batch
sizes, each device's step fitted as a fixed cost plus a cost per sample)
names the same faster device as fits timed without any callback, and its
ratio of the two devices' steps is within 15% of theirs.

Model: `benchmarks/models.py`'s `--model` (the small CNN by default),
trained from arrays in memory on the backend of KERAS_BACKEND, both devices
in this process (`keras.device` scopes). The fits without the callback:
ROUNDS rounds, each device in turn, each a fit of STEPS steps and one of
2 x STEPS; the difference of the two medians over STEPS is the steady step
(a fit's fixed costs, its warm-up included, cancel). The sweep runs at two
lengths (`--sweep-steps`), to see whether more steps per point change it.

Usage: KERAS_BACKEND=torch python benchmarks/sweep_vs_fits.py --out DIR
    [--model cnn] [--batch 32] [--rounds 5] [--steps 100] [--sweep-steps 50,200]
    [--batches 16,32,64,128,256]
Prints each measurement as a JSON line, then the table with the target last.
"""

import argparse
import json
import os
import statistics
import sys
import time

import models

import tb_devicecost
from tb_devicecost import analysis
from tb_devicecost.reading import reader

def steady_steps(kind, batch, devices, rounds, steps):
    """Per device, the steady step (ms) of fits without any callback."""
    import keras

    x, y = models.data(kind, batch * 2 * steps)
    built = {}
    for device in devices:
        with keras.device(device):
            built[device] = models.build(kind)
            built[device].fit(x[: batch * 2], y[: batch * 2], batch_size=batch, verbose=0)
    times = {device: {1: [], 2: []} for device in devices}
    for _ in range(rounds):
        for device in devices:
            for factor in (1, 2):
                samples = batch * steps * factor
                with keras.device(device):
                    began = time.perf_counter()
                    built[device].fit(x[:samples], y[:samples], batch_size=batch, verbose=0, shuffle=False)
                    times[device][factor].append(time.perf_counter() - began)
    return {
        device: (statistics.median(times[device][2]) - statistics.median(times[device][1])) / steps * 1e3
        for device in devices
    }


def swept(kind, batch, devices, out, steps, batches):
    """The sweep's steps (ms) at `batch` by its fit, and its sentence."""
    x, y = models.data(kind, max(batches) * 2)
    directory = os.path.join(out, f"sweep_{steps}")
    tb_devicecost.sweep(
        lambda: models.build(kind), x, y, batch_sizes=batches, devices=devices,
        log_dir=directory, steps=steps, your_batch_size=batch,
    )
    [sweep] = analysis.build_report(reader.read_runs(reader.local_provider(directory)))["sweeps"]
    return sweep["faster_at"]["step_ms"], sweep["message"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--sweep-steps", default="50,200")
    parser.add_argument("--batches", default="16,32,64,128,256",
                        help="the sweep's batch sizes (a CNN at 4,096 is slow on a CPU)")
    args = parser.parse_args()
    import keras

    backend = keras.backend.backend()
    devices = ["cpu", "gpu"]
    plain = steady_steps(args.model, args.batch, devices, args.rounds, args.steps)
    plain_ratio = plain["cpu"] / plain["gpu"]  # > 1: the GPU is faster
    print(json.dumps({"without_callback_ms": plain}), flush=True)
    rows = []
    for steps in (int(value) for value in args.sweep_steps.split(",")):
        batches = tuple(int(value) for value in args.batches.split(","))
        step_ms, message = swept(args.model, args.batch, devices, args.out, steps, batches)
        ratio = step_ms["CPU:0"] / step_ms["GPU:0"]
        print(json.dumps({"sweep_steps": steps, "sweep_ms": step_ms, "message": message}), flush=True)
        rows.append((steps, step_ms, ratio))
    print(f"\n{backend}, {args.model} at batch {args.batch}: CPU step / GPU step (> 1: the GPU is faster)")
    print(f"  fits without the callback ({args.rounds} rounds): CPU {plain['cpu']:.3f} ms, "
          f"GPU {plain['gpu']:.3f} ms, ratio {plain_ratio:.3f}")
    met = True
    for steps, step_ms, ratio in rows:
        agrees = (ratio > 1) == (plain_ratio > 1) and abs(ratio / plain_ratio - 1) <= 0.15
        met = met and agrees
        print(f"  sweep, {steps} steps a point: CPU {step_ms['CPU:0']:.3f} ms, GPU {step_ms['GPU:0']:.3f} ms, "
              f"ratio {ratio:.3f}, {ratio / plain_ratio:.2f}x the fits' ({'agrees' if agrees else 'OFF'})")
    print(f"Target (same faster device, ratio within 15%): {'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
