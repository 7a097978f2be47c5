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

`docs/VERDICTS.md` ("Stragglers") documents it.
"""

from tb_devicecost.analysis import estimates
from tb_devicecost.analysis import formatting
from tb_devicecost.analysis import wording
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share

VERDICT = "waiting_for_others"
# A process whose waits for the straggler are at least this share of its own
# step time is "mostly waiting": most of its step is the straggler's delay.
WAITING_SHARE = 0.5
# The findings of a waiting process's own verdict that advise making its
# step cheaper: set aside with the verdict.
_COMPUTE_ADVICE = ("compute_bound", "latency_bound")


def waiting_finding(entry, group, run):
    """The `waiting_for_others` finding of one process, or `None` when it is
    not mostly waiting.

    Args:
        entry: The process's entry in the group's `runs`.
        group: The group object (`workers.analyze_group`), with its
            straggler.
        run: The process's run object.
    """
    if group.get("straggler") is None or entry["run"] == group["straggler"]:
        return None
    share = entry.get("wait_share")
    if share is None or share < WAITING_SHARE - 1e-12:
        return None
    straggler = group["straggler_index"]
    wait = entry["wait_ms"]
    step = (entry.get("step_ms") or {}).get("p50")
    split = run.get("device_split") or {}
    communication = split.get("communication")
    message = (
        f"Process {entry['process_index']} ({formatting.confined(entry['run'])}) spends "
        f"{fmt_share(share)} of its step waiting for process {straggler} inside the "
        f"collective (the all-reduce waits for the last process to arrive): "
        f"{fmt_ms(wait['p50'])} ms per step at p50 (p90 {fmt_ms(wait['p90'])} ms)"
        + (f" of its {fmt_ms(step)} ms step" if step is not None else "")
        + "."
    )
    if communication is not None:
        message += (
            f" Its trace agrees: its device spent {fmt_share(communication)} of each "
            f"traced step in collectives and {fmt_share(split.get('compute'))} computing."
        )
    message += (
        f" Its own verdict, {run.get('steady_verdict') or 'none'}, is set aside: "
        "its step is not what sets the pace."
    )
    cause = group.get("cause")
    fix = (
        f"Nothing to change in this process: make process {straggler} keep pace "
        f"(its `straggler` finding: cause {cause or 'unknown'})."
    )
    expected = (group.get("finding") or {}).get("expected") or estimates.no_estimate(
        "what this process gains is what the straggler's fix buys"
    )
    return {
        "id": VERDICT,
        "severity": "high",
        "headline": wording.waiting_for_others(entry["process_index"], share, straggler),
        "message": message,
        "fix": fix,
        "expected": expected,
        "process_index": entry["process_index"],
        "waits_for": straggler,
        "straggler_run": group["straggler"],
        "wait_share": share,
        "wait_ms": {"p50": wait["p50"], "p90": wait["p90"]},
        "communication_fraction": communication,
    }


def apply(run, finding):
    """Makes `finding` the run's verdict: its own verdict is kept as
    `own_verdict`, and the findings that advise a cheaper step go."""
    run["own_verdict"] = run.get("steady_verdict")
    if run.get("verdict") == run.get("steady_verdict"):
        run["verdict"] = VERDICT
    run["steady_verdict"] = VERDICT
    kept = [
        item for item in run.get("findings") or ()
        if isinstance(item, dict) and item.get("id") not in _COMPUTE_ADVICE + (VERDICT,)
    ]
    run["findings"] = [finding] + kept
