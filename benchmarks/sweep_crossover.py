"""Does a sweep of five batch sizes find the crossover a dense sweep measures?

Target: on a machine with a GPU, the crossover that `tb_devicecost.sweep`
over 5 batch sizes (16 to 4,096) predicts from its fits lies within 2x of
where the CPU's and the GPU's mean steps cross in a dense sweep of the same
model (11 batch sizes, 16 to 16,384), as the report measures it between two
adjacent batch sizes (docs/CLI.md, "Sweeps").

The model is the seeds' MLP (100 -> 128 -> 10), trained from arrays in
memory, on the backend of KERAS_BACKEND; both devices in this process
(`keras.device` scopes).

Usage: KERAS_BACKEND=jax python benchmarks/sweep_crossover.py --out DIR [--steps 60]
Prints each sweep's sentence and fits, then the ratio with its target last.
"""

import argparse
import os
import sys

import models

import tb_devicecost
from tb_devicecost import analysis
from tb_devicecost.reading import reader

FIVE = (16, 64, 256, 1024, 4096)
DENSE = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def sweep_of(directory):
    [sweep] = analysis.build_report(reader.read_runs(reader.local_provider(directory)))["sweeps"]
    return sweep


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    x, y = models.data("mlp", 16384)
    results = {}
    for name, batch_sizes in (("five", FIVE), ("dense", DENSE)):
        directory = os.path.join(args.out, name)
        tb_devicecost.sweep(lambda: models.build("mlp"), x, y, batch_sizes=batch_sizes,
                            log_dir=directory, steps=args.steps, your_batch_size=32)
        sweep = results[name] = sweep_of(directory)
        print(f"{name}: {sweep['message']}")
        for device, fit in sweep["devices"].items():
            print(f"  {device}: {analysis.fmt_ms(fit['fixed_ms'])} ms + "
                  f"{fit['per_sample_us']:.4f} us per sample")
    measured = results["dense"]["measured_crossover"]
    predicted = results["five"]["crossover_batch"]
    if measured is None or predicted is None or len(results["five"]["devices"]) < 2:
        print(f"no crossover to compare (five: {predicted}, dense measured: {measured}); "
              "target: within 2x")
        sys.exit(1)
    ratio = predicted / measured["batch"]
    print(f"five-size crossover {predicted} / dense measured crossing {measured['batch']} "
          f"(between {measured['between'][0]} and {measured['between'][1]}) = {ratio:.2f} "
          "(target: within 2x, 0.5 to 2.0)")


if __name__ == "__main__":
    main()
