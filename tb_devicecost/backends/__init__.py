"""What each Keras backend needs measured its own way, one module a backend.

As Keras organises `keras/src/backend/{jax,tensorflow,torch}/`:

- `base`: `Backend`, what the recording asks of a backend (how its step is
  wrapped, its devices and placement, its profiler, its retrace count,
  what the batch sweep needs); `get(name)` gives the implementation;
- `tensorflow`: the synchronous path, Keras's step run as Keras runs it
  with the fetch timed inside its graph (`FetchTimedStep`), TensorFlow's
  tracing count;
- `jax`, `torch`: the asynchronous path, how each tells that a step is
  complete without waiting for it, its devices, profiler and handover of
  a batch;
- `asynchronous`: step timing under asynchronous dispatch, shared by JAX
  and PyTorch;
- `keras_loop`: every use of Keras internals (the callback list around the
  batch hooks, the epoch iterator), shared by all backends;
- `devices`: variables' devices on every backend; batches' devices and
  placement documents of the backends that cannot tell the op placement
  of a step;
- `processes`: this process's place in a multi-process job, from
  `torch.distributed` or `jax.distributed`.
"""

import importlib

# The backends measured, each with the module and class implementing it.
_IMPLEMENTATIONS = {
    "tensorflow": ("tb_devicecost.backends.tensorflow", "TensorFlowBackend"),
    "jax": ("tb_devicecost.backends.jax", "JaxBackend"),
    "torch": ("tb_devicecost.backends.torch", "TorchBackend"),
}
NAMES = tuple(_IMPLEMENTATIONS)
_INSTANCES = {}


def get(name):
    """The `Backend` implementation of the Keras backend `name`.

    Args:
        name: A Keras backend name, as `keras.backend.backend()` gives it.

    Returns:
        The backend's `base.Backend` (one instance per name).

    Raises:
        ValueError: when `name` is not a backend that is measured.
    """
    backend = _INSTANCES.get(name)
    if backend is not None:
        return backend
    if name not in _IMPLEMENTATIONS:
        raise ValueError(
            f"The {name!r} backend is not measured: expected one of "
            f"{', '.join(NAMES)}. Received: name={name!r}"
        )
    module, cls = _IMPLEMENTATIONS[name]
    backend = _INSTANCES[name] = getattr(importlib.import_module(module), cls)()
    return backend
