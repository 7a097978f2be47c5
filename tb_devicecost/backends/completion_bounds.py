"""Completions within their bounds: NumPy over a group of steps.

`asynchronous.AsyncSteps` knows of each step's completion only bounds (the
last read that found it pending, the first that found it complete); these
functions settle where in them the completions lie, for a whole group of
steps at once (`AsyncSteps._write`).
"""

import numpy as np


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
