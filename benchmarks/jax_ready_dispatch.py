"""Whether asking a JAX step's output `is_ready()` slows the next steps.

A jitted MLP step (100 -> 128 -> 10, batch 32) is dispatched in a loop,
its batch put on the device each time as Keras does, in three variants:
no `is_ready`, one `is_ready` of the step before's output after the
`device_put`, and one before and one after it (the callback's two polls).
Variants alternate over rounds; medians per iteration, figure last.

Target: the polls add at most 1 us an iteration to the loop's wall time.

Usage: python benchmarks/jax_ready_dispatch.py [ROUNDS]  (default 8)
"""

import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

VARIANTS = ("no is_ready", "is_ready after device_put", "is_ready before and after")


@jax.jit
def step(state, x, y):
    def loss(parameters):
        hidden = jnp.tanh(x @ parameters[0])
        return jnp.mean((hidden @ parameters[1] - y) ** 2)

    value, gradients = jax.value_and_grad(loss)(state)
    return {"loss": value}, tuple(p - 0.01 * g for p, g in zip(state, gradients))


def loop(state, x, y, polls, iterations):
    """Wall and CPU microseconds per iteration of `iterations` steps."""
    previous = None
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(iterations):
        if polls >= 2 and previous is not None:
            previous.is_ready()
        batch_x, batch_y = jax.device_put(x), jax.device_put(y)
        if polls >= 1 and previous is not None:
            previous.is_ready()
        logs, state = step(state, batch_x, batch_y)
        previous = logs["loss"]
    jax.block_until_ready(state)
    return ((time.perf_counter() - wall) / iterations * 1e6,
            (time.thread_time() - cpu) / iterations * 1e6)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    key = jax.random.PRNGKey(0)
    state = (jax.random.normal(key, (100, 128)), jax.random.normal(key, (128, 10)))
    x = np.random.rand(32, 100).astype(np.float32)
    y = np.random.rand(32, 10).astype(np.float32)
    loop(state, x, y, 0, 200)  # compiles
    results = {polls: [] for polls in range(3)}
    for index in range(rounds):
        for polls in (range(3) if index % 2 == 0 else reversed(range(3))):
            results[polls].append(loop(state, x, y, polls, 3000))
    print(f"{jax.devices()[0].device_kind}, {rounds} rounds")
    for polls, name in enumerate(VARIANTS):
        wall = statistics.median(row[0] for row in results[polls])
        cpu = statistics.median(row[1] for row in results[polls])
        print(f"{name:28s} wall {wall:7.2f} us  cpu {cpu:7.2f} us per iteration")


if __name__ == "__main__":
    main()
