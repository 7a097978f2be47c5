"""The aggregate: a run's exact statistics, in constant memory.

`RunAggregate` takes every row `accounting.StepAccounting` writes and keeps
what the `devicecost/aggregate` document holds (docs/FORMAT.md): the
steady steps' statistics per component (`stats.RunningStats`), the warm-up
steps, the spikes, samples and batch sizes, the fetches, the pace of
asynchronous steps, retraces and the fit's accounted wall time and its
parts. Internal: only `StepAccounting` holds one.
"""

import collections
import time

import numpy as np

from tb_devicecost.format import metadata
from tb_devicecost.format import vocabulary
from tb_devicecost.recording import stats

# Spikes are judged against the median once this many steps are known.
_SPIKE_MIN_HISTORY = 8
# Step numbers kept for warm-ups and spikes (for marking them on charts).
MAX_MARKED_STEPS = 100

# Per-step rows hold `vocabulary.ROW_COLUMNS`, in that order.
ROW_STEP = vocabulary.COLUMN[vocabulary.STEP]
ROW_WARMUP = vocabulary.COLUMN[vocabulary.WARMUP]
ROW_COMPONENTS = slice(
    vocabulary.COLUMN[vocabulary.DATA_WAIT_MS],
    vocabulary.COLUMN[vocabulary.HOST_OVERHEAD_MS] + 1,
)
ROW_BATCH = vocabulary.COLUMN[vocabulary.BATCH_SIZE]


# Fetches gathered before they are added to the statistics as one array:
# a few kilobytes, and one NumPy call instead of one a step.
_FETCH_GROUP = 4096


def step_block(first, wall_time, data_wait_s, compute_s, host_overhead_s, batch_size):
    """Rows of consecutive steady steps from global step `first` on, as one
    `[steps, len(ROW_COLUMNS)]` array (ms): their `wall_time` (Unix
    seconds), their parts (seconds) and batch sizes, one element each."""
    count = len(wall_time)
    block = np.empty((count, len(vocabulary.ROW_COLUMNS)), dtype=np.float64)
    block[:, vocabulary.COLUMN[vocabulary.STEP]] = np.arange(first, first + count)
    block[:, vocabulary.COLUMN[vocabulary.WALL_TIME]] = wall_time
    # A column at a time, straight into the block: `np.stack` is layers of
    # Python, paid at every epoch's end.
    for column, seconds in enumerate((data_wait_s, compute_s, host_overhead_s),
                                     start=ROW_COMPONENTS.start):
        np.multiply(seconds, 1e3, out=block[:, column])
    block[:, ROW_BATCH] = batch_size
    block[:, ROW_WARMUP] = 0.0
    return block


class SelfTime:
    """Seconds our own code ran inside the run's steps (the callback's cost
    to each step, docs/FORMAT.md's `self_ms`): on the training thread, in
    the timed step function and our part of the loop's clock reads; and on
    Keras's worker thread, in our part of its batch-end call. A running sum
    each, read when the aggregate is written, with no lock: Keras's worker
    pool may run two batch-end calls at once, and an addition lost between
    them reads the worker's figure low, never high. `measured`: whether
    anything adds to it (the callback's timed step functions; a custom
    loop's `StepRecorder` does not measure it).

    `between_steps_s`: our hooks' time between the steps of a fit (each
    epoch's end, validation's start and end): what short epochs pay once an
    epoch, outside any step."""

    __slots__ = ("training_thread_s", "worker_s", "between_steps_s", "measured")

    def __init__(self):
        self.training_thread_s = 0.0
        self.worker_s = 0.0
        self.between_steps_s = 0.0
        self.measured = False

    def document(self):
        """`{"training_thread", "worker"}` in ms, with `"between_steps"` on
        a fit's train run (where its hooks added some), or `None` where not
        measured."""
        if not self.measured:
            return None
        document = {"training_thread": self.training_thread_s * 1e3, "worker": self.worker_s * 1e3}
        if self.between_steps_s:
            document["between_steps"] = self.between_steps_s * 1e3
        return document


class RunAggregate:
    """The cumulative statistics of one run's rows.

    Args:
        clock: Function returning seconds from the accounting's monotonic
            clock, read for the wall time of a span still open.
    """

    def __init__(self, clock):
        self._clock = clock
        self.steady = {
            name: stats.RunningStats() for name in vocabulary.COMPONENTS + ("step",)
        }
        self.warmup = stats.RunningStats()
        # How long each steady step's fetch took, whether or not the device
        # was busy meanwhile (the data wait is only the part it was not):
        # a process's own input work, compared across the processes of a job.
        self.fetch = stats.RunningStats()
        # Synchronous steps' fetches (ms): the accounting appends one float
        # a step to this list (the same list for the run's life), added to
        # `fetch` as one array with the rows (`add_rows`) or the document.
        self.fetch_ms = []
        self._warmup_steps = collections.deque(maxlen=MAX_MARKED_STEPS)
        self._spike_steps = collections.deque(maxlen=MAX_MARKED_STEPS)
        self._num_spikes = 0
        self._steady_samples = 0
        self._batch_sizes = set()
        self.fetch_floor_ms = None
        # The wall time accounted for (fits, or evaluate calls), and the part
        # of it spent on our own measurements, kept out of the steps.
        self._span_started = None
        self._span_total = 0.0
        self.measurement_total = 0.0
        self._retraces = None
        # Steps timed under asynchronous dispatch whose pace the device set
        # (it was still busy with the step before when they were
        # dispatched), and those whose pace the training thread set.
        self._pace = [0, 0]
        self.self_time = SelfTime()

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
            "steps": [int(step) for step in list(steps)[-MAX_MARKED_STEPS:]],
            "source": source,
        }
        if seconds is not None:
            self._retraces["seconds"] = float(seconds)

    def count_pace(self, device_paced):
        """Counts which side set the pace of steps just added (a bool
        array, or one bool), under asynchronous dispatch."""
        device = int(np.count_nonzero(device_paced))
        self._pace[0] += device
        self._pace[1] += int(np.size(device_paced)) - device

    def add_fetches(self, fetch_ms):
        """Adds several steps' fetches (ms, a 1-D array) to `fetch_ms`:
        gathered, not binned, at each drain of a group of steps."""
        self.fetch_ms.extend(fetch_ms.tolist())
        if len(self.fetch_ms) >= _FETCH_GROUP:
            self._merge_fetches()

    def _merge_fetches(self):
        if self.fetch_ms:
            self.fetch.add(np.array(self.fetch_ms, dtype=np.float64))
            self.fetch_ms.clear()

    def _fetch_summary(self):
        self._merge_fetches()
        return self.fetch.summary() if self.fetch.count else None

    def add_rows(self, rows):
        """Adds written rows (a `[rows, len(ROW_COLUMNS)]` array, in step
        order): warm-up steps to the warm-up, the others to the steady
        statistics."""
        self._merge_fetches()
        warmup = rows[:, ROW_WARMUP] > 0
        steady = rows[~warmup]
        for row in rows[warmup]:
            self.warmup.add(row[ROW_COMPONENTS].sum(keepdims=True))
            self._warmup_steps.append(int(row[0]))
        if len(steady):
            self._add_steady(steady)

    def _add_steady(self, rows):
        data_wait_ms, compute_ms, host_overhead_ms = rows[:, ROW_COMPONENTS].T
        compute_stats = self.steady["compute"]
        if compute_stats.count >= _SPIKE_MIN_HISTORY:
            median_ms = compute_stats.percentile(50)
        else:
            median_ms = float(np.median(compute_ms))
        spikes = rows[compute_ms > vocabulary.SPIKE_RATIO * max(median_ms, 1e-6), 0]
        self._num_spikes += len(spikes)
        self._spike_steps.extend(int(step) for step in spikes)
        self.steady["data_wait"].add(data_wait_ms)
        self.steady["compute"].add(compute_ms)
        self.steady["host_overhead"].add(host_overhead_ms)
        self.steady["step"].add(data_wait_ms + compute_ms + host_overhead_ms)
        batch = rows[:, ROW_BATCH]
        known = np.isfinite(batch)
        self._steady_samples += int(batch[known].sum())
        # A set of the sizes, not `np.unique`: a sort and layers of Python.
        self._batch_sizes.update(int(size) for size in set(batch[known].tolist()))

    def document(self, status, steps, sessions):
        """The cumulative aggregate document (JSON-ready).

        Args:
            status: `"running"`, `"complete"` or `"interrupted"`.
            steps: The run's steps so far (its next global step).
            sessions: The run's sessions so far.
        """
        steady_wall_ms = self.steady["step"].total
        batch_sizes = sorted(self._batch_sizes)
        return {
            "schema": metadata.SCHEMA_VERSION,
            "status": status,
            "steps": steps,
            "steady_steps": self.steady["step"].count,
            "sessions": sessions,
            "components": {
                name: running.summary() for name, running in self.steady.items()
            },
            "warmup": {
                "count": self.warmup.count,
                "sum_ms": self.warmup.total,
                "max_ms": self.warmup.maximum if self.warmup.count else None,
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
            "fetch_floor_ms": self.fetch_floor_ms,
            "wall_ms": self._wall_ms(),
            "retraces": self._retraces,
            "fetch": self._fetch_summary(),
            "pace": (
                {"device_steps": self._pace[0], "host_steps": self._pace[1]}
                if any(self._pace)
                else None
            ),
            "self_ms": self.self_time.document(),
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
        steps_ms = self.steady["step"].total
        warmup_ms = self.warmup.total
        measurement_ms = self.measurement_total * 1e3
        return {
            "total": total_ms,
            "steps": steps_ms,
            "warmup": warmup_ms,
            "measurement": measurement_ms,
            "between_steps": max(
                0.0, total_ms - steps_ms - warmup_ms - measurement_ms
            ),
        }
