"""Our breakdown of the steps in a profiler trace (`*.xplane.pb`).

The built-in profiler's Overview page builds its step breakdown from device
planes only, so a CPU-only trace gets "No step time measured". Here the
trace is cut into steps by our step markers (events named `train` with a
`step_num` stat, on the thread that ran the step).

TensorFlow runs a step synchronously: its marker spans the step, from the
fetch until its results are on the host, and from the host plane we
measure:

- `input_wait_ms`: the step's thread blocked in the `tf.data` iterator
  (`IteratorGetNext`, `Iterator::*` on its line, or the iterator's kernel
  `IteratorGetNextOp::DoCompute` run inside the step function): comparable
  to our data wait;
- `compute_ms`: the step's thread running the step function, less the
  fetch inside it;
- `other_ms`: the rest of the step;
- `pipeline_busy_ms`: time any `tf.data` thread was working during the step;

and, where device planes exist (GPUs), the device's time split into
`device_busy_ms` (compute kernels), `device_communication_ms`
(collectives), `device_memory_ms` (copies) and `device_idle_ms`, per
device too (`devices`), the kernel count and mean duration, and
host-to-device / device-to-host copy time and bytes.

JAX (and PyTorch, `tb_devicecost.traces.torch_trace`) dispatch a step
asynchronously: the marker spans only the step's dispatch on the host (the
fetch included on JAX), and the device finishes the step later. Those
traces are cut by `digest_timeline` (see its docstring and docs/FORMAT.md):
each step runs from its dispatch, or from the previous step's completion if
that is later, until its own completion, which a second marker
(`devicecost_done`, on the thread where Keras reads the step's results)
records.

Device time is split into compute, communication (collectives) and memory
copies, per device (`tb_devicecost.traces.kernels`). Reading an `.xplane.pb` needs
the XSpace protobuf schema (`tb_devicecost.traces.xspace_schema`).
"""

import bisect
import os
import re

from tb_devicecost.format import captures
from tb_devicecost.traces import kernels
from tb_devicecost.traces.xspace_schema import TraceError  # noqa: F401 (re-exported)
from tb_devicecost.traces.xspace_schema import load_xspace  # noqa: F401 (re-exported)
from tb_devicecost.traces.xspace_schema import xspace_class  # noqa: F401 (re-exported)

# The format of a trace `digest_xspace` reads (TensorFlow, JAX).
FORMAT_XPLANE = "xplane"
MARKER_NAME = "train"
# Under asynchronous dispatch: the step's fetch, and its completion (the
# step's results on the host), marked by the callback next to `train`.
FETCH_MARKER_NAME = "devicecost_fetch"
DONE_MARKER_NAME = "devicecost_done"
_STEP_STAT = "step_num"
_CORRELATION_STAT = "correlation_id"
_INPUT_EVENT = re.compile(r"^(Iterator::|IteratorGetNext|IteratorGetNextOp|EagerLocalExecute: IteratorGetNext)")
_STEP_FUNCTION_EVENT = re.compile(r"^EagerLocalExecute: (?!IteratorGetNext)")
# The fetch inside a step function: the iterator's kernel, on a line of its
# own (`tf_data_iterator_get_next/...`) while the training thread waits.
_GET_NEXT_KERNEL = "IteratorGetNextOp::DoCompute"
_DEVICE_PLANE = re.compile(r"^/device:(GPU|TPU|XPU)", re.IGNORECASE)
_BYTES = re.compile(r"(?:num_bytes|bytes|size)\D{0,3}(\d+)", re.IGNORECASE)
_PS_PER_MS = 1e9

# How a digest cut the trace into steps (the window's `step_cut`).
CUT_MARKER = "marker"
CUT_DISPATCH_TO_COMPLETION = "dispatch_to_completion"


def _events(plane, line):
    """Yields (name, start_ps, end_ps, event) with absolute picoseconds."""
    base = line.timestamp_ns * 1000
    metadata = plane.event_metadata
    for event in line.events:
        start = base + event.offset_ps
        yield metadata[event.metadata_id].name, start, start + event.duration_ps, event


def _step_entry(step, length, input_wait, compute):
    """A traced step's parts (picoseconds in, milliseconds out)."""
    return {
        "step": step,
        "step_ms": length / _PS_PER_MS,
        "input_wait_ms": input_wait / _PS_PER_MS,
        "compute_ms": compute / _PS_PER_MS,
        "other_ms": max(0, length - input_wait - compute) / _PS_PER_MS,
    }


_union_ps = kernels.union_ps


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

    def within(self, window_start, window_end):
        """Items lying entirely inside `[window_start, window_end]`."""
        first = bisect.bisect_left(self._starts, window_start)
        last = bisect.bisect_right(self._starts, window_end)
        return [item for item in self._items[first:last] if item[1] <= window_end]

    def last_between(self, window_start, window_end):
        """The item that ends last among those inside the window, or None."""
        inside = self.within(window_start, window_end)
        return max(inside, key=lambda item: item[1]) if inside else None


def _stat_value(plane, stat):
    name = plane.stat_metadata[stat.metadata_id].name
    kind = stat.WhichOneof("value")
    value = getattr(stat, kind) if kind else None
    if kind == "ref_value":
        value = plane.stat_metadata[stat.ref_value].name
    return name, value


def _event_stat(plane, event, wanted):
    for stat in event.stats:
        name, value = _stat_value(plane, stat)
        if name == wanted and value is not None:
            return value
    return None


def _host_planes(xspace):
    return [plane for plane in xspace.planes if not _DEVICE_PLANE.match(plane.name)]


def _step_markers(xspace, name=MARKER_NAME):
    """Events `name` with a step number: {step: (start_ps, end_ps, plane, line)}
    on host planes."""
    markers = {}
    for plane in _host_planes(xspace):
        for line in plane.lines:
            for event_name, start, end, event in _events(plane, line):
                if event_name != name:
                    continue
                value = _event_stat(plane, event, _STEP_STAT)
                if value is not None:
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


device_kind = kernels.device_kind


def _device_activity(xspace):
    """Kernels and copies of every device plane's streams:
    `(kind, start, end, bytes, correlation_id or None, device)`.

    The kind (`kernels.device_kind`) takes the trace's own word where it
    has one: copies carry `memcpy_details` / `memset_details`, and XLA
    names a collective's op in `hlo_op`.
    """
    activity = []
    for plane in xspace.planes:
        if not _DEVICE_PLANE.match(plane.name):
            continue
        for line in plane.lines:
            # Derived lines (XLA Ops, Steps...) repeat the stream events.
            if not line.name.lower().startswith("stream"):
                continue
            for name, start, end, event in _events(plane, line):
                stats = dict(_stat_value(plane, stat) for stat in event.stats)
                op = stats.get("hlo_op")
                group = kernels.group_of(
                    name, op=op if isinstance(op, str) else None, stats=stats
                )
                kind = device_kind(name, group)
                size = _copy_bytes(plane, event) if kind in ("h2d", "d2h") else 0
                activity.append(
                    (kind, start, end, size, stats.get(_CORRELATION_STAT), plane.name)
                )
    return activity


def _active_devices(activity):
    """The devices with any activity in the trace, sorted: a process's
    figures are means over these (a device it never used is no part of
    its work)."""
    return sorted({item[5] for item in activity if len(item) > 5 and item[5] is not None})


def digest_xspace(xspace, steps=None, asynchronous=False):
    """Per-step breakdown of the marked steps of a trace.

    Args:
        xspace: A parsed `XSpace`.
        steps: Optional iterable of global steps to keep.
        asynchronous: Whether the markers span only each step's dispatch
            (JAX, through our callback): the trace is then cut by
            `digest_timeline`. Otherwise a marker spans its whole step
            (TensorFlow, or a script that waits for each step's results
            inside its marker).

    Returns:
        `{"steps": [{"step", "step_ms", "input_wait_ms", "compute_ms",
        "other_ms", ...}], "summary": {...}, "has_device_plane": bool,
        "device_planes": [...], "step_cut": ...}`. `steps` is empty when the
        trace holds no step markers.
    """
    if asynchronous:
        return digest_timeline(xspace_timeline(xspace), steps)
    markers = _step_markers(xspace)
    if steps is not None:
        wanted = set(steps)
        markers = {step: value for step, value in markers.items() if step in wanted}
    pipeline, fetches = [], []
    for plane in _host_planes(xspace):
        for line in plane.lines:
            if line.name.startswith("tf_data"):
                for name, start, end, _ in _events(plane, line):
                    if name.startswith("Iterator::"):
                        pipeline.append((start, end))
                    elif name == _GET_NEXT_KERNEL:
                        fetches.append((start, end))
    pipeline, fetches = _Intervals(pipeline), _Intervals(fetches)
    # Device activity items: (start, end, kind, bytes).
    activity = _device_activity(xspace)
    device = _Intervals(_device_item(item) for item in activity)
    active = _active_devices(activity)
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
        waits = on_line.overlapping(start, end) + fetches.overlapping(start, end)
        input_wait = _union_ps(waits, start, end)
        # The fetch runs inside the step function's call (the callback's
        # `FetchTimedStep`, as Keras's own): compute is the rest of it.
        compute = _union_ps(running.overlapping(start, end) + waits, start, end) - input_wait
        entry = _step_entry(step, length, input_wait, compute)
        entry["pipeline_busy_ms"] = (
            _union_ps(pipeline.overlapping(start, end), start, end) / _PS_PER_MS
        )
        if device_planes:
            entry.update(
                kernels.device_step(device.overlapping(start, end), start, end, devices=active)
            )
        digested.append(entry)
    return {
        "steps": digested,
        "summary": summarize(digested),
        "has_device_plane": bool(device_planes),
        "device_planes": device_planes,
        "devices": kernels.split_summary(digested).get("devices", []),
        "step_cut": CUT_MARKER,
    }


def _device_item(activity):
    """A `Timeline.device` entry as `(start, end, kind, bytes, device)`."""
    kind, start, end, size = activity[:4]
    return (start, end, kind, size, activity[5] if len(activity) > 5 else None)


# Traces of asynchronous dispatch (JAX, PyTorch): one model for both formats.


class Timeline:
    """The parts of a trace that cutting it into steps needs, in picoseconds.

    Filled from an XSpace (`xspace_timeline`) or a PyTorch Chrome trace
    (`tb_devicecost.traces.torch_trace.timeline`).

    Attributes:
        markers: `{step: (start, end, thread)}`: the step markers, each the
            step's dispatch on the host (`thread`: any hashable naming the
            thread it ran on).
        completions: `{step: time}`: when the step's results were on the
            host (our `devicecost_done` marker).
        fetches: `{thread: [(start, end)]}`: the batch fetches.
        launches: `{correlation_id: time}`: host calls that queued device
            work (kernel launches, copies), by the id the device event
            carries.
        device: `[(kind, start, end, bytes, correlation_id or None,
            device)]`: kernels and copies on the device (`device_kind`:
            a collective's kernel is `collective`), and the device that ran
            each (optional: without it every event is one device's).
        device_planes: names of the devices seen.
    """

    def __init__(self):
        self.markers = {}
        self.completions = {}
        self.fetches = {}
        self.launches = {}
        self.device = []
        self.device_planes = []


def xspace_timeline(xspace):
    """The `Timeline` of an XSpace (JAX's markers and ours)."""
    timeline = Timeline()
    for step, (start, end, plane, line) in _step_markers(xspace).items():
        timeline.markers[step] = (start, end, (plane.id, line.id))
    for step, (_, end, _, _) in _step_markers(xspace, DONE_MARKER_NAME).items():
        timeline.completions[step] = end
    for plane in _host_planes(xspace):
        correlation_ids = {
            key for key, stat in plane.stat_metadata.items() if stat.name == _CORRELATION_STAT
        }
        for line in plane.lines:
            thread = (plane.id, line.id)
            for name, start, end, event in _events(plane, line):
                if name == FETCH_MARKER_NAME:
                    timeline.fetches.setdefault(thread, []).append((start, end))
                    continue
                if not correlation_ids:
                    continue
                for stat in event.stats:
                    if stat.metadata_id in correlation_ids:
                        _, correlation = _stat_value(plane, stat)
                        if correlation is not None:
                            timeline.launches.setdefault(correlation, start)
                        break
    timeline.device = _device_activity(xspace)
    timeline.device_planes = sorted(
        plane.name for plane in xspace.planes if _DEVICE_PLANE.match(plane.name)
    )
    return timeline


def digest_timeline(timeline, steps=None):
    """Cuts a trace of asynchronous dispatch into steps.

    A step's marker spans its dispatch on the host; the device finishes it
    later, and the step's completion is the `devicecost_done` marker (the
    step's results on the host). As our own records do, each step runs from
    its start (the start of its fetch, else of its marker), or from the
    previous step's completion if that is later, until its completion (or
    the previous step's, if Keras's workers reported that one later):

    - `step_ms`: that span;
    - `input_wait_ms`: the step's fetch within the span (on JAX our
      `devicecost_fetch` marker inside the step marker; on PyTorch the
      DataLoader's `__next__` just before it);
    - `compute_ms`: from the end of the fetch (or the span's start, if
      later) until the completion: the device (and dispatch) working on
      the step;
    - `other_ms`: the rest (the host between steps);
    - `dispatch_ms`: the marker's length less the fetch in it: the host
      dispatching the step.

    A step without a completion marker (a trace marked by someone else)
    ends at the end of the device work it launched, else at the end of its
    marker. Device busy and idle time count whatever ran on the device
    within the span. Kernels and copies are those the step launched: a
    device event is matched by its correlation id to the host call that
    queued it, and belongs to the step whose marker holds that call; else,
    for an input copy (host to device) queued by a runtime thread after
    the marker, to the step dispatched last before the call, and for
    anything else to the step whose span holds the call (the copy of a
    step's results is queued as they are read); a device event without a
    matched call belongs to the step whose span it starts in.

    Returns:
        The same document as `digest_xspace`, with `step_cut`
        `"dispatch_to_completion"`, `dispatch_ms` per step, and
        `completion_markers` (how many of the steps had one).
    """
    markers = timeline.markers
    wanted = set(markers) if steps is None else set(steps) & set(markers)
    fetches = {thread: _Intervals(items) for thread, items in timeline.fetches.items()}
    # The end of the marker before each one on its thread: its fetch lies
    # in between.
    previous_end = {}
    by_thread = {}
    for step, (start, end, thread) in markers.items():
        by_thread.setdefault(thread, []).append((start, end, step))
    for items in by_thread.values():
        items.sort()
        last = None
        for start, end, step in items:
            previous_end[step] = last
            last = end
    marker_spans = _Intervals((start, end, step) for step, (start, end, _) in markers.items())

    def marker_holding(time):
        holding = [item[2] for item in marker_spans.overlapping(time, time + 1)]
        return min(holding) if holding else None

    # Device events: (start, end, kind, bytes, launch time or None), and
    # those whose launch lies in a step's marker, by step.
    device_items = []
    launched_in_marker = {}
    for activity in timeline.device:
        correlation = activity[4]
        item = _device_item(activity)
        launch = timeline.launches.get(correlation) if correlation is not None else None
        owner = marker_holding(launch) if launch is not None else None
        if owner is not None:
            launched_in_marker.setdefault(owner, []).append(item)
        else:
            device_items.append((item, launch))

    spans = {}
    for step in sorted(markers):
        start, end, thread = markers[step]
        fetch_items = []
        on_thread = fetches.get(thread)
        if on_thread is not None:
            fetch_items = [item[:2] for item in on_thread.within(start, end)]
            gap_start = previous_end.get(step)
            before = on_thread.last_between(
                start - 10**15 if gap_start is None else gap_start, start
            )
            if before is not None:
                fetch_items.insert(0, before[:2])
        host_start = min([start] + [s for s, _ in fetch_items])
        done = timeline.completions.get(step)
        if done is None:
            done = max([end] + [item[1] for item in launched_in_marker.get(step, [])])
        done = max(done, end)
        begin = host_start
        before = spans.get(step - 1)
        if before is not None:
            # Keras's workers may report steps out of order; a step is
            # complete once the steps before it are, as in our records.
            done = max(done, before[1])
            begin = max(begin, before[1])
        spans[step] = (begin, done, fetch_items, start, end)

    # The rest of the device events: an input copy queued after a marker
    # (by a runtime thread) belongs to the step dispatched last; anything
    # else to the span holding its launch (the copy of a step's results is
    # queued when they are read), or its start, without one.
    launched = {step: list(items) for step, items in launched_in_marker.items()}
    step_spans = _Intervals((begin, done, step) for step, (begin, done, *_) in spans.items())
    dispatches = sorted((start, step) for step, (start, _, _) in markers.items())
    dispatch_starts = [start for start, _ in dispatches]
    for item, launch in device_items:
        start, _, kind = item[:3]
        owner = None
        if launch is not None and kind == "h2d":
            index = bisect.bisect_right(dispatch_starts, launch) - 1
            owner = dispatches[index][1] if index >= 0 else None
        if owner is None:
            moment = start if launch is None else launch
            holding = [span[2] for span in step_spans.overlapping(moment, moment + 1)]
            owner = min(holding) if holding else None
        if owner is not None:
            launched.setdefault(owner, []).append(item)
    device = _Intervals(_device_item(item) for item in timeline.device)
    active = _active_devices(timeline.device)
    has_device = bool(timeline.device_planes or timeline.device)

    digested = []
    for step in sorted(wanted):
        begin, done, fetch_items, marker_start, marker_end = spans[step]
        length = done - begin
        fetch_end = max([e for _, e in fetch_items], default=marker_start)
        input_wait = _union_ps(fetch_items, begin, done)
        compute = max(0, done - max(fetch_end, begin))
        dispatch = max(
            0, marker_end - marker_start - _union_ps(fetch_items, marker_start, marker_end)
        )
        entry = _step_entry(step, length, input_wait, compute)
        entry["dispatch_ms"] = dispatch / _PS_PER_MS
        if has_device:
            entry.update(kernels.device_step(
                device.overlapping(begin, done), begin, done, launched.get(step, []), active
            ))
        digested.append(entry)
    return {
        "steps": digested,
        "summary": summarize(digested),
        "has_device_plane": has_device,
        "device_planes": list(timeline.device_planes),
        "devices": kernels.split_summary(digested).get("devices", []),
        "step_cut": CUT_DISPATCH_TO_COMPLETION,
        "completion_markers": sum(1 for step in wanted if step in timeline.completions),
    }


def summarize(steps):
    """Means over the digested steps, and the device's fractions of their
    time (`kernels.split_summary`): `device_busy_fraction` is compute."""
    if not steps:
        return {}
    summary = {}
    for key in steps[0]:
        if key == "step":
            continue
        values = [entry[key] for entry in steps if isinstance(entry.get(key), (int, float))]
        if values:
            summary[f"mean_{key}"] = sum(values) / len(values)
    total = sum(entry["step_ms"] for entry in steps)
    summary.update(kernels.split_summary(steps).get("summary", {}))
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
