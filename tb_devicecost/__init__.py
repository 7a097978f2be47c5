"""tb-devicecost: where each Keras training step's time went, in TensorBoard.

`DeviceCostCallback` records it for `model.fit`, `StepRecorder` for custom
training loops; `sweep` times short fits over batch sizes and devices.
Importing this package is cheap: Keras is imported only when
`DeviceCostCallback` or `sweep` is first used.
"""

from tb_devicecost.recording.recorder import StepRecorder
from tb_devicecost.version import __version__

__all__ = ["DeviceCostCallback", "StepRecorder", "__version__", "sweep"]


def __getattr__(name):
    # Keras (and its backend) load only when the callback is asked for, so
    # the CLI and the TensorBoard plugin stay light.
    if name == "DeviceCostCallback":
        from tb_devicecost.recording.callback import DeviceCostCallback

        return DeviceCostCallback
    if name == "sweep":
        # Its module is `recording/batch_sweep.py` (Keras loads with it).
        from tb_devicecost.recording.batch_sweep import sweep

        return sweep
    raise AttributeError(f"module 'tb_devicecost' has no attribute {name!r}")
