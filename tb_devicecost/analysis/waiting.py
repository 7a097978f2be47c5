"""The `waiting_for_others` verdict: a process whose step is mostly spent
waiting inside a collective for another process.

Per-step times cannot tell such a process from one that computes: its
all-reduce waits inside its compute, and on a GPU the collective's kernel
spins (it looks busy). The evidence comes from the job's processes lined
up by global step (`workers.analyze_group`): a process whose waits for the
straggler are at least `WAITING_SHARE` of its own step time is waiting for
it, not computing. Its own verdict (`compute_bound`, `latency_bound`) and
their advice are set aside (kept as `own_verdict`): making its step cheaper
buys nothing while it waits. Where a trace window holds the device's split
(`device_split`), the time its device spent in collectives is quoted too.
The straggler keeps its own verdict and its `straggler` finding.

This module decides (`find_waiting`, a typed `Waiting`); `words/jobs.py`
words it and `words/report.py` sets it on the run object and the group
(`report.mark_waiting`). `docs/VERDICTS.md` ("Stragglers") documents it.
"""

import dataclasses

VERDICT = "waiting_for_others"
# Its finding's severity: its step is set by another process.
SEVERITY = "high"
# A process whose waits for the straggler are at least this share of its own
# step time is "mostly waiting": most of its step is the straggler's delay.
WAITING_SHARE = 0.5
# The findings of a waiting process's own verdict that advise making its
# step cheaper: set aside with the verdict.
COMPUTE_ADVICE = ("compute_bound", "latency_bound")


@dataclasses.dataclass(frozen=True)
class Waiting:
    """A process mostly waiting for the straggler (`find_waiting`).

    Attributes:
        run: Its run's name.
        process_index: Its index in the job.
        waits_for: The straggler's index.
        straggler_run: The straggler's run's name.
        cause: The straggler's cause (`workers.Straggler.cause`), or `None`.
        wait_share: Its waits for the others as a share of its step time.
        wait_p50_ms, wait_p90_ms: Its wait per aligned step.
        step_p50_ms: Its p50 step, `None` when unknown.
        communication_fraction, compute_fraction: The shares of its traced
            steps that its device spent in collectives and computing
            (`device_split`), `None` without a trace.
        own_verdict: Its own steady-state verdict, set aside.
    """

    run: str
    process_index: int
    waits_for: int
    straggler_run: str
    cause: str
    wait_share: float
    wait_p50_ms: float
    wait_p90_ms: float
    step_p50_ms: float
    communication_fraction: float
    compute_fraction: float
    own_verdict: str


def find_waiting(entry, group, run):
    """The `Waiting` of one process, or `None` when it is not mostly
    waiting.

    Args:
        entry: The process's entry in the group object's `runs`
            (`report.group_object`).
        group: The group object, with its straggler.
        run: The process's run object (`{}` when not at hand).
    """
    if group.get("straggler") is None or entry["run"] == group["straggler"]:
        return None
    share = entry.get("wait_share")
    if share is None or share < WAITING_SHARE - 1e-12:
        return None
    wait_ms = entry["wait_ms"]
    split = run.get("device_split") or {}
    return Waiting(
        run=entry["run"],
        process_index=entry["process_index"],
        waits_for=group["straggler_index"],
        straggler_run=group["straggler"],
        cause=group.get("cause"),
        wait_share=share,
        wait_p50_ms=wait_ms["p50"],
        wait_p90_ms=wait_ms["p90"],
        step_p50_ms=(entry.get("step_ms") or {}).get("p50"),
        communication_fraction=split.get("communication"),
        compute_fraction=split.get("compute"),
        own_verdict=run.get("steady_verdict"),
    )
