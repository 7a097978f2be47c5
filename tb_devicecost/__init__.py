"""tb-devicecost: where each Keras training step's time went, in TensorBoard.

`DeviceCostCallback` records it for `model.fit`, `StepRecorder` for custom
training loops; `sweep` times short fits over batch sizes and devices;
`try_fixes` tries the fixes a diagnosis advises on your own model.
Importing this package is cheap: Keras is imported only when
`DeviceCostCallback` or `sweep` is first used.
"""

from tb_devicecost.recording.recorder import StepRecorder
from tb_devicecost.version import __version__

__all__ = ["DeviceCostCallback", "StepRecorder", "__version__", "sweep", "try_fixes"]


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
    if name == "try_fixes":
        # Its module is `cli/trying.py`: it wires the recording's fits to
        # the analysis's findings (Keras loads with the first fit).
        from tb_devicecost.cli.trying import try_fixes

        return try_fixes
    raise AttributeError(f"module 'tb_devicecost' has no attribute {name!r}")
