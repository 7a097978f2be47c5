"""`sweep()`: short recorded fits over batch sizes and devices.

Each fit is an ordinary run of `DeviceCostCallback`, marked in its run info
as one point of a sweep, so the report (`analysis/sweeps.py`) finds the
sweep's runs without guessing and says at which batch size one device
overtakes the other.
"""

import os
import re

import keras
import numpy as np

from tb_devicecost import backends
from tb_devicecost.recording.callback import DeviceCostCallback

# `cpu`, `gpu`, `gpu:1`: the devices `keras.device` takes on every backend.
_DEVICE = re.compile(r"^(cpu|gpu)(?::(\d{1,3}))?$", re.IGNORECASE)
# A fit holds `steps * batch_size` samples of the inputs in memory at once.
_MAX_FIT_BYTES = 1 << 30
# Warm-up (one step, two on TensorFlow), then at least two steady steps to
# take a mean of.
_MIN_STEPS = 4


class SweepArgumentError(ValueError):
    """An invalid argument of `sweep` (a `ValueError`): the command line
    tells it from an error raised by the user's own model."""


class _SweepCallback(DeviceCostCallback):
    """`DeviceCostCallback` whose run info says which sweep point it is."""

    def __init__(self, log_dir, mark):
        # No device-busy trace: a sweep's fits are short, and the profiler
        # would slow a sixth of the steps fitted.
        super().__init__(log_dir, device_busy=False)
        self._sweep_mark = mark

    def _gather_run_info(self, backend):
        return dict(super()._gather_run_info(backend), sweep=self._sweep_mark)


def sweep(
    build_model,
    x,
    y=None,
    batch_sizes=(16, 64, 256, 1024, 4096),
    devices=None,
    log_dir="logs/sweep",
    steps=50,
    your_batch_size=None,
    verbose=0,
):
    """Times short fits of a model at several batch sizes on each device.

    For every device and batch size, builds a fresh model with
    `build_model` inside `keras.device(device)` and fits it for `steps`
    steps with `DeviceCostCallback`, each into its own run
    `log_dir/<device>_b<batch size>` (e.g. `logs/sweep/gpu_b256/train`). The
    runs are marked in their run info as one sweep, so `tb-devicecost report`
    and the Device Cost tab fit each device's step time as a fixed cost per
    step plus a cost per sample, and say above which batch size one device
    overtakes the other and, for `your_batch_size`, which device is faster
    and by how much (`docs/CLI.md`, "Sweeps").

    Each fit takes its batches from `x` and `y` in order, repeating them
    when a fit needs more samples than they hold, so every step has exactly
    the batch size asked for. The start of each fit (tracing, compilation:
    its first step, two on TensorFlow) is warm-up and is left out of the step
    time fitted. The fits trace no device-busy window (`device_busy=False`):
    the profiler would slow the steps fitted.

    Args:
        build_model: Function of no arguments returning a compiled
            `keras.Model`; called once per fit, inside the device's scope.
        x: Input samples: a NumPy array, or a list, tuple or dict of
            arrays with the same number of samples.
        y: Targets, like `x`, or `None` when the model needs none.
            Defaults to `None`.
        batch_sizes: Two or more distinct positive batch sizes. Defaults to
            `(16, 64, 256, 1024, 4096)`.
        devices: Devices to fit on, as `keras.device` names them: `"cpu"`,
            `"gpu"`, `"gpu:1"`. Defaults to `None`: the CPU, and the first
            GPU when the backend has one.
        log_dir: Directory of the sweep; it must not hold runs of these
            devices and batch sizes already. Its base name names the sweep.
            Defaults to `"logs/sweep"`.
        steps: Steps per fit, warm-up included (at least 4).
            Defaults to `50`.
        your_batch_size: The batch size you train with, for the sentence
            that says which device is faster there. Defaults to `None`.
        verbose: `verbose` of each `fit`. Defaults to `0`.

    Returns:
        A list of `{"run_dir", "device", "batch_size"}`, one per fit, in
        the order they ran.

    Raises:
        ValueError: on an invalid argument, a device the backend does not
            have, or a `log_dir` that already holds one of the runs.

    Example:

    ```python
    def build_model():
        model = keras.Sequential([keras.Input((100,)), keras.layers.Dense(10)])
        model.compile("adam", "mse")
        return model

    tb_devicecost.sweep(build_model, x, y, log_dir="logs/sweep", your_batch_size=32)
    ```

    Then `tb-devicecost report logs/sweep`, or the Device Cost tab of
    `tensorboard --logdir logs`.
    """
    backend = keras.backend.backend()
    if backend not in backends.NAMES:
        raise SweepArgumentError(
            "`sweep` runs on the tensorflow, jax and torch backends. "
            f"Received: backend={backend!r}"
        )
    if not callable(build_model):
        raise SweepArgumentError(
            "`build_model` must be a function of no arguments that returns a "
            f"compiled keras.Model. Received: build_model={build_model!r}"
        )
    samples = _samples(x, "x")
    if y is not None and _samples(y, "y") != samples:
        raise SweepArgumentError(
            "`x` and `y` must hold the same number of samples. "
            f"Received: {samples} in x and {_samples(y, 'y')} in y"
        )
    batch_sizes = _batch_sizes(batch_sizes)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < _MIN_STEPS:
        raise SweepArgumentError(
            f"`steps` must be an integer of at least {_MIN_STEPS} (the warm-up "
            f"steps, then the steps timed), e.g. 50. Received: steps={steps!r}"
        )
    if your_batch_size is not None and (
        isinstance(your_batch_size, bool)
        or not isinstance(your_batch_size, int)
        or your_batch_size < 1
    ):
        raise SweepArgumentError(
            "`your_batch_size` must be None or a positive integer, e.g. 32. "
            f"Received: your_batch_size={your_batch_size!r}"
        )
    if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
        raise SweepArgumentError(
            "`log_dir` must be a non-empty path, e.g. 'logs/sweep'. "
            f"Received: log_dir={log_dir!r}"
        )
    log_dir = os.fspath(log_dir)
    devices = _devices(devices, backend)
    per_sample = sum(
        leaf.nbytes // max(1, len(leaf))
        for leaf in keras.tree.flatten([x, y])
        if leaf is not None
    )
    if per_sample * steps * batch_sizes[-1] > _MAX_FIT_BYTES:
        raise SweepArgumentError(
            f"A fit of `steps`={steps} at batch size {batch_sizes[-1]} would hold "
            f"{per_sample * steps * batch_sizes[-1] / 2**30:.1f} GiB of inputs in memory "
            f"(at most {_MAX_FIT_BYTES / 2**30:.0f} GiB): lower `steps` or the largest "
            f"batch size. Received: steps={steps}, batch_sizes={batch_sizes}"
        )
    plan = [
        (device, batch_size, os.path.join(log_dir, f"{_run_prefix(device)}_b{batch_size}"))
        for device in devices
        for batch_size in batch_sizes
    ]
    taken = [run_dir for _, _, run_dir in plan if os.path.exists(run_dir)]
    if taken:
        raise SweepArgumentError(
            f"`log_dir` already holds runs of a sweep ({taken[0]!r}"
            f"{' and %d more' % (len(taken) - 1) if len(taken) > 1 else ''}): a "
            "sweep's runs would mix with them. Choose another `log_dir` or "
            f"delete it. Received: log_dir={log_dir!r}"
        )
    name = os.path.basename(os.path.normpath(os.path.abspath(log_dir)))
    ran = []
    for device, batch_size, run_dir in plan:
        mark = {
            "name": name,
            "device": device,
            "batch_size": batch_size,
            "your_batch_size": your_batch_size,
            "batch_sizes": list(batch_sizes),
            "devices": list(devices),
        }
        _fit(build_model, x, y, device, batch_size, steps, run_dir, mark, verbose)
        ran.append({"run_dir": run_dir, "device": device, "batch_size": batch_size})
    return ran


def _fit(build_model, x, y, device, batch_size, steps, run_dir, mark, verbose):
    # The samples of `steps` batches, taken in order, the inputs repeated as
    # often as needed: every step has the batch size asked for.
    indices = np.arange(steps * batch_size) % _samples(x, "x")
    inputs = keras.tree.map_structure(lambda leaf: np.take(leaf, indices, axis=0), x)
    targets = (
        None
        if y is None
        else keras.tree.map_structure(lambda leaf: np.take(leaf, indices, axis=0), y)
    )
    # The device name the backend's `keras.device` takes (PyTorch: `cpu`).
    scope = backends.get(keras.backend.backend()).device_scope(device)
    with keras.device(scope):
        model = build_model()
        if not isinstance(model, keras.Model) or not model.compiled:
            raise SweepArgumentError(
                "`build_model` must return a compiled keras.Model (call "
                f"`model.compile(...)` before returning it). Received: {model!r}"
            )
        model.fit(
            inputs,
            targets,
            batch_size=batch_size,
            epochs=1,
            shuffle=False,
            verbose=verbose,
            callbacks=[_SweepCallback(run_dir, mark)],
        )


def _samples(data, name):
    """The number of samples of an array or a structure of arrays."""
    try:
        leaves = keras.tree.flatten(data)
    except Exception:  # pylint: disable=broad-except
        leaves = []
    lengths = {
        int(leaf.shape[0])
        for leaf in leaves
        if isinstance(leaf, np.ndarray) and leaf.ndim >= 1
    }
    if (
        not leaves
        or len(lengths) != 1
        or not all(isinstance(leaf, np.ndarray) and leaf.ndim >= 1 for leaf in leaves)
        or 0 in lengths
    ):
        raise SweepArgumentError(
            f"`{name}` must be a NumPy array of one or more samples (or a list, "
            "tuple or dict of such arrays, all with the same number of samples); "
            "a sweep takes its batches from it in order. Received: "
            f"{name}={_brief(data)}"
        )
    return lengths.pop()


def _brief(value):
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _batch_sizes(batch_sizes):
    values = list(batch_sizes) if isinstance(batch_sizes, (list, tuple)) else None
    if (
        values is None
        or len(values) < 2
        or not all(
            isinstance(value, int) and not isinstance(value, bool) and value >= 1
            for value in values
        )
        or len(set(values)) != len(values)
    ):
        raise SweepArgumentError(
            "`batch_sizes` must be a list or tuple of two or more distinct "
            "positive integers (a fit of step time against batch size needs "
            f"two), e.g. (16, 256, 4096). Received: batch_sizes={batch_sizes!r}"
        )
    return sorted(values)


def _devices(devices, backend):
    """The devices as `cpu:0` / `gpu:1`, checked against the backend's."""
    available = _available(backend)
    if devices is None:
        return ["cpu:0"] + (["gpu:0"] if available["gpu"] else [])
    if isinstance(devices, str):
        devices = [devices]
    names = []
    for device in devices if isinstance(devices, (list, tuple)) else [None]:
        match = _DEVICE.match(device) if isinstance(device, str) else None
        if match is None:
            raise SweepArgumentError(
                "`devices` must be a list of device names such as 'cpu', 'gpu' "
                f"or 'gpu:1'. Received: devices={devices!r}"
            )
        kind, index = match.group(1).lower(), int(match.group(2) or 0)
        if index >= available[kind]:
            have = ", ".join(
                f"{kind}:{i}" for kind in ("cpu", "gpu") for i in range(available[kind])
            )
            raise SweepArgumentError(
                f"`devices` names {device!r}, which the {backend} backend does not "
                f"have (it has: {have}). Received: devices={devices!r}"
            )
        names.append(f"{kind}:{index}")
    if not names or len(set(names)) != len(names):
        raise SweepArgumentError(
            "`devices` must name one or more different devices, e.g. ['cpu', "
            f"'gpu']. Received: devices={devices!r}"
        )
    return names


def _available(backend):
    """How many CPU and GPU devices `keras.device` can use on `backend`."""
    return backends.get(backend).device_counts()


def _run_prefix(device):
    """`cpu:0` -> `cpu`, `gpu:1` -> `gpu1`: the run's directory, as
    `analysis/sweep_marks.py` reads it back."""
    kind, _, index = device.partition(":")
    return kind if index == "0" else kind + index
