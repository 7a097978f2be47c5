"""The processes of a distributed fit side by side: who holds the others back.

In synchronous data parallelism every process's step ends in a collective
(the gradients' all-reduce) that waits for the last process to arrive. A
process that arrives late (a slower input pipeline, a busy host) holds every
other one back, and their records show it only as a longer compute. This
module lines the processes' steps up by global step and tells how long each
one waited for the others, which process caused it and why.

A process is late to a step's collective by what it did outside its step
function before it: its data wait and the host overhead after its previous
step (its "stall"). Per aligned step, each process waits for the most
stalled one:

    wait[p]  = min(compute[p], max_q stall[q] - stall[p])
    skew     = max_p wait[p]       (how far apart the processes arrived)

Each step's waits are lost to its most stalled process. A process whose
steps cost everyone at least `STRAGGLER_MODERATE` of their time is the
group's straggler; the cause is what makes it late (`input_bound` or
`host_overhead_bound`: its own verdict, else its finding, else the larger
part of its stall). A process slower inside
its step function (a slower device) stalls nobody this way: the others wait
inside their compute just as long as it computes, which per-step times
cannot tell from work; trace windows can (`device_busy_fraction`).

`docs/SCALE.md` says what this costs at 8 to 512 processes, and
`docs/VERDICTS.md` ("straggler") how the finding reads.
"""

import numpy as np

from tb_devicecost.analysis import estimates
from tb_devicecost.analysis import jobs
from tb_devicecost.analysis import waiting
from tb_devicecost.analysis import wording
from tb_devicecost.analysis.formatting import confined
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.thresholds import INPUT_HIGH
from tb_devicecost.analysis.thresholds import INPUT_MODERATE

# The share of every process's step lost to one process above which it is
# the straggler (moderate) and the finding is high: the profiler's input
# thresholds, since time lost waiting for another process is time no
# device computes.
STRAGGLER_MODERATE = INPUT_MODERATE
STRAGGLER_HIGH = INPUT_HIGH
# A straggler does at least this much more of its own work per step (its
# whole fetch and host overhead) than the others' median: processes doing
# the same work differ by 5-15% (measured on 2 and 4 H100s,
# tests/data/h100x2, h100x4), a slowed one by many times.
OWN_WORK_EXCESS = 0.5
# The verdicts that name what makes a process late to a step: its stall.
_STALL_VERDICTS = ("input_bound", "host_overhead_bound")
# The fix when the straggler's own findings hold none for its cause.
_FIXES = {
    "input_bound": (
        "Make its input pipeline parallel and ahead of the model: "
        "num_parallel_calls and .prefetch(tf.data.AUTOTUNE) for tf.data, "
        "workers for a PyDataset or a DataLoader, the same data format "
        "and storage as the other processes."
    ),
    "host_overhead_bound": (
        "Move work out of its loop between steps: logging, checkpoints and "
        "callbacks that only one process needs to run at every step."
    ),
}
# Points of the skew-over-steps series handed to the tab, at most.
MAX_SERIES_POINTS = 1000


def _percentiles(values):
    if values is None or len(values) == 0:
        return {"p50": None, "p90": None, "mean": None}
    return {
        "p50": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "mean": float(np.mean(values)),
    }


def analyze_group(group, members, runs, unaligned=(), count=None):
    """One distributed job's processes, side by side.

    Args:
        group: The group's name (`ProcessClaim.group`).
        members: `[(process_index, RunData)]` of its runs that are lined up.
        runs: `{run name: run object}` of the analysed runs.
        unaligned: `[{"run", "process_index", "claimed_index", "reason"}]`:
            the job's runs that could not be placed (`build_workers`).
            Defaults to none.
        count: The job's process count. Defaults to the largest its runs'
            info gives.

    Returns:
        The group object of the report's `"workers"` list (`docs/CLI.md`).
    """
    members = sorted(members, key=lambda member: member[0])
    unaligned = list(unaligned)
    if count is None:
        count = max(member.process.count for _, member in members)
    # A run not lined up still says which process it holds: that process
    # is not "not recorded".
    present = {index for index, _ in members} | {
        item["claimed_index"] for item in unaligned if item.get("claimed_index") is not None}
    names = [member.run for _, member in members]
    series = [member.steps for _, member in members]
    usable = [item for item in series if item is not None and len(item.step)]
    aligned = None
    if len(usable) == len(series) and len(series) > 1:
        aligned = usable[0].step
        for item in usable[1:]:
            aligned = np.intersect1d(aligned, item.step, assume_unique=True)
    problems = [f"{confined(item['run'])}: {item['reason']}" for item in unaligned]
    if aligned is None or not len(aligned):
        problems.append(jobs.alignment_problem(members, names, series))
    missing = jobs.missing_ranges(count, present)
    result = {
        "group": group,
        "process_count": count,
        "missing_processes": missing,
        "missing_count": sum(last - first + 1 for first, last in missing),
        "unaligned": unaligned,
        "problems": problems,
        "aligned_steps": 0 if aligned is None else int(len(aligned)),
        "runs": [],
        "straggler": None,
        "straggler_index": None,
        "straggler_share": None,
        "cause": None,
        "skew_ms": _percentiles(None),
        "start_spread_ms": _percentiles(None),
        "end_spread_ms": _percentiles(None),
        "same_host": None,
        "device_busy_spread": None,
        "series": {"step": [], "skew_ms": [], "late": []},
        "finding": None,
    }
    hosts = {member.process.hostname for _, member in members}
    result["same_host"] = len(hosts) == 1 and None not in hosts
    per_run = []
    for (index, _), name in zip(members, names):
        run = runs.get(name) or {}
        per_run.append({
            "run": name,
            "process_index": index,
            "verdict": run.get("verdict"),
            "steady_verdict": run.get("steady_verdict"),
            "step_ms": run.get("step_ms"),
            "shares": run.get("shares"),
            "device": run.get("device"),
            "device_busy_fraction": run.get("device_busy_fraction"),
            "distribution": run.get("distribution"),
            "samples_per_s": run.get("samples_per_s"),
            "wait_ms": _percentiles(None),
            "wait_share": None,
            "late_steps": 0,
            "lost_share": None,
        })
    result["runs"] = per_run
    # Each process's device busy share (from its trace windows) side by
    # side: the devices that waited for another process idle longer.
    # Each process's device compute per traced step (median, ms) side by
    # side, as a relative spread: processes doing the same work compute
    # alike; a share of a step would differ with where each trace cut it.
    busy = [(runs.get(entry["run"]) or {}).get("device_compute_ms") for entry in per_run]
    busy = [value for value in busy if isinstance(value, (int, float))]
    result["device_busy_spread"] = (
        (max(busy) - min(busy)) / max(busy) if len(busy) > 1 and max(busy) > 0 else None
    )
    if not result["aligned_steps"]:
        return result

    positions = [np.searchsorted(item.step, aligned) for item in series]
    stall = np.stack([item.stall[at] for item, at in zip(series, positions)])
    compute = np.stack([item.compute[at] for item, at in zip(series, positions)])
    total = np.stack([item.total[at] for item, at in zip(series, positions)])
    # Per step, every process waits (inside its compute) for the most stalled.
    late = np.argmax(stall, axis=0)
    wait = np.minimum(compute, np.max(stall, axis=0) - stall)
    skew = np.max(wait, axis=0)
    lost_per_step = wait.sum(axis=0)
    everyone = float(total.sum())
    lost = np.bincount(late, weights=lost_per_step, minlength=len(members))
    for position, entry in enumerate(per_run):
        entry["wait_ms"] = _percentiles(wait[position])
        own = float(total[position].sum())
        entry["wait_share"] = float(wait[position].sum()) / own if own > 0 else None
        entry["late_steps"] = int(np.sum((late == position) & (skew > 0)))
        entry["lost_share"] = float(lost[position]) / everyone if everyone > 0 else None
    result["skew_ms"] = _percentiles(skew)
    if result["same_host"] and all(item.start is not None for item in series):
        start = np.stack([item.start[at] for item, at in zip(series, positions)])
        if np.all(np.isfinite(start)):
            # Wall times are seconds since the epoch; compared across
            # processes only on one host (one clock).
            result["start_spread_ms"] = _percentiles((start.max(0) - start.min(0)) * 1e3)
            end = start * 1e3 + total
            result["end_spread_ms"] = _percentiles(end.max(0) - end.min(0))
    stride = max(1, -(-len(aligned) // MAX_SERIES_POINTS))
    result["series"] = {
        "step": aligned[::stride].tolist(),
        "skew_ms": skew[::stride].tolist(),
        "late": [int(members[position][0]) for position in late[::stride]],
    }
    worst = int(np.argmax(lost))
    share = per_run[worst]["lost_share"]
    if (
        share is not None
        and share >= STRAGGLER_MODERATE - 1e-12
        and _does_more_work(per_run, runs, worst)
    ):
        straggler = per_run[worst]
        result["straggler"] = straggler["run"]
        result["straggler_index"] = straggler["process_index"]
        result["straggler_share"] = share
        waits = np.stack([item.data_wait[at] for item, at in zip(series, positions)])
        # How much longer its data wait was than the others' (the rest of its
        # stall is host overhead).
        others = np.delete(np.arange(len(members)), worst)
        excess_wait = float(waits[worst].mean() - waits[others].mean())
        excess_stall = float(stall[worst].mean() - stall[others].mean())
        result["cause"] = _cause(runs.get(straggler["run"]) or {}, excess_wait,
                                 excess_stall - excess_wait)
        # Were it on time, every process's step would be shorter by the
        # skew of the steps it was last in.
        saved = float(skew[late == worst].sum()) / len(aligned)
        result["finding"] = _finding(result, straggler, runs.get(straggler["run"]) or {},
                                     saved, total)
    return result


def _own_work_ms(run):
    """A process's own host-side work per step (ms): its full fetch,
    overlapped with device work or not, and its host overhead; `None` in
    data recorded without full fetch times."""
    fetch = (run.get("fetch_ms") or {}).get("mean")
    host = (run.get("host_overhead_ms") or {}).get("mean")
    if not isinstance(fetch, (int, float)) or not isinstance(host, (int, float)):
        return None
    return fetch + host


def _does_more_work(per_run, runs, worst):
    """Whether the process that arrives last does more of its own work per
    step than the others, by at least `STRAGGLER_MODERATE` of its step.

    Processes doing the same work settle into a phase where one arrives
    last, step after step: the others then wait inside the collective, and
    the last one's fetch is the only one left exposed. That is no
    straggler; one with a slower input or more host work is: by at least
    `STRAGGLER_MODERATE` of its step and `OWN_WORK_EXCESS` of the others'
    own work. Without full fetch times (older data) the one that arrives
    last is taken.
    """
    own = [_own_work_ms(runs.get(entry["run"]) or {}) for entry in per_run]
    if any(value is None for value in own) or len(own) < 2:
        return True
    others = [value for index, value in enumerate(own) if index != worst]
    step = ((runs.get(per_run[worst]["run"]) or {}).get("step_ms") or {}).get("mean")
    if not isinstance(step, (int, float)) or step <= 0:
        return True
    typical = float(np.median(others))
    excess = own[worst] - typical
    return excess >= STRAGGLER_MODERATE * step and excess >= OWN_WORK_EXCESS * typical


def _cause(run, excess_wait_ms, excess_host_ms):
    """Why the straggler is late: its own verdict when that names a stall
    (`input_bound`, `host_overhead_bound`), else its finding of one, else
    the part of its stall that exceeds the others' more."""
    verdict = run.get("steady_verdict") or run.get("verdict")
    if verdict in _STALL_VERDICTS:
        return verdict
    found = [finding.get("id") for finding in run.get("findings") or ()
             if isinstance(finding, dict)]
    for candidate in _STALL_VERDICTS:
        if candidate in found:
            return candidate
    return "input_bound" if excess_wait_ms >= excess_host_ms else "host_overhead_bound"


def _finding(group, straggler, straggler_run, saved_ms, total):
    """The `straggler` finding (docs/VERDICTS.md): who, how much, why, the fix."""
    share = group["straggler_share"]
    cause = group["cause"]
    others = group["process_count"] - 1
    skew = group["skew_ms"]
    severity = "high" if share >= STRAGGLER_HIGH - 1e-12 else "moderate"
    message = (
        f"Process {straggler['process_index']} ({confined(straggler['run'])}) holds "
        + ("the other process" if others == 1 else f"the other {others} processes")
        + " back: "
        f"{fmt_share(share)} of all the processes' step time together is spent waiting for "
        f"it, inside their compute (the all-reduce waits for the last process). "
        f"The processes arrive {fmt_ms(skew['p50'])} ms apart at p50 and "
        f"{fmt_ms(skew['p90'])} ms at p90, over {group['aligned_steps']} aligned "
        f"steps. Its cause: {cause}"
        + (
            f" (its data wait is {fmt_share((straggler['shares'] or {}).get('data_wait'))} "
            "and its host overhead "
            f"{fmt_share((straggler['shares'] or {}).get('host_overhead'))} of its "
            "steady-state time"
            if straggler["shares"]
            else " ("
        )
        + f"; its own verdict: {straggler['steady_verdict'] or straggler['verdict'] or 'none'})."
    )
    own_fix = next(
        (finding.get("fix") for finding in straggler_run.get("findings") or ()
         if finding.get("id") == cause),
        None,
    )
    fix = (
        f"Make process {straggler['process_index']} as fast as the others "
        "outside its step: every process waits for it each step. "
        + (own_fix or _FIXES.get(cause, ""))
        + " Check that every process gets the same share of the data, the "
        "same input pipeline and a host no busier than the others'."
    ).strip()
    mean_step = float(total.mean())
    after = mean_step - saved_ms
    expected = estimates.no_estimate(
        "the processes' mean step less the mean skew of the steps this "
        "process arrived last at: what they wait for it; the steps are no "
        "shorter than the next slowest process allows"
    )
    if mean_step > 0 and after > 0:
        speedup = mean_step / after
        expected.update(
            bound="at_most",
            speedup=speedup,
            of="step_ms",
            step_ms=after,
            text=(
                f"at most {estimates.rounded(speedup)}x faster steps ({fmt_ms(after)} ms "
                f"instead of {fmt_ms(mean_step)} ms, mean over the processes)"
            ),
        )
    return {
        "id": "straggler",
        "severity": severity,
        "headline": wording.straggler(straggler["process_index"], share),
        "message": message,
        "fix": fix,
        "expected": expected,
        "process_index": straggler["process_index"],
        "run": straggler["run"],
        "share": share,
        "cause": cause,
        "skew_ms": {"p50": skew["p50"], "p90": skew["p90"]},
    }


def build_workers(run_data, runs):
    """Every distributed job among `run_data`, as the report's `"workers"`.

    Args:
        run_data: `RunData`s (`record.read_run`) of the runs, with their
            processes' steps (`RunData.steps`).
        runs: The analysed run objects (`report.analyze_run`).

    Returns:
        A list of group objects, sorted by group name; empty when no run
        came from a process of a multi-process job.
    """
    by_name = {run["run"]: run for run in runs}
    groups = jobs.group_runs(run_data, by_name)
    return [
        analyze_group(group, list(job["members"].items()), by_name,
                      unaligned=job["unaligned"], count=job["count"])
        for group, job in sorted(groups.items())
    ]


def attach_findings(workers, runs):
    """Adds each group's `straggler` finding to the findings of the
    straggler's run only: said once per job (a job of 200 processes would
    otherwise repeat it 200 times); every other process's run names its
    job in `job` (the group shows who holds it back)."""
    by_name = {run["run"]: run for run in runs}
    for group in workers:
        for entry in group["runs"]:
            run = by_name.get(entry["run"])
            if run is not None:
                run["job"] = group["group"]
        finding = group["finding"]
        run = by_name.get(group["straggler"]) if finding is not None else None
        if run is not None:
            run["findings"] = list(run.get("findings") or []) + [finding]


def mark_waiting(workers, runs):
    """Each process's device split beside its waits, and the
    `waiting_for_others` verdict of a process mostly waiting for the
    straggler (`waiting.waiting_finding`), set on its run object and its
    entry in the group."""
    by_name = {run["run"]: run for run in runs}
    for group in workers:
        for entry in group["runs"]:
            run = by_name.get(entry["run"]) or {}
            entry["device_split"] = run.get("device_split")
            entry["device_figures"] = run.get("device_figures") or []
            finding = waiting.waiting_finding(entry, group, run)
            if finding is None:
                continue
            entry["waiting"] = finding
            entry["own_verdict"] = entry["steady_verdict"]
            entry["steady_verdict"] = waiting.VERDICT
            if run:
                waiting.apply(run, finding)
                entry["verdict"] = run["verdict"]
