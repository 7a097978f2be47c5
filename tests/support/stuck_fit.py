"""A TensorFlow fit stuck in C code, to be ended by SIGTERM (issue 33).

`python stuck_fit.py LOGDIR MARKER [callback]`: fits a small model on a
`tf.data` generator that hands over two batches and then waits forever
(the fit's main thread waits in TensorFlow's iterator, in C, where no
Python signal handler runs). The generator creates `MARKER` when it starts
waiting. With `callback`, `DeviceCostCallback` records into `LOGDIR`.
"""

import os
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tb_devicecost  # noqa: E402


def main():
    logdir, marker = sys.argv[1], sys.argv[2]
    with_callback = sys.argv[3:] == ["callback"]
    never = threading.Event()

    def batches():
        for _ in range(2):
            yield np.ones((4, 8), np.float32), np.ones((4, 1), np.float32)
        with open(marker, "w", encoding="utf-8"):
            pass
        never.wait()

    dataset = tf.data.Dataset.from_generator(
        batches,
        output_signature=(
            tf.TensorSpec((None, 8), tf.float32),
            tf.TensorSpec((None, 1), tf.float32),
        ),
    )
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    callbacks = [tb_devicecost.DeviceCostCallback(logdir)] if with_callback else []
    model.fit(dataset, epochs=1, steps_per_epoch=10, verbose=0, callbacks=callbacks)


if __name__ == "__main__":
    main()
