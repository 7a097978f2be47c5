"""Step timing under asynchronous dispatch (the JAX and PyTorch backends).

On JAX, and on PyTorch with CUDA, a step function returns as soon as its
work is queued; the device finishes it later. Two clocks meet here:

- **the training thread's**, exact and needing no device: when each step's
  fetch began (`start`) and ended (`fetched`), and when its dispatch began
  (`dispatch`: after the fetch on JAX, after the batch-begin hooks on
  PyTorch);
- **the device's completion** of each step (`done`), read without waiting
  for the device and without needing Python's GIL where the backend
  allows it: a CUDA event recorded after the step (its GPU timestamp,
  `backends/torch.py`); on JAX, the training thread asking the step's
  outputs `is_ready()` at its own clock reads (a completion lies between
  the last read that found it pending and the first that found it ready);
  the step's end on the training thread itself where the step is
  synchronous (PyTorch on the CPU, or a callback that is not async-safe).
  Keras's worker thread, which converts the logs, gives one more upper
  bound; it may be late by as long as another thread holds the GIL, so it
  is never the only one where a better exists.

With `previous` the completion of the step before (or `start` after a
boundary), a step covers `[previous, done]`; the device can start it at
`dispatch` at the earliest:

    compute_s        = done - max(dispatch, previous)
    data_wait_s      = the part of the fetch [start, fetched] after previous
    host_overhead_s  = the rest: the device idle while Python ran the loop

(durations in seconds, hence `_s`: the rows are written in ms).

When the device was still busy with the step before as the next was
dispatched (`previous >= dispatch`), the device set the pace: the step is
all compute, and the fetch and the loop overlapped it. Otherwise the
training thread set the pace, and its fetch and loop are the device's idle
time. The parts add up to the time between completions, so the steps' sum
is the fit's steady wall time.
"""

import array
import collections
import itertools
import math
import struct
import time

import numpy as np

from tb_devicecost.backends import completion_bounds

# The columns of a dispatched step's row in `AsyncSteps._rows`, one float64
# buffer of every pending step (seconds, NaN where not known yet; a poll
# writes the bounds in place). `_TIMED`: 1.0 where the device timed it.
_KEY, _START, _FETCHED, _DISPATCH, _STEPS, _BATCH, _EXCLUDED = range(7)
_EXACT, _LOWER, _UPPER, _HELD, _HELD_BETWEEN, _TIMED = range(7, 13)
_WIDTH = 13
_ROW = struct.Struct(f"{_WIDTH}d")
_NAN = math.nan
# The usual JAX step's row in `AsyncSteps.lean`, a flat list: only what
# varies from step to step (one step an execution, dispatched as its fetch
# ended, its call's return its first lower bound, nothing held).
LEAN_FIELDS = ("key", "start", "fetched", "batch", "excluded", "returned")
_LEAN_WIDTH = len(LEAN_FIELDS)


class _Columns(collections.namedtuple(
        "_Columns", "start fetched dispatch batch excluded held held_between lower upper polled")):
    """Completed steps' fields and completion bounds, one array each
    (seconds; `polled`: a poll of the training thread found the step
    pending)."""

    __slots__ = ()

    def take(self, index):
        return _Columns(*(column[index] for column in self))



def _complete(probe, done, key, now):
    """Whether the pending step `key` is complete at `now`: Keras's worker
    read it so earlier, Keras let go of its output (it converted it), or
    its output is ready."""
    if done.get(key, now) < now:
        return True
    output = probe()
    return output is None or output.is_ready()


class AsyncSteps:
    """Turns the two clocks' readings into rows, in step order.

    The per-step work on the training thread is one row of floats added
    to a buffer (no object the garbage collector tracks, which would make
    it collect every few hundred steps); the worker's is a clock read
    stored in a dict (atomic under the GIL). The arithmetic runs on the
    training thread, on groups of up to 4,096 completed steps at once (or
    an epoch's), with NumPy over the buffer, so its cost per call is paid
    once a group, and the group's time is kept out of the rows.

    Args:
        accounting: The `StepAccounting` the rows go to.
        clock: Function returning seconds from a monotonic clock. Defaults
            to `time.perf_counter`.
    """

    # Dispatched steps gathered before the completed ones become rows: a
    # group's arithmetic has a fixed cost (about 0.4 ms here) that a larger
    # group spreads thinner; 4,096 steps' rows are 426 kB.
    _GROUP = 4096

    def __init__(self, accounting, clock=time.perf_counter):
        self.accounting = accounting
        self.clock = clock
        # The dispatched steps not written yet, a row of `_WIDTH` floats
        # each, oldest first; `_first` is the number of the first (steps
        # are numbered from 0 as dispatched, boundaries included), `_count`
        # that of the next row. The usual JAX step adds its row to `lean`
        # instead (`lean_lane`), a flat list of `LEAN_FIELDS` each: appends
        # of the numbers it read, with no packing and no frame of ours a
        # step; they follow the rows, and become rows (`_settle_lean`) before
        # any other row is added and at the drain.
        self._rows = array.array("d")
        self._first = 0
        self._count = 0
        self.lean = []
        # A weak reference to one output of each step not written yet, in
        # the rows' order (`None` where the step had none; the list ends at
        # the last step that had one), and the number of the oldest step
        # that no poll has found complete yet (`poll`).
        self._probes = []
        self._asked = 0
        # Whether every dispatched step has an entry in `_probes` (JAX's:
        # the lean lane appends each one without checking, `lean_lane`).
        self.probed = False
        # What the polls found, `(now, since, through, pending)` each, set
        # into the rows at the drain (`_settle_polls`): steps `since` to
        # `through - 1` were complete at `now`, step `pending` (or -1) was not.
        self._polls = []
        # `(number, timer)` of the steps the device times, oldest first.
        self._timers = collections.deque()
        # Completions reported by Keras's worker (`completed`), by key, and
        # those the training thread read itself, waiting for the step. Public:
        # the worker's usual report writes `done` itself, without the frame
        # of `completed` (`StepRecording.loop_results`).
        self.done = {}
        self.exact_done = {}
        self._previous = None
        # Where each completion lies within its bounds, from the durations
        # measured closely so far (carried from group to group).
        self._placer = completion_bounds.Placer()
        # The global step of the next dispatched step but for the lean
        # rows (`upcoming_step`; rows are written only once they complete).
        self._upcoming = accounting.upcoming_step()
        # Where a step's wait for the GIL goes: the input pipeline's own
        # Python threads held it (`True`: data wait), or the user's other
        # threads did (host overhead). Set from what fed the fit.
        self.held_is_input = False
        # Boundaries so far: a reading across one is not a step's.
        self.boundaries = 0
        # The training thread polls in one step's fetch in this many
        # (`timed_iterator.TimedIterator`); a step no poll asked about
        # counts as found pending where the nearest one asked about was.
        # The fit's first `first_polls` turns come one in `first_poll_every`
        # (`next_poll_in`).
        self.poll_every = 1
        self.first_poll_every, self.first_polls = 1, 0
        # Seconds a drain between steps took (our own measurement): kept out
        # of the next step's host overhead, as the callback's probes are.
        self._drained_s = 0.0

    def dispatched(
        self,
        key,
        start,
        fetched,
        dispatch=None,
        steps=1,
        batch_size=None,
        excluded=0.0,
        probe=None,
        timer=None,
        done=None,
        returned=None,
        held=0.0,
        held_between=0.0,
    ):
        """Training thread: a step (or an execution of `steps`) was dispatched.

        Args:
            key: What `completed` names it by (Keras's batch index).
            start, fetched: When its fetch began and ended.
            dispatch: When its dispatch began (defaults to `fetched`).
            probe: A weak reference to one of the step's outputs, whose
                `is_ready()` says without waiting whether the step is complete
                (a JAX array), polled by `poll`. Weak: the outputs are freed
                where and when Keras lets go of them, as without the callback
                (freeing an array holds the thread several microseconds).
            timer: A function returning when the step completed, or `None`
                while it has not (a CUDA event's timestamp).
            done: When the step completed, where that is known at dispatch
                (a synchronous step).
            returned: When the dispatching call returned, where the step
                cannot complete before (JAX enqueues the execution at the
                call's end, after compiling it): its first lower bound, so
                a step that compiled keeps its compilation.
            held: Seconds a synchronous step waited for the GIL while other
                Python threads held it (`gil_wait.GilWait`): not compute.
            held_between: Seconds the loop waited for the GIL between the
                step before and this one's dispatch, its fetch left out
                (metered where the input's own threads hold it).
        """
        if self.lean:
            self._settle_lean()
        self._upcoming += steps
        if self._drained_s:
            excluded, self._drained_s = excluded + self._drained_s, 0.0
        number = self._count
        self._count = number + 1
        # Packed, then added as bytes: a third of the time of extending the
        # buffer by a tuple, which converts item by item.
        self._rows.frombytes(_ROW.pack(
            key, start, fetched, fetched if dispatch is None else dispatch, steps,
            _NAN if batch_size is None else batch_size, excluded,
            _NAN if done is None else done, _NAN if returned is None else returned, _NAN,
            held, held_between, 0.0 if timer is None else 1.0,
        ))
        if probe is not None or self.probed:
            probes = self._probes
            missing = number - self._first - len(probes)
            if missing:  # Steps before had none.
                probes.extend([None] * missing)
            probes.append(probe)
        if timer is not None:
            self._timers.append((number, timer))
        if start >= self.accounting.write_due_s or number - self._first >= self._GROUP:
            self._drain_due(start)

    @property
    def upcoming_step(self):
        """The global step the next dispatched step will have."""
        return self._upcoming + len(self.lean) // _LEAN_WIDTH

    def lean_lane(self):
        """What the usual JAX step adds a row with, its hot path: `add` a
        row's `LEAN_FIELDS` to `lean` (`list.extend`), then the step's probe
        (`list.append`, where `probed`). Those two calls are its recording
        of a step; every few steps it asks `lean_due`."""
        return self.lean.extend, self._probes.append

    def next_poll_in(self):
        """Calls from a poll's turn to the next one's (both lanes ask at
        each turn): one in `first_poll_every` for the fit's first
        `first_polls` turns, so that a short fit still has steps measured
        closely (`completion_bounds.Placer`), then one in `poll_every`."""
        if self.first_polls > 0:
            self.first_polls -= 1
            return min(self.first_poll_every, self.poll_every)
        return self.poll_every

    def lean_due(self, start):
        """Training thread, after some of the lean lane's steps: drains
        where a write is due (every few seconds) or a group is full.
        Returns the seconds it took, to be kept out of the next step (the
        lane adds them to its excluded time)."""
        dispatched = self._count + len(self.lean) // _LEAN_WIDTH
        if start < self.accounting.write_due_s and dispatched - self._first < self._GROUP:
            return 0.0
        self._drain_due(start)
        drained, self._drained_s = self._drained_s, 0.0
        return drained

    def _settle_lean(self):
        """The lean rows as rows (`_ROW`'s columns), after the others."""
        narrow = np.array(self.lean, dtype=np.float64).reshape(-1, _LEAN_WIDTH)
        count = len(narrow)
        wide = np.zeros((count, _WIDTH))
        wide[:, [_EXACT, _UPPER]] = _NAN
        wide[:, _STEPS] = 1.0
        key, start, fetched, batch, excluded, returned = narrow.T
        wide[:, _KEY], wide[:, _START], wide[:, _BATCH], wide[:, _EXCLUDED] = (
            key, start, batch, excluded)
        wide[:, _FETCHED] = wide[:, _DISPATCH] = fetched
        wide[:, _LOWER] = returned
        self._rows.frombytes(wide.tobytes())
        self.lean.clear()
        self._count += count
        self._upcoming += count

    def dispatched_call(self, key, start, fetched, dispatch, batch_size, excluded, timer, done,
                        held, held_between):
        """`dispatched` for the usual PyTorch step, the hot path: one step,
        completed at `done` (on the CPU) or timed by the device (`timer`),
        with no probe. The same row for less binding and branching."""
        self._upcoming += 1
        if self._drained_s:
            excluded, self._drained_s = excluded + self._drained_s, 0.0
        number = self._count
        self._count = number + 1
        self._rows.frombytes(_ROW.pack(
            key, start, fetched, dispatch, 1.0, batch_size, excluded,
            _NAN if done is None else done, _NAN, _NAN, held, held_between,
            0.0 if timer is None else 1.0,
        ))
        if timer is not None:
            self._timers.append((number, timer))
        if start >= self.accounting.write_due_s or number - self._first >= self._GROUP:
            self._drain_due(start)

    def _drain_due(self, start):
        """The drain `dispatched` calls every few seconds, or once a group
        is full (only the training thread drains: the worker never waits
        for it)."""
        # A write is due every few seconds, so that a fit killed mid-epoch
        # leaves its steps and an aggregate (`accounting.py`).
        due = start >= self.accounting.write_due_s
        began = self.clock()
        self._drain(final=False)
        if due and start >= self.accounting.write_due_s:
            self.accounting.flush()  # No step completed yet: still where it is.
        self._drained_s = self.clock() - began
        # Kept out of the steps, so not our time inside them either
        # (`aggregate.SelfTime`): the drain runs in a timed step function.
        self.accounting.self_time.training_thread_s -= self._drained_s

    @property
    def unready(self):
        """The dispatched steps with a probe that no poll has found
        complete yet."""
        return len(self._probes) + self._first - self._asked

    def poll(self, now):
        """Training thread, at one of its clock reads: asks the pending
        steps whether they are complete (no waiting).

        The device completes steps in order, so the newest step's answer
        settles every one when it is complete (one question a poll, not
        one a step); otherwise the oldest pending step is found by halving
        the pending ones (three more questions for eight). A step that
        Keras's worker read complete before `now` is not asked: asking
        would add nothing (and ask the runtime); one whose output Keras let
        go of was converted, so complete.
        """
        probes, first = self._probes, self._first
        since, count = self._asked, len(probes)
        index = since - first
        if index >= count:
            return
        done, key = self.done, self._key
        last = count - 1
        newest = probes[last]
        if newest is not None:
            if _complete(newest, done, key(last), now):
                self._asked = first + count
                self._polls.append((now, since, first + count, -1))
                return
        # The oldest pending step, by halving `[index, last]`: the steps
        # before it are complete. Steps with no probe are passed over at the
        # start; one further on counts as pending, and is given no bound.
        while index < last and probes[index] is None:
            index += 1
        low, high = index, last
        while low < high:
            middle = (low + high) // 2
            probe = probes[middle]
            if probe is not None and _complete(probe, done, key(middle), now):
                low = middle + 1
            else:
                high = middle
        pending = first + high if probes[high] is not None else -1
        self._asked = first + high
        # Where a step was found complete, so is every one before it.
        self._polls.append((now, since if high > index else first + high, first + high, pending))

    def _key(self, index):
        """The key of pending step `index` (0: the oldest not written)."""
        wide = self._count - self._first
        if index < wide:
            return int(self._rows[index * _WIDTH + _KEY])
        return int(self.lean[(index - wide) * _LEAN_WIDTH])

    def _settle_polls(self, table, reported):
        """Sets what the polls found into the bounds of the pending steps'
        `table` (a copy of their rows): the poll that found a step complete
        is its upper bound, the last that found it pending its lower one.
        A step Keras's worker had read complete before the poll was not
        asked about (`_complete`), so gets no bound from it."""
        # NumPy over every poll at once (about 75 a 600-step epoch): each
        # found the steps `[since, through)` complete, ranges that do not
        # overlap (a poll asks from where the one before stopped), and one
        # step pending, found so again by later polls at later times.
        polls = np.array(self._polls, dtype=np.float64).reshape(-1, 4)
        now = polls[:, 0]
        since, through, pending = (polls[:, 1:] - self._first).astype(np.int64).T
        lengths = np.maximum(through - since, 0)
        total = int(lengths.sum())
        if total:
            ends = np.cumsum(lengths)
            index = np.repeat(since - ends + lengths, lengths) + np.arange(total)
            found = np.repeat(now, lengths)
            asked = ~(reported[index] < found)
            table[index[asked], _UPPER] = found[asked]
        held = polls[:, 3] >= 0
        if held.any():
            # The last poll that found a step pending, the latest (`fmax`: a
            # step dispatched with no lower bound has NaN there).
            np.fmax.at(table[:, _LOWER], pending[held], now[held])

    def completed(self, key, now, exact=False):
        """The step's logs are Python numbers (Keras's worker thread, or the
        training thread when `exact`: it waited for the step itself).
        Only a clock read: a worker holds the GIL as briefly as it can."""
        if exact:
            self.exact_done[key] = now
        else:
            self.done[key] = now

    def boundary(self):
        """Training thread, once Keras has waited for its worker: writes
        every completed step and starts the next one afresh (an epoch or
        the fit ends, validation starts)."""
        self._drain(final=True)
        self.boundaries += 1
        self._first = self._count  # The drain settled the lean rows.
        del self._rows[:]
        self._probes.clear()
        self._asked = self._first
        self._polls.clear()
        self._timers.clear()
        self.done.clear()
        self.exact_done.clear()
        self._previous = None
        self._drained_s = 0.0

    def _drain(self, final):
        """Rows for the completed steps at the head of the buffer (`final`:
        every step; one that never completed, because it raised, has no
        row). The lean rows become rows first.

        A step is complete where a poll found it so, the device timed it,
        or a report came; the device's timers are asked in order, the
        reports read once per step, and the rest is NumPy over the buffer.
        """
        if self.lean:
            self._settle_lean()
        pending = self._count - self._first
        if not pending:
            return
        table = np.frombuffer(self._rows, dtype=np.float64).reshape(pending, _WIDTH).copy()
        done, exact_done = self.done, self.exact_done
        keys = table[:, _KEY].astype(np.int64).tolist()
        reported = np.fromiter(map(done.get, keys, itertools.repeat(_NAN)), np.float64, len(keys))
        if self._polls:
            self._settle_polls(table, reported)
        # The device's timestamps, once there, are the completions: they
        # come in order, so the first not there yet ends the asking.
        for number, timer in self._timers:
            row = table[number - self._first]
            if math.isnan(row[_EXACT]) and math.isnan(row[_UPPER]):
                value = timer()
                if value is None:
                    if final:
                        continue
                    break
                row[_EXACT] = value
        exact = table[:, _EXACT]
        if exact_done:
            exact = np.where(
                np.isnan(exact),
                np.fromiter(map(exact_done.get, keys, itertools.repeat(_NAN)), np.float64,
                            len(keys)),
                exact,
            )
        if final:
            count = pending
        else:
            complete = ~(np.isnan(exact) & np.isnan(table[:, _UPPER]) & np.isnan(reported))
            count = pending if complete.all() else int(np.argmin(complete))
        if not count:
            return
        self._first += count
        del self._rows[:count * _WIDTH]
        if not final:
            # After a final drain a boundary clears these at once: no pop
            # a step at every epoch's end.
            for key in keys[:count]:
                done.pop(key, None)
            if exact_done:
                for key in keys[:count]:
                    exact_done.pop(key, None)
            # The written steps' probes, polls and timers go; those still
            # pending lead theirs.
            del self._probes[:count]
            self._asked = max(self._asked, self._first)
            # The polls of steps still pending stay for the next drain.
            first = self._first
            self._polls = [
                (now, max(since, first), through, pending if pending >= first else -1)
                for now, since, through, pending in self._polls
                if through > first or pending >= first
            ]
            timers = self._timers
            while timers and timers[0][0] < self._first:
                timers.popleft()
        table, reported, exact = table[:count], reported[:count], exact[:count]
        steps = table[:, _STEPS]
        polled_lower, polled_upper = table[:, _LOWER], table[:, _UPPER]
        dispatch = table[:, _DISPATCH]
        # The bounds of each completion: the training thread's last read
        # that found it pending (or its dispatch) and the first that found
        # it complete, or Keras's worker's report where earlier.
        known = ~np.isnan(exact)
        upper = np.where(known, exact, np.fmin(polled_upper, reported))
        lower = np.where(known, exact, np.fmax(dispatch, polled_lower))
        polled = ~np.isnan(polled_lower)
        if self.poll_every != 1:
            polled = completion_bounds.as_nearest_asked(polled, polled | ~np.isnan(polled_upper))
        columns = _Columns(
            table[:, _START], table[:, _FETCHED], dispatch, table[:, _BATCH],
            table[:, _EXCLUDED], table[:, _HELD], table[:, _HELD_BETWEEN], lower, upper, polled)
        # A step that never completed (it raised) has no row.
        written = ~np.isnan(upper)
        single = written & (steps == 1)
        if single.all():
            self._write(columns, table[-1], steps=1, prompt=final)
            return
        # An execution of several steps is written on its own, in order.
        index = np.flatnonzero(written)
        runs = np.split(index, np.flatnonzero(~single[index]))
        for run in runs:
            if len(run) and not single[run[0]]:
                self._write(columns.take(run[:1]), table[run[0]], steps=int(steps[run[0]]))
                run = run[1:]
            if len(run):
                self._write(columns.take(run), table[run[-1]], steps=1,
                            prompt=final and run[-1] == index[-1])

    def _write(self, columns, last, steps=1, prompt=False):
        """Rows for completed steps (`columns`, in order; `last`: the last
        one's entry). `steps` > 1: one execution of that many steps.
        `prompt`: the last of them is the step before a boundary, whose
        completion Keras's worker reported while the training thread waited
        for it (`completion_bounds.Placer`)."""
        start, fetched, dispatch, batch = columns[:4]
        lower, upper, polled = columns.lower, columns.upper, columns.polled
        first = start[0] if self._previous is None else self._previous
        # The device completes steps in order: a step's completion is no
        # earlier than the one before, and no later than any after it.
        measured = upper
        upper = np.minimum.accumulate(upper[::-1])[::-1]
        lower = np.minimum(np.maximum.accumulate(np.maximum(lower, first)), upper)
        # A bound that came from a later step is not a reading of this one.
        done = self._placer.place(
            dispatch, lower, upper, first, inherited=upper < measured,
            prompt=prompt and self._reported_last(last, measured[-1], batch),
            polled=polled,
        )
        done = completion_bounds.share_reads(done, lower, first)
        previous, data_wait_s, compute_s, host_overhead_s, excluded_s = completion_bounds.parts(
            columns, done, first, self.held_is_input)
        device_paced = previous >= dispatch
        self._previous = float(done[-1])
        fetch_ms = (fetched - start) * 1e3
        # The first step after a fit's start is warm-up: its fetch is not.
        self.accounting.add_fetch_times(
            fetch_ms[1:] if self.accounting.next_is_warmup else fetch_ms
        )
        if steps != 1:
            self.accounting.add_step(
                previous[0], data_wait_s[0], compute_s[0], host_overhead_s[0],
                last[_BATCH], steps, excluded_s[0],
            )
        else:
            self.accounting.add_steps(
                previous, data_wait_s, compute_s, host_overhead_s, batch, excluded_s)
        self.accounting.count_pace(device_paced)

    def _reported_last(self, entry, upper, batch):
        """Whether the last step's completion (its measured upper bound
        `upper`) came from Keras's worker, not from a poll of ours, and it
        had the group's usual batch (a partial last batch is a shorter
        step, or a new compilation)."""
        if not math.isnan(entry[_EXACT]) or entry[_TIMED]:
            return False
        if entry[_UPPER] <= upper:  # False where NaN: no poll found it complete.
            return False
        usual = batch[:-1] if len(batch) > 1 else batch
        return bool(len(usual) and batch[-1] == completion_bounds.median(usual))
