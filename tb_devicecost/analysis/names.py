"""Run and device names: a run's role, whether a device is an accelerator.

A run's name is the path of its directory under the log directory; its last
part is its role when it is one of `ROLES` (`gpu/train` is the training run
of `gpu`). A device name (`GPU:0`, `CPU:0`) tells an accelerator from the
host. Every module of `tb_devicecost.analysis` reads names through these.
"""

from tb_devicecost.analysis.guards import record_field

# Roles of a run, from the last part of its name: `fit` writes `train` and
# `validation`, `evaluate` writes `evaluation`.
ROLES = ("train", "validation", "evaluation")


def run_name(record):
    """The run's name as a string (`""` without one)."""
    return str(record_field(record, "run", ""))


def role(run_name):
    """`"gpu/train"` -> (`"gpu"`, `"train"`); a bare name has no role."""
    head, _, tail = run_name.rpartition("/")
    if head and tail in ROLES:
        return head, tail
    return run_name, ""


def is_accelerator(device):
    """Whether a device name (`"GPU:0"`) is not a CPU."""
    return isinstance(device, str) and not device.upper().startswith("CPU")
