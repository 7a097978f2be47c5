"""The test process's TensorFlow devices."""

import tensorflow as tf


def two_logical_cpus():
    """Two logical CPU devices (so a layer can be pinned to `/CPU:1`): called
    before TensorFlow initialises its devices, by `tests/conftest.py`."""
    try:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:
        pass  # Devices are initialised already (the same configuration).
