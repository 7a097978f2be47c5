"""What a batch is, as `placement` reads it: its size, its bytes, its
devices, and device names shortened. Plain NumPy and TensorFlow values."""

import numpy as np
import pytest

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


def test_tensorflow_batches_and_their_devices():
    import tensorflow as tf  # make test installs TensorFlow
    x = tf.zeros((16, 3))
    assert placement.batch_size((x, tf.zeros(16))) == 16
    assert placement.input_bytes((x,)) == 16 * 3 * 4
    assert placement.input_devices((x,)) == ["CPU:0"]
    assert placement.input_devices((np.zeros(3),)) == ["host"]
    # A dimension unknown in a traced batch: no size, no bytes.
    spec_batch = tf.TensorSpec((None, 3))

    @tf.function(input_signature=[spec_batch])
    def probe(batch):
        assert placement.batch_size((batch,)) is None
        assert placement.input_bytes((batch,)) is None
        return batch

    probe(x)
