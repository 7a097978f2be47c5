"""Seeding a fit in a process of its own, without importing TensorFlow
where the fit does not use it.

`keras.utils.set_random_seed` seeds TensorFlow whenever it is installed,
and so imports it: about 3 s of CPU at the start of every JAX or PyTorch
fit that the suite runs in a process of its own (a fifth of such a
process's life on this project's 2-core machine). A fit on those backends
fed from arrays or a `PyDataset` has no TensorFlow state to seed.
"""

import sys

import keras


# Whether this process's first seeding left TensorFlow out: every later one
# does too, so that fits seeded before and after TensorFlow's import (by a
# `tf.data` pipeline) start from the same state.
_without_tensorflow = None


def set_random_seed(seed):
    """`keras.utils.set_random_seed(seed)`, leaving TensorFlow out where
    the backend is not TensorFlow and nothing imported it before the
    process's first seeding.

    A `tf.data` pipeline then gets no global TensorFlow seed: one that
    shuffles is given its own (`unchanged_fits.py`).
    """
    global _without_tensorflow
    if _without_tensorflow is None:
        _without_tensorflow = (
            keras.backend.backend() != "tensorflow" and "tensorflow" not in sys.modules
        )
    if not _without_tensorflow:
        keras.utils.set_random_seed(seed)
        return
    from keras.src.utils import module_utils

    # Keras asks `tensorflow.available` (which imports it) before seeding it.
    lazy = module_utils.tensorflow
    available, lazy._available = lazy._available, False
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy._available = available
