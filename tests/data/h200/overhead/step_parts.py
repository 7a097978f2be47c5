"""What one step of DeviceCostCallback's JAX lane costs on this host, in
parts (a probe for issue 36; README.md here). No test reads it.

Prints the cost of the primitives the step uses (a `time.perf_counter`
read, `is_ready()` of a ready JAX array, a weak reference to one) and
the callback's own time a step (`self_us_per_step`, as its runs record
it) over 2,000-step fits of the seeds' MLP at batch 32, with the training
thread's poll every 8 calls (the default before 1cf9e02), 16, 32 (the
default since), 64, each after a fit's first turns (`jax.FIRST_POLLS`), and never;
the fits alternate, 4 of each.

Usage (from the checkout's root): KERAS_BACKEND=jax python3
    tests/data/h200/overhead/step_parts.py
"""

import os
import statistics
import sys
import tempfile
import timeit
import weakref

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import models  # noqa: E402
import tb_devicecost  # noqa: E402
from tb_devicecost import words  # noqa: E402
from tb_devicecost.backends import jax as jax_backend  # noqa: E402
from tb_devicecost.reading import reader  # noqa: E402


def per_call_ns(statement, setup_globals, number=200_000):
    timer = timeit.Timer(statement, globals=setup_globals)
    return min(timer.repeat(5, number)) / number * 1e9


def main(steps=2000, fits=4):
    array = jnp.ones((32, 10))
    array.block_until_ready()
    names = {"clock": __import__("time").perf_counter, "array": array, "ref": weakref.ref}
    print(f"device {jax.devices()[0].device_kind}; "
          f"perf_counter {per_call_ns('clock()', names):.0f} ns, "
          f"is_ready {per_call_ns('array.is_ready()', names):.0f} ns, "
          f"weakref {per_call_ns('ref(array)', names):.0f} ns")
    x, y = models.data("mlp", steps * 32)
    model = models.build("mlp")
    model.fit(x[:50 * 32], y[:50 * 32], batch_size=32, verbose=0)  # compiles
    own = {8: [], 16: [], 32: [], 64: [], 10**9: []}
    first_polls = jax_backend.FIRST_POLLS
    scratch = tempfile.mkdtemp()
    for index in range(fits):
        for every in own:
            jax_backend.POLL_EVERY = every
            # Never means never: no first turns either.
            jax_backend.FIRST_POLLS = 0 if every == 10**9 else first_polls
            directory = os.path.join(scratch, f"{every}_{index}")
            model.fit(x, y, batch_size=32, verbose=0, shuffle=False, callbacks=[
                tb_devicecost.DeviceCostCallback(directory, device_busy=False)])
            [run] = [r for r in reader.read_runs(reader.local_provider(directory))
                     if r.run == "train"]
            own[every].append(words.analyze_run(run)["self_us_per_step"])
    for every, values in own.items():
        label = "never" if every == 10**9 else f"every {every}"
        print(f"poll {label:9s}: own time a step {statistics.median(values):.2f} µs "
              f"({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
