"""This process's place in a multi-process job, from the library that
started it (`torch.distributed` or `jax.distributed`): the one place that
asks each framework's distributed runtime.
"""

import sys


def process_info():
    """This process's place in a multi-process job, and the devices it holds.

    Read from `torch.distributed` when it is initialized, else from
    `jax.distributed` when it is; only modules already imported are asked
    (asking JAX for its devices otherwise would start its backend). A single
    process is index 0 of 1.

    Returns:
        `{"process_index", "process_count", "local_devices", "device_count",
        "distributed"}`: `local_devices` are the devices this process holds
        (`None` when unknown), `device_count` those of every process,
        `distributed` the library that started the job (`None` for one
        process).
    """
    torch = sys.modules.get("torch")
    distributed = getattr(torch, "distributed", None) if torch else None
    try:
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            count = int(distributed.get_world_size())
            device = "cuda" if torch.cuda.is_available() and torch.cuda.is_initialized() else "cpu"
            if device == "cuda":
                device = f"cuda:{torch.cuda.current_device()}"
            return {
                "process_index": int(distributed.get_rank()),
                "process_count": count,
                "local_devices": [device],
                "device_count": count,
                "distributed": f"torch.distributed ({distributed.get_backend()})",
            }
    except Exception:  # pylint: disable=broad-except
        pass
    jax = sys.modules.get("jax")
    try:
        if jax is not None and jax.distributed.is_initialized():
            return {
                "process_index": int(jax.process_index()),
                "process_count": int(jax.process_count()),
                "local_devices": [str(device) for device in jax.local_devices()],
                "device_count": int(jax.device_count()),
                "distributed": "jax.distributed",
            }
    except Exception:  # pylint: disable=broad-except
        pass
    return {
        "process_index": 0,
        "process_count": 1,
        "local_devices": None,
        "device_count": None,
        "distributed": None,
    }
