"""Measuring never changes training, on any backend: the backend-agnostic
clients of `test_training_unchanged.py`, run in a process of their own.

`python unchanged_fits.py BACKEND LOGDIR` (with `KERAS_BACKEND` set, as
`support.scripts.run_backend_script` does) trains each client below from the same
seed without and with `DeviceCostCallback`, and prints one JSON object: per
client, whether the weights, `history` and the number of traces of
`train_step` (of its calls, on PyTorch, which does not trace) are identical.
The TensorFlow backend runs these clients in the test process instead (see
`test_training_unchanged.py`), with the TensorFlow-only cases beside them.
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402

try:  # Run as a script: this folder is first on the path.
    from seeding import set_random_seed  # noqa: E402
except ImportError:  # Imported by the test process.
    from tests.support.seeding import set_random_seed  # noqa: E402

SEED = 1234


def _counting(model):
    """Counts the calls of `train_step` (its traces, where Keras traces it)."""
    model.traces = 0
    inner = model.train_step

    def train_step(*args):
        model.traces += 1
        return inner(*args)

    model.train_step = train_step
    return model


def _dense(outputs=1, loss="mse", **compile_kwargs):
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(outputs),
        ]
    )
    model.compile("adam", loss, **compile_kwargs)
    return model


def _arrays(samples=100, classes=None):
    rng = np.random.default_rng(7)
    x = rng.random((samples, 8), dtype=np.float32)
    if classes:
        return x, rng.integers(0, classes, samples)
    return x, rng.random((samples, 1), dtype=np.float32)


def guide_model():
    """The multi-input, multi-output model of the keras.io guide "Training &
    evaluation with the built-in methods": an image and a time series in, a
    score (MSE) and a class (cross-entropy) out."""
    image = keras.Input((32, 32, 3), name="img_input")
    series = keras.Input((None, 10), name="ts_input")
    x1 = keras.layers.GlobalMaxPooling2D()(keras.layers.Conv2D(3, 3)(image))
    x2 = keras.layers.GlobalMaxPooling1D()(keras.layers.Conv1D(3, 3)(series))
    x = keras.layers.concatenate([x1, x2])
    score = keras.layers.Dense(1, name="score_output")(x)
    classes = keras.layers.Dense(5, name="class_output")(x)
    model = keras.Model([image, series], [score, classes])
    model.compile(
        keras.optimizers.RMSprop(1e-3),
        [keras.losses.MeanSquaredError(), keras.losses.CategoricalCrossentropy()],
    )
    return model


def guide_fits(model, callbacks):
    """The guide's three fits in a row, 100 samples: on lists (batch 32),
    on dicts (batch 32), on a shuffled `tf.data.Dataset` of dicts (batch
    64). `callbacks(i)` gives the callbacks of fit `i`. Returns the three
    histories."""
    rng = np.random.default_rng(0)
    images, series = rng.random((100, 32, 32, 3)), rng.random((100, 20, 10))
    scores, classes = rng.random((100, 1)), rng.random((100, 5))
    inputs = {"img_input": images, "ts_input": series}
    targets = {"score_output": scores, "class_output": classes}
    fits = [
        dict(x=[images, series], y=[scores, classes], batch_size=32),
        dict(x=inputs, y=targets, batch_size=32),
    ]
    try:
        import tensorflow as tf
    except ImportError:  # A machine without TensorFlow: the first two fits.
        tf = None
    if tf is not None:
        dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
        # Its own seed: TensorFlow's global one is not set where the
        # backend is not TensorFlow (`seeding.py`).
        fits.append(dict(x=dataset.shuffle(buffer_size=1024, seed=SEED).batch(64)))
    return [
        model.fit(epochs=1, verbose=0, callbacks=callbacks(i), **kwargs).history
        for i, kwargs in enumerate(fits)
    ]


class _Sequence(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


def _generator(x, y):
    while True:
        for start in range(0, len(x), 24):
            yield x[start:start + 24], y[start:start + 24]


def clients(backend):
    """Name -> (build, fits): `fits(model, callbacks)` returns histories."""
    x, y = _arrays(100)  # batches of 32, 32, 32 and 4
    xc, yc = _arrays(100, classes=3)
    rng = np.random.default_rng(3)
    two_targets = {"a": rng.random((100, 1), dtype=np.float32), "b": rng.random((100, 2), dtype=np.float32)}
    images, labels = rng.random((90, 12, 12, 3), dtype=np.float32), rng.integers(0, 5, 90)

    def two_outputs():
        inputs = keras.Input((8,))
        hidden = keras.layers.Dense(16, activation="relu")(inputs)
        model = keras.Model(
            inputs,
            {"a": keras.layers.Dense(1, name="a")(hidden), "b": keras.layers.Dense(2, name="b")(hidden)},
        )
        model.compile("adam", {"a": "mse", "b": "mse"}, metrics={"a": ["mae"]})
        return model

    def conv():
        model = keras.Sequential(
            [
                keras.Input((12, 12, 3)),
                keras.layers.Conv2D(4, 3, activation="relu"),
                keras.layers.MaxPooling2D(),
                keras.layers.Flatten(),
                keras.layers.Dense(5),
            ]
        )
        model.compile(
            "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
        )
        return model

    def classifier():
        return _dense(
            3, keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
        )

    def fit(**kwargs):
        return lambda model, callbacks: [
            model.fit(epochs=2, verbose=0, callbacks=callbacks(0), **kwargs).history
        ]

    cases = {
        "partial_last_batch": (_dense, fit(x=x, y=y, batch_size=32)),
        "two_outputs": (two_outputs, fit(x=x, y=two_targets, batch_size=32)),
        "conv": (conv, fit(x=images, y=labels, batch_size=16)),
        "generator": (_dense, fit(x=_generator(x[:96], y[:96]), steps_per_epoch=4)),
        "pydataset_workers": (_dense, fit(x=_Sequence(x, y, 16, workers=2))),
        "validation": (
            lambda: _dense(metrics=["mae"]),
            fit(x=x, y=y, batch_size=16, validation_data=_arrays(40)),
        ),
        "class_weight": (
            classifier,
            fit(x=xc, y=yc, batch_size=16, class_weight={0: 1.0, 1: 2.0, 2: 0.5}),
        ),
        "sample_weight": (
            classifier,
            fit(x=xc, y=yc, batch_size=16, sample_weight=rng.random(100).astype(np.float32)),
        ),
        "guide_three_fits": (guide_model, guide_fits),
    }
    if backend == "jax":  # PyTorch runs one step per call.
        cases["steps_per_execution_jit"] = (
            lambda: _dense(steps_per_execution=8, jit_compile=True),
            fit(x=x, y=y, batch_size=5, validation_data=_arrays(30)),
        )
    return cases


def same_with_and_without(build, fits, logdir, reuse=False):
    """Trains `build()` with `fits` without, then with, the callback (a new
    one per fit, or one reused), from the same seed. Returns which of
    weights, history and traces are identical."""
    results = []
    for with_callback in (False, True):
        set_random_seed(SEED)
        model = _counting(build())
        shared = tb_devicecost.DeviceCostCallback(os.path.join(logdir, "reused"))

        def callbacks(i):
            if not with_callback:
                return []
            if reuse:
                return [shared]
            return [tb_devicecost.DeviceCostCallback(os.path.join(logdir, f"fit{i}"))]

        histories = fits(model, callbacks)
        weights = [np.asarray(w) for w in model.get_weights()]
        results.append((weights, histories, model.traces))
    (weights_a, history_a, traces_a), (weights_b, history_b, traces_b) = results
    return {
        "weights": len(weights_a) == len(weights_b)
        and all(np.array_equal(a, b) for a, b in zip(weights_a, weights_b)),
        "history": history_a == history_b,
        "traces": traces_a == traces_b,
        "trace_count": traces_a,
    }


def main():
    backend, logdir = sys.argv[1], sys.argv[2]
    if backend == "torch":
        import torch

        torch.set_num_threads(1)
    if backend == "jax":
        import jax

        # The fits with and without the callback compile the same programs:
        # a cache on disk compiles each once (compiling is most of the time).
        jax.config.update("jax_compilation_cache_dir", os.path.join(logdir, "jax_cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    facts = {"backend": keras.backend.backend(), "clients": {}}
    for name, (build, fits) in clients(backend).items():
        start = time.perf_counter()
        facts["clients"][name] = same_with_and_without(build, fits, os.path.join(logdir, name))
        facts["clients"][name]["seconds"] = round(time.perf_counter() - start, 2)
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
