"""Which sweep a run belongs to: its `SweepMark`, from its run info or name.

`tb_devicecost.sweep` writes a `sweep` entry into each run's run-info
document; sweeps recorded before that entry existed are known by their run
names (`<prefix>/<cpu|gpu>[index]_b<batch size>/train`). `sweeps.py` groups
the runs by these marks.
"""

import re

from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_text
from tb_devicecost.analysis.names import role
from tb_devicecost.analysis.run_data import SweepMark

# `sweep/gpu_b64/train`, `cpu1_b1024/train`: the names `tb_devicecost.sweep`
# gives its runs, and those of sweeps recorded before it marked them.
_SWEEP_RUN_NAME = re.compile(
    r"^(?:(?P<prefix>.+)/)?(?P<kind>cpu|gpu)(?P<index>\d{0,3})_b(?P<batch>\d{1,9})/train$"
)
# A device as a sweep names it: `cpu`, `GPU`, `gpu:1`.
_SWEEP_DEVICE = re.compile(r"^(?P<kind>cpu|gpu)(?::(?P<index>\d{1,3}))?$", re.IGNORECASE)
_MAX_NAME = 1024


def _sweep_device(kind, index):
    return f"{kind.upper()}:{int(index) if index else 0}"


def sweep_mark(entry, run):
    """The run's `SweepMark` from its run info's `sweep` entry, else from its
    name; `None` when neither says it belongs to a sweep."""
    head, role_name = role(run)
    prefix = head.rpartition("/")[0]
    if isinstance(entry, dict):
        name = as_text(entry.get("name"))
        device = _SWEEP_DEVICE.match(as_text(entry.get("device")) or "")
        batch_size = as_count(entry.get("batch_size"))
        if name and len(name) <= _MAX_NAME and device and batch_size:
            return SweepMark(
                name=name,
                prefix=prefix,
                device=_sweep_device(device.group("kind"), device.group("index")),
                batch_size=batch_size,
                your_batch_size=as_count(entry.get("your_batch_size")) or None,
            )
    if role_name != "train":
        return None
    match = _SWEEP_RUN_NAME.match(run)
    if not match or not int(match.group("batch")):
        return None
    return SweepMark(
        name=match.group("prefix") or "sweep",
        prefix=match.group("prefix") or "",
        device=_sweep_device(match.group("kind"), match.group("index")),
        batch_size=int(match.group("batch")),
        source="run_name",
    )
