"""A model builder and its data, named on the command line by the tests of
`tb-devicecost sweep` (`tests.support.sweep_models:build --data
tests.support.sweep_models:data`) and imported by `sweep_fits.py` under
other backends."""

import keras
import numpy as np


def build():
    model = keras.Sequential(
        [keras.Input((20,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    model.compile("sgd", "mse")
    return model


def build_uncompiled():
    return keras.Sequential([keras.Input((20,)), keras.layers.Dense(1)])


def data():
    x = np.random.default_rng(0).random((100, 20), dtype=np.float32)
    return x, x[:, :1]


def broken_data():
    raise RuntimeError("no data today")
