"""Measuring never changes training: the same fit with and without the callback.

Each case trains the same model from the same seed twice, once with
`DeviceCostCallback` and once without, and requires bit-identical weights,
an identical `history.history`, and the same number of traces of the step
(Python runs `train_step` once per trace). The cases are the shapes of input
and training that Keras examples use; each one broke at least one earlier way
of timing the fetch (see docs/FORMAT.md, "How the data wait is measured").
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import tb_devicecost
from tb_devicecost.reading import reader

from tests.support.scripts import run_backend_script
from tests.support.unchanged_fits import guide_fits, guide_model, same_with_and_without


SEED = 1234


class CountingSequential(keras.Sequential):
    """Records the batch shape of every trace of `train_step`."""

    traces = None

    def train_step(self, data):
        if self.traces is not None:
            self.traces.append(tuple(data[0].shape))
        return super().train_step(data)


def _dense(outputs=1, loss="mse", optimizer="adam", counting=False, **compile_kwargs):
    cls = CountingSequential if counting else keras.Sequential
    model = cls(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(outputs),
        ]
    )
    if counting:
        model.traces = []
    model.compile(optimizer, loss, **compile_kwargs)
    return model


def _arrays(samples=100, features=8, classes=None):
    rng = np.random.default_rng(7)
    x = rng.random((samples, features), dtype=np.float32)
    if classes:
        y = rng.integers(0, classes, samples)
    else:
        y = rng.random((samples, 1), dtype=np.float32)
    return x, y


def _train_twice(build, fit_kwargs_fn, tmp_path, epochs=3, evaluate=False, **callback_kwargs):
    """Trains `build()` with `fit(**fit_kwargs_fn())` without, then with, the
    callback, from the same seed. Returns both (weights, history, model)."""
    results = []
    for with_callback in (False, True):
        keras.utils.set_random_seed(SEED)
        model = build()
        kwargs = fit_kwargs_fn()
        callbacks = list(kwargs.pop("callbacks", []))
        if with_callback:
            callbacks.append(
                tb_devicecost.DeviceCostCallback(str(tmp_path / "run"), **callback_kwargs)
            )
        history = model.fit(epochs=epochs, verbose=0, callbacks=callbacks, **kwargs)
        results.append((model.get_weights(), history.history, model))
    return results


def _assert_identical(results):
    (weights_a, history_a, _), (weights_b, history_b, _) = results
    assert history_a == history_b
    assert len(weights_a) == len(weights_b)
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_array_equal(a, b)


def _records(tmp_path):
    provider = reader.local_provider(str(tmp_path))
    return {record.run: record for record in reader.read_runs(provider)}


@pytest.mark.slow
def test_partial_last_batch_is_traced_once_like_keras(tmp_path):
    x, y = _arrays(100)  # batches of 32, 32, 32 and 4
    results = []
    for with_callback in (False, True):
        keras.utils.set_random_seed(SEED)
        model = _dense(counting=True)
        callbacks = (
            [tb_devicecost.DeviceCostCallback(str(tmp_path / "run"))]
            if with_callback
            else []
        )
        history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=callbacks)
        results.append((model.get_weights(), history.history, model))
    _assert_identical(results)
    traces_without, traces_with = (model.traces for _, _, model in results)
    assert traces_with == traces_without
    assert set(traces_without) == {(None, 8)}
    aggregate = _records(tmp_path)["run/train"].aggregate
    assert aggregate["steps"] == 12
    # Nothing was retraced, so there is no retracing to report.
    assert aggregate["retraces"]["count"] == 0


@pytest.mark.slow
def test_two_output_functional_model(tmp_path):
    def build():
        inputs = keras.Input((8,))
        hidden = keras.layers.Dense(16, activation="relu")(inputs)
        model = keras.Model(
            inputs,
            {"a": keras.layers.Dense(1, name="a")(hidden), "b": keras.layers.Dense(2, name="b")(hidden)},
        )
        model.compile("adam", {"a": "mse", "b": "mse"}, metrics={"a": ["mae"]})
        return model

    x, _ = _arrays(100)
    rng = np.random.default_rng(3)
    targets = {"a": rng.random((100, 1), dtype=np.float32), "b": rng.random((100, 2), dtype=np.float32)}
    _assert_identical(
        _train_twice(build, lambda: dict(x=x, y=targets, batch_size=32), tmp_path)
    )


@pytest.mark.parametrize("reuse", [False, True], ids=["callback_per_fit", "one_callback"])
@pytest.mark.slow
def test_three_fits_in_a_row_of_the_guides_two_output_model(tmp_path, reuse):
    """Issue 21, item 6: the keras.io guide fits its two-input, two-output
    model on lists, then dicts, then a shuffled `tf.data.Dataset` of dicts.
    The later fits reuse the model's step function on data of another
    element spec: fetched eagerly, their first batch traced the step for a
    static batch size, and the per-output losses in `history` were weighed
    by it (in the issue, `class_output_loss` 22.18 without the callback,
    22.68 with)."""
    assert same_with_and_without(guide_model, guide_fits, str(tmp_path), reuse=reuse) == {
        "weights": True,
        "history": True,
        "traces": True,
        "trace_count": 4,
    }


@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.slow
def test_the_backend_agnostic_clients_on_jax_and_pytorch(tmp_path, backend):
    """The clients above that need no TensorFlow (`unchanged_fits.py`),
    each backend in a process of its own."""
    facts, _ = run_backend_script("unchanged_fits.py", backend, tmp_path)
    assert facts["backend"] == backend
    assert facts["clients"]["guide_three_fits"]["trace_count"] > 0
    differs = {
        name: [part for part in ("weights", "history", "traces") if not same[part]]
        for name, same in facts["clients"].items()
    }
    assert {name: parts for name, parts in differs.items() if parts} == {}


@pytest.mark.slow
def test_small_conv_net(tmp_path):
    def build():
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
            "adam",
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        return model

    rng = np.random.default_rng(5)
    x = rng.random((90, 12, 12, 3), dtype=np.float32)
    y = rng.integers(0, 5, 90)
    _assert_identical(
        _train_twice(build, lambda: dict(x=x, y=y, batch_size=16), tmp_path)
    )


@pytest.mark.slow
def test_dataset_of_unknown_cardinality(tmp_path):
    """Keras's last call of each epoch runs into the exhausted iterator in the
    graph (after `optimizer.iterations += 1`); with the callback the same."""
    x, y = _arrays(100)

    def data():
        dataset = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .filter(lambda a, b: a[0] > 0.2)
            .batch(16)
        )
        assert dataset.cardinality() == tf.data.UNKNOWN_CARDINALITY
        return dict(x=dataset)

    results = _train_twice(lambda: _dense(), data, tmp_path, epochs=2)
    _assert_identical(results)
    iterations = [int(model.optimizer.iterations.numpy()) for _, _, model in results]
    assert iterations[0] == iterations[1]


@pytest.mark.slow
def test_python_generator(tmp_path):
    x, y = _arrays(96)

    def generator():
        for epoch in range(3):
            for start in range(0, 96, 24):
                yield x[start:start + 24], y[start:start + 24]

    _assert_identical(
        _train_twice(
            lambda: _dense(),
            lambda: dict(x=generator(), steps_per_epoch=4),
            tmp_path,
        )
    )


class _Sequence(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]


@pytest.mark.slow
def test_pydataset_with_workers(tmp_path):
    x, y = _arrays(100)
    _assert_identical(
        _train_twice(
            lambda: _dense(),
            lambda: dict(x=_Sequence(x, y, 16, workers=4)),
            tmp_path,
        )
    )


@pytest.mark.slow
def test_steps_per_execution_with_jit_compile_counts_the_steps_that_ran(tmp_path):
    x, y = _arrays(100)  # 20 steps of 5 samples per epoch: executions of 8, 8, 4
    validation = _arrays(30)  # 6 validation steps: one execution of 6
    results = _train_twice(
        lambda: _dense(steps_per_execution=8, jit_compile=True),
        lambda: dict(x=x, y=y, batch_size=5, validation_data=validation),
        tmp_path,
        epochs=2,
    )
    _assert_identical(results)
    records = _records(tmp_path)
    assert records["run/train"].aggregate["steps"] == 40
    assert records["run/validation"].aggregate["steps"] == 12


@pytest.mark.slow
def test_validation_data_and_validation_split(tmp_path):
    x, y = _arrays(120)
    validation = _arrays(40)
    _assert_identical(
        _train_twice(
            lambda: _dense(metrics=["mae"]),
            lambda: dict(x=x, y=y, batch_size=16, validation_data=validation),
            tmp_path,
        )
    )
    _assert_identical(
        _train_twice(
            lambda: _dense(metrics=["mae"]),
            lambda: dict(x=x, y=y, batch_size=16, validation_split=0.25),
            tmp_path,
        )
    )


@pytest.mark.slow
def test_class_weight_and_sample_weight(tmp_path):
    x, y = _arrays(100, classes=3)
    weights = np.random.default_rng(11).random(100).astype(np.float32)

    def build():
        return _dense(
            outputs=3,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )

    _assert_identical(
        _train_twice(
            build,
            lambda: dict(x=x, y=y, batch_size=16, class_weight={0: 1.0, 1: 2.0, 2: 0.5}),
            tmp_path,
        )
    )
    _assert_identical(
        _train_twice(
            build, lambda: dict(x=x, y=y, batch_size=16, sample_weight=weights), tmp_path
        )
    )


@pytest.mark.slow
def test_mixed_precision(tmp_path):
    x, y = _arrays(100)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        _assert_identical(
            _train_twice(lambda: _dense(), lambda: dict(x=x, y=y, batch_size=32), tmp_path)
        )
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.slow
def test_mirrored_strategy_on_two_logical_cpus(tmp_path):
    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    x, y = _arrays(96)

    def build():
        with strategy.scope():
            return _dense()

    results = _train_twice(
        build, lambda: dict(x=x, y=y, batch_size=32), tmp_path
    )
    _assert_identical(results)
    records = _records(tmp_path)
    info = records["run/train"].info
    placement = records["run/train"].placement
    assert info["batch_size"] == 32
    # Two float32 features... 8 of them and one float32 target per sample.
    assert placement["input_bytes_per_step"] == 32 * (8 + 1) * 4
    assert placement["input_devices"] == ["CPU:0", "CPU:1"]
    # Every variable is mirrored on both devices.
    variables = placement["variables"]
    assert variables["CPU:0"] == variables["CPU:1"] == 4


@pytest.mark.slow
def test_custom_train_step(tmp_path):
    class Custom(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(16, activation="relu")
            self.out = keras.layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="loss")

        def call(self, inputs):
            return self.out(self.hidden(inputs))

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(gradients, self.trainable_variables)
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

        @property
        def metrics(self):
            return [self.tracker]

    def build():
        model = Custom()
        model.compile("adam")
        return model

    x, y = _arrays(100)
    _assert_identical(
        _train_twice(build, lambda: dict(x=x, y=y, batch_size=32), tmp_path)
    )


def test_string_batches_count_their_bytes(tmp_path):
    words = np.array([b"a", b"bbbb", b"cc", b"dddddddd"] * 8)
    lengths = np.array([len(word) for word in words], dtype=np.float32)[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((words, lengths)).batch(8)

    inputs = keras.Input((), dtype="string")
    length = keras.layers.Lambda(
        lambda s: tf.cast(tf.strings.length(s), "float32")[:, None],
        output_shape=(1,),
    )(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(length))
    model.compile("sgd", "mse")
    model.fit(
        dataset,
        epochs=1,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(str(tmp_path / "run"))],
    )
    placement = _records(tmp_path)["run/train"].placement
    # The first batch measured for placement is the second one (the first
    # runs inside Keras's graph): 8 strings of 1+4+2+8 bytes twice, plus 8
    # float32 targets.
    assert placement["input_bytes_per_step"] == 2 * (1 + 4 + 2 + 8) + 8 * 4


@pytest.mark.slow
def test_the_device_busy_trace_window(tmp_path):
    """The window that accelerator runs trace by default (forced on here:
    CI has no accelerator) changes nothing either."""
    x, y = _arrays(32 * 30)
    results = _train_twice(
        lambda: _dense(counting=True),
        lambda: {"x": x, "y": y, "batch_size": 32},
        tmp_path,
        device_busy=True,
    )
    _assert_identical(results)
    traces_without, traces_with = (model.traces for _, _, model in results)
    assert traces_with == traces_without
    [window] = _records(tmp_path)["run/train"].trace["windows"]
    assert window["purpose"] == "device_busy"
