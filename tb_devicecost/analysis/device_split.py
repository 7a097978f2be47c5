"""The device's time split over a run's trace windows (pure, JSON in and out).

A window digested since the split (`tb_devicecost.traces.kernels`) carries, beside
`device_busy_fraction` (compute), the communication, memory and idle
fractions of its traced steps, and one figure per device (`devices`). A
run's split is the mean over its windows that carry one; its per-device
figures are the means by device name. Windows digested before the split
carry only `device_busy_fraction`, which then counted kernels and copies
together: their split is unknown (`None`).
"""

import math

PARTS = ("compute", "communication", "memory", "idle")
# The summary's key for each part (`compute` is `device_busy_fraction`).
_SUMMARY_KEYS = {
    "compute": "device_busy_fraction",
    "communication": "device_communication_fraction",
    "memory": "device_memory_fraction",
    "idle": "device_idle_fraction",
}
# Devices kept per window: a process holds a handful.
MAX_DEVICES = 64


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def window_split(window):
    """`(split, devices)` of one `devicecost/trace` window (a dict).

    Returns:
        `split`: `{part: fraction}` for `compute`, `communication`,
        `memory` and `idle`, or `None` when the window has no split;
        `devices`: `[{"device", part: fraction, ...}]`, one per device
        (empty without).
    """
    summary = window.get("summary") if isinstance(window.get("summary"), dict) else {}
    split = {part: _number(summary.get(key)) for part, key in _SUMMARY_KEYS.items()}
    if split["communication"] is None or split["compute"] is None:
        split = None
    devices = []
    listed = window.get("devices") if isinstance(window.get("devices"), list) else []
    for entry in listed[:MAX_DEVICES]:
        if not isinstance(entry, dict) or not isinstance(entry.get("device"), str):
            continue
        figures = {part: _number(entry.get(f"{part}_fraction")) for part in PARTS}
        if figures["compute"] is None:
            continue
        devices.append({"device": entry["device"], **figures})
    return split, devices


def _mean(values):
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def run_split(windows):
    """`(split, devices)` of a run: means over its windows' (each a
    `run_data.TraceWindow`, with `split` and `devices`)."""
    splits = [window.split for window in windows if window.split]
    split = None
    if splits:
        split = {part: _mean(entry[part] for entry in splits) for part in PARTS}
    by_device = {}
    for window in windows:
        for entry in window.devices or ():
            by_device.setdefault(entry["device"], []).append(entry)
    devices = [
        {"device": name, **{part: _mean(entry[part] for entry in entries) for part in PARTS}}
        for name, entries in sorted(by_device.items())
    ]
    return split, devices


def busy_note(trace):
    """The trace document's `device_busy` (why the default window was not
    traced yet: `trace_budget`), as plain data, or `None`."""
    note = trace.get("device_busy")
    if not isinstance(note, dict):
        return None
    reason = note.get("reason")
    return {
        "state": note.get("state") if isinstance(note.get("state"), str) else None,
        "reason": reason[:1000] if isinstance(reason, str) else None,
        "budget_share": _number(note.get("budget_share")),
        "window_cost_s": _number(note.get("window_cost_s")),
        "opens_after_s": _number(note.get("opens_after_s")),
        "run_s": _number(note.get("run_s")),
    }
