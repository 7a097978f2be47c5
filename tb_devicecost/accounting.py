"""Step accounting: where each step's wall time went, in bounded memory.

A step runs from the moment its batch is requested to the moment the next
step's batch is requested (or a boundary such as the end of an epoch):

    |-- data_wait --|-------- compute --------|-- host_overhead --|
    begin_step    end_fetch                end_compute        next begin_step

The three parts add up to the step's wall time. The first step of each
session (a `fit` call) holds tracing and compilation: it is recorded as
warm-up and kept out of the steady-state statistics.
"""

import collections
import contextlib
import os
import signal
import threading
import time
import warnings
import weakref

import numpy as np

from tb_devicecost import metadata
from tb_devicecost import stats
from tb_devicecost import vocabulary
from tb_devicecost import writer as writer_module

# Spikes are judged against the median once this many steps are known.
_SPIKE_MIN_HISTORY = 8
# Step numbers kept for warm-ups and spikes (for marking them on charts).
_MAX_MARKED_STEPS = 100

# Documents are bounded (docs/FORMAT.md, "JSON documents"): a list keeps
# its newest MAX_DOCUMENT_ITEMS items, a string its first
# MAX_DOCUMENT_STRING characters, and a document whose JSON would still be
# longer than MAX_DOCUMENT_BYTES has its lists shortened (newest kept)
# until it fits.
# Writing one then costs the loop milliseconds at most.
MAX_DOCUMENT_ITEMS = 1000
MAX_DOCUMENT_STRING = 10_000
MAX_DOCUMENT_BYTES = 1 << 20

# Per-step rows hold `vocabulary.ROW_COLUMNS`, in that order.
_ROW_WARMUP = vocabulary.COLUMN[vocabulary.WARMUP]
_ROW_COMPONENTS = slice(
    vocabulary.COLUMN[vocabulary.DATA_WAIT_MS],
    vocabulary.COLUMN[vocabulary.HOST_OVERHEAD_MS] + 1,
)
_ROW_BATCH = vocabulary.COLUMN[vocabulary.BATCH_SIZE]


class StepAccounting:
    """The step accounting of one run, written as it goes.

    Internal: `DeviceCostCallback` drives it from Keras's hooks and
    `StepRecorder` from a custom loop. Each step's time splits into data
    wait (fetching the batch), compute (the step and its synchronisation)
    and host overhead (everything else until the next step starts). The
    first step of each session is warm-up. Summaries go to `run_dir` as a
    TensorBoard run, in batches; memory does not grow with the number of
    steps.

    If recording fails (a full disk, a bad path), it writes what it still
    can (a last aggregate, `"interrupted"`, saying why), warns once (or
    calls `on_failure`, when its owner set one) and switches itself off;
    the training loop is never interrupted. On SIGTERM, every recorder in a
    session writes its steps and an `"interrupted"` aggregate, then the
    signal goes on to the handler that was there before (`_SigtermChain`).

    Args:
        run_dir: Directory of the TensorBoard run to write into.
        flush_steps: Number of steps buffered before they are written.
        clock: Function returning seconds from a monotonic clock.
            Defaults to `time.perf_counter`.
    """

    def __init__(self, run_dir, flush_steps=256, clock=None):
        if not isinstance(run_dir, (str, os.PathLike)) or not str(run_dir):
            raise ValueError(
                "`run_dir` must be a non-empty path to a directory. "
                f"Received: run_dir={run_dir!r}"
            )
        if (
            isinstance(flush_steps, bool)
            or not isinstance(flush_steps, int)
            or flush_steps < 1
        ):
            raise ValueError(
                "`flush_steps` must be a positive integer. "
                f"Received: flush_steps={flush_steps!r}"
            )
        self.run_dir = os.fspath(run_dir)
        self.flush_steps = flush_steps
        self._clock = clock or time.perf_counter
        # Maps the monotonic clock to wall time once, not per step.
        self._wall_offset = time.time() - self._clock()
        self._writer = writer_module.SummaryWriter(self.run_dir)
        self.enabled = True
        self._global_step = 0
        self._rows = []
        # Blocks of rows added at once (numpy arrays), written with the rows.
        self._blocks = []
        self._block_rows = 0
        self._open = None
        self._excluded = 0.0
        self._next_is_warmup = True
        self._sessions = 0
        self._steady = {
            name: stats.RunningStats() for name in vocabulary.COMPONENTS + ("step",)
        }
        self._warmup = stats.RunningStats()
        # How long each steady step's fetch took, whether or not the device
        # was busy meanwhile (the data wait is only the part it was not):
        # a process's own input work, compared across the processes of a job.
        self._fetch = stats.RunningStats()
        self._warmup_steps = collections.deque(maxlen=_MAX_MARKED_STEPS)
        self._spike_steps = collections.deque(maxlen=_MAX_MARKED_STEPS)
        self._num_spikes = 0
        self._steady_samples = 0
        self._batch_sizes = set()
        self._info = {}
        self._fetch_floor_ms = None
        self._watched_steps = None
        self._watched_rows = {}
        # The wall time accounted for (fits, or evaluate calls), and the part
        # of it spent on our own measurements, kept out of the steps.
        self._span_started = None
        self._span_total = 0.0
        self._measurement_total = 0.0
        self._retraces = None
        # Steps timed under asynchronous dispatch whose pace the device set
        # (it was still busy with the step before when they were
        # dispatched), and those whose pace the training thread set.
        self._pace = [0, 0]
        # Called with the error instead of warning, when set: the owner of
        # several recorders (the callback) warns once and stops them all.
        self.on_failure = None

    # The hot path: three calls per step, a clock read each, one small list
    # and one tuple allocated per step.

    @property
    def next_is_warmup(self):
        """Whether the next step added is a warm-up step."""
        return self._next_is_warmup

    @property
    def step_open(self):
        """Whether a step has begun and not yet ended."""
        return self._open is not None

    @property
    def step_computed(self):
        """Whether the open step's compute has ended."""
        return self._open is not None and self._open[3] is not None

    def upcoming_step(self):
        """The global step that the next `begin_step` starts."""
        return self._global_step + (1 if self._open is not None else 0)

    def begin_step(self, now=None):
        """Marks the start of a step: its batch is being requested."""
        if not self.enabled:
            return
        now = self._clock() if now is None else now
        if self._open is not None:
            self._close_step(now)
        # [start, fetch end, compute start, compute end, batch size, steps]
        self._open = [now, now, now, None, None, 1]

    def end_fetch(self, batch_size=None, now=None):
        """Marks that the batch has arrived; compute starts."""
        if self._open is not None:
            now = self._clock() if now is None else now
            self._open[1] = self._open[2] = now
            if batch_size is not None:
                self._open[4] = batch_size

    def begin_compute(self, now=None):
        """Marks the start of compute, when it does not follow the fetch."""
        if self._open is not None:
            self._open[2] = self._clock() if now is None else now

    def end_compute(self, batch_size=None, now=None):
        """Marks that the step's results are on the host."""
        if self._open is not None:
            self._open[3] = self._clock() if now is None else now
            if batch_size is not None:
                self._open[4] = batch_size

    def extend_warmup(self):
        """Marks the open step as warm-up too.

        For a step that still pays a one-off cost: the first call of a
        function Keras traced inside another one instantiates it on its own.
        """
        self._next_is_warmup = True

    def set_steps(self, count):
        """Says how many steps the open record ran (`steps_per_execution`).

        The record is written as `count` steps, each with an equal part of
        its time, so that step counts and per-step times are exact when an
        execution runs fewer steps than `steps_per_execution`.
        """
        if self._open is not None:
            self._open[5] = count

    def watch_steps(self, steps):
        """Keeps the components of `steps` (a range) for `watched_steps`."""
        self._watched_steps = steps
        self._watched_rows = {}

    def watched_steps(self):
        """`[{"step", "data_wait_ms", "compute_ms", "host_overhead_ms"}]` of
        the watched steps recorded so far."""
        return [
            {
                "step": step,
                "data_wait_ms": row[2],
                "compute_ms": row[3],
                "host_overhead_ms": row[4],
            }
            for step, row in sorted(self._watched_rows.items())
        ]

    def abort_step(self):
        """Forgets the open step (its batch never came: end of data)."""
        self._open = None

    def exclude(self, seconds):
        """Leaves `seconds` spent on our own measurements out of the step."""
        self._excluded += seconds

    def boundary(self, now=None):
        """Closes the open step: an epoch, validation or the fit ends here."""
        if self._open is not None and self.enabled:
            try:
                self._close_step(self._clock() if now is None else now)
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)

    def _close_step(self, now):
        start, fetched, compute_started, computed, batch_size, steps = self._open
        self._open = None
        excluded, self._excluded = self._excluded, 0.0
        data_wait = fetched - start
        compute = 0.0 if computed is None else computed - compute_started
        host = max(0.0, now - start - data_wait - compute)
        excluded = min(excluded, host)
        host -= excluded
        self.add_step(start, data_wait, compute, host, batch_size, steps, excluded)

    def add_step(self, start, data_wait, compute, host, batch_size=None, steps=1, excluded=0.0):
        """Adds a step whose parts are known (seconds), e.g. one timed under
        asynchronous dispatch; `steps` > 1 writes an execution as its steps.

        Args:
            start: When the step began, on this recorder's clock.
            excluded: Seconds of our own measurements left out of it.
        """
        if not self.enabled:
            return
        if steps < 1:
            # An execution that ran no step (the end of the data).
            return
        if not self._next_is_warmup and steps == 1:
            # A synchronous step's fetch is all data wait (`AsyncSteps`
            # adds the full fetches of asynchronous ones).
            self._fetch.add(np.array([data_wait * 1e3]))
        self._measurement_total += excluded
        wall = data_wait + compute + host
        for index in range(steps):
            self._rows.append(
                (
                    self._global_step,
                    start + index * wall / steps + self._wall_offset,
                    data_wait * 1e3 / steps,
                    compute * 1e3 / steps,
                    host * 1e3 / steps,
                    float("nan") if batch_size is None else batch_size,
                    1.0 if self._next_is_warmup else 0.0,
                )
            )
            if (
                self._watched_steps is not None
                and self._global_step in self._watched_steps
            ):
                self._watched_rows[self._global_step] = self._rows[-1]
            self._global_step += 1
        self._next_is_warmup = False
        if len(self._rows) + self._block_rows >= self.flush_steps:
            try:
                self._flush_rows()
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)

    # Sessions, metadata and writing.

    def begin_session(self, info=None):
        """Starts a session (a `fit` call): its first step is warm-up.

        Args:
            info: Optional dict of run information (backend, versions, batch
                size...) merged into the run-info document.
        """
        if not self.enabled:
            return
        try:
            self.boundary()
            self._sessions += 1
            self._next_is_warmup = True
            _SIGTERM.track(self)
            self._info.update(info or {})
            self._write_info()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def update_info(self, info):
        """Merges `info` into the run-info document and writes it."""
        if not self.enabled:
            return
        try:
            self._info.update(info)
            self._write_info()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def begin_span(self, now=None):
        """Starts accounting wall time: a `fit`, or an `evaluate` call.

        The time between `begin_span` and `end_span` is split into steps,
        warm-up, our own measurements and the time between steps (epoch
        starts, validation, other callbacks), which add up to it.
        """
        if self._span_started is None:
            self._span_started = self._clock() if now is None else now

    def end_span(self, now=None):
        """Ends the wall time started by `begin_span`."""
        if self._span_started is not None:
            now = self._clock() if now is None else now
            self._span_total += now - self._span_started
            self._span_started = None

    def set_retraces(self, count, steps=(), source="tf.function tracing count", seconds=None):
        """Records how often the step function was traced (or compiled)
        again after its warm-up, at which steps, and the evidence."""
        self._retraces = {
            "count": int(count),
            "steps": [int(step) for step in list(steps)[-_MAX_MARKED_STEPS:]],
            "source": source,
        }
        if seconds is not None:
            self._retraces["seconds"] = float(seconds)

    def set_fetch_floor(self, milliseconds):
        """Records the cost of handing over a batch that is already ready."""
        self._fetch_floor_ms = milliseconds

    def write_placement(self, placement):
        """Writes the placement document (devices, variables, ops)."""
        self._write_document(metadata.TAG_PLACEMENT, placement)

    def write_document(self, tag, document):
        """Writes a JSON document under one of `metadata.JSON_TAGS`."""
        self._write_document(tag, document)

    def _write_document(self, tag, document):
        if not self.enabled:
            return
        try:
            document = bounded_document(dict(document, schema=metadata.SCHEMA_VERSION))
            self._writer.write_json(tag, self._last_step(), time.time(), document)
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def _write_info(self):
        info = dict(self._info, sessions=self._sessions)
        info["schema"] = metadata.SCHEMA_VERSION
        info = bounded_document(info)
        self._writer.write_json(
            metadata.TAG_RUN_INFO, self._last_step(), time.time(), info
        )

    def _last_step(self):
        return max(0, self._global_step - 1)

    def flush(self, status="running"):
        """Writes buffered steps and the cumulative aggregate to disk."""
        if not self.enabled:
            return
        try:
            self._flush_rows()
            self._writer.write_json(
                metadata.TAG_AGGREGATE,
                self._last_step(),
                time.time(),
                self.aggregate(status),
            )
            self._writer.flush()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def end_session(self, status="complete"):
        """Closes the open step, writes everything and closes the file.

        Args:
            status: Recorded in the aggregate: `"complete"`, or
                `"interrupted"` when the loop raised.
        """
        _SIGTERM.untrack(self)
        if not self.enabled:
            return
        self.boundary()
        # A recorder that never saw a session or a step leaves no file.
        if self._sessions or self._global_step:
            self.flush(status=status)
        self._close_writer()

    def stop(self, status="interrupted"):
        """Ends the session (`end_session(status)`) and records nothing more."""
        self.end_session(status=status)
        self.enabled = False
        self._rows = []
        self._blocks = []
        self._block_rows = 0
        self._open = None

    def _interrupted(self):
        """SIGTERM: the steps so far and an `"interrupted"` aggregate, on disk.

        The open step is left as it is: if the process lives on (a handler
        that does not exit), it is recorded as usual and a later aggregate
        says how the fit ended.
        """
        if self.enabled and (self._sessions or self._global_step):
            self.flush(status="interrupted")

    def _close_writer(self):
        try:
            self._writer.close()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def add_steps(self, start, data_wait, compute, host, batch_size, excluded):
        """Adds one step per element of the given arrays (seconds), as
        `add_step` does for one: the path of asynchronous dispatch, where
        completed steps arrive in groups."""
        if not self.enabled or len(start) == 0:
            return
        count = len(start)
        block = np.empty((count, len(vocabulary.ROW_COLUMNS)), dtype=np.float64)
        first = self._global_step
        block[:, vocabulary.COLUMN[vocabulary.STEP]] = np.arange(first, first + count)
        block[:, vocabulary.COLUMN[vocabulary.WALL_TIME]] = start + self._wall_offset
        block[:, _ROW_COMPONENTS] = np.stack([data_wait, compute, host], axis=1) * 1e3
        block[:, _ROW_BATCH] = batch_size
        block[:, _ROW_WARMUP] = 0.0
        if self._next_is_warmup:
            block[0, _ROW_WARMUP] = 1.0
            self._next_is_warmup = False
        self._measurement_total += float(np.sum(excluded))
        if self._watched_steps is not None:
            for index, step in enumerate(range(first, first + count)):
                if step in self._watched_steps:
                    self._watched_rows[step] = tuple(block[index])
        self._global_step += count
        if self._rows:
            # Rows added one by one before this block come before it.
            self._blocks.append(np.array(self._rows, dtype=np.float64))
            self._block_rows += len(self._rows)
            self._rows = []
        self._blocks.append(block)
        self._block_rows += count
        if len(self._rows) + self._block_rows >= self.flush_steps:
            try:
                self._flush_rows()
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)

    def add_fetch_times(self, fetch_ms):
        """Adds the full durations (ms) of steady steps' fetches."""
        self._fetch.add(np.asarray(fetch_ms, dtype=np.float64))

    def count_pace(self, device_paced):
        """Counts which side set the pace of steps just added (a bool
        array, or one bool), under asynchronous dispatch."""
        device = int(np.count_nonzero(device_paced))
        self._pace[0] += device
        self._pace[1] += int(np.size(device_paced)) - device

    def _flush_rows(self):
        if not self._rows and not self._blocks:
            return
        # Blocks, then the rows added one by one since: in step order.
        parts = list(self._blocks)
        if self._rows:
            parts.append(np.array(self._rows, dtype=np.float64))
        rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._rows = []
        self._blocks = []
        self._block_rows = 0
        warmup = rows[:, _ROW_WARMUP] > 0
        steady = rows[~warmup]
        for row in rows[warmup]:
            self._warmup.add(row[_ROW_COMPONENTS].sum(keepdims=True))
            self._warmup_steps.append(int(row[0]))
        if len(steady):
            self._add_steady(steady)
        # The warm-up flag is written per step, so readers never guess it.
        self._writer.write_steps(rows)

    def _add_steady(self, rows):
        data_wait, compute, host = rows[:, _ROW_COMPONENTS].T
        compute_stats = self._steady["compute"]
        if compute_stats.count >= _SPIKE_MIN_HISTORY:
            median = compute_stats.percentile(50)
        else:
            median = float(np.median(compute))
        spikes = rows[compute > vocabulary.SPIKE_RATIO * max(median, 1e-6), 0]
        self._num_spikes += len(spikes)
        self._spike_steps.extend(int(step) for step in spikes)
        self._steady["data_wait"].add(data_wait)
        self._steady["compute"].add(compute)
        self._steady["host_overhead"].add(host)
        self._steady["step"].add(data_wait + compute + host)
        batch = rows[:, _ROW_BATCH]
        known = np.isfinite(batch)
        self._steady_samples += int(batch[known].sum())
        self._batch_sizes.update(int(size) for size in np.unique(batch[known]))

    def aggregate(self, status="running"):
        """Returns the cumulative aggregate document (JSON-ready)."""
        steady_wall_ms = self._steady["step"].total
        batch_sizes = sorted(self._batch_sizes)
        return {
            "schema": metadata.SCHEMA_VERSION,
            "status": status,
            "steps": self._global_step,
            "steady_steps": self._steady["step"].count,
            "sessions": self._sessions,
            "components": {
                name: running.summary() for name, running in self._steady.items()
            },
            "warmup": {
                "count": self._warmup.count,
                "sum_ms": self._warmup.total,
                "max_ms": self._warmup.maximum if self._warmup.count else None,
                "steps": list(self._warmup_steps),
            },
            "spikes": {
                "count": self._num_spikes,
                "ratio": vocabulary.SPIKE_RATIO,
                "steps": list(self._spike_steps),
            },
            "samples": self._steady_samples,
            "samples_per_s": (
                self._steady_samples / (steady_wall_ms / 1e3)
                if steady_wall_ms > 0 and self._steady_samples
                else None
            ),
            "batch_size": {
                "min": batch_sizes[0] if batch_sizes else None,
                "max": batch_sizes[-1] if batch_sizes else None,
                "distinct": len(batch_sizes),
            },
            "fetch_floor_ms": self._fetch_floor_ms,
            "wall_ms": self._wall_ms(),
            "retraces": self._retraces,
            "fetch": self._fetch.summary() if self._fetch.count else None,
            "pace": (
                {"device_steps": self._pace[0], "host_steps": self._pace[1]}
                if any(self._pace)
                else None
            ),
            "updated": time.time(),
        }

    def _wall_ms(self):
        """The accounted wall time and its parts, in milliseconds."""
        total = self._span_total
        if self._span_started is not None:
            total += self._clock() - self._span_started
        if total <= 0:
            return None
        total_ms = total * 1e3
        steps_ms = self._steady["step"].total
        warmup_ms = self._warmup.total
        measurement_ms = self._measurement_total * 1e3
        return {
            "total": total_ms,
            "steps": steps_ms,
            "warmup": warmup_ms,
            "measurement": measurement_ms,
            "between_steps": max(
                0.0, total_ms - steps_ms - warmup_ms - measurement_ms
            ),
        }

    def _fail(self, error):
        if not self.enabled:
            return
        self.enabled = False
        self._rows = []
        self._blocks = []
        self._block_rows = 0
        self._open = None
        # What can still be written: a failed write left part of a record
        # (a full disk); cut off, its space holds a last aggregate saying
        # the recording stopped, so the run does not read "running" for
        # ever (docs/FORMAT.md, `status`).
        try:
            self._writer.discard_partial()
            if self._sessions or self._global_step:
                final = self.aggregate("interrupted")
                final["error"] = f"{type(error).__name__}: {error}"[:MAX_DOCUMENT_STRING]
                self._writer.write_json(
                    metadata.TAG_AGGREGATE, self._last_step(), time.time(), final
                )
        except Exception:  # pylint: disable=broad-except
            pass
        try:
            self._writer.close()
        except Exception:  # pylint: disable=broad-except
            pass
        _SIGTERM.untrack(self)
        if self.on_failure is not None:
            try:
                self.on_failure(error)
            except Exception:  # pylint: disable=broad-except
                pass
            return
        warnings.warn(
            f"tb-devicecost stopped recording into {self.run_dir!r} because of "
            f"{type(error).__name__}: {error}. Training goes on unaffected; "
            "the steps recorded so far are kept.",
            RuntimeWarning,
            stacklevel=3,
        )


def bounded_document(document):
    """`document` within the bounds of docs/FORMAT.md (`MAX_DOCUMENT_*`).

    Lists keep their newest (last) `MAX_DOCUMENT_ITEMS` items, strings
    their first `MAX_DOCUMENT_STRING` characters; if the JSON would still
    exceed `MAX_DOCUMENT_BYTES`, every list is shortened by the share it is
    over (newest kept) until it does not. A document that was cut says so:
    `"truncated": true`. Returns `document` itself when nothing was cut.
    """
    cut = [False]

    def bound(value):
        if isinstance(value, dict):
            return {key: bound(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            if len(value) > MAX_DOCUMENT_ITEMS:
                cut[0] = True
                value = value[-MAX_DOCUMENT_ITEMS:]
            return [bound(item) for item in value]
        if isinstance(value, str) and len(value) > MAX_DOCUMENT_STRING:
            cut[0] = True
            return value[:MAX_DOCUMENT_STRING] + "…"
        return value

    bounded = bound(document)
    for _ in range(8):
        size = _json_size(bounded)
        if size <= MAX_DOCUMENT_BYTES:
            break
        # Every list shortened by the share the document is over (newest
        # kept): one or two rounds, each a single encoding.
        keep = 0.9 * MAX_DOCUMENT_BYTES / size
        lists = [items for items in _lists(bounded) if len(items) > 1]
        if not lists:
            break
        for items in lists:
            del items[: len(items) - max(1, int(len(items) * keep))]
        cut[0] = True
    else:
        size = _json_size(bounded)
    if size > MAX_DOCUMENT_BYTES:
        # Nothing left to shorten: what remains says only that it was cut.
        bounded = {key: bounded[key] for key in ("schema",) if key in bounded}
        cut[0] = True
    if not cut[0]:
        return document
    bounded["truncated"] = True
    return bounded


def _json_size(document):
    """Bytes of `document` as the writer encodes it (`metadata.encode_json`)."""
    return len(metadata.encode_json(document))


def _lists(value):
    """Every list inside a document, depth first."""
    stack, found = [value], []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            found.append(value)
            stack.extend(value)
    return found


class _SigtermChain:
    """On SIGTERM, every recorder in a session writes what it has and
    marks its run `"interrupted"`; then the signal goes on as if we were
    not there: to the handler installed before ours, or, for the default
    disposition, the process ends by the signal as it would have.

    Installed (from the main thread only) while some recorder is in a
    session, and put back when the last one ends, unless someone installed
    another handler since. A handler set from C code, or SIGTERM ignored,
    is left alone: nothing would run ours, or the process is not ending.
    """

    def __init__(self):
        self._recorders = weakref.WeakSet()
        self._previous = None
        self._installed = False

    def track(self, recorder):
        self._recorders.add(recorder)
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        try:
            previous = signal.getsignal(signal.SIGTERM)
            if previous is None or previous == signal.SIG_IGN:
                return
            signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError, AttributeError):
            return
        self._previous, self._installed = previous, True

    def untrack(self, recorder):
        self._recorders.discard(recorder)
        if len(self._recorders) or not self._installed:
            return
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._previous)
        except (ValueError, OSError):
            return
        self._previous, self._installed = None, False

    def _handle(self, signum, frame):
        for recorder in list(self._recorders):
            try:
                recorder._interrupted()  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                pass
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            # End as the default disposition would: by the signal itself.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


_SIGTERM = _SigtermChain()
