"""Step accounting under asynchronous dispatch (the JAX and PyTorch backends).

On JAX, and on PyTorch with an accelerator, a step function returns as
soon as its work is queued; the device finishes it later. Keras converts
each step's logs to Python numbers on a worker thread (when every callback
is `async_safe`), which waits for that step's results. The callback reads
the clock there, so measuring adds no synchronisation to the training loop.

Per step, from the main thread: `start` (the fetch begins) and `fetched`
(the batch is there, dispatch follows); from the worker: `done` (the step's
logs are on the host). With `previous` the completion of the step before
(or `start` for the first step after a boundary), the step covers
`[previous, done]` and splits as:

    compute        = done - max(fetched, previous)
    data_wait      = max(0, fetched - max(start, previous))
    host_overhead  = the rest: the device idle while Python ran the loop

A fetch that overlaps the previous step's device work costs nothing: the
device was busy. The parts add up to the time between completions, so the
steps' sum is the fit's steady wall time.
"""

import collections
import time

import numpy as np


class AsyncSteps:
    """Turns per-step timestamps from two threads into rows, in step order.

    The per-step work is a tuple appended on the main thread and a clock
    read stored on Keras's worker thread (both atomic under the GIL). The
    arithmetic runs on the main thread, on groups of about a thousand
    completed steps at once: in a host-bound loop every microsecond the
    worker holds the GIL delays the next dispatch, and numpy's cost per call
    is only paid once per group.

    Args:
        accounting: The `StepAccounting` the rows go to.
        clock: Function returning seconds from a monotonic clock. Defaults
            to `time.perf_counter`.
    """

    # Dispatched steps gathered before the completed ones become rows.
    _GROUP = 1024

    def __init__(self, accounting, clock=time.perf_counter):
        self.accounting = accounting
        self.clock = clock
        # (key, start, fetched, steps, batch_size, excluded), in dispatch order.
        self._pending = collections.deque()
        self._done = {}
        self._previous = None
        # The global step the next dispatched step will have, counted as
        # steps are dispatched (rows are written only once they complete).
        self.upcoming_step = accounting.upcoming_step()

    def dispatched(self, key, start, fetched, steps=1, batch_size=None, excluded=0.0):
        """Main thread: a step (or an execution of `steps`) was dispatched.

        Args:
            key: What the worker's `completed` call names it by (Keras's
                batch index within the epoch).
        """
        self.upcoming_step += steps
        self._pending.append((key, start, fetched, steps, batch_size, excluded))
        if len(self._pending) >= self._GROUP:
            # Only the main thread drains: the worker never waits for it.
            self._drain(final=False)

    def completed(self, key, now=None):
        """Worker thread: the step's results are on the host. Only a clock
        read: the worker holds the GIL as briefly as it can."""
        self._done[key] = self.clock() if now is None else now

    def boundary(self):
        """Main thread, once Keras has waited for its worker: writes every
        completed step and starts the next one afresh (an epoch or the fit
        ends, validation starts)."""
        self._drain(final=True)
        self._pending.clear()
        self._done.clear()
        self._previous = None

    def _drain(self, final):
        """Rows for the completed steps at the head of the queue."""
        pending, done = self._pending, self._done
        ready = []
        while pending and (pending[0][0] in done or final):
            entry = pending.popleft()
            completion = done.pop(entry[0], None)
            if completion is None:
                continue  # Never completed (the step raised): no row.
            if entry[3] != 1:
                # An execution of several steps: written on its own.
                self._write(ready)
                ready = []
                self._write_execution(entry, completion)
                continue
            ready.append(entry[1:3] + entry[4:6] + (completion,))
        self._write(ready)

    def _write(self, ready):
        if not ready:
            return
        start, fetched, batch, excluded, observed = (
            np.array(column, dtype=np.float64) for column in zip(*ready)
        )
        first = start[0] if self._previous is None else self._previous
        # The device completes steps in order: a completion read late is
        # bounded by the ones after it only through `previous` below.
        done = np.maximum.accumulate(np.maximum(observed, first))
        previous = np.concatenate(([first], done[:-1]))
        compute = done - np.maximum(fetched, previous)
        data_wait = np.maximum(0.0, fetched - np.maximum(start, previous))
        host = np.maximum(0.0, done - previous - compute - data_wait)
        # Our own measurements are left out of the host time they ran in,
        # as far as they overlapped it (the device may have been busy).
        excluded = np.minimum(excluded, host)
        host -= excluded
        self._previous = float(done[-1])
        self.accounting.add_steps(previous, data_wait, compute, host, batch, excluded)

    def _write_execution(self, entry, completion):
        _, start, fetched, steps, batch_size, excluded = entry
        previous = start if self._previous is None else self._previous
        done = max(completion, previous)
        compute = done - max(fetched, previous)
        data_wait = max(0.0, fetched - max(start, previous))
        host = max(0.0, done - previous - compute - data_wait)
        excluded = min(excluded, host)
        self._previous = done
        self.accounting.add_step(
            previous, data_wait, compute, host - excluded, batch_size, steps, excluded
        )


class TimedIterator:
    """Hands Keras's JAX step the batches of `iterator`, timing each fetch.

    Keras's JAX `train_function(state, iterator)` calls `next()` itself;
    this proxy lets it, so the step is dispatched exactly as without it.
    """

    def __init__(self, clock):
        self._clock = clock
        self.reset(None)

    def reset(self, iterator):
        """Starts a call of the step function on `iterator` (one proxy
        serves every call, so a step allocates nothing here)."""
        self._iterator = iterator
        self.start = None
        self.fetched = None
        self.count = 0
        self.first = None

    def __iter__(self):
        return self

    def __next__(self):
        started = self._clock()
        if self.start is None:
            self.start = started
        batch = next(self._iterator)
        self.fetched = self._clock()
        if self.count == 0:
            self.first = batch
        self.count += 1
        return batch
