"""Completions within their bounds, and the parts of the steps between
them: NumPy over a group of steps.

`asynchronous.AsyncSteps` knows of each step's completion only bounds (the
last read that found it pending, the first that found it complete); these
functions settle where in them the completions lie, for a whole group of
steps at once, and split each step's time between them (`parts`, the
arithmetic in `asynchronous`'s docstring; `AsyncSteps._write`).
"""

import numpy as np


# Completion bounds this close are a measurement; wider ones are placed by
# the step's duration where it was measured that closely (`Placer`).
_TIGHT_S = 0.2e-3
# Closely measured steps needed in a group to update that duration.
_MIN_TIGHT = 3


class Placer:
    """Places completions within their bounds by the device's duration of
    a step, as measured closely so far (`place`); one per `AsyncSteps`,
    carried from group to group."""

    def __init__(self):
        # The device's duration of one step where its completion was
        # measured closely (seconds).
        self._duration = None
        # The shortest duration of a step that Keras's worker reported while
        # the training thread waited for it at a boundary (seconds): the
        # fallback where no completion was measured closely.
        self._prompt = None

    def place(self, dispatch, lower, upper, first, inherited, prompt=False, polled=None):
        """Each completion within its bounds `[lower, upper]`.

        Where the bounds are tight (the training thread polled just before
        and after, or the step was timed by the device) the completion is
        known. Where they are wide, it is because nobody could look in
        between: the training thread was busy with Python that held the
        GIL (a fetch) while the step completed. Such a step ran for as long
        as the same step did where it was measured closely: its completion
        is placed that long after it could begin, within its bounds.

        Where no step was measured closely, the step before a boundary is
        the measure (`prompt`): the training thread then waits for Keras's
        worker in Keras's own code, holding no GIL, so the worker reads the
        completion as it happens. Python that holds the GIL in short bursts
        (decoding, augmenting with NumPy between) can keep the worker from
        it for a whole fetch at any other time: each time the training
        thread releases the GIL it takes it back before a waiting thread
        wakes, and the waiter's 5 ms switch interval starts over. Such a
        reading can only be late, so the shortest one stands. It places only
        the completions that a poll of the training thread found pending
        (`polled`): the training thread was running, maybe holding the GIL,
        while they completed; a report with no such poll stands.
        """
        tight = (upper - lower <= _TIGHT_S) & ~inherited
        done = upper.copy()
        if tight.all():
            return done
        previous = np.concatenate(([first], upper[:-1]))
        durations = upper - np.maximum(dispatch, previous)
        if np.count_nonzero(tight) >= _MIN_TIGHT:
            self._duration = median(durations[tight])
        if prompt and durations[-1] > 0:
            self._prompt = float(durations[-1]) if self._prompt is None else min(self._prompt, float(durations[-1]))
        duration = self._duration
        if duration is None and self._prompt is not None and polled is not None:
            duration = self._prompt
            tight = tight | ~polled
        if duration is None:
            return done  # Nothing measured closely yet: the upper bounds.
        # Each loose completion depends on the one before; two vectorised
        # passes settle a run of them (a pass in Python per step would
        # cost the training thread more than the step's other reads).
        for _ in range(2):
            previous = np.concatenate(([first], done[:-1]))
            placed = np.minimum(np.maximum(np.maximum(dispatch, previous) + duration, lower), upper)
            done = np.maximum.accumulate(np.where(tight, upper, placed))
        # Two steps found complete by one read would share its time: each
        # took at least half the measured duration on the device, so the
        # earlier one completed that much before the later (never before
        # its own lower bound).
        gap = 0.5 * duration * np.arange(len(done))
        done = np.maximum(np.minimum.accumulate((done - gap)[::-1])[::-1] + gap, lower)
        # Where that met a lower bound, several completions would sit on it
        # together: each later one is half the duration after the one
        # before, as far as its upper bound allows (ties left are at an
        # upper bound: `share_reads` spreads them below it).
        return np.minimum(np.maximum.accumulate(done - gap) + gap, upper)


def as_nearest_asked(pending, asked):
    """`pending` (a poll found the step pending), where no poll asked about
    a step, taken from the last step before it that one asked about (or the
    first after, at a group's start); as it is where none was asked."""
    if asked.all() or not asked.any():
        return pending
    index = np.arange(len(asked))
    nearest = np.maximum.accumulate(np.where(asked, index, -1))
    nearest[nearest < 0] = np.flatnonzero(asked)[0]
    return pending[nearest]


def median(values):
    """`np.median` of a 1-D array without NaNs, as a float, at a tenth of
    its cost on a few hundred values (it runs once an epoch per drain)."""
    ordered = values.copy()
    ordered.sort()
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return float((ordered[middle - 1] + ordered[middle]) / 2)


def share_reads(done, lower, first):
    """Completions that one read found together, spread over what they took.

    Where nothing placed them apart (no closely measured duration yet, or
    bounds all tight at one read), steps found complete by the same read
    would share its time and all but the first would last 0 ms: a step
    takes device time. With nothing known of each one's share, each of the
    `n` steps since the completion before them (or since the first one's
    lower bound, where later) is given `1/n` of that time, never before its
    own lower bound.
    """
    if len(done) < 2:
        return done
    before = np.concatenate(([first], done[:-1]))
    repeated = done == before
    repeated[0] = False
    if not repeated.any():
        return done
    # Runs of equal completions: each run's first index and length.
    starts = np.flatnonzero(~repeated)
    run = np.cumsum(~repeated) - 1
    rank = np.arange(len(done)) - starts[run]
    length = np.diff(np.append(starts, len(done)))[run]
    # A lower bound at the completion itself leaves no room: the readings
    # crossed (a clock read after the step was known complete), and the
    # step still took time.
    lower = np.where(lower < done, lower, -np.inf)
    # From the completion before the run, or the run's first step's own
    # lower bound where later (a poll found it pending just before).
    since = np.maximum(np.concatenate(([first], done))[starts], lower[starts])[run]
    spread = since + (rank + 1) / length * (done - since)
    return np.maximum.accumulate(np.minimum(np.maximum(spread, lower), done))


def parts(columns, done, first, held_is_input):
    """`(previous, data_wait_s, compute_s, host_overhead_s, excluded_s)` of
    completed steps (`columns`: an `asynchronous._Columns`) completing at
    `done`, the one before the first at `first`; `held_is_input`: a wait
    for the GIL is the input's (data wait), else host overhead."""
    start, fetched, dispatch = columns.start, columns.fetched, columns.dispatch
    previous = np.concatenate(([first], done[:-1]))
    begun = np.maximum(dispatch, previous)
    compute_s = done - begun
    data_wait_s = np.maximum(0.0, np.minimum(fetched, begun) - np.maximum(start, previous))
    host_overhead_s = np.maximum(0.0, done - previous - compute_s - data_wait_s)
    # The step waited that long for the GIL that other threads held,
    # from its dispatch on. Where the device was still busy with the
    # step before (`previous` after the dispatch), up to that much of
    # the wait overlapped it: only the rest left the device idle.
    held_s = np.minimum(
        np.maximum(0.0, columns.held - np.maximum(0.0, previous - dispatch)), compute_s)
    compute_s = compute_s - held_s
    if held_is_input:
        data_wait_s = data_wait_s + held_s
        # The loop's own wait for the GIL those threads held.
        moved_s = np.minimum(columns.held_between, host_overhead_s)
        host_overhead_s = host_overhead_s - moved_s
        data_wait_s = data_wait_s + moved_s
    else:
        host_overhead_s = host_overhead_s + held_s
    # Our own measurements are left out of the host overhead they ran in,
    # as far as they overlapped it (the device may have been busy).
    excluded_s = np.minimum(columns.excluded, host_overhead_s)
    # A step that was nothing but our measurement (the device finished
    # it meanwhile) keeps that time as host overhead: no step lasts 0 ms.
    excluded_s[compute_s + data_wait_s + host_overhead_s - excluded_s <= 0] = 0.0
    return previous, data_wait_s, compute_s, host_overhead_s - excluded_s, excluded_s
