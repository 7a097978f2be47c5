"""Real fits for the session's `fit_logdir` (`tests/conftest.py`)."""

import os
import time

import numpy as np
import tensorflow as tf

# Seconds slept by the Python input pipeline of the input-bound run, per batch.
# 10 ms a batch of 32 (3,200 samples/s at most): the compute run, 16 steps of
# batch 256, would need steps of 80 ms to fall below it, as a loaded machine
# pushed 3 ms (10,667 samples/s) once.
INPUT_SLEEP_S = 0.010


def fit_runs(logdir):
    """Three short real fits into `logdir`: compute/, pinned/, input/."""
    import keras

    import tb_devicecost

    rng = np.random.default_rng(0)

    def dense_model(inputs, hidden, layers=1, extra=None):
        stack = [keras.Input((inputs,))]
        for _ in range(layers):
            stack.append(keras.layers.Dense(hidden, activation="relu"))
        if extra is not None:
            stack.append(extra)
        stack.append(keras.layers.Dense(1))
        model = keras.Sequential(stack)
        model.compile("sgd", "mse")
        return model

    # Compute-bound: cached and prefetched data, a model big enough that the
    # step, not the pipeline, sets the pace.
    x = rng.random((4096, 256), dtype=np.float32)
    y = rng.random((4096, 1), dtype=np.float32)
    cached = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(256, drop_remainder=True)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    # Steps of about 10 ms: the cost of handing over a ready batch (0.1 to
    # 0.3 ms, more on a busy machine) stays well under 5% of the step.
    dense_model(256, 1024, layers=2).fit(
        cached,
        epochs=4,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "compute"))],
    )

    # A layer whose variable and ops are pinned to the second logical CPU.
    class PinnedScale(keras.layers.Layer):
        def build(self, input_shape):
            with tf.device("/CPU:1"):
                self.scale = self.add_weight(
                    shape=(input_shape[-1],), initializer="ones"
                )

        def call(self, inputs):
            with tf.device("/CPU:1"):
                return tf.math.tanh(inputs) * self.scale

    small_x = rng.random((1024, 16), dtype=np.float32)
    small_y = rng.random((1024, 1), dtype=np.float32)
    small = (
        tf.data.Dataset.from_tensor_slices((small_x, small_y))
        .batch(32)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    dense_model(16, 32, extra=PinnedScale()).fit(
        small,
        epochs=2,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "pinned"))],
    )

    # Input-bound: a Python function that sleeps per batch, no prefetch.
    def slow(features, targets):
        time.sleep(INPUT_SLEEP_S)
        return features, targets

    slow_data = (
        tf.data.Dataset.from_tensor_slices((small_x[:32 * 150], small_y[:32 * 150]))
        .batch(32)
        .map(lambda a, b: tf.py_function(slow, [a, b], [tf.float32, tf.float32]))
        .map(lambda a, b: (tf.ensure_shape(a, (None, 16)), tf.ensure_shape(b, (None, 1))))
    )
    dense_model(16, 32).fit(
        slow_data.repeat(),
        steps_per_epoch=150,
        epochs=2,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "input"))],
    )
