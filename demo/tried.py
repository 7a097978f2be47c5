"""The demo's scenarios with their fixes tried: `tb_devicecost.try_fixes`.

`python -m demo.tried LOGDIR [--budget S] [--scenarios mlp_b10,...]` runs
`try_fixes` on each scenario named (all by default), into
`LOGDIR/<scenario>/tried/<change>`, then prints each scenario's verdict,
the change advised and each change's predicted and measured gain with the
noise. `python -m demo` calls `run` with a small budget; the H100 recording
(`benchmarks/record_gpu.sh OUT tried`) runs one scenario a process.

Scenarios (the demo's own models and data, `demo/scenarios.py`):

- `mlp_b10`, `mlp_b32`: the small MLP (100 -> 128 -> 10) fed from NumPy
  arrays in memory at batch 10 and 32, trying `data_on_device`,
  `steps_per_execution` (not on PyTorch), `workers`, `use_multiprocessing`
  (not on JAX, whose process Keras's forked workers can deadlock) and
  `batch_size`;
- `python_input`: the small CNN fed by a `keras.utils.PyDataset` that
  augments each image in Python (`input_pipeline/naive` without TensorFlow),
  trying what its findings advise (worker threads and processes).
"""

import argparse
import json
import os
import sys

SCENARIOS = ("mlp_b10", "mlp_b32", "python_input")
_ARRAY_CHANGES = ["data_on_device", "steps_per_execution", "workers", "use_multiprocessing",
                  "batch_size"]


def _scenario(name):
    """`(build_model, data, batch_size, steps, changes)` of a scenario."""
    from demo import scenarios  # pylint: disable=import-outside-toplevel

    if name in ("mlp_b10", "mlp_b32"):
        x, y = scenarios._tabular(8192)  # pylint: disable=protected-access
        return scenarios.mlp, lambda: (x, y), int(name[5:]), 300, list(_ARRAY_CHANGES)
    if name == "python_input":
        images, labels = scenarios._images(64 * 48)  # pylint: disable=protected-access

        def data():
            return scenarios.AugmentedImages(images, labels, 64)

        return (lambda: scenarios._conv_model(False)), data, None, 24, None  # pylint: disable=protected-access
    raise ValueError(f"Unknown scenario {name!r}; the scenarios are {', '.join(SCENARIOS)}")


def run(logdir, names=SCENARIOS, budget_s=20.0, out=None, detail=True):
    """Runs `try_fixes` on each scenario; returns `{scenario: summary}`.
    Prints a line per scenario, and with `detail` one per change tried."""
    out = out or sys.stdout
    import tb_devicecost  # pylint: disable=import-outside-toplevel

    summaries = {}
    for name in names:
        build_model, data, batch_size, steps, changes = _scenario(name)
        result = tb_devicecost.try_fixes(
            build_model, data, log_dir=os.path.join(logdir, name), batch_size=batch_size,
            steps=steps, budget_s=budget_s, changes=changes)
        report = result["report"]
        base = next(run for run in report["runs"] if run["run"].endswith("tried/baseline/train"))
        summaries[name] = summary = {
            # Trial fits are short by design (steps each): what they say
            # of the model is their steady steps' verdict, not "mostly
            # warm-up".
            "verdict": base.get("steady_verdict") or base["verdict"],
            "advised": result["advised"],
            "failed": result["failed"],
            "tried": [{key: entry[key] for key in (
                "change", "predicted", "measured", "noise", "kept", "slower", "advised",
                "predicted_basis")} for entry in result["fixes_tried"]],
        }
        advised = next((e for e in summary["tried"] if e["advised"]), None)
        print(f"{name}: {summary['verdict']} (steady steps); advised: "
              + (f"{advised['change']} (tried: {advised['measured']:.2f}x, noise "
                 f"±{100 * advised['noise']:.0f}%)" if advised else "nothing beat the noise"),
              file=out, flush=True)
        for entry in summary["tried"] if detail else ():
            predicted = f"{entry['predicted']:.2f}x" if entry["predicted"] else "-"
            measured = f"{entry['measured']:.2f}x" if entry["measured"] else "-"
            noise = f"±{100 * entry['noise']:.0f}%" if entry["noise"] is not None else "-"
            print(f"  {entry['change']:<22} predicted {predicted:>7}  measured {measured:>7}  "
                  f"noise {noise}", file=out, flush=True)
        for change, why in result["failed"].items() if detail else ():
            print(f"  {change}: could not be tried ({why[:120]})", file=out, flush=True)
    return summaries


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m demo.tried")
    parser.add_argument("logdir")
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--json", metavar="FILE", help="also write the summaries as JSON")
    args = parser.parse_args(argv)
    names = [name for name in args.scenarios.split(",") if name]
    summaries = run(args.logdir, names, args.budget)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(summaries, handle, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
