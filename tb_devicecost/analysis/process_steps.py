"""One process of a distributed job, read from its run's raw documents.

A process of a multi-process fit writes to `log_dir/process_<i>/train` and
says in its run info which process of how many it is, how its steps were
spread over processes and devices, and on which host it ran; its per-step
series line it up with the other processes by global step. `record.read_run`
reads these here, once, into `ProcessClaim`, `Distribution` and
`ProcessSteps` (`run_data.py`); `jobs.py` and `workers.py` work on those.
"""

import re

import numpy as np

from tb_devicecost.analysis.guards import MAX_VALUE
from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import as_list
from tb_devicecost.analysis.guards import as_number
from tb_devicecost.analysis.guards import as_text
from tb_devicecost.analysis.guards import series_columns
from tb_devicecost.analysis.run_data import Distribution
from tb_devicecost.analysis.run_data import ProcessClaim
from tb_devicecost.analysis.run_data import ProcessSteps
from tb_devicecost.format import vocabulary

# The part of a run's name that holds the process index: `log_dir/process_1/train`.
_PROCESS_PART = re.compile(r"^process_(\d{1,6})$")


def read_claim(name, info):
    """The `ProcessClaim` of a run whose name holds a `process_<i>` part and
    whose run info says it is one process of several, else `None`.

    Args:
        name: The run's name.
        info: Its run-info document (anything: checked here).
    """
    info = as_dict(info)
    count = as_count(info.get("process_count"))
    index = as_count(info.get("process_index"))
    if not isinstance(name, str) or count is None or count < 2:
        return None
    parts = name.split("/")
    found = None
    for position, part in enumerate(parts):
        match = _PROCESS_PART.match(part)
        if match:
            found = position, int(match.group(1))
            # The part that agrees with the run info, should several match.
            if found[1] == index:
                break
    if found is None:
        return None
    position, directory_index = found
    return ProcessClaim(
        group="/".join(parts[:position] + parts[position + 1:]) or ".",
        directory_index=directory_index,
        index=index,
        count=count,
        hostname=as_text(info.get("hostname")),
        given_index=(None if index is not None or "process_index" not in info
                     or info["process_index"] is None
                     else repr(info["process_index"])[:40]),
    )


def read_distribution(info, batch_size):
    """How a run's steps were spread over processes and devices, or `None`
    for a run on one device of one process.

    Under a distribution strategy the recorded batch is the global one,
    split evenly over the processes; in a custom loop it is the process's
    own. The replicas share the global batch evenly.

    Args:
        info: The run-info document (anything: checked here).
        batch_size: The run's batch size per step, as this process saw it.

    Returns:
        A `Distribution`, or `None`.
    """
    info = as_dict(info)
    count = as_count(info.get("process_count")) or 1
    replicas = as_count(info.get("replicas"))
    strategy = as_text(info.get("distribution_strategy"))
    if count < 2 and (replicas or 1) < 2:
        return None
    devices = [text for text in map(as_text, as_list(info.get("local_devices"), 64)) if text]
    batch = batch_size if batch_size else None
    if strategy:
        # Under a distribution (`keras.distribution`, `tf.distribute`) the
        # step is handed the global batch, every process's part of it.
        global_batch, per_process = batch, _divided(batch, count)
    else:
        # A custom loop (PyTorch DDP): each process steps on its own batch.
        global_batch, per_process = (batch * count if batch else None), batch
    # What the recording wrote, when it did (DeviceCostCallback, docs/FORMAT.md).
    recorded = {key: _divided(as_number(info.get(key)), 1)
                for key in ("global_batch", "per_process_batch", "per_replica_batch")}
    if recorded["global_batch"]:
        global_batch = recorded["global_batch"]
        per_process = recorded["per_process_batch"] or per_process
    return Distribution(
        strategy=strategy,
        process_index=as_count(info.get("process_index")) or 0,
        process_count=count,
        local_devices=devices or None,
        device_count=as_count(info.get("device_count")),
        replicas=replicas,
        per_process_batch=per_process,
        global_batch=global_batch,
        per_replica_batch=recorded["per_replica_batch"] or _divided(global_batch, replicas),
    )


def _divided(batch, parts):
    """`batch` split over `parts`: a whole number when it divides evenly."""
    if not batch or not parts:
        return None
    share = batch / parts
    return int(share) if float(share).is_integer() else share


def read_steps(series):
    """A run's steady steps as `ProcessSteps`, or `None` without usable series.

    Args:
        series: The record's per-step series, `{column: values}` (anything:
            checked here). Steps with a damaged value or a warm-up flag are
            left out; a step recorded twice is kept once.
    """
    parts = (vocabulary.DATA_WAIT_MS, vocabulary.COMPUTE_MS, vocabulary.HOST_OVERHEAD_MS)
    steps, columns = series_columns(series, parts + (vocabulary.WARMUP, vocabulary.WALL_TIME))
    if steps is None or any(columns[key] is None for key in parts):
        return None
    keep = np.isfinite(steps)
    for key in parts:
        keep &= np.isfinite(columns[key]) & (columns[key] >= 0) & (columns[key] <= MAX_VALUE)
    warmup = columns[vocabulary.WARMUP]
    if warmup is not None:
        keep &= ~(warmup > 0)
    start = columns[vocabulary.WALL_TIME]
    wait, compute, host = (columns[key] for key in parts)
    # Host overhead follows a step, so it delays the next step's arrival.
    # Where the step before was not kept (a sampled series), the step's own
    # host overhead stands in for it; the first step has none before it.
    follows = np.concatenate([[False], np.diff(steps) == 1])
    host_before = np.where(follows, np.concatenate([[0.0], host[:-1]]), host)
    host_before[0] = 0.0
    kept_steps, first = np.unique(steps[keep].astype(np.int64), return_index=True)
    rows = np.flatnonzero(keep)[first]
    return ProcessSteps(
        step=kept_steps,
        stall=(wait + host_before)[rows],
        data_wait=wait[rows],
        compute=compute[rows],
        total=(wait + compute + host)[rows],
        start=None if start is None else start[rows],
    )
