"""What the device did during a traced step: compute, communication, memory.

A device event (a kernel or a copy on one of the device's streams) falls in
one of three groups, as Meta's Holistic Trace Analysis splits them
(`hta.utils.utils.get_kernel_type`):

- `communication`: collectives (NCCL, RCCL, gloo; all-reduce, all-gather,
  reduce-scatter, all-to-all, collective-permute, send/recv);
- `memory`: copies and fills (memcpy, memset);
- `compute`: every other kernel.

The group is read from the trace's own categories where it has them (a
PyTorch trace's `gpu_memcpy` / `gpu_memset` categories; an XSpace event's
`memcpy_details` / `memset_details` stats, or an `hlo_op` naming a
collective), else from the kernel's name. Why it matters: a collective
kernel spins while it waits for a peer that is late, so a process that
waits for another looks "busy" when kernels and copies are counted
together. Device busy means compute only.

Per step and per device, the step's span splits without overlap into
compute, communication (the time a collective ran and no compute kernel
did), memory (a copy ran, neither of the others) and idle; a process's
figure is the mean over the devices it used, and `devices` keeps one
figure per device.
"""

import re

COMPUTE = "compute"
COMMUNICATION = "communication"
MEMORY = "memory"
GROUPS = (COMPUTE, COMMUNICATION, MEMORY)
# Kinds of device events (`device_kind`): kernels by their group, copies by
# their direction.
KERNEL = "kernel"
COLLECTIVE = "collective"
COPY_KINDS = ("h2d", "d2h", "other_copy")

_HOST_TO_DEVICE = re.compile(r"memcpy.*(h2d|htod)|(h2d|htod).*memcpy|MemcpyH2D", re.IGNORECASE)
_DEVICE_TO_HOST = re.compile(r"memcpy.*(d2h|dtoh)|(d2h|dtoh).*memcpy|MemcpyD2H", re.IGNORECASE)
_MEMORY_NAME = re.compile(r"memcpy|memset", re.IGNORECASE)
# NCCL's kernels are `ncclKernel_*` / `ncclDevKernel_*`; XLA names a
# collective's op (`hlo_op`) `all-reduce-start.1`, `all-gather`, ...
_COLLECTIVE_NAME = re.compile(
    r"nccl|rccl|gloo|all[-_ ]?reduce|all[-_ ]?gather|reduce[-_ ]?scatter|all[-_ ]?to[-_ ]?all"
    r"|collective[-_ ]?permute|collective[-_ ]?broadcast|cross[-_ ]?replica|send[-_ ]?recv",
    re.IGNORECASE,
)
_MEMORY_CATEGORIES = ("gpu_memcpy", "gpu_memset")
_MEMORY_STATS = ("memcpy_details", "memset_details")
_PS_PER_MS = 1e9


def group_of(name, category=None, op=None, stats=()):
    """The group (`compute`, `communication`, `memory`) of a device event.

    Args:
        name: The event's (kernel's) name.
        category: The trace's category for it, if any (a PyTorch trace's
            `cat`: `kernel`, `gpu_memcpy`, `gpu_memset`).
        op: The framework op that launched it, if the trace says (an
            XSpace event's `hlo_op`).
        stats: Names of the event's stats (an XSpace event's), which mark
            copies (`memcpy_details`, `memset_details`).
    """
    if category in _MEMORY_CATEGORIES or any(stat in _MEMORY_STATS for stat in stats):
        return MEMORY
    if op and _COLLECTIVE_NAME.search(op):
        return COMMUNICATION
    if _MEMORY_NAME.search(name):
        return MEMORY
    if _COLLECTIVE_NAME.search(name):
        return COMMUNICATION
    return COMPUTE


def device_kind(name, group=None):
    """`kernel`, `collective`, `h2d`, `d2h` or `other_copy` for a device
    event's name (and its group, when the trace said it: `group_of`)."""
    if _HOST_TO_DEVICE.search(name):
        return "h2d"
    if _DEVICE_TO_HOST.search(name):
        return "d2h"
    group = group or group_of(name)
    if group == MEMORY:
        return "other_copy"
    return COLLECTIVE if group == COMMUNICATION else KERNEL


def group_of_kind(kind):
    """The group of a `device_kind`."""
    if kind == COLLECTIVE:
        return COMMUNICATION
    return COMPUTE if kind == KERNEL else MEMORY


def union_ps(intervals, window_start, window_end):
    """Length of the union of intervals clipped to the window."""
    clipped = sorted(
        (max(start, window_start), min(end, window_end))
        for start, end in intervals
        if end > window_start and start < window_end
    )
    total, current_start, current_end = 0, None, None
    for start, end in clipped:
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def _split_ps(items, start, end):
    """`{group: ps}` of one device's items within `[start, end]`, without
    overlap: compute first, then communication, then memory."""
    by_group = {group: [] for group in GROUPS}
    for item in items:
        by_group[group_of_kind(item[2])].append(item[:2])
    split, covered = {}, []
    below = 0
    for group in GROUPS:
        covered = covered + by_group[group]
        union = union_ps(covered, start, end)
        split[group] = union - below
        below = union
    return split, below


def device_step(in_step, start, end, launched=None, devices=None):
    """Device fields of one step.

    Args:
        in_step: `(start, end, kind, bytes[, device])` items that overlap
            the step's span `[start, end]`: the split is by time within it.
        start, end: The step's span (picoseconds).
        launched: Items of the same form attributed to the step (by
            correlation id): kernels and copies are counted from these when
            given, else from `in_step`.
        devices: The devices to average over (those with any activity in
            the trace); defaults to those in `in_step`.

    Returns:
        `device_busy_ms` (compute), `device_communication_ms`,
        `device_memory_ms`, `device_idle_ms` (means over the devices, adding
        up to the span), `devices` (`{device: {"compute_ms",
        "communication_ms", "memory_ms", "idle_ms"}}`), the kernel count
        and mean duration, the collectives' count, and copy times and bytes.
    """
    counted = in_step if launched is None else launched
    per_device = {}
    for item in in_step:
        per_device.setdefault(item[4] if len(item) > 4 else None, []).append(item)
    names = list(devices) if devices else list(per_device)
    figures = {}
    for name in names or [None]:
        split, busy = _split_ps(per_device.get(name, ()), start, end)
        figures[name] = {
            "compute_ms": split[COMPUTE] / _PS_PER_MS,
            "communication_ms": split[COMMUNICATION] / _PS_PER_MS,
            "memory_ms": split[MEMORY] / _PS_PER_MS,
            "idle_ms": (end - start - busy) / _PS_PER_MS,
        }

    def mean(key):
        return sum(entry[key] for entry in figures.values()) / len(figures)

    def kind_ms(kind):
        intervals = [item[:2] for item in counted if item[2] == kind]
        if launched is None:
            return union_ps(intervals, start, end) / _PS_PER_MS
        return union_ps(intervals, float("-inf"), float("inf")) / _PS_PER_MS

    kernels = [item[1] - item[0] for item in counted if item[2] in (KERNEL, COLLECTIVE)]
    return {
        "device_busy_ms": mean("compute_ms"),
        "device_communication_ms": mean("communication_ms"),
        "device_memory_ms": mean("memory_ms"),
        "device_idle_ms": mean("idle_ms"),
        "devices": {str(name): entry for name, entry in figures.items() if name is not None},
        "kernels": len(kernels),
        "kernel_mean_us": sum(kernels) / len(kernels) / 1e6 if kernels else None,
        "collectives": sum(1 for item in counted if item[2] == COLLECTIVE),
        "h2d_ms": kind_ms("h2d"),
        "h2d_bytes": sum(item[3] for item in counted if item[2] == "h2d"),
        "d2h_ms": kind_ms("d2h"),
        "d2h_bytes": sum(item[3] for item in counted if item[2] == "d2h"),
    }


def split_summary(steps):
    """The digest's device split over its steps, or `{}` without one.

    Returns:
        `{"summary": {...}, "devices": [...]}`: the summary's fractions of
        the steps' time (`device_busy_fraction`: compute;
        `device_communication_fraction`, `device_memory_fraction`,
        `device_idle_fraction`), and per device the same fractions and the
        per-step means in milliseconds, sorted by device name.
    """
    total = sum(entry["step_ms"] for entry in steps)
    if not steps or "device_busy_ms" not in steps[0] or total <= 0:
        return {}
    summary = {
        "device_busy_fraction": sum(e["device_busy_ms"] for e in steps) / total,
        "device_idle_fraction": sum(e["device_idle_ms"] for e in steps) / total,
    }
    for group in (COMMUNICATION, MEMORY):
        key = f"device_{group}_ms"
        if all(key in entry for entry in steps):
            summary[f"device_{group}_fraction"] = sum(e[key] for e in steps) / total
    sums = {}
    for entry in steps:
        for name, figures in (entry.get("devices") or {}).items():
            into = sums.setdefault(name, {})
            for key, value in figures.items():
                into[key] = into.get(key, 0.0) + value
    devices = []
    for name in sorted(sums):
        figures = sums[name]
        item = {"device": name}
        for key in ("compute", "communication", "memory", "idle"):
            value = figures.get(f"{key}_ms", 0.0)
            item[f"{key}_fraction"] = value / total
            item[f"mean_{key}_ms"] = value / len(steps)
        devices.append(item)
    return {"summary": summary, "devices": devices}
