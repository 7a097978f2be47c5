"""Trace windows of the callback on a GPU: JAX and PyTorch, digested.

Fits the common MLP (100 -> 128 -> 10) at batch 32 and 8192 on the GPU with
`DeviceCostCallback(profile_steps=(20, 25))` and prints, per fit, the digest
of the traced steps beside the callback's own numbers: the device's busy
share of the step, kernels per step, host-to-device bytes. The runs (traces
included) are packed into OUT/traced_runs.tar.gz.

Usage: python benchmarks/gpu_traces.py --out DIR
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile


def worker(backend, out):
    os.environ["KERAS_BACKEND"] = backend
    import models
    import tb_devicecost
    from tb_devicecost.reading import reader

    results = []
    for batch in (32, 8192):
        model = models.build("mlp")
        x, y = models.data("mlp", batch * 60)
        run_dir = os.path.join(out, "traced", f"{backend}_mlp_b{batch}", "gpu")
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0,
                  callbacks=[tb_devicecost.DeviceCostCallback(run_dir, profile_steps=(20, 25))])
        [record] = [r for r in reader.read_runs(reader.local_provider(run_dir)) if r.run == "train"]
        [window] = record.trace["windows"]
        summary = window.get("summary", {})
        results.append({
            "backend": backend, "batch": batch, "error": window.get("error"),
            "steps": [s.get("step") for s in window.get("steps", [])],
            "device_busy_fraction": window.get("device_busy_fraction"),
            "summary": {k: v for k, v in summary.items() if isinstance(v, (int, float))},
            "recorded_step_p50_ms": record.aggregate["components"]["step"]["p50_ms"],
        })
        print(json.dumps(results[-1]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.out)
        return
    os.makedirs(args.out, exist_ok=True)
    for backend in ("jax", "torch"):
        subprocess.call([sys.executable, __file__, "--out", args.out, "--worker", backend],
                        env=dict(os.environ, KERAS_BACKEND=backend, PYTHONUNBUFFERED="1"))
    with tarfile.open(os.path.join(args.out, "traced_runs.tar.gz"), "w:gz") as archive:
        archive.add(os.path.join(args.out, "traced"), arcname="traced")


if __name__ == "__main__":
    main()
