"""The default device-busy window costs at most 1% of a run's wall time
(`tb_devicecost.recording.trace_budget`, `profiling.TraceSchedule`).

Paces are given as a clock per step; the window's one-off cost is the
measured mean the module holds (docs/PERFORMANCE.md).
"""

import types

import pytest

from tb_devicecost.format import metadata
from tb_devicecost.recording import profiling
from tb_devicecost.recording import trace_budget


def _opening(budget, step_s, last_step, first_step=1):
    """Runs a fit at `step_s` per step; returns `(step, elapsed_s, window)`
    where the window may open, or `None` if it never may."""
    budget.started(first_step, 0.0)
    for step in range(first_step + 1, last_step + 1):
        now = (step - first_step) * step_s
        plan = budget.plan(step, now)
        if plan is not None and plan[0] <= step:
            return step, now, plan
    return None


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_a_300_step_fit_is_too_short_to_carry_the_window(backend):
    # A distributed MLP step of a few milliseconds: 300 steps take about a second.
    budget = trace_budget.BusyBudget(backend, earliest=10, steps=10)
    assert _opening(budget, 0.004, 300) is None
    note = budget.note()
    assert note["state"] == "not_yet"
    assert note["opens_after_s"] >= 100 * budget.cost_s
    assert "opens only after" in note["reason"]


@pytest.mark.parametrize("step_s", [0.0006, 0.004, 0.05])
def test_a_long_fit_traces_once_the_window_costs_at_most_1_percent(step_s):
    budget = trace_budget.BusyBudget("jax", earliest=10, steps=10)
    step, elapsed, (start, stop) = _opening(budget, step_s, 10**7)
    # The window's expected cost (one-off, and its slower traced steps)
    # over the time trained before it opens, a lower bound of the run's.
    cost = budget.cost_s + trace_budget.TRACED_STEP_SLOWDOWN * (stop - start) * step_s
    assert cost <= trace_budget.BUDGET_SHARE * elapsed
    # It opens at a power of two, and not past twice the step that carries it.
    assert start & (start - 1) == 0
    assert elapsed <= 2 * cost / trace_budget.BUDGET_SHARE + step_s


def test_the_processes_of_a_job_open_the_window_at_the_same_step():
    # Lockstep processes measure slightly different paces.
    starts = {
        _opening(trace_budget.BusyBudget("jax", 10, 10), step_s, 10**6)[2][0]
        for step_s in (0.0040, 0.0041, 0.0039)
    }
    assert len(starts) == 1


def test_long_steps_trace_fewer_of_them():
    _, _, (start, stop) = _opening(trace_budget.BusyBudget("torch", 10, 10), 0.5, 10**5)
    assert stop - start == trace_budget.MIN_STEPS


class _Accounting:
    """What the schedule asks of a recorder."""

    def __init__(self):
        self.step = 0
        self.run_dir = "/nonexistent"
        self.documents = {}
        self.watched = None

    def upcoming_step(self):
        return self.step

    def watch_steps(self, steps):
        self.watched = steps

    def watched_steps(self):
        return []

    def write_document(self, tag, document):
        self.documents[tag] = document

    def exclude(self, seconds):
        pass


def test_a_run_too_short_says_so_in_its_trace_document(monkeypatch):
    clock = {"now": 0.0}
    monkeypatch.setattr(profiling, "time", types.SimpleNamespace(
        perf_counter=lambda: clock["now"], time=lambda: clock["now"]))
    schedule = profiling.TraceSchedule(None, device_busy="auto")
    accounting = _Accounting()
    schedule.begin_fit(accounting, [], backend="jax")
    accounting.step = 1
    schedule.found_device(True)
    window = schedule.window
    assert window.purpose == profiling.PURPOSE_DEVICE_BUSY
    # 300 steps of 4 ms: the window never opens (no profiler is started).
    for step in range(1, 300):
        accounting.step = step
        clock["now"] = step * 0.004
        assert schedule.before_async_step(step) is None
        assert window.state == "pending"
    assert window.start > 300 and accounting.watched == range(window.start, window.stop)
    schedule.end_fit()
    schedule.digest(accounting)
    document = accounting.documents[metadata.TAG_TRACE]
    assert document["windows"] == []
    assert document["device_busy"]["state"] == "not_yet"
    assert document["device_busy"]["run_s"] == pytest.approx(299 * 0.004, rel=0.01)


def test_the_report_says_why_no_window_was_traced():
    from tb_devicecost.analysis import record as record_module

    note = {"state": "not_yet", "reason": "The device-busy trace costs about 0.09 s once",
            "budget_share": 0.01, "window_cost_s": 0.09, "opens_after_s": 9.0, "run_s": 1.2}
    run = record_module.read_run({"run": "r", "trace": {"windows": [], "device_busy": note}})
    assert run.device_busy_window == note
    assert record_module.read_run({"run": "r"}).device_busy_window is None
