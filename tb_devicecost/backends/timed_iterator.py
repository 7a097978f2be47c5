"""Timing the fetches inside Keras's JAX step function.

Keras's JAX `train_function(state, iterator)` fetches its own batches, so
a fetch's start and end can only be read through the iterator it is given:
`TimedIterator`, which also polls `AsyncSteps` for completed steps at
those reads (`backends/asynchronous.py`).
"""


# A fetch longer than this: the next call polls, whatever its number.
SLOW_FETCH_S = 1e-3


class TimedIterator:
    """Hands Keras's JAX step the batches of `iterator`, timing each fetch.

    Keras's JAX `train_function(state, iterator)` calls `next()` itself;
    this proxy lets it, so the step is dispatched exactly as without it.
    Each clock read is also a moment to poll for completed steps.

    One proxy serves every call of the step function, so a step allocates
    nothing here: `reset` starts each call on its iterator, and clears the
    call's readings after it.

    Polls happen during the fetches of one call in `steps.poll_every` (in
    one in fewer at the fit's start: `AsyncSteps.next_poll_in`), and of
    every call after a fetch longer than `SLOW_FETCH_S` (`slow`).
    `until_poll` counts the calls down to the next that polls in turn. The
    JAX step's usual call goes without this proxy, fetching itself: it
    counts its own calls, polls through `poll_at` where it is its turn, and
    sets `slow` after a slow fetch (`backends/jax.py`). In a
    running fit a poll costs the training thread several microseconds
    (docs/PERFORMANCE.md); steps not polled keep the worker's report and
    are placed as the polled ones nearest them (`AsyncSteps._place`). A
    slow fetch is Python input that may hold the GIL for all of it, keeping
    Keras's worker from reporting the step before: there only a poll
    bounds it, and costs the step a fraction of a percent.

    Args:
        clock: Function returning seconds from a monotonic clock.
        steps: The `AsyncSteps` polled at each fetch.
    """

    # Read and set several times a step: slots are faster than a dict.
    __slots__ = ("_clock", "_poll", "_next_poll_in", "_polling", "until_poll", "slow",
                 "iterator", "error", "meter", "metered", "start", "fetched", "count", "first",
                 "polled_s")

    def __init__(self, clock, steps):
        self._clock = clock
        # `steps.poll` (`None` once a poll failed).
        self._poll = steps.poll
        self._next_poll_in = steps.next_poll_in
        self._polling = True
        # Calls to the next that polls in turn (that one counts it down to
        # 0), and whether the last fetch was slow (the next call polls too).
        self.until_poll = steps.next_poll_in()
        self.slow = False
        # An error of ours met inside Keras's call, raised after it.
        self.error = None
        # Where set (`gil_wait.GilWait`), metered from each fetch's end: the
        # dispatch's wait for a GIL that the input's threads hold.
        self.meter = None
        self.metered = None
        # Seconds of our own in the fetches (the polls), summed until the
        # step function takes them (`aggregate.SelfTime`).
        self.polled_s = 0.0
        self.reset(None)

    def _failed(self, error):
        # Inside Keras's step function an error of ours would end the step:
        # polling stops instead (the completions then come from Keras's
        # worker), and the error waits in `error` for after the call.
        self._poll = None
        self.error = error

    def reset(self, iterator):
        """Clears the readings of a call and sets the next call's
        `iterator` (`None` between calls: no batch is held). A call's
        readings are only read where it fetched (`count`), so the JAX step
        sets `iterator` and `count` itself, once a step, without the call."""
        self.iterator = iterator
        self.metered = None
        self.start = None
        self.fetched = None
        self.count = 0
        self.first = None

    def poll_at(self, now):
        """Polls at `now`, a clock read around a fetch (this proxy's, or the
        JAX step's own where it fetches itself); returns the poll's
        seconds, 0 once polling stopped. A failure of ours stops polling
        and waits in `error`."""
        poll = self._poll
        if poll is None:
            return 0.0
        try:
            poll(now)
        except Exception as error:  # pylint: disable=broad-except
            self._failed(error)
        return self._clock() - now

    def __iter__(self):
        return self

    def __next__(self):
        started = self._clock()
        if self.count == 0:
            # A call's first fetch: whether this call polls.
            self.until_poll -= 1
            self._polling = self.slow or self.until_poll <= 0
            if self.until_poll <= 0:
                self.until_poll = self._next_poll_in()
        if self._polling:
            # A poll's time is ours, and is in the fetch's span: two clock
            # reads, only at a fetch that polls.
            self.polled_s += self.poll_at(started)
        batch = next(self.iterator)
        self.fetched = fetched = self._clock()
        self.slow = fetched - started > SLOW_FETCH_S
        if self.meter is not None:
            self.metered = self.meter.start(fetched)
        if self._polling:
            self.polled_s += self.poll_at(fetched)
        if self.count == 0:
            # The call's first fetch (one that raised is no step's).
            self.start, self.first = started, batch
        self.count += 1
        return batch
