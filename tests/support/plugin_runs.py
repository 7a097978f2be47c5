"""A log directory of real short fits for the plugin, server and browser tests."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# A run name that would run script if it were ever inserted as HTML.
XSS_RUN_DIR = "<img src=x onerror=alert(1)>"


def make_plugin_logdir(logdir):
    """Writes three runs into `logdir` and returns their run names.

    `cpu/train` is fed by a cached, prefetched pipeline and holds a real
    profiler trace of steps 3 to 5; `slow/train` waits on a Python pipeline (10 ms a batch);
    the third run has a name made of HTML.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    import tb_devicecost

    rng = np.random.default_rng(0)
    x = rng.random((640, 100), dtype=np.float32)
    y = rng.integers(0, 10, 640)

    def model():
        network = keras.Sequential(
            [keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
        )
        network.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return network

    fast = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE)

    def sleep(a, b):
        time.sleep(0.03)
        return a, b

    # Long enough that its steady state (80 steps of 30 ms) outweighs its
    # warm-up (tracing, then instantiating the step: about 1 s on 2 cores)
    # even on a busy machine.
    slow = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(16)
        .map(lambda a, b: tf.py_function(sleep, [a, b], [tf.float32, tf.int64]))
        # `py_function` loses the shapes that Keras traces its step for.
        .map(lambda a, b: (tf.ensure_shape(a, (None, 100)), tf.ensure_shape(b, (None,))))
    )
    cpu_dir = os.path.join(logdir, "cpu")
    model().fit(
        fast,
        epochs=2,
        verbose=0,
        callbacks=[
            tb_devicecost.DeviceCostCallback(cpu_dir),
            keras.callbacks.TensorBoard(cpu_dir, profile_batch=(3, 5)),
        ],
    )
    model().fit(
        slow, epochs=2, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "slow"))],
    )
    model().fit(
        fast, epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, XSS_RUN_DIR))],
    )
    return ["cpu/train", "slow/train", f"{XSS_RUN_DIR}/train"]
