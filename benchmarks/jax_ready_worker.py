"""What asking `is_ready()` costs a plain JAX loop on the GPU, with and
without a worker thread converting each step's logs beside it (as Keras's
callback list does with `--worker`).

Variants, alternating in rounds (medians of µs an iteration, figure last):
`none`; `first` (the step's own output, right after its dispatch);
`every8`; `twice`; `hold` (keep the output, never ask); `prev` (the step
before, asked just before the next `device_put`, as the callback's poll
before a fetch); `prevfirst`, `prevstate` (the same, having asked at the
dispatch, or asking the new state instead of the loss); `sleep0` (a
`time.sleep(0)` there instead: any release of the GIL); `afterput` (asked
after the `device_put`); `ret` (the step before, asked after the dispatch).

Usage: python benchmarks/jax_ready_worker.py ITERATIONS ROUNDS [--worker]
    [--v=none,prev,...]
"""

import concurrent.futures
import functools
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

VARIANTS = ("none", "first", "every8", "twice", "hold", "prev")


@functools.partial(jax.jit, donate_argnums=0)
def step(state, x, y):
    def loss_fn(params):
        out = jnp.tanh(x @ params[0]) @ params[1]
        return jnp.mean((out - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(state)
    return (state[0] - 0.01 * grads[0], state[1] - 0.01 * grads[1]), {"loss": loss}


def convert(logs):
    """What Keras's worker does with a step's logs."""
    return {name: float(value) for name, value in logs.items()}


def run(variant, state, iterations, executor, xs, ys):
    held, futures = [], []
    began = time.perf_counter()
    for index in range(iterations):
        if variant.startswith("prev") and held:
            held[-1].is_ready()  # As the poll before a fetch.
        if variant == "sleep0":
            time.sleep(0)
        xb, yb = jax.device_put((xs[index % len(xs)], ys[index % len(ys)]))
        if variant == "afterput" and held:
            held[-1].is_ready()
        state, logs = step(state, xb, yb)
        loss = logs["loss"]
        if executor is not None:
            futures = [future for future in futures if not future.done()]
            futures.append(executor.submit(convert, logs))
        if variant == "first" or (variant == "every8" and index % 8 == 0):
            loss.is_ready()
        elif variant == "twice":
            loss.is_ready()
            loss.is_ready()
        elif variant == "ret" and held:
            held[-1].is_ready()
        if variant == "prevfirst":
            loss.is_ready()
        if variant in ("hold", "prev", "prevfirst", "afterput", "ret"):
            held = held[-1:] + [loss]
        elif variant == "prevstate":
            held = held[-1:] + [state[0]]
    jax.block_until_ready(state)
    for future in futures:
        future.result()
    return state, (time.perf_counter() - began) / iterations * 1e6


def main():
    args = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    iterations = int(args[0]) if args else 2000
    rounds = int(args[1]) if len(args) > 1 else 8
    chosen = [arg[4:] for arg in sys.argv if arg.startswith("--v=")]
    variants = chosen[0].split(",") if chosen else list(VARIANTS)
    executor = (concurrent.futures.ThreadPoolExecutor(max_workers=1)
                if "--worker" in sys.argv else None)
    key = jax.random.PRNGKey(0)
    state = (jax.random.normal(key, (100, 128)) * 0.1, jax.random.normal(key, (128, 10)) * 0.1)
    xs = np.random.rand(64, 32, 100).astype(np.float32)
    ys = np.random.rand(64, 32, 10).astype(np.float32)
    for variant in variants:  # Compiles, warms every path.
        state, _ = run(variant, state, iterations, executor, xs, ys)
    figures = {variant: [] for variant in variants}
    for index in range(rounds):
        for variant in (variants if index % 2 == 0 else variants[::-1]):
            state, us = run(variant, state, iterations, executor, xs, ys)
            figures[variant].append(us)
    base = statistics.median(figures[variants[0]])
    print(jax.devices()[0].device_kind, "worker" if executor else "no worker")
    for variant in variants:
        median = statistics.median(figures[variant])
        print(f"{variant:10s} {median:8.1f} us/iteration ({median - base:+6.1f}), "
              f"min {min(figures[variant]):8.1f}")


if __name__ == "__main__":
    main()
