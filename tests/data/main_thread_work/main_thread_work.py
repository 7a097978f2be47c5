"""Where the training thread's added time goes: Python's bytecodes a step,
counted by file and function, and the thread's time by shared library,
sampled by `perf` (a one-off probe for issue 36; README.md here).

`count`: two fits of the seeds' MLP at batch 32 from arrays, without and
with `DeviceCostCallback(device_busy=False)`; from step 50 to 50 steps
before the end, every bytecode the training thread executes, in any code
(`sys.settrace` with opcode events). Printed: the bytecodes a step of
each fit, and the functions whose count a step differs by at least 0.5.
No load moves these counts.

`fits`: the same model warmed up, then FITS fits of 2,000 steps of one
variant (`none` or `full`); it writes `ready_<variant>` with its process
id into the working directory before the fits, so that
`sample.sh` can attach `perf record -e cpu-clock` to the fits alone.

Usage (from the checkout's root):
    KERAS_BACKEND=jax .venv/bin/python tests/data/main_thread_work/main_thread_work.py count 1000
    bash tests/data/main_thread_work/sample.sh    # perf, both variants
"""

import collections
import os
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
import keras  # noqa: E402
import tb_devicecost  # noqa: E402
import models  # noqa: E402


def new_callbacks(variant):
    if variant == "none":
        return []
    return [tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)]


def bytecodes(model, x, y, steps, variant):
    """Bytecodes a step by `(file, function)` on the training thread."""
    counts, counting = collections.Counter(), [False]
    main = threading.main_thread()

    def local(frame, event, arg):
        if event == "opcode" and counting[0] and threading.current_thread() is main:
            counts[frame.f_code.co_filename, frame.f_code.co_name] += 1
        return local

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        return local

    class Gate(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            counting[0] = 50 <= batch < steps - 50

    model.fit(x, y, batch_size=32, verbose=0)  # Warm, untraced.
    threading.settrace(trace)
    sys.settrace(trace)
    try:
        model.fit(x, y, batch_size=32, verbose=0, callbacks=new_callbacks(variant) + [Gate()])
    finally:
        sys.settrace(None)
        threading.settrace(None)
    return {key: value / (steps - 100) for key, value in counts.items()}


def short(path):
    for marker in ("site-packages/", ROOT + "/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def count(steps):
    x, y = models.data("mlp", steps * 32)
    model = models.build("mlp")
    none, full = (bytecodes(model, x, y, steps, variant) for variant in ("none", "full"))
    print(f"bytecodes a step on the training thread: without {sum(none.values()):.1f}, "
          f"with {sum(full.values()):.1f}")
    changed = sorted(((full.get(key, 0.0) - none.get(key, 0.0), key) for key in set(none) | set(full)),
                     reverse=True)
    for difference, (path, name) in changed:
        if abs(difference) >= 0.5:
            print(f"{difference:+8.1f}  {short(path)}:{name}")


def fits(variant, count_):
    x, y = models.data("mlp", 2000 * 32)
    model = models.build("mlp")
    model.fit(x, y, batch_size=32, verbose=0, shuffle=False)
    with open(f"ready_{variant}", "w", encoding="ascii") as ready:
        ready.write(str(os.getpid()))
    time.sleep(1.0)  # `perf` attaches meanwhile.
    for _ in range(count_):
        model.fit(x, y, batch_size=32, verbose=0, shuffle=False, callbacks=new_callbacks(variant))


if __name__ == "__main__":
    if sys.argv[1] == "count":
        count(int(sys.argv[2]))
    else:
        fits(sys.argv[2], int(sys.argv[3]))
