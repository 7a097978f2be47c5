"""Fits whose input starts processes or threads, run in a process of their own
(issue 33).

`python process_fits.py BACKEND LOGDIR` (with `KERAS_BACKEND` set, as
`support.scripts.run_backend_script` does) trains each client below from
the same seed without and with `DeviceCostCallback` and prints one JSON
object: per client, whether the weights and `history` are identical; and,
for `forked_child`, how each forked child of the fit ended.

The clients are the ways users start processes during a fit: a
`PyDataset` with worker processes (`use_multiprocessing=True`, with
validation, at each `verbose`), a `multiprocessing` pool inside
`__getitem__`, a `tf.data` map through `tf.py_function` (TensorFlow), and a
`torch.utils.data.DataLoader` with worker processes, forked and spawned
(PyTorch).
"""

import gc
import json
import multiprocessing
import os
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from seeding import set_random_seed  # noqa: E402
from unchanged_fits import same_with_and_without  # noqa: E402

# A forked child that neither ends nor crashes within this long is hung.
CHILD_TIMEOUT_S = 60


def _images(count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((count, 20, 20, 3), dtype=np.float32), rng.integers(0, 4, count)


def _augment(images, index):
    """Crops, flips and jitters each sample in a Python loop (issue 33's
    classifier, smaller)."""
    rng = np.random.default_rng(index)
    out = np.empty((len(images), 16, 16, 3), np.float32)
    for j, image in enumerate(images):
        top, left = rng.integers(0, 4, 2)
        crop = image[top:top + 16, left:left + 16]
        out[j] = (crop[:, ::-1] if rng.random() < 0.5 else crop) * rng.uniform(0.9, 1.1)
    return out


class Augmented(keras.utils.PyDataset):
    """Batches of 16 augmented images; `pool` computes them in a pool of
    forked processes inside `__getitem__`."""

    def __init__(self, count, seed=0, pool=False, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y = _images(count, seed)
        self._use_pool, self._pool = pool, None

    def __len__(self):
        return len(self.x) // 16

    def __getitem__(self, index):
        images = self.x[index * 16:(index + 1) * 16]
        if self._use_pool:
            if self._pool is None:
                self._pool = multiprocessing.get_context("fork").Pool(2)
            halves = self._pool.starmap(_augment, [(images[:8], index), (images[8:], index)])
            batch = np.concatenate(halves)
        else:
            batch = _augment(images, index)
        return batch, self.y[index * 16:(index + 1) * 16]

    def close(self):
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()


def _conv():
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _fits(make_train, make_validation=None, epochs=3, verboses=(0,)):
    """One fit per `verbose`, each on new data objects."""

    def fits(model, callbacks):
        histories = []
        for i, verbose in enumerate(verboses):
            train = make_train()
            kwargs = {}
            if make_validation is not None:
                kwargs["validation_data"] = make_validation()
            try:
                histories.append(
                    model.fit(train, epochs=epochs, verbose=verbose, callbacks=callbacks(i), **kwargs).history
                )
            finally:
                for data in (train, kwargs.get("validation_data")):
                    if hasattr(data, "close"):
                        data.close()
        return histories

    return fits


class ForkingCallback(keras.callbacks.Callback):
    """Listed after ours: at each later epoch's start, forks a child that
    collects the garbage it inherited, says whether SIGTERM has its default
    disposition, and ends by SIGTERM, as a stopped pool worker does."""

    def __init__(self):
        super().__init__()
        self.children = []

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 0:
            return
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            gc.collect()
            default = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
            os.write(write_fd, b"1" if default else b"0")
            os.kill(os.getpid(), signal.SIGTERM)
            os._exit(3)  # Only if SIGTERM did not end it.
        os.close(write_fd)
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status = None
                break
            time.sleep(0.02)
        said = os.read(read_fd, 1)
        os.close(read_fd)
        if status is None:
            ended = "hung"
        elif os.WIFSIGNALED(status):
            ended = signal.Signals(os.WTERMSIG(status)).name
        else:
            ended = f"exit {os.WEXITSTATUS(status)}"
        self.children.append({"ended": ended, "default_sigterm": said == b"1"})


def _forked_child(logdir):
    """A fit with validation whose callback after ours forks; the garbage
    collector stays off until the child, so whatever cycles the fit left
    are collected there."""
    set_random_seed(1)
    model = _conv()
    forking = ForkingCallback()
    callback = tb_devicecost.DeviceCostCallback(os.path.join(logdir, "forked_child"))
    gc.collect()
    gc.disable()
    try:
        model.fit(
            Augmented(64), validation_data=Augmented(32, seed=1), epochs=3, verbose=0,
            callbacks=[callback, forking],
        )
    finally:
        gc.enable()
    return {"children": forking.children}


def clients(backend):
    cases = {
        "pydataset_processes": (
            _conv,
            _fits(
                lambda: Augmented(64, workers=2, use_multiprocessing=True),
                lambda: Augmented(32, seed=1, workers=2, use_multiprocessing=True),
                epochs=2,
                verboses=(0, 1, 2),
            ),
        ),
        "pool_in_getitem": (
            _conv, _fits(lambda: Augmented(64, pool=True), lambda: Augmented(32, seed=1), epochs=2)
        ),
    }
    if backend == "tensorflow":
        import tensorflow as tf

        def py_function_map():
            x, y = _images(64)
            dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

            def augment(images, labels):
                out = tf.py_function(lambda t: _augment(t.numpy(), 0), [images], tf.float32)
                out.set_shape((None, 16, 16, 3))
                return out, labels

            return dataset.map(augment)

        cases["tf_py_function"] = (_conv, _fits(py_function_map, epochs=2))
    if backend == "torch":
        import torch

        def loader(context):
            x, y = _images(64)
            dataset = torch.utils.data.TensorDataset(
                torch.from_numpy(_augment(x, 0)), torch.from_numpy(y)
            )
            return torch.utils.data.DataLoader(
                dataset, batch_size=16, num_workers=2, multiprocessing_context=context,
                persistent_workers=True,
            )

        for context in ("fork", "spawn"):
            cases[f"dataloader_{context}"] = (
                _conv, _fits(lambda context=context: loader(context), epochs=2)
            )
    return cases


def main():
    backend, logdir = sys.argv[1], sys.argv[2]
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
    facts = {"backend": keras.backend.backend(), "clients": {}}
    for name, (build, fits) in clients(backend).items():
        start = time.perf_counter()
        same = same_with_and_without(build, fits, os.path.join(logdir, name))
        same["seconds"] = round(time.perf_counter() - start, 2)
        del same["trace_count"]
        facts["clients"][name] = same
    facts["forked_child"] = _forked_child(logdir)
    # The JSON object is the last line, after Keras's progress bars.
    print("\n" + json.dumps(facts))


if __name__ == "__main__":
    main()
