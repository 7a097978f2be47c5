"""What a batch is, as `placement` reads it: its size, its bytes, and
device names shortened; its devices, as `devices.input_devices` reads
them on every backend. Plain NumPy and TensorFlow values, and stand-ins for
JAX's and PyTorch's."""

import numpy as np
import pytest

from tb_devicecost.backends import devices
from tb_devicecost.backends import placement


@pytest.mark.parametrize("device, short", [
    ("/job:localhost/replica:0/task:0/device:GPU:0", "GPU:0"),
    ("/device:cpu:0", "CPU:0"),
    ("TPU:3", "TPU:3"),
    ("", "unplaced"),
    (None, "unplaced"),
    ("a device with no index", "a device with no index"),
])
def test_device_names_are_shortened(device, short):
    assert placement.short_device_name(device) == short


def test_batch_size_is_the_leading_dimension_of_any_structure():
    x = np.zeros((32, 10), np.float32)
    assert placement.batch_size((x, np.zeros(32))) == 32
    assert placement.batch_size([{"a": x, "b": x}, x]) == 32
    assert placement.batch_size({"image": np.zeros((8, 4, 4, 3))}) == 8
    assert placement.batch_size((np.float32(1.0),)) is None  # no dimension
    assert placement.batch_size(()) is None


def test_input_bytes_count_every_part_and_strings_by_their_bytes():
    x = np.zeros((4, 10), np.float32)
    y = np.zeros(4, np.int64)
    assert placement.input_bytes((x, y)) == 4 * 10 * 4 + 4 * 8
    assert placement.input_bytes({"s": np.array([b"ab", b"cde"], dtype=object)}) == 5
    assert placement.input_bytes(()) == 0


class _Named:
    """A batch element (a shape and a dtype) that names its device as
    `device` (a string on TensorFlow, an object on PyTorch)."""

    shape = (4,)
    dtype = np.float32

    def __init__(self, device):
        self.device = device


class _TorchDevice:
    def __init__(self, kind, index):
        self.type = kind
        self.index = index


class _JaxDevice:
    def __init__(self, platform, index):
        self.platform = platform
        self.id = index


class _JaxArray:
    shape = (4,)
    dtype = np.float32

    def __init__(self, *shards):
        self._shards = shards

    def devices(self):
        return set(self._shards)


def test_a_batch_s_devices_are_read_one_way_on_every_backend():
    """One `input_devices` for every backend: a device named by a string
    (TensorFlow's) is shortened, not taken for host memory; one named by
    an object (PyTorch's) or a JAX array's shards by the backend's names."""
    assert devices.input_devices((_Named("/job:localhost/replica:0/task:0/device:GPU:1"),)) == ["GPU:1"]
    assert devices.input_devices({"a": _Named("/device:cpu:0"), "b": _Named("GPU:0")}) == ["CPU:0", "GPU:0"]
    assert devices.input_devices((_Named(""),)) == ["unplaced"]
    assert devices.input_devices((_Named(_TorchDevice("cuda", 1)), _Named(_TorchDevice("cpu", None)))) == [
        "CPU:0", "GPU:1"]
    assert devices.input_devices((_JaxArray(_JaxDevice("gpu", 0), _JaxDevice("gpu", 1)),)) == ["GPU:0", "GPU:1"]
    # NumPy 2's arrays and scalars name "cpu": host memory, as does a value
    # that names no device.
    assert devices.input_devices((np.zeros(3), np.float32(1.0), _Named(None))) == ["host"]
    assert devices.input_devices(()) == []


@pytest.mark.slow
def test_tensorflow_batches_and_their_devices():
    import tensorflow as tf  # make test installs TensorFlow
    x = tf.zeros((16, 3))
    assert placement.batch_size((x, tf.zeros(16))) == 16
    assert placement.input_bytes((x,)) == 16 * 3 * 4
    assert devices.input_devices((x,)) == ["CPU:0"]
    assert devices.input_devices((np.zeros(3),)) == ["host"]
    # A dimension unknown in a traced batch: no size, no bytes.
    spec_batch = tf.TensorSpec((None, 3))

    @tf.function(input_signature=[spec_batch])
    def probe(batch):
        assert placement.batch_size((batch,)) is None
        assert placement.input_bytes((batch,)) is None
        return batch

    probe(x)
