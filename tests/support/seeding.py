"""Seeding a fit in a process of its own, without importing TensorFlow
where the fit does not use it.

`keras.utils.set_random_seed` seeds TensorFlow whenever it is installed,
and so imports it: about 3 s of CPU at the start of every JAX or PyTorch
fit that the suite runs in a process of its own (a short JAX fit's
process took 6.3 s with it and 2.6 s without, on this project's 2-core
machine). A fit on those backends fed from arrays or a `PyDataset` has no
TensorFlow state to seed.
"""

import importlib.util
import os
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
    _benchmark_models().seed_without_tensorflow(seed)


def _benchmark_models():
    """`benchmarks/models.py`, loaded from its path: that folder is not a
    package, and its module name (`models`) is too common to put first on
    the path."""
    name = "tb_devicecost_benchmark_models"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "models.py")
        spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]
