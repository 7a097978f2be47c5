"""What a run was: backend, versions, compile settings, machine.

Recorded with every run so that two runs can be compared knowing what
differed between them (device, `jit_compile`, batch size, library versions).
"""

import datetime
import functools
import os
import platform
import socket
import sys

from tb_devicecost import version


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
    if strategy is not None:
        info["distribution_strategy"] = type(strategy).__name__
        info["replicas"] = getattr(strategy, "num_replicas_in_sync", None)
    else:
        info["distribution_strategy"] = None
        info["replicas"] = 1
    return info
