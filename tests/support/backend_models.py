"""Models and inputs shared by the scripts that fit on one Keras backend.

Imported by `backend_fits.py` and `backend_trace_fits.py` after they set
`KERAS_BACKEND`: Keras fixes its backend at import.
"""

import time

import keras
import numpy as np


def mlp(hidden=128):
    model = keras.Sequential(
        [
            keras.Input((100,)),
            keras.layers.Dense(hidden, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        "adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    return model


def arrays(samples):
    rng = np.random.default_rng(0)
    return (
        rng.random((samples, 100), dtype=np.float32),
        rng.integers(0, 10, samples),
    )


class Delayed(keras.utils.PyDataset):
    """A pipeline that sleeps `delay` seconds per batch, in the main thread."""

    def __init__(self, x, y, batch_size, delay, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size, self.delay = x, y, batch_size, delay

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        time.sleep(self.delay)
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part], self.y[part]
