"""What the JAX and PyTorch backends can tell about devices, placement and
compilation, asked the way each backend answers.

Where a backend cannot tell something (the op placement of a step, copies
between devices), the document says so (`null` and a note) rather than
writing a misleading 0.
"""

import threading
import weakref

from tb_devicecost import placement

_NOT_AVAILABLE = "not available on the {backend} backend"


def list_devices(backend):
    """Physical devices: `{"physical": [...], "logical": [...]}`."""
    physical = []
    if backend == "jax":
        import jax

        # This process's devices: in a multi-process job `jax.devices()`
        # also lists the other processes' (docs/SCALE.md).
        for device in jax.local_devices():
            entry = {
                "name": f"{device.platform.upper()}:{device.id}",
                "kind": device.platform.upper(),
            }
            if device.platform != "cpu":
                entry["model"] = getattr(device, "device_kind", None)
                try:
                    stats = device.memory_stats() or {}
                    if "bytes_limit" in stats:
                        entry["memory_bytes"] = int(stats["bytes_limit"])
                except Exception:  # pylint: disable=broad-except
                    pass
            physical.append(entry)
    elif backend == "torch":
        import torch

        physical.append({"name": "CPU:0", "kind": "CPU"})
        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                properties = torch.cuda.get_device_properties(index)
                physical.append(
                    {
                        "name": f"GPU:{index}",
                        "kind": "GPU",
                        "model": properties.name,
                        "memory_bytes": int(properties.total_memory),
                    }
                )
    return {"physical": physical, "logical": list(physical)}


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
    """Variables per device; a sharded or replicated one counts on each."""
    counts = {}
    for variable in variables:
        value = getattr(variable, "value", variable)
        devices = None
        if hasattr(value, "devices"):  # a JAX array
            try:
                devices = _addressable_devices(value)
            except Exception:  # pylint: disable=broad-except
                devices = None
        if devices is None:
            device = getattr(value, "device", None)
            devices = [device] if device is not None else []
        for device in devices:
            name = short_name(device)
            counts[name] = counts.get(name, 0) + 1
    return dict(sorted(counts.items()))


def input_devices(batch):
    """Where the batch is as fetched: `host` for NumPy, else its devices."""
    names = set()
    for element in placement._leaves(batch):  # pylint: disable=protected-access
        if hasattr(element, "devices"):
            try:
                names.update(short_name(device) for device in _addressable_devices(element))
                continue
            except Exception:  # pylint: disable=broad-except
                pass
        device = getattr(element, "device", None)
        names.add("host" if device is None or isinstance(device, str) else short_name(device))
    return sorted(names)


def placement_document(backend, variables, optimizer_variables, batch):
    """The `devicecost/placement` document for a JAX or PyTorch fit.

    Args:
        variables, optimizer_variables: The model's and the optimizer's
            variables, or (on JAX, where a fit holds them as state) the
            arrays of that state.
    """
    devices = list_devices(backend)
    note = _NOT_AVAILABLE.format(backend=backend)
    return {
        "devices": devices,
        "accelerator_visible": any(d["kind"] != "CPU" for d in devices["physical"]),
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


def handover(backend):
    """What Keras's loop does to hand a ready batch to the step.

    JAX puts it on the default device (ahead of time on accelerators); the
    PyTorch loop passes it as it is.
    """
    if backend == "jax":
        import jax

        if jax.default_backend() != "cpu":
            return jax.device_put
    return lambda batch: batch


class CompileEvents:
    """Counts JAX's backend compilations, through `jax.monitoring`.

    One listener per process dispatches to every live instance; each counts
    only while it is armed (after a fit's warm-up), so a retrace names the
    step and the seconds compiled.
    """

    _EVENT = "/jax/core/compile/backend_compile_duration"
    _instances = weakref.WeakSet()
    _registered = False
    _lock = threading.Lock()

    def __init__(self):
        self.armed = False
        self.step = None
        self.count = 0
        self.seconds = 0.0
        self.steps = []
        with CompileEvents._lock:
            CompileEvents._instances.add(self)
            if not CompileEvents._registered:
                import jax.monitoring

                jax.monitoring.register_event_duration_secs_listener(
                    CompileEvents._dispatch
                )
                CompileEvents._registered = True

    @classmethod
    def _dispatch(cls, event, duration, **kwargs):
        if event != cls._EVENT:
            return
        for instance in list(cls._instances):
            # Only compilations inside a step after its warm-up count.
            if instance.armed and instance.step is not None:
                instance.count += 1
                instance.seconds += duration
                instance.steps.append(instance.step)
                del instance.steps[:-100]
