"""Trace windows: the `devicecost/trace` document read into `TraceWindow`s.

Each window is a profiler trace of a few steps (docs/FORMAT.md): its
per-step means from the trace, per traced step the trace's numbers beside
ours, and the device's busy share and time split when the trace has a
device plane. `device_busy_fraction` is the run's busy share over them.
"""

from tb_devicecost.analysis import device_split
from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import as_items
from tb_devicecost.analysis.guards import as_list
from tb_devicecost.analysis.guards import as_number
from tb_devicecost.analysis.guards import as_text
from tb_devicecost.analysis.run_data import TraceWindow
from tb_devicecost.analysis.thresholds import TRACE_DISAGREE_MIN_MS
from tb_devicecost.analysis.thresholds import TRACE_DISAGREE_RATIO
from tb_devicecost.format import vocabulary


def _mean_of(entries, key):
    values = [as_number(entry.get(key)) for entry in entries]
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def read_trace_window(window):
    """A `TraceWindow` from one raw window of the trace document."""
    recorded = [e for e in as_list(window.get("recorded_steps")) if isinstance(e, dict)]
    traced = [e for e in as_list(window.get("steps")) if isinstance(e, dict)]
    ours_by_step = {as_count(entry.get("step")): entry for entry in recorded}
    ours_by_step.pop(None, None)
    steps = [
        {
            "step": as_count(entry.get("step")),
            "trace": {str(k): as_number(v) for k, v in as_items(entry, 100) if k != "step"},
            "ours": {
                str(k): as_number(v)
                for k, v in as_items(ours_by_step.get(as_count(entry.get("step"))), 100)
                if k != "step"
            },
        }
        for entry in traced
    ]
    summary = as_dict(window.get("summary"))
    # With a device plane the recording repeats the summary's busy share on
    # the window itself.
    busy = as_number(window.get("device_busy_fraction"))
    if busy is None:
        busy = as_number(summary.get("device_busy_fraction"))
    split, devices = device_split.window_split(window)
    return TraceWindow(
        start_step=as_count(window.get("start_step")),
        stop_step=as_count(window.get("stop_step")),
        source=as_text(window.get("source")),
        purpose=as_text(window.get("purpose")),
        trace_deleted=window.get("trace_deleted") is True,
        capture=as_text(window.get("capture")),
        host=as_text(window.get("host")),
        profile_run_dir=as_text(window.get("profile_run_dir")),
        trace_bytes=as_count(window.get("trace_bytes")),
        error=as_text(window.get("error")),
        has_device_plane=bool(window.get("has_device_plane")),
        summary={str(k): as_number(v) for k, v in as_items(summary, 100)},
        ours={
            vocabulary.component_column(name): _mean_of(
                recorded, vocabulary.component_column(name)
            )
            for name in vocabulary.COMPONENTS
        },
        steps=steps,
        device_busy_fraction=busy,
        split=split,
        devices=devices,
    )


def device_busy_fraction(windows):
    """The accelerator's busy share of the traced steps: the windows' mean.

    Each window with a device plane carries `device_busy_fraction` (the
    share of its steps' time the device ran kernels or copies); a trace of
    a CPU-only run has none, and then the share is unknown (`None`).
    """
    fractions = [
        window.device_busy_fraction
        for window in windows
        if window.device_busy_fraction is not None
    ]
    if not fractions:
        return None
    return min(sum(fractions) / len(fractions), 1.0)


def data_wait_agreement(window):
    """Our mean data wait for a `TraceWindow`'s steps beside the trace's
    mean input wait: `{"ours_ms", "trace_ms", "relative_difference",
    "disagree"}`, or `None` where either is unknown."""
    ours_wait_ms = window.ours["data_wait_ms"]
    trace_wait_ms = window.summary.get("mean_input_wait_ms")
    if ours_wait_ms is None or trace_wait_ms is None:
        return None
    larger = max(ours_wait_ms, trace_wait_ms)
    difference = abs(ours_wait_ms - trace_wait_ms)
    relative = difference / larger if larger > 0 else 0.0
    return {
        "ours_ms": ours_wait_ms,
        "trace_ms": trace_wait_ms,
        "relative_difference": relative,
        "disagree": relative > TRACE_DISAGREE_RATIO and difference > TRACE_DISAGREE_MIN_MS,
    }
