"""Step accounting: where each step's wall time went, in bounded memory.

A step runs from the moment its batch is requested to the moment the next
step's batch is requested (or a boundary such as the end of an epoch):

    |-- data_wait --|-------- compute --------|-- host_overhead --|
    begin_step    end_fetch                end_compute        next begin_step

The three parts add up to the step's wall time. The first step of each
session (a `fit` call) holds tracing and compilation: it is recorded as
warm-up and kept out of the steady-state statistics.
"""

import os
import secrets
import time
import warnings

import numpy as np

from tb_devicecost.format import metadata
from tb_devicecost.format import writer as writer_module
from tb_devicecost.format.document_limits import MAX_DOCUMENT_STRING
from tb_devicecost.format.document_limits import bounded_json
from tb_devicecost.recording.aggregate import ROW_WARMUP
from tb_devicecost.recording.aggregate import RunAggregate
from tb_devicecost.recording.aggregate import step_block
from tb_devicecost.recording.sigterm import SIGTERM_CHAIN
from tb_devicecost.recording.step_rows import RECORD_BATCH
from tb_devicecost.recording.step_rows import RECORD_COMPUTE_START
from tb_devicecost.recording.step_rows import RECORD_COMPUTED
from tb_devicecost.recording.step_rows import RECORD_END
from tb_devicecost.recording.step_rows import RECORD_EXCLUDED
from tb_devicecost.recording.step_rows import RECORD_FETCHED
from tb_devicecost.recording.step_rows import RECORD_START
from tb_devicecost.recording.step_rows import RECORD_STEPS
from tb_devicecost.recording.step_rows import RECORD_WARMUP
from tb_devicecost.recording.step_rows import StepRows

# Seconds between the epoch ends that write the rows and the aggregate
# (`StepAccounting.flush_due`): TensorBoard reloads every 5 s by default.
# Within an epoch a step writes them when this long has passed too, so a
# fit killed mid-epoch (kill -9, the OOM killer) leaves one at most this old.
FLUSH_EVERY_S = 5.0
# Seconds into a session (a fit) of its first aggregate, written by the
# first step that ends after them: a fit that dies in its first epoch is
# then read as unfinished, never as whole (docs/FORMAT.md, "Fits").
FIRST_WRITE_S = 1.0
# Steps buffered before their rows are written, by default: a write costs
# about as much for 4,096 rows as for 256, and `FLUSH_EVERY_S` bounds them.
FLUSH_STEPS = 4096


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
    the training loop is never interrupted. On SIGTERM, each `StepAccounting`
    of a session writes its steps and an `"interrupted"` aggregate, then the
    signal goes on to the handler that was there before (`sigterm.py`).
    The statistics of the `devicecost/aggregate` document are kept by a
    `RunAggregate` (`aggregate.py`), every document bounded by
    `document_limits.py`.

    Args:
        run_dir: Directory of the TensorBoard run to write into.
        flush_steps: Number of steps buffered before they are written
            (at most `FLUSH_EVERY_S` apart). Defaults to `FLUSH_STEPS`.
        clock: Function returning seconds from a monotonic clock.
            Defaults to `time.perf_counter`.
    """

    # Where a timed step function writes its fetch's end and batch size in
    # the open step's `record` (the backends cannot import `step_rows.py`).
    RECORD_FETCHED, RECORD_COMPUTE_START = RECORD_FETCHED, RECORD_COMPUTE_START
    RECORD_BATCH = RECORD_BATCH

    def __init__(self, run_dir, flush_steps=FLUSH_STEPS, clock=None):
        if not isinstance(run_dir, (str, os.PathLike)) or not str(run_dir):
            raise ValueError(
                "`run_dir` must be a non-empty path to a directory. "
                f"Received: run_dir={run_dir!r}"
            )
        if isinstance(flush_steps, bool) or not isinstance(flush_steps, int) or flush_steps < 1:
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
        # The steps not written yet (`step_rows.py`); `_closed`, its list of
        # the records of closed steps, appended to once a step.
        self._pending = StepRows()
        self._closed = self._pending.closed
        # The open step's record (`step_rows.py`'s fields), `None` between
        # steps. Public: a timed step function writes its fetch's fields, and
        # the loop its compute's end, straight into it (a frame less a step).
        self.record = None
        # Called before closed records become rows, where a timed step
        # function sets some of their fields later (TensorFlow's queued
        # fetch figures, `FetchTimedStep.fill`); `None` otherwise.
        self.before_settle = None
        self._excluded = 0.0
        self._next_is_warmup = True
        self._sessions = 0
        self._aggregate = RunAggregate(self._clock)
        # Our own time inside the steps (`aggregate.SelfTime`), added to by
        # the timed step functions and the loop's clock reads.
        self.self_time = self._aggregate.self_time
        self._info = {}
        # When the rows and the aggregate were last written, or the session
        # began (`flush_due`).
        self._flushed_at = None
        # The identity of this accounting's steps (one global step, one
        # cumulative aggregate) and of its current session: readers tell
        # fits in one run directory apart by them.
        self._recording_id = secrets.token_hex(8)
        self._fit = {}
        # When (on this clock) a step's end writes the rows and the
        # aggregate (`FIRST_WRITE_S` into a session, then `FLUSH_EVERY_S`
        # after each write; never once recording stopped), read per step by
        # `AsyncSteps` too.
        self.write_due_s = float("inf")
        # Whether this session has written an aggregate (`flush_due`).
        self._session_written = False
        # Called with the error instead of warning, when set: the owner of
        # several (the callback: train, validation, evaluation) warns once
        # and stops them all.
        self.on_failure = None

    # The hot path: a few calls a step, one small list and one tuple each.

    @property
    def next_is_warmup(self):
        """Whether the next step added is a warm-up step."""
        return self._next_is_warmup

    @property
    def step_open(self):
        """Whether a step has begun and not yet ended."""
        return self.record is not None

    @property
    def step_computed(self):
        """Whether the open step's compute has ended."""
        return self.record is not None and self.record[RECORD_COMPUTED] is not None

    def upcoming_step(self):
        """The global step that the next `begin_step` starts."""
        return self._global_step + (1 if self.record is not None else 0)

    def begin_step(self, now=None):
        """Marks the start of a step: its batch is being requested. Returns
        the seconds a due write took in it, kept out of the steps."""
        if not self.enabled:
            return 0.0
        now = self._clock() if now is None else now
        wrote_s = 0.0
        opened = self.record
        if opened is not None:
            # The open step ends where this one begins. Its parts are worked
            # out with the other closed steps' when rows are written
            # (`step_rows.closed_block`): here `_close`'s work, inline (once
            # a step), its end, what it keeps out, whether it is warm-up.
            self.record = None
            opened[RECORD_END] = now
            if self._excluded:
                opened[RECORD_EXCLUDED], self._excluded = self._excluded, 0.0
            if self._next_is_warmup and opened[RECORD_STEPS] >= 1:
                opened[RECORD_WARMUP], self._next_is_warmup = 1.0, False
            closed = self._closed
            closed.append(opened)
            self._global_step += opened[RECORD_STEPS]
            if opened[RECORD_START] >= self.write_due_s or len(closed) >= self.flush_steps:
                wrote_s = self._write_closed(opened)
                now += wrote_s
        self.record = [now, now, now, None, None, 1, None, 0.0, 0.0]
        return wrote_s

    def _close(self, record):
        """Adds a closed step's record (`step_rows.py`)."""
        if self._excluded:
            record[RECORD_EXCLUDED], self._excluded = self._excluded, 0.0
        if self._next_is_warmup and record[RECORD_STEPS] >= 1:
            record[RECORD_WARMUP], self._next_is_warmup = 1.0, False
        self._closed.append(record)
        self._global_step += record[RECORD_STEPS]
        self._write_closed(record)

    def _write_closed(self, record):
        """Writes the rows after a step's `record` closed, where due (a write
        every few seconds, or a full buffer); returns the seconds a write
        due then took, kept out of the steps."""
        if record[RECORD_START] >= self.write_due_s:
            wrote_s = self._write_due()
            self._aggregate.measurement_total += wrote_s
            return wrote_s
        if len(self._closed) + self._pending.block_rows >= self.flush_steps:
            try:
                self._flush_rows()
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)
        return 0.0

    def _settle(self):
        """Rows for the closed steps, after every row added before them."""
        if self.before_settle is not None and self._closed:
            self.before_settle()
        self._pending.settle(self._global_step, self._wall_offset, self._aggregate)

    def end_fetch(self, batch_size=None, now=None):
        """Marks that the batch has arrived; compute starts."""
        if self.record is not None:
            now = self._clock() if now is None else now
            self.record[RECORD_FETCHED] = self.record[RECORD_COMPUTE_START] = now
            if batch_size is not None:
                self.record[RECORD_BATCH] = batch_size

    def begin_compute(self, now=None):
        """Marks the start of compute, when it does not follow the fetch."""
        if self.record is not None:
            self.record[RECORD_COMPUTE_START] = self._clock() if now is None else now

    def end_compute(self, batch_size=None, now=None):
        """Marks that the step's results are on the host."""
        if self.record is not None:
            self.record[RECORD_COMPUTED] = self._clock() if now is None else now
            if batch_size is not None:
                self.record[RECORD_BATCH] = batch_size

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
        if self.record is not None:
            self.record[RECORD_STEPS] = count

    def watch_steps(self, steps):
        """Keeps the components of `steps` (a range) for `watched_steps`."""
        self._pending.watch(steps)

    def watched_steps(self):
        """`[{"step", "data_wait_ms", "compute_ms", "host_overhead_ms"}]` of
        the watched steps recorded so far."""
        self._settle()
        return self._pending.watched()

    def abort_step(self):
        """Forgets the open step (its batch never came: end of data)."""
        self.record = None

    def exclude(self, seconds):
        """Leaves `seconds` spent on our own measurements out of the step."""
        self._excluded += seconds

    def boundary(self, now=None):
        """Closes the open step: an epoch, validation or the fit ends here."""
        if self.record is not None and self.enabled:
            try:
                # Closed as the next step's start would close it; none opens.
                self.begin_step(now)
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)
            self.record = None

    def add_step(self, start_s, data_wait_s, compute_s, host_overhead_s, batch_size=None, steps=1, excluded_s=0.0):
        """Adds a step whose parts are known (seconds), e.g. one timed under
        asynchronous dispatch; `steps` > 1 writes an execution as its steps.

        Args:
            start_s: When the step began, on this accounting's clock.
            excluded_s: Seconds of our own measurements left out of it.
        """
        if not self.enabled:
            return
        if steps < 1:
            # An execution that ran no step (the end of the data).
            return
        fetched_s = start_s + data_wait_s
        computed_s = fetched_s + compute_s
        # As `begin_step` closes a step: the excluded time within its end.
        self._close([start_s, fetched_s, fetched_s, computed_s, batch_size, steps,
                     computed_s + host_overhead_s + excluded_s, excluded_s, 0.0])

    def _write_due(self):
        """Writes the rows and a `"running"` aggregate mid-epoch (the step's
        own start decides it); returns the seconds it took."""
        started = self._clock()
        self.flush()
        return self._clock() - started

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
            SIGTERM_CHAIN.track(self)
            self._info.update(info or {})
            # The fit's identity, in its first document (the run info).
            self._fit = {
                "fit_id": secrets.token_hex(8),
                "fit_start": time.time(),
                "fit_first_step": self._global_step,
                "recording_id": self._recording_id,
            }
            self._write_info()
            self._flushed_at = self._clock()
            self.write_due_s = self._flushed_at + FIRST_WRITE_S
            self._session_written = False
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
        self._aggregate.begin_span(now)

    def end_span(self, now=None):
        """Ends the wall time started by `begin_span`."""
        self._aggregate.end_span(now)

    def set_retraces(self, count, steps=(), source="tf.function tracing count", seconds=None):
        """Records how often the step function was traced (or compiled)
        again after its warm-up, at which steps, and the evidence."""
        self._aggregate.set_retraces(count, steps, source, seconds)

    def set_fetch_floor(self, fetch_floor_ms):
        """Records the cost of handing over a batch that is already ready."""
        self._aggregate.fetch_floor_ms = fetch_floor_ms

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
            encoded = bounded_json(dict(document, schema=metadata.SCHEMA_VERSION))
            self._writer.write_encoded_json(tag, self._last_step(), time.time(), encoded)
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def _write_info(self):
        info = dict(self._info, sessions=self._sessions, **self._fit)
        info["schema"] = metadata.SCHEMA_VERSION
        self._writer.write_encoded_json(
            metadata.TAG_RUN_INFO, self._last_step(), time.time(), bounded_json(info)
        )

    def _last_step(self):
        return max(0, self._global_step - 1)

    def flush_due(self, first=False):
        """Writes what `flush` does at an epoch's end, where due: at least
        `FLUSH_EVERY_S` seconds after the last write or the session's start.
        Short epochs would otherwise pay for an aggregate each (about 1 ms
        a time on a slow host), and a reader does not need more than one
        every few seconds; the fit's end always writes.

        Args:
            first: Also write when this session has written no aggregate
                yet (a validation run, whose passes are short: its steps
                reach the disk at the first epoch's end, not only when the
                fit closes).
        """
        if first and not self._session_written:
            self.flush()
            return
        if self._flushed_at is not None and self._clock() - self._flushed_at < FLUSH_EVERY_S:
            return
        self.flush()

    def flush(self, status="running", closed=False, error=None):
        """Writes buffered steps and the cumulative aggregate to disk.

        Args:
            status: The aggregate's `status`.
            closed: Whether this is the session's closing aggregate: a
                reader takes a fit as whole only when it finds one.
            error: Why recording stopped, where it did (the aggregate's
                `error`).
        """
        if not self.enabled:
            return
        self._flushed_at = self._clock()
        self.write_due_s = self._flushed_at + FLUSH_EVERY_S
        self._session_written = True
        try:
            self._flush_rows()
            document = self.aggregate(status, closed=closed)
            if error:
                document["error"] = str(error)[:MAX_DOCUMENT_STRING]
            self._writer.write_json(
                metadata.TAG_AGGREGATE, self._last_step(), time.time(), document)
            self._writer.flush()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def end_session(self, status="complete", error=None):
        """Closes the open step, writes everything and closes the file.

        Args:
            status: Recorded in the aggregate: `"complete"`, or
                `"interrupted"` when the loop raised.
            error: Why recording stops here, where it does (the owner of
                several runs stops them all when one of them fails).
        """
        SIGTERM_CHAIN.untrack(self)
        if not self.enabled:
            return
        self.boundary()
        self.write_due_s = float("inf")
        # An accounting that never saw a session or a step leaves no file.
        if self._sessions or self._global_step:
            self.flush(status=status, closed=True, error=error)
        self._close_writer()

    def stop(self, status="interrupted", error=None):
        """Ends the session (`end_session(status, error)`) and records
        nothing more."""
        self.end_session(status=status, error=error)
        self._record_nothing()

    def _record_nothing(self):
        self.enabled = False
        self._pending.clear()
        self.record = None

    def _interrupted(self):
        """SIGTERM: the steps so far and an `"interrupted"` aggregate, on disk.

        The open step is left as it is: if the process lives on (a handler
        that does not exit), it is recorded as usual and a later aggregate
        says how the fit ended.
        """
        if self.enabled and (self._sessions or self._global_step):
            self.flush(status="interrupted")

    def _forget_in_child(self):
        """A forked child of the fit writes nothing of the parent's."""
        self.before_settle = None
        self._record_nothing()
        self._writer.forget_in_child()

    def _close_writer(self):
        try:
            self._writer.close()
        except Exception as error:  # pylint: disable=broad-except
            self._fail(error)

    def add_steps(self, start_s, data_wait_s, compute_s, host_overhead_s, batch_size, excluded_s):
        """Adds one step per element of the given arrays (seconds), as
        `add_step` does for one: the path of asynchronous dispatch, where
        completed steps arrive in groups."""
        if not self.enabled or len(start_s) == 0:
            return
        # Closed steps before these come before them.
        self._settle()
        block = step_block(self._global_step, start_s + self._wall_offset, data_wait_s,
                           compute_s, host_overhead_s, batch_size)
        if self._next_is_warmup:
            block[0, ROW_WARMUP] = 1.0
            self._next_is_warmup = False
        self._aggregate.measurement_total += float(np.sum(excluded_s))
        self._global_step += len(block)
        self._pending.add_block(block)
        if start_s[-1] >= self.write_due_s:
            # Groups of completed steps: the write is in a later step's time,
            # as a write of rows is.
            self._write_due()
        elif len(self._pending) >= self.flush_steps:
            try:
                self._flush_rows()
            except Exception as error:  # pylint: disable=broad-except
                self._fail(error)

    def add_fetch_times(self, fetch_ms):
        """Adds the full durations (ms) of steady steps' fetches."""
        self._aggregate.add_fetches(np.asarray(fetch_ms, dtype=np.float64))

    def count_pace(self, device_paced):
        """Counts which side set the pace of steps just added (a bool
        array, or one bool), under asynchronous dispatch."""
        self._aggregate.count_pace(device_paced)

    def _flush_rows(self):
        self._settle()
        rows = self._pending.take()
        if rows is None:
            return
        self._aggregate.add_rows(rows)
        # The warm-up flag is written per step, so readers never guess it.
        self._writer.write_steps(rows)

    def aggregate(self, status="running", closed=False):
        """Returns the cumulative aggregate document (JSON-ready), with the
        identity of the fit that wrote it and whether it closes that fit."""
        document = self._aggregate.document(status, self._global_step, self._sessions)
        document.update(self._fit, closed=closed)
        return document

    def _fail(self, error):
        if not self.enabled:
            return
        self.enabled = False
        self.write_due_s = float("inf")
        self._pending.clear()
        self.record = None
        # What can still be written: a failed write left part of a record
        # (a full disk); cut off, its space holds a last aggregate saying
        # the recording stopped, so the run does not read "running" for
        # ever (docs/FORMAT.md, `status`).
        try:
            self._writer.discard_partial()
            if self._sessions or self._global_step:
                final = self.aggregate("interrupted", closed=True)
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
        SIGTERM_CHAIN.untrack(self)
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
