"""Our breakdown of the steps in a PyTorch profiler trace (Chrome JSON).

`DeviceCostCallback(profile_steps=...)` on the PyTorch backend runs
`torch.profiler.profile` over the window and exports its trace as Chrome
trace JSON to `<run>/plugins/devicecost_torch/<capture>/<host>.pt.trace.json.gz`
(the capture named like the Profile tab's, `YYYY_MM_DD_HH_MM_SS`). Each
traced step's dispatch is marked `ProfilerStep#<global step>` (the name
`torch.profiler`'s own `step()` gives its markers) and its completion
`devicecost_done#<global step>`; the DataLoader marks its own fetches
(`enumerate(DataLoader)#...__next__`).

The trace is read into the same model as a JAX trace
(`tb_devicecost.traces.trace.Timeline`) and cut into steps the same way
(`tb_devicecost.traces.trace.digest_timeline`): host-side numbers from the CPU
events, and with CUDA activity the device's time split into compute,
communication (NCCL and gloo collectives) and copies, per device
(`tb_devicecost.traces.kernels`: by the event's category, then its name), kernels
(count, mean duration) and host-to-device / device-to-host copies (time,
bytes) from the `kernel`, `gpu_memcpy` and `gpu_memset` events, matched to
the `cuda_runtime` / `cuda_driver` calls that queued them by their
`correlation` ids.
"""

import gzip
import json
import os
import re
import socket
import time

from tb_devicecost.format import captures
from tb_devicecost.traces import kernels
from tb_devicecost.traces import trace as trace_module

MARKER_PREFIX = "ProfilerStep#"
DONE_PREFIX = f"{trace_module.DONE_MARKER_NAME}#"
FORMAT = "pytorch_chrome_trace"
_SUFFIX = ".pt.trace.json.gz"
_FETCH_EVENT = re.compile(
    rf"^(enumerate\(DataLoader\)#.*__next__|{trace_module.FETCH_MARKER_NAME})$"
)
_LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
_DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
_PS_PER_US = 1e6


def trace_dir(run_dir):
    """The directory holding a run's PyTorch traces."""
    return os.path.join(run_dir, "plugins", "devicecost_torch")


def new_trace_path(run_dir, opened_at=None):
    """Where a window opened at `opened_at` (Unix time) writes its trace."""
    capture = time.strftime("%Y_%m_%d_%H_%M_%S", time.localtime(opened_at))
    host = socket.gethostname() or "localhost"
    return os.path.join(trace_dir(run_dir), capture, host + _SUFFIX)


def list_traces(run_dir):
    """`[(path, capture, host)]` of a run's PyTorch traces, newest first."""
    return captures.list_traces(trace_dir(run_dir), _SUFFIX)


def load(path):
    """Reads a Chrome trace (gzipped or not).

    Raises:
        trace.TraceError: when it cannot be read or holds no events.
    """
    try:
        with open(path, "rb") as trace_file:
            contents = trace_file.read()
    except OSError as error:
        raise trace_module.TraceError(f"Cannot read trace {path!r}: {error}")
    try:
        if contents[:2] == b"\x1f\x8b":
            contents = gzip.decompress(contents)
        document = json.loads(contents)
    except (OSError, EOFError, ValueError) as error:
        raise trace_module.TraceError(f"Trace {path!r} is not Chrome trace JSON: {error}")
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list) or not events:
        raise trace_module.TraceError(f"Trace {path!r} holds no events (empty or truncated).")
    return events


def _step_of(name, prefix):
    if not name.startswith(prefix):
        return None
    try:
        return int(name[len(prefix):])
    except ValueError:
        return None


def timeline(events):
    """The `trace.Timeline` of a Chrome trace's events."""
    result = trace_module.Timeline()
    devices = set()
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        try:
            start = int(round(float(event["ts"]) * _PS_PER_US))
            end = start + int(round(float(event.get("dur", 0)) * _PS_PER_US))
        except (KeyError, TypeError, ValueError):
            continue
        name = str(event.get("name", ""))
        category = event.get("cat")
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        thread = (event.get("pid"), event.get("tid"))
        if category == "user_annotation":
            step = _step_of(name, MARKER_PREFIX)
            if step is not None:
                result.markers[step] = (start, end, thread)
                continue
            step = _step_of(name, DONE_PREFIX)
            if step is not None:
                result.completions[step] = end
                continue
            if _FETCH_EVENT.match(name):
                result.fetches.setdefault(thread, []).append((start, end))
        elif category in _LAUNCH_CATEGORIES:
            correlation = args.get("correlation")
            if correlation is not None:
                result.launches.setdefault(correlation, start)
        elif category in _DEVICE_CATEGORIES:
            group = kernels.group_of(name, category=category)
            kind = kernels.device_kind(name, group)
            if category == "gpu_memset":
                kind = "other_copy"
            size = args.get("bytes", 0) if kind in ("h2d", "d2h") else 0
            device = f"/device:GPU:{args.get('device', event.get('pid'))}"
            result.device.append(
                (kind, start, end, int(size or 0), args.get("correlation"), device)
            )
            devices.add(device)
    result.device_planes = sorted(devices)
    return result


def digest(events, steps=None):
    """Per-step breakdown of a PyTorch trace: `trace.digest_timeline`'s
    document, with `trace_format` `"pytorch_chrome_trace"`."""
    document = trace_module.digest_timeline(timeline(events), steps)
    document["trace_format"] = FORMAT
    return document
