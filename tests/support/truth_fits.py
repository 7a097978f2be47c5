"""Fits with injected, known costs on one Keras backend, in a process of its own.

`python truth_fits.py BACKEND LOGDIR [CASE ...]` trains each case below with
`DeviceCostCallback` into `LOGDIR/<case>` and prints one JSON object: per
case, what was injected (milliseconds per step of data wait and of host
overhead) and, for the cases whose compute matters, the step time of the
same model timed by a clock outside the fit, without the callback. The
tests (`test_timing_truth.py`) compare what the callback recorded with it.

Injected costs are of two kinds: sleeping (which releases Python's GIL) and
pure-Python work (which holds it, as real Python input pipelines do). The
same script runs on a GPU machine (`tests/data/h100_truth`), where the
devices are whatever the backend finds.
"""

import json
import os
import sys
import time

BACKEND, LOGDIR = sys.argv[1], sys.argv[2]
CASES = sys.argv[3:]
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from tb_devicecost.backends import gil_wait  # noqa: E402

if BACKEND == "torch":
    import torch

    # PyTorch's CPU thread pool spins; one thread keeps steps steady on a
    # small shared machine.
    torch.set_num_threads(1)

STEPS = 30
BATCH = 32
INPUT_MS = 30.0
PYTHON_MS = 20.0
# Python a batch on the threads of `python_threads`. With 20 ms, PyTorch's
# steady data share read 0.28-0.44 over 6 quiet runs on a 2-core machine,
# its typical wait about 1 ms (the four threads fill the queue ahead), and
# `compute_bound` once in a quiet suite. With 40 ms: 0.33-0.53 over 4 runs,
# the typical wait 0.8-11 ms. (Its compute read 1.6-2.8x the step timed
# outside at p50 either way: the bound its test allows.)
THREADS_PYTHON_MS = 40.0
# A user's callback a step. At 20 ms the bound on what leaks into compute
# (half of it) was 10 ms, and a CI machine busy with other work read
# PyTorch's ~3 ms CPU step at 10.7 and 11.1 ms (p50): load, not the
# callback, which read 20 ms and more of host overhead here beside six busy
# loops while compute read 15 to 20 ms.
HOST_MS = 40.0


def python_work(milliseconds):
    """Pure-Python work: holds the GIL (but for the interpreter's switches)."""
    end = time.perf_counter() + milliseconds / 1e3
    count = 0
    while time.perf_counter() < end:
        count += 1
    return count


def arrays(samples, features=100):
    rng = np.random.default_rng(0)
    return (
        rng.random((samples, features), dtype=np.float32),
        rng.integers(0, 10, samples),
    )


def mlp(hidden=64, features=100, layers=1):
    stack = [keras.Input((features,))]
    stack += [keras.layers.Dense(hidden, activation="relu") for _ in range(layers)]
    stack.append(keras.layers.Dense(10))
    model = keras.Sequential(stack)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class Batches(keras.utils.PyDataset):
    """Batches of `batch_size`, each costing `sleep_ms` of sleep and `python_ms` of
    Python work to make."""

    def __init__(self, x, y, sleep_ms=0.0, python_ms=0.0, batch_size=BATCH, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size
        self.sleep_ms, self.python_ms = sleep_ms, python_ms

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        if self.sleep_ms:
            time.sleep(self.sleep_ms / 1e3)
        if self.python_ms:
            python_work(self.python_ms)
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


class Busy(keras.callbacks.Callback):
    """A user's callback spending `milliseconds` of Python work per step."""

    def __init__(self, milliseconds, at="end"):
        super().__init__()
        self.milliseconds, self.at = milliseconds, at

    def on_train_batch_begin(self, batch, logs=None):
        if self.at == "begin":
            python_work(self.milliseconds)

    def on_train_batch_end(self, batch, logs=None):
        if self.at == "end":
            python_work(self.milliseconds)


def callback(case):
    return tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, case))


class _EpochClock(keras.callbacks.Callback):
    """Times each epoch from its first hook to its last (not ours: a clock
    outside the callback under test)."""

    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._began)


def outside_step_ms(model, x, y, batch_size, steps, epochs=6):
    """The step time of `model` on arrays, by a clock outside fits without
    the callback: the shortest epoch after the first (which compiles), over
    its steps. Load only lengthens an epoch, so the shortest is the one a
    busy machine disturbed least."""
    samples = batch_size * steps
    clock = _EpochClock()
    model.fit(x[:samples], y[:samples], batch_size=batch_size, epochs=epochs, verbose=0,
              callbacks=[clock])
    return float(min(clock.seconds[1:]) * 1e3 / steps)


def heavy(hidden=1024):
    """A model whose CPU step is tens of milliseconds (compute is known):
    long beside the loop between steps even where a busy machine slows
    that loop to several milliseconds (PyTorch's, beside two busy loops).
    The mix takes a lighter one, so that its input stays a large part."""
    return mlp(hidden=hidden, features=256, layers=2)


def main():
    x, y = arrays(BATCH * (STEPS + 1))
    xh, yh = arrays(256 * (2 * STEPS + 1), features=256)
    facts = {"backend": keras.backend.backend(), "cases": {}}
    wanted = set(CASES) if CASES else None

    def case(name, data_ms=0.0, host_ms=0.0, **extra):
        if wanted is not None and name not in wanted:
            return False
        facts["cases"][name] = dict(data_ms=data_ms, host_ms=host_ms, **extra)
        return True

    if case("sleep_input", data_ms=INPUT_MS):
        mlp().fit(Batches(x, y, sleep_ms=INPUT_MS), epochs=1, verbose=0, callbacks=[callback("sleep_input")])
    if case("python_input", data_ms=PYTHON_MS):
        mlp().fit(Batches(x, y, python_ms=PYTHON_MS), epochs=1, verbose=0, callbacks=[callback("python_input")])
    if case("python_threads", data_ms=THREADS_PYTHON_MS):
        # Four threads of the process share the GIL: each batch still costs
        # the training as much Python as one thread would.
        threads = Batches(x, y, python_ms=THREADS_PYTHON_MS, workers=4, use_multiprocessing=False)
        model = mlp()
        before = outside_step_ms(model, x, y, BATCH, STEPS)
        model.fit(threads, epochs=1, verbose=0, callbacks=[callback("python_threads")])
        # Timed before and after the fit: a machine that became busy during
        # it (CI read 10.1 ms at p50 against 2.97 ms timed before) slows the
        # step timed after too. The larger is the bound's reference.
        after = outside_step_ms(model, x, y, BATCH, STEPS)
        facts["cases"]["python_threads"].update(
            outside_step_ms=max(before, after), outside_before_ms=before, outside_after_ms=after,
            gil_meter=gil_wait.GilWait().available)
    if case("generator", data_ms=PYTHON_MS):
        def batches():
            for index in range(STEPS + 1):
                python_work(PYTHON_MS)
                part = slice(index * BATCH, (index + 1) * BATCH)
                yield x[part], y[part]

        mlp().fit(batches(), steps_per_epoch=STEPS + 1, epochs=1, verbose=0, callbacks=[callback("generator")])
    if BACKEND == "tensorflow" and case("py_function", data_ms=PYTHON_MS):
        import tensorflow as tf

        def work(features, labels):
            python_work(PYTHON_MS)
            return features, labels

        def traced(a, b):
            a, b = tf.py_function(work, [a, b], [tf.float32, tf.int64])
            a.set_shape([None, x.shape[1]])
            b.set_shape([None])
            return a, b

        dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).map(traced)
        mlp().fit(dataset, epochs=1, verbose=0, callbacks=[callback("py_function")])
    if BACKEND == "torch" and case("dataloader", data_ms=PYTHON_MS):
        class Slow(torch.utils.data.Dataset):
            def __len__(self):
                return STEPS + 1

            def __getitem__(self, index):
                python_work(PYTHON_MS)
                part = slice(index * BATCH, (index + 1) * BATCH)
                return torch.from_numpy(x[part]), torch.from_numpy(y[part])

        loader = torch.utils.data.DataLoader(Slow(), batch_size=None)
        mlp().fit(loader, epochs=1, verbose=0, callbacks=[callback("dataloader")])
    if BACKEND != "tensorflow" and case("validation_threads", data_ms=PYTHON_MS):
        # Validation's own pipeline: Python on four threads of the process.
        # Its GIL waits during a step are its data wait, as the training's.
        validation = Batches(x, y, python_ms=PYTHON_MS, workers=4, use_multiprocessing=False)
        mlp().fit(x, y, batch_size=BATCH, epochs=1, verbose=0, validation_data=validation,
                  callbacks=[callback("validation_threads")])
    for name, before, at in (
        ("callback_before", True, "end"),
        ("callback_after", False, "end"),
        ("batch_begin_callback", True, "begin"),
    ):
        if case(name, host_ms=HOST_MS):
            busy, ours = Busy(HOST_MS, at), callback(name)
            callbacks = [busy, ours] if before else [ours, busy]
            mlp().fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=callbacks)
    if case("compute"):
        model = heavy()
        facts["cases"]["compute"]["outside_step_ms"] = outside_step_ms(model, xh, yh, 256, STEPS)
        began = time.perf_counter()
        model.fit(xh[:256 * STEPS], yh[:256 * STEPS], batch_size=256, epochs=1, verbose=0,
                  callbacks=[callback("compute")])
        facts["cases"]["compute"]["fit_s"] = time.perf_counter() - began
    if case("mix", data_ms=16.0, host_ms=8.0):
        model = heavy(hidden=512)
        facts["cases"]["mix"]["outside_step_ms"] = outside_step_ms(model, xh, yh, 256, STEPS)
        mixed = Batches(xh[:256 * STEPS], yh[:256 * STEPS], sleep_ms=16.0, batch_size=256)
        model.fit(mixed, epochs=1, verbose=0, callbacks=[callback("mix"), Busy(8.0)])
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
