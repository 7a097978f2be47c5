"""TensorBoard's event reading without importing TensorFlow.

TensorBoard imports TensorFlow when it is installed, which takes seconds
and logs to stderr; its own stub reads local event files just as well.
The CLI and `try_fixes` call `avoid_tensorflow_import` before the first
import of `reading.reader`.
"""

import sys
import types


def avoid_tensorflow_import():
    """Has TensorBoard use its own stub instead of TensorFlow. Only done
    when TensorFlow is not loaded already (as inside a training process)."""
    if "tensorflow" in sys.modules or "tensorboard.compat.notf" in sys.modules:
        return
    sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
