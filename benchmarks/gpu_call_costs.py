"""Costs of the calls the callback makes per step on JAX, in isolation.

`Array.is_ready` on an array that is ready and on one still computing,
`time.perf_counter`, and `AsyncSteps` fed 20,000 steps whose probes are
real arrays' `is_ready`: microseconds per call, the figure last.

Target: `AsyncSteps` at most 10 us a step (1% of the ~1 ms step of the
MLP at batch 32 on an H100 or H200, the benchmarks' host-bound case).

Usage: python benchmarks/gpu_call_costs.py
"""

import os
import tempfile
import time
import timeit

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from tb_devicecost.backends.asynchronous import AsyncSteps  # noqa: E402
from tb_devicecost.recording.accounting import StepAccounting  # noqa: E402


def per_call_us(function, number=100_000):
    return min(timeit.repeat(function, number=number, repeat=3)) / number * 1e6


def main():
    device = jax.devices()[0]
    ready = jax.device_put(jnp.ones(10), device) + 1
    ready.block_until_ready()
    big = jax.device_put(jnp.ones((4096, 4096)), device)
    big.block_until_ready()
    pending = big @ big @ big @ big  # still computing while read
    results = {
        "perf_counter": per_call_us(time.perf_counter),
        "is_ready, ready": per_call_us(ready.is_ready),
        "is_ready, computing": per_call_us(pending.is_ready, number=1000),
    }
    pending.block_until_ready()
    accounting = StepAccounting(tempfile.mkdtemp())
    accounting.begin_session({})
    steps = AsyncSteps(accounting)
    clock = time.perf_counter
    arrays = [ready + i for i in range(64)]
    for array in arrays:
        array.block_until_ready()
    count = 20_000
    began = time.thread_time()
    for index in range(count):
        start = clock()
        steps.poll(start)
        fetched = clock()
        steps.poll(fetched)
        steps.dispatched(index, start, fetched, batch_size=32, excluded=0.0,
                         probe=arrays[index % 64].is_ready, returned=clock())
        steps.completed(index, clock())
    steps.boundary()
    results["AsyncSteps, a step"] = (time.thread_time() - began) / count * 1e6
    print(device.platform, device.device_kind)
    for name, value in results.items():
        print(f"{name:24s} {value:8.2f} us")


if __name__ == "__main__":
    main()
