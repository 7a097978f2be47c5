"""tb-devicecost: where each Keras training step's time went, in TensorBoard.

`DeviceCostCallback` records it for `model.fit`, `StepRecorder` for custom
training loops. Importing this package is cheap: Keras is imported only
when `DeviceCostCallback` is first used.
"""

from tb_devicecost.recorder import StepRecorder
from tb_devicecost.version import __version__

__all__ = ["DeviceCostCallback", "StepRecorder", "__version__"]


def __getattr__(name):
    # Keras (and its backend) load only when the callback is asked for, so
    # the CLI and the TensorBoard plugin stay light.
    if name == "DeviceCostCallback":
        from tb_devicecost.callback import DeviceCostCallback

        return DeviceCostCallback
    raise AttributeError(f"module 'tb_devicecost' has no attribute {name!r}")
