"""What a run was: backend, versions, compile settings, machine.

Recorded with every run so that two runs can be compared knowing what
differed between them (device, `jit_compile`, batch size, library versions).
"""

import datetime
import functools
import importlib.util
import os
import platform
import socket
import sys

from tb_devicecost import version
from tb_devicecost.format import vocabulary


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _module_version(name):
    module = sys.modules.get(name)
    return getattr(module, "__version__", None) if module else None


def machine_info():
    """Host facts that do not depend on the framework."""
    return dict(
        _host_facts(),
        start_time=datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        # Which frameworks the process could import (without importing
        # them): no finding advises the API of one it cannot.
        importable=importable(),
        # Read each time: a framework may be imported after the first fit.
        versions={
            "tb_devicecost": version.__version__,
            "numpy": _module_version("numpy"),
            "tensorboard": _module_version("tensorboard"),
            "keras": _module_version("keras"),
            "tensorflow": _module_version("tensorflow"),
            "jax": _module_version("jax"),
            "torch": _module_version("torch"),
        },
    )


@functools.lru_cache(maxsize=None)
def importable():
    """`{framework: bool}`: whether this process can import each of
    `vocabulary.FRAMEWORKS` (found on its path, or imported already)."""
    found = {}
    for name in vocabulary.FRAMEWORKS:
        try:
            found[name] = name in sys.modules or importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found[name] = False
    return found


@functools.lru_cache(maxsize=None)
def _host_facts():
    # Gathered once per process: many short fits each record them.
    return {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def keras_model_info(model, backend_name):
    """Settings of a compiled Keras model that change how fast it trains."""
    info = {"backend": backend_name, "model": getattr(model, "name", None)}
    for key in ("jit_compile", "run_eagerly", "steps_per_execution"):
        value = getattr(model, key, None)
        info[key] = value if isinstance(value, (bool, int, str)) else repr(value)
    policy = getattr(model, "dtype_policy", None)
    info["dtype_policy"] = getattr(policy, "name", None)
    try:
        info["parameters"] = int(model.count_params())
    except Exception:  # pylint: disable=broad-except
        info["parameters"] = None
    strategy = getattr(model, "distribute_strategy", None)
    distribution = _keras_distribution() if strategy is None else None
    if strategy is not None:
        info["distribution_strategy"] = type(strategy).__name__
        info["replicas"] = getattr(strategy, "num_replicas_in_sync", None)
        try:
            # MirroredStrategy: the devices of this process that hold replicas.
            info["local_devices"] = [str(name) for name in strategy.extended.worker_devices]
        except Exception:  # pylint: disable=broad-except
            pass
    elif distribution is not None:
        # `keras.distribution` (JAX): the batch is split over the mesh's
        # batch axis, across every process's devices.
        info["distribution_strategy"] = type(distribution).__name__
        info["replicas"] = _batch_axis_size(distribution)
    else:
        info["distribution_strategy"] = None
        info["replicas"] = 1
    return info


def _keras_distribution():
    try:
        import keras  # pylint: disable=import-outside-toplevel

        return keras.distribution.distribution()
    except Exception:  # pylint: disable=broad-except
        return None


def _batch_axis_size(distribution):
    try:
        mesh = distribution.device_mesh
        name = getattr(distribution, "batch_dim_name", None) or mesh.axis_names[0]
        return int(mesh.shape[list(mesh.axis_names).index(name)])
    except Exception:  # pylint: disable=broad-except
        return None


def batch_info(batch_size, info):
    """The run-info entries of a fit's batch: `batch_size` as the step saw
    it and, under a distribution strategy over several processes or
    replicas, the split of that global batch (`global_batch`,
    `per_process_batch`, `per_replica_batch`), read from `info` (the run
    info gathered at the fit's start)."""
    entries = {"batch_size": batch_size}
    count = info.get("process_count") or 1
    replicas = info.get("replicas")
    several = count > 1 or (isinstance(replicas, int) and replicas > 1)
    if batch_size and several and info.get("distribution_strategy"):
        entries["global_batch"] = batch_size
        entries["per_process_batch"] = _split(batch_size, count)
        if isinstance(replicas, int) and replicas > 0:
            entries["per_replica_batch"] = _split(batch_size, replicas)
    return entries


def _split(batch_size, parts):
    share = batch_size / parts
    return int(share) if share.is_integer() else share


def process_run_dir(directory, process):
    """Where process `process["process_index"]` of a multi-process job
    writes what a single process writes to `directory`:
    `directory/process_<index>` (docs/FORMAT.md, "Processes")."""
    if process["process_count"] > 1 and isinstance(directory, (str, os.PathLike)):
        return os.path.join(directory, f"process_{process['process_index']}")
    return directory
