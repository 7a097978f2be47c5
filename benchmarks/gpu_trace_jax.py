"""GPU evidence for the trace digest: the seeds' MLP in plain JAX, traced.

Run on a machine with a GPU and JAX (no TensorFlow or Keras needed). Trains
the seeds' MLP (100 -> 128 -> 10) at batch 32 and 8192, times every step
(fetch + device_put, then the jitted step until its loss is on the host),
and captures a profiler trace of steps 20-29 of each with step markers
(`jax.profiler.StepTraceAnnotation("train", step_num=...)`), the markers
tb-devicecost's trace digest cuts steps by. The traces are copied to
`OUT/batch<N>.xplane.pb`; `tb_devicecost.traces.trace.digest_xspace` reads them
where TensorFlow is installed.

Usage: python benchmarks/gpu_trace_jax.py OUT
"""

import glob
import os
import shutil
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

TRACED = range(20, 30)


def init(key):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (100, 128)) * 0.1,
        "b1": jnp.zeros(128),
        "w2": jax.random.normal(k2, (128, 10)) * 0.1,
        "b2": jnp.zeros(10),
    }


def loss_fn(params, x, y):
    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss


def run(batch_size, out, steps=200):
    rng = np.random.default_rng(0)
    xs = rng.random((steps, batch_size, 100), dtype=np.float32)
    ys = rng.integers(0, 10, (steps, batch_size))
    params = init(jax.random.PRNGKey(0))
    trace_dir = os.path.join(out, f"trace{batch_size}")
    fetch, compute, first = [], [], None
    for step in range(steps):
        if step == TRACED.start:
            jax.profiler.start_trace(trace_dir)
        started = time.perf_counter()
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            x = jax.device_put(xs[step])
            y = jax.device_put(ys[step])
            fetched = time.perf_counter()
            params, loss = train_step(params, x, y)
            float(loss)  # results on the host: the step is complete
        done = time.perf_counter()
        if step == TRACED.stop - 1:
            jax.profiler.stop_trace()
        if step == 0:
            first = done - started
        elif step not in TRACED:
            fetch.append(fetched - started)
            compute.append(done - fetched)
    [trace] = glob.glob(os.path.join(trace_dir, "plugins", "profile", "*", "*.xplane.pb"))
    shutil.copy(trace, os.path.join(out, f"batch{batch_size}.xplane.pb"))
    shutil.rmtree(trace_dir)
    print(
        f"batch {batch_size}: first step {first * 1e3:.1f} ms, median fetch+device_put "
        f"{statistics.median(fetch) * 1e3:.3f} ms, median step {statistics.median(compute) * 1e3:.3f} ms, "
        f"trace {os.path.getsize(os.path.join(out, f'batch{batch_size}.xplane.pb'))} bytes"
    )


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    print("devices:", jax.devices())
    for batch_size in (32, 8192):
        run(batch_size, out)


if __name__ == "__main__":
    main()
