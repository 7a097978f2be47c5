"""Our breakdown of the steps in a profiler trace (`*.xplane.pb`).

The built-in profiler's Overview page builds its step breakdown from device
planes only, so a CPU-only trace gets "No step time measured". Here the
trace is cut into steps by our step markers (events named `train` with a
`step_num` stat, on the thread that ran the step), and for each step we
measure, from the host plane:

- `input_wait_ms`: the step's thread blocked in the `tf.data` iterator
  (`IteratorGetNext`, `Iterator::*`): comparable to our data wait;
- `compute_ms`: the step's thread running the step function;
- `other_ms`: the rest of the step;
- `pipeline_busy_ms`: time any `tf.data` thread was working during the step;

and, where device planes exist (GPUs), `device_busy_ms` (kernels and copies
on any stream), `device_idle_ms`, the kernel count and mean duration, and
host-to-device / device-to-host copy time and bytes.
"""

import bisect
import os
import re

from tb_devicecost import captures

MARKER_NAME = "train"
_STEP_STAT = "step_num"
_INPUT_EVENT = re.compile(r"^(Iterator::|IteratorGetNext|IteratorGetNextOp|EagerLocalExecute: IteratorGetNext)")
_STEP_FUNCTION_EVENT = re.compile(r"^EagerLocalExecute: (?!IteratorGetNext)")
_DEVICE_PLANE = re.compile(r"^/device:(GPU|TPU|XPU)", re.IGNORECASE)
_HOST_TO_DEVICE = re.compile(r"memcpy.*(h2d|htod)|(h2d|htod).*memcpy|MemcpyH2D", re.IGNORECASE)
_DEVICE_TO_HOST = re.compile(r"memcpy.*(d2h|dtoh)|(d2h|dtoh).*memcpy|MemcpyD2H", re.IGNORECASE)
_BYTES = re.compile(r"(?:num_bytes|bytes|size)\D{0,3}(\d+)", re.IGNORECASE)
_PS_PER_MS = 1e9


class TraceError(ValueError):
    """A trace that cannot be read; the message says why."""


def load_xspace(path):
    """Parses an `.xplane.pb` file.

    Raises:
        TraceError: when TensorFlow's `xplane_pb2` cannot be imported or
            the file cannot be read or parsed.
    """
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError as error:
        raise TraceError(
            "Reading profiler traces needs TensorFlow's xplane_pb2 "
            f"(tensorflow.tsl.profiler.protobuf), which failed to import: {error}"
        )
    try:
        with open(path, "rb") as trace_file:
            contents = trace_file.read()
    except OSError as error:
        raise TraceError(f"Cannot read trace {path!r}: {error}")
    xspace = xplane_pb2.XSpace()
    try:
        xspace.ParseFromString(contents)
    except Exception as error:  # protobuf raises DecodeError or RuntimeError
        raise TraceError(f"Trace {path!r} is not a valid XSpace: {error}")
    if not xspace.planes:
        raise TraceError(f"Trace {path!r} holds no planes (empty or truncated).")
    return xspace


def _events(plane, line):
    """Yields (name, start_ps, end_ps, event) with absolute picoseconds."""
    base = line.timestamp_ns * 1000
    metadata = plane.event_metadata
    for event in line.events:
        start = base + event.offset_ps
        yield metadata[event.metadata_id].name, start, start + event.duration_ps, event


def _union_ps(intervals, window_start, window_end):
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


class _Intervals:
    """Events sorted by start, for finding those that overlap a step fast.

    Each step would otherwise scan every event of the trace; with a window
    of many steps that is quadratic.
    """

    def __init__(self, items):
        # items: (start_ps, end_ps, *payload)
        self._items = sorted(items)
        self._starts = [item[0] for item in self._items]
        self._longest = max((item[1] - item[0] for item in self._items), default=0)

    def overlapping(self, window_start, window_end):
        """Items that overlap `[window_start, window_end)`."""
        first = bisect.bisect_left(self._starts, window_start - self._longest)
        last = bisect.bisect_left(self._starts, window_end)
        return [item for item in self._items[first:last] if item[1] > window_start]


def _stat_value(plane, stat):
    name = plane.stat_metadata[stat.metadata_id].name
    kind = stat.WhichOneof("value")
    value = getattr(stat, kind) if kind else None
    if kind == "ref_value":
        value = plane.stat_metadata[stat.ref_value].name
    return name, value


def _step_markers(xspace):
    """Our markers: {step: (start_ps, end_ps, plane, line)} on host planes."""
    markers = {}
    for plane in xspace.planes:
        if _DEVICE_PLANE.match(plane.name):
            continue
        for line in plane.lines:
            for name, start, end, event in _events(plane, line):
                if name != MARKER_NAME:
                    continue
                for stat in event.stats:
                    stat_name, value = _stat_value(plane, stat)
                    if stat_name == _STEP_STAT and value is not None:
                        markers[int(value)] = (start, end, plane, line)
    return markers


def _copy_bytes(plane, event):
    for stat in event.stats:
        name, value = _stat_value(plane, stat)
        if isinstance(value, int) and "bytes" in name.lower():
            return value
        if isinstance(value, (str, bytes)):
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            match = _BYTES.search(text)
            if match:
                return int(match.group(1))
    return 0


def _device_activity(xspace):
    """Kernel and copy intervals of every device plane's streams."""
    activity = []
    for plane in xspace.planes:
        if not _DEVICE_PLANE.match(plane.name):
            continue
        for line in plane.lines:
            # Derived lines (XLA Ops, Steps...) repeat the stream events.
            if not line.name.lower().startswith("stream"):
                continue
            for name, start, end, event in _events(plane, line):
                if _HOST_TO_DEVICE.search(name):
                    kind = "h2d"
                elif _DEVICE_TO_HOST.search(name):
                    kind = "d2h"
                elif "memcpy" in name.lower() or "memset" in name.lower():
                    kind = "other_copy"
                else:
                    kind = "kernel"
                activity.append((kind, start, end, _copy_bytes(plane, event) if kind in ("h2d", "d2h") else 0))
    return activity


def digest_xspace(xspace, steps=None):
    """Per-step breakdown of the marked steps of a trace.

    Args:
        xspace: A parsed `XSpace`.
        steps: Optional iterable of global steps to keep.

    Returns:
        `{"steps": [{"step", "step_ms", "input_wait_ms", "compute_ms",
        "other_ms", "pipeline_busy_ms", ...device fields}], "summary": {...},
        "has_device_plane": bool, "device_planes": [...]}`. `steps` is
        empty when the trace holds no step markers.
    """
    markers = _step_markers(xspace)
    if steps is not None:
        wanted = set(steps)
        markers = {step: value for step, value in markers.items() if step in wanted}
    pipeline = []
    for plane in xspace.planes:
        if _DEVICE_PLANE.match(plane.name):
            continue
        for line in plane.lines:
            if line.name.startswith("tf_data"):
                pipeline.extend(
                    (start, end) for name, start, end, _ in _events(plane, line)
                    if name.startswith("Iterator::")
                )
    pipeline = _Intervals(pipeline)
    # Device activity items: (start, end, kind, bytes).
    device = _Intervals((start, end, kind, size) for kind, start, end, size in _device_activity(xspace))
    device_planes = sorted(
        plane.name for plane in xspace.planes if _DEVICE_PLANE.match(plane.name)
    )
    # Per marker line, its input and step-function events, read once.
    line_intervals = {}
    digested = []
    for step in sorted(markers):
        start, end, plane, line = markers[step]
        key = (id(plane), id(line))
        if key not in line_intervals:
            events = list(_events(plane, line))
            line_intervals[key] = (
                _Intervals((s, e) for name, s, e, _ in events if _INPUT_EVENT.match(name)),
                _Intervals((s, e) for name, s, e, _ in events if _STEP_FUNCTION_EVENT.match(name)),
            )
        on_line, running = line_intervals[key]
        length = end - start
        input_wait = _union_ps(on_line.overlapping(start, end), start, end)
        compute = _union_ps(running.overlapping(start, end), start, end)
        entry = {
            "step": step,
            "step_ms": length / _PS_PER_MS,
            "input_wait_ms": input_wait / _PS_PER_MS,
            "compute_ms": compute / _PS_PER_MS,
            "other_ms": max(0, length - input_wait - compute) / _PS_PER_MS,
            "pipeline_busy_ms": _union_ps(pipeline.overlapping(start, end), start, end) / _PS_PER_MS,
        }
        if device_planes:
            entry.update(_device_step(device.overlapping(start, end), start, end))
        digested.append(entry)
    return {
        "steps": digested,
        "summary": summarize(digested),
        "has_device_plane": bool(device_planes),
        "device_planes": device_planes,
    }


def _device_step(in_step, start, end):
    """Device fields of one step from its (start, end, kind, bytes) items."""

    def kind_ms(kind):
        return _union_ps([(s, e) for s, e, k, _ in in_step if k == kind], start, end) / _PS_PER_MS

    busy = _union_ps([(s, e) for s, e, _, _ in in_step], start, end)
    kernels = [e - s for s, e, kind, _ in in_step if kind == "kernel"]
    return {
        "device_busy_ms": busy / _PS_PER_MS,
        "device_idle_ms": (end - start - busy) / _PS_PER_MS,
        "kernels": len(kernels),
        "kernel_mean_us": sum(kernels) / len(kernels) / 1e6 if kernels else None,
        "h2d_ms": kind_ms("h2d"),
        "h2d_bytes": sum(size for _, _, kind, size in in_step if kind == "h2d"),
        "d2h_ms": kind_ms("d2h"),
        "d2h_bytes": sum(size for _, _, kind, size in in_step if kind == "d2h"),
    }


def summarize(steps):
    """Means over the digested steps, and the device-busy fraction."""
    if not steps:
        return {}
    summary = {}
    for key in steps[0]:
        if key == "step":
            continue
        values = [entry[key] for entry in steps if entry.get(key) is not None]
        if values:
            summary[f"mean_{key}"] = sum(values) / len(values)
    total = sum(entry["step_ms"] for entry in steps)
    if "device_busy_ms" in steps[0] and total > 0:
        summary["device_busy_fraction"] = sum(e["device_busy_ms"] for e in steps) / total
    if total > 0:
        summary["input_wait_fraction"] = sum(e["input_wait_ms"] for e in steps) / total
    return summary


def newest_capture(run_dir, after=None):
    """The newest trace under `run_dir` (`captures.list_captures`).

    Returns `(path, capture, host)` or `None`; with `after` (a Unix time),
    only files written since then count.
    """
    for path, capture, host in captures.list_captures(run_dir):
        try:
            if after is not None and os.path.getmtime(path) < after:
                continue
        except OSError:
            continue
        return path, capture, host
    return None
