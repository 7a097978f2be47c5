"""What the backends can tell about variables, batches and placement, asked
the way each backend answers (each lists its own devices:
`backends/tensorflow.py`, `backends/jax.py`, `backends/torch.py`).

`variable_devices` and `input_devices` serve every backend: they read a
variable's or a batch's devices from what its value holds (a JAX array's
shards, `tf.distribute`'s mirrored components, a tensor's device). The
rest is for the backends that cannot tell the op placement of a step
(JAX, PyTorch): where a backend cannot tell something (the op placement
of a step, copies between devices), the document says so (`null` and a
note) rather than writing a misleading 0.
"""

import numpy as np

from tb_devicecost.backends import placement

_NOT_AVAILABLE = "not available on the {backend} backend"


def short_name(device):
    """A backend device (JAX `Device`, torch `device`) -> `GPU:0` / `CPU:0`."""
    platform = getattr(device, "platform", None)
    if platform is not None:  # JAX
        kind = "GPU" if platform in ("gpu", "cuda", "rocm") else platform.upper()
        return f"{kind}:{getattr(device, 'id', 0)}"
    kind = getattr(device, "type", None)
    if kind is not None:  # torch
        index = getattr(device, "index", None) or 0
        return f"{'GPU' if kind == 'cuda' else kind.upper()}:{index}"
    return placement.short_device_name(str(device))


def _addressable_devices(array):
    """The devices of a JAX array that this process holds: a global array of
    a multi-process job (`keras.distribution.DataParallel`) also spans the
    other processes' devices."""
    sharding = getattr(array, "sharding", None)
    addressable = getattr(sharding, "addressable_devices", None)
    if addressable is not None:
        return sorted(addressable, key=lambda device: device.id)
    return list(array.devices())


def variable_devices(variables):
    """Counts variables per device, on any backend.

    A variable sharded or replicated over several devices (a JAX array,
    `tf.distribute`'s mirrored variables) counts once on each of them; one
    whose value names no device is not counted.

    Args:
        variables: Keras variables, or the backend's arrays or tensors.

    Returns:
        `{device: count}` by short device name (`GPU:0`), in name order.
    """
    counts = {}
    for variable in variables:
        for device in _value_devices(getattr(variable, "value", variable)):
            name = short_name(device)
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def _value_devices(value):
    """The devices a variable's value is on."""
    if hasattr(value, "devices"):  # a JAX array
        try:
            return _addressable_devices(value)
        except Exception:  # pylint: disable=broad-except
            pass
    components = getattr(value, "values", None)
    if isinstance(components, tuple) and components:
        # `tf.distribute`'s MirroredVariable: one component per replica.
        devices = [getattr(component, "device", None) for component in components]
    else:
        devices = [getattr(value, "device", None)]
    return [device for device in devices if device is not None]


def input_devices(batch):
    """Where the batch is as fetched, on any backend.

    `host` for NumPy values and for values that name no device; a JAX
    array's devices (those this process holds); a tensor's device, whether
    the backend names it with a string (TensorFlow's
    `/job:localhost/replica:0/task:0/device:GPU:0`) or an object (PyTorch's
    `torch.device`).

    Returns:
        The short device names (`GPU:0`, `host`), sorted.
    """
    names = set()
    for element in placement.leaves(batch):
        if isinstance(element, (np.ndarray, np.generic)):
            # NumPy 2's arrays and scalars name a `device` too ("cpu"): host
            # memory.
            names.add("host")
            continue
        if hasattr(element, "devices"):  # a JAX array
            try:
                names.update(short_name(device) for device in _addressable_devices(element))
                continue
            except Exception:  # pylint: disable=broad-except
                pass
        device = getattr(element, "device", None)
        if device is None:
            names.add("host")
        elif isinstance(device, str):
            names.add(placement.short_device_name(device))
        else:
            names.add(short_name(device))
    return sorted(names)


def placement_document(backend, device_list, variables, optimizer_variables, batch):
    """The `devicecost/placement` document for a JAX or PyTorch fit.

    Args:
        backend: The backend's name, for the notes.
        device_list: The backend's devices (`Backend.list_devices`).
        variables, optimizer_variables: The model's and the optimizer's
            variables, or (on JAX, where a fit holds them as state) the
            arrays of that state.
        batch: The first batch.
    """
    note = _NOT_AVAILABLE.format(backend=backend)
    return {
        "devices": device_list,
        "accelerator_visible": any(d["kind"] != "CPU" for d in device_list["physical"]),
        "variables": variable_devices(variables),
        "optimizer_variables": variable_devices(optimizer_variables),
        "input_bytes_per_step": placement.input_bytes(batch),
        "input_devices": input_devices(batch),
        "step_ops_captured": False,
        "ops": None,
        "ops_note": f"The op placement of a step is {note}.",
        "cross_device_copies": None,
        "cross_device_copies_note": f"Copies between devices inside a step are {note}.",
    }
