"""When the default device-busy window may open: at most 1% of the run's
wall time, in expectation.

The window (`profiling.TraceSchedule`, `device_busy="auto"`) has a one-off
cost: starting and stopping the profiler, digesting the trace and deleting
its files. Measured on an H100 (`tests/data/h100/benchmark_2`, the
`busy_window_s` of each case; docs/PERFORMANCE.md): 0.04-0.22 s on JAX,
mean 0.09 s over 6 cases, and 0.09-0.43 s on PyTorch, mean 0.23 s over 3.
TensorFlow's profiler is the same XLA/TSL profiler as JAX's and is given
JAX's figure. Traced steps themselves run about 10% slower (docs/
PERFORMANCE.md, "Trace windows").

The rule: the window opens only once the run has run long enough that its
expected cost is at most `BUDGET_SHARE` of the time already spent, so of
the whole run. From the wall time per step since the run's first step, the
step at which that time is reached is found, and the window starts at the
first power of two at or after it (at least `DEVICE_BUSY_OFFSET` steps in):
the processes of a distributed job, whose steps take the same time, then
open theirs at the same step, and one process's profiler start does not
stall the others at another. A run that ends before then is not traced;
the trace document says so (`device_busy`). Long steps trace fewer steps
(about `TRACED_S` of them, at least `MIN_STEPS`).
"""

import math

from tb_devicecost import backends

BUDGET_SHARE = 0.01
# The slowdown of a traced step, counted with the one-off cost.
TRACED_STEP_SLOWDOWN = 0.10
# Steps traced: at most the schedule's count, as many as fit in about this
# many seconds, at least this many.
TRACED_S = 1.0
MIN_STEPS = 3


class BusyBudget:
    """When the default window may open, from the run's pace so far.

    Args:
        backend: The Keras backend's name (its window's cost,
            `Backend.window_cost_s`: the means above).
        earliest: The first global step the window may start at.
        steps: The most steps to trace.
        share: The share of the run's wall time the window may cost.
    """

    def __init__(self, backend, earliest, steps, share=BUDGET_SHARE):
        self.cost_s = window_cost_s(backend)
        self.earliest = earliest
        self.steps = steps
        self.share = share
        self._first = None
        self._last = None

    def started(self, step, now):
        """The run's first step is done; `step` is the next one, at `now`
        (seconds, any monotonic clock). Later calls are ignored."""
        if self._first is None:
            self._first = (now, step)

    def plan(self, step, now):
        """`(start, stop)` of the window as the run's pace now says, or
        `None` before any step was timed.

        The window costs `cost_s` plus `TRACED_STEP_SLOWDOWN` of each traced
        step; it may start once the run's time since its first step is that
        cost over `share`.
        """
        if self._first is None or step <= self._first[1] or now <= self._first[0]:
            return None
        started_at, first_step = self._first
        step_s = (now - started_at) / (step - first_step)
        count = max(MIN_STEPS, min(self.steps, int(TRACED_S / step_s)))
        cost = self.cost_s + TRACED_STEP_SLOWDOWN * count * step_s
        needed = first_step + cost / self.share / step_s
        start = max(self.earliest, 2 ** math.ceil(math.log2(max(needed, 1.0))))
        self._last = {
            "step_s": step_s,
            "window_cost_s": cost,
            "opens_after_s": cost / self.share,
            "run_s": now - started_at,
            "start_step": start,
        }
        return start, start + count

    def note(self):
        """What the trace document says of a window not opened yet
        (`device_busy`), or `None` before any plan."""
        if self._last is None:
            return None
        last = self._last
        return {
            "state": "not_yet",
            "budget_share": self.share,
            "window_cost_s": last["window_cost_s"],
            "opens_after_s": last["opens_after_s"],
            "run_s": last["run_s"],
            "start_step": last["start_step"],
            "reason": (
                f"The device-busy trace costs about {last['window_cost_s']:.2f} s once, "
                f"so it opens only after {last['opens_after_s']:.0f} s of training "
                f"({self.share:.0%} of the run's wall time at most), at step "
                f"{last['start_step']}; this run has trained {last['run_s']:.1f} s so "
                "far. A longer fit (or device_busy=True) traces it."
            ),
        }


def window_cost_s(backend):
    """The expected one-off cost (seconds) of a window on `backend`; the
    largest of the backends' for a backend that is not measured."""
    try:
        return backends.get(backend).window_cost_s
    except ValueError:
        return max(backends.get(name).window_cost_s for name in backends.NAMES)
