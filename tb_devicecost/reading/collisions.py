"""Fits that share one run directory, found from the files: never one lost.

Each `DeviceCostCallback` (or `StepRecorder`) writes its own event files,
named `events.out.tfevents.<opened, s>.<host>.<pid>.<counter>.devicecost`
(`writer.SummaryWriter`). TensorBoard reads every file of a directory as
one run, so two fits given one `log_dir` become one run: the newest
documents win, and where the second fit's global steps start again at 0
TensorBoard drops the first fit's steps. So a run directory holding the
files of more than one recording (a script run again into the same
`log_dir`, two scripts at once: not a distributed job, whose processes
write to `process_<i>`) is said, with each fit's own figures, never shown
as one fit in silence (`docs/FORMAT.md`, "Two fits in one log_dir").

A recording is one `StepAccounting`: one global step and one cumulative
aggregate, over one or more `fit` calls with one callback (its sessions).
Its files carry its identity (`recording_id`, in the run info that opens
each of its files); files written before that are one recording per
process (host and pid of the name). A file's time runs from its opening
(the header event's wall time, exact; else the name's whole seconds) to
its last write (its modification time). Two recordings ran at once when
each file was opened before the other's last write (with only the name's
seconds, at least a second before: those cannot tell fits that ran one
after the other from simultaneous ones).
"""

import datetime
import json
import os
import re

from google.protobuf import message as protobuf_message
from tensorboard.compat.proto import event_pb2

from tb_devicecost.format import metadata
from tb_devicecost.format import records

_OUR_FILE = re.compile(
    r"^events\.out\.tfevents\.(?P<opened>\d{1,12})\.(?P<host>.*)\."
    r"(?P<pid>\d{1,10})\.(?P<counter>\d{6})\.devicecost$"
)
# Records read from a file's start for its identity: the header, the run
# info that `begin_session` writes first (or the aggregate that a file
# opened after a failed write starts with), a little slack.
_HEAD_RECORDS = 4
_HEAD_BYTES = 1 << 20
# Per set of files `(path, size, mtime)`: each recording's figures, so a
# tab that scans every few seconds reads a run's files once per change.
_FIGURES = {}
_FIGURES_KEPT = 64


def _head(path):
    """`(header wall time, identity document)` from the first records of an
    event file: the first run info or aggregate carrying `recording_id`;
    `None` for what cannot be read."""
    wall_time, info = None, None
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            for index, (_, payload) in enumerate(records.read_framed(handle, size=size)):
                if payload is None or index >= _HEAD_RECORDS or len(payload) > _HEAD_BYTES:
                    break
                try:
                    event = event_pb2.Event.FromString(payload)
                except protobuf_message.DecodeError:
                    break
                if index == 0:
                    wall_time = event.wall_time
                    continue
                for value in event.summary.value:
                    # The run info opens a fit's file; a file opened after a
                    # failed write starts with the last aggregate, which
                    # carries the same identity.
                    if value.tag in (metadata.TAG_RUN_INFO, metadata.TAG_AGGREGATE) and \
                            value.tensor.string_val:
                        document = _json(value.tensor.string_val[0])
                        if document is not None and "recording_id" in document:
                            info = document
                if info is not None:
                    break
    except OSError:
        pass
    return wall_time, info


def _json(data):
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


class _File:
    __slots__ = ("path", "name", "host", "pid", "opened", "exact", "last_write",
                 "recording", "fit_start")

    def __init__(self, path, match, last_write):
        self.path, self.name = path, os.path.basename(path)
        self.host, self.pid = match.group("host"), match.group("pid")
        seconds = int(match.group("opened"))
        wall_time, info = _head(path)
        # The header's time is exact when it falls in the name's second.
        self.exact = wall_time is not None and int(wall_time) == seconds
        self.opened = wall_time if self.exact else float(seconds)
        self.last_write = last_write
        info = info or {}
        recording = info.get("recording_id")
        self.recording = (
            ("id", recording) if isinstance(recording, str) and recording
            else ("process", self.host, self.pid))
        start = info.get("fit_start")
        self.fit_start = start if isinstance(start, (int, float)) and not isinstance(
            start, bool) else None


def _files(paths):
    files = []
    for path in paths:
        match = _OUR_FILE.match(os.path.basename(path))
        if not match:
            continue
        try:
            last_write = os.stat(path).st_mtime
        except OSError:
            continue
        files.append(_File(path, match, last_write))
    return sorted(files, key=lambda file: (file.opened, file.name))


def _at_once(first, second):
    """Whether two files (of different recordings) were open at one time."""
    margin = 0.0 if first.exact and second.exact else 1.0
    return (first.opened + margin <= second.last_write
            and second.opened + margin <= first.last_write)


def _figures(paths):
    """`(aggregate, info)` newest of a recording's files, read whole (cached
    per file set: a scan every few seconds reads a changed set once)."""
    from tb_devicecost.reading import local_data  # Reads files: on demand.

    key = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            return None, None
        key.append((path, status.st_size, status.st_mtime_ns))
    key = tuple(key)
    if key not in _FIGURES:
        series, _ = local_data.load_run(paths)
        found = []
        for tag in (metadata.TAG_AGGREGATE, metadata.TAG_RUN_INFO):
            time_series = series.get(tag)
            newest = time_series.sample.newest if time_series else None
            found.append(_json(newest[2].string_val[0]) if newest and
                         newest[2].string_val else None)
        if len(_FIGURES) >= _FIGURES_KEPT:
            _FIGURES.pop(next(iter(_FIGURES)))
        _FIGURES[key] = tuple(found)
    return _FIGURES[key]


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and 0 <= value < 1e15 else None


def _rate(value):
    """A rate with three significant digits, never `0` for a small one."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _fit_text(number, recording):
    """`fit 1 (process 111 on host, from 09:00:03 UTC): 300 steps, ...`"""
    first = recording[0]
    start = next((file.fit_start for file in recording if file.fit_start), first.opened)
    when = datetime.datetime.fromtimestamp(start, datetime.timezone.utc)
    text = (f"fit {number} (process {first.pid} on {first.host}, from "
            f"{when:%Y-%m-%d %H:%M:%S} UTC, {first.name})")
    aggregate, info = _figures([file.path for file in recording])
    parts = []
    if isinstance(aggregate, dict):
        steps = _number(aggregate.get("steps"))
        if steps is not None:
            parts.append(f"{int(steps):,} steps")
        batch = aggregate.get("batch_size")
        batch = _number(batch.get("max")) if isinstance(batch, dict) else None
        if batch:
            parts.append(f"batch {int(batch):,}")
        components = aggregate.get("components")
        step = components.get("step") if isinstance(components, dict) else None
        p50 = _number(step.get("p50_ms")) if isinstance(step, dict) else None
        if p50 is not None:
            parts.append(f"a typical step {p50:.3g} ms")
        rate = _number(aggregate.get("samples_per_s"))
        if rate:
            parts.append(f"{_rate(rate)} samples/s")
        status = aggregate.get("status")
        if isinstance(status, str):
            closed = aggregate.get("closed")
            parts.append(status[:40] if closed is not False or status != "running"
                         else "not closed")
    else:
        parts.append("no aggregate")
    if isinstance(info, dict) and isinstance(info.get("model"), str):
        parts.insert(0, f"model {info['model'][:80]}")
    return text + ": " + ", ".join(parts)


def collided(paths):
    """What a run directory's event files say of the fits written into it.

    Args:
        paths: The run directory's event files (`reader.LogdirScan.runs`).

    Returns:
        A list of sentences: for fits written at the same time, one per
        pair (at most three, then how many more); for more than one fit,
        each fit with its own figures and which one the run's figures are.
        Empty when one recording wrote the run.
    """
    files = _files(paths)
    recordings = {}
    for file in files:
        recordings.setdefault(file.recording, []).append(file)
    if len(recordings) < 2:
        return []
    pairs = []
    for position, first in enumerate(files):
        for second in files[position + 1:]:
            if first.recording != second.recording and _at_once(first, second):
                pairs.append((first, second))
    reasons = [
        f"Two fits wrote into this run directory at once: {first.name} (process "
        f"{first.pid} on {first.host}) and {second.name} (process {second.pid} on "
        f"{second.host}) were written at the same time. TensorBoard reads them as one "
        "run, so its figures are one fit's (the newest documents) and the other's "
        "are lost; give each fit its own log_dir, e.g. DeviceCostCallback('logs/a') "
        "and DeviceCostCallback('logs/b')."
        for first, second in pairs[:3]
    ]
    if len(pairs) > 3:
        reasons.append(f"And {len(pairs) - 3:,} more pairs of event files written at once.")
    ordered = sorted(recordings.values(), key=lambda group: group[0].opened)
    # TensorBoard reads a run's files in name order: the last file's
    # documents are the run's.
    newest = max(files, key=lambda file: file.name).recording
    shown = next(number for number, group in enumerate(ordered, 1)
                 if group[0].recording == newest)
    how = "at the same time, as said above" if pairs else (
        "one after another (a script run again into the same log_dir)")
    fits = "; ".join(_fit_text(number, group) for number, group in enumerate(ordered, 1))
    reasons.append(
        f"This run holds {len(ordered):,} fits, written {how}: {fits}. TensorBoard "
        f"reads them as one run: its figures are fit {shown}'s (the newest "
        "documents), and where a later fit's steps start again at 0 TensorBoard "
        "drops the earlier fit's steps. Give each fit its own log_dir, e.g. "
        "DeviceCostCallback('logs/run2')."
    )
    return reasons
