"""The models and data of the GPU benchmarks, in one place.

`mlp`: the seeds' MLP (100 -> 128 -> 10); `cnn`: a small CNN on 64x64x3
images. Keras is imported when a model is built, not at import: a
`jax.distributed` process must initialise before anything starts JAX.
"""

import sys

import numpy as np


def set_random_seed(seed):
    """`keras.utils.set_random_seed(seed)`, without importing TensorFlow
    on another backend where nothing has: Keras seeds TensorFlow whenever
    it is installed, 3 s of CPU at a process's start on a CPU host (a GPU
    host here has no TensorFlow). These benchmarks feed no `tf.data`
    pipeline on JAX or PyTorch."""
    import keras

    if keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
    else:
        seed_without_tensorflow(seed)


def seed_without_tensorflow(seed):
    """What `keras.utils.set_random_seed(seed)` seeds, TensorFlow left out
    (also the tests' fits in processes of their own: `tests/support/seeding.py`)."""
    import keras
    from keras.src.utils import module_utils

    # Keras asks `tensorflow.available` (which imports it) before seeding it.
    lazy = module_utils.tensorflow
    available, lazy._available = lazy._available, False
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy._available = available


def build(kind):
    """A compiled `"mlp"` or `"cnn"`, on the current Keras backend."""
    import keras

    if kind == "mlp":
        layers = [
            keras.Input((100,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10),
        ]
    elif kind == "cnn":
        layers = [
            keras.Input((64, 64, 3)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    else:
        raise ValueError(f"`kind` must be 'mlp' or 'cnn'. Received: kind={kind!r}")
    model = keras.Sequential(layers)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def data(kind, samples, seed=0):
    """`samples` random inputs for `kind` and their labels (10 classes)."""
    rng = np.random.default_rng(seed)
    shape = (samples, 100) if kind == "mlp" else (samples, 64, 64, 3)
    return rng.random(shape, dtype=np.float32), rng.integers(0, 10, samples)
