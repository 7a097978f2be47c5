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

It decides and words nothing: each job is a typed `Job` (its
`ProcessEntry`s, its `Straggler`), which `words/report.py` writes as the
report's group object and `words/jobs.py` words. `docs/SCALE.md` says what
this costs at 8 to 512 processes, and `docs/VERDICTS.md` ("straggler") how
the finding reads.
"""

import dataclasses

import numpy as np

from tb_devicecost.analysis import jobs
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.analysis.thresholds import FEW_ALIGNED_STEPS
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
STALL_VERDICTS = ("input_bound", "host_overhead_bound")
# Points of the skew-over-steps series handed to the tab, at most.
MAX_SERIES_POINTS = 1000


@dataclasses.dataclass(frozen=True)
class Spread:
    """A per-step quantity over the aligned steps (ms): p50, p90 and mean,
    each `None` when no step was lined up."""

    p50: float = None
    p90: float = None
    mean: float = None


def _spread(values):
    if values is None or len(values) == 0:
        return Spread()
    return Spread(
        p50=float(np.percentile(values, 50)),
        p90=float(np.percentile(values, 90)),
        mean=float(np.mean(values)),
    )


@dataclasses.dataclass(frozen=True)
class ProcessEntry:
    """One lined-up process of a job: its run, its index, and its waits for
    the others over the aligned steps (`wait_ms`, per step), as a share of
    its own step time (`wait_share`); the steps it arrived last at
    (`late_steps`) and the share of every process's step time lost to it
    (`lost_share`). `None` (and 0) where no step was lined up."""

    run: str
    process_index: int
    wait_ms: Spread = Spread()
    wait_share: float = None
    late_steps: int = 0
    lost_share: float = None


@dataclasses.dataclass(frozen=True)
class Straggler:
    """The process that holds the others back (docs/VERDICTS.md,
    "Stragglers"): its run and index, the share of every process's step
    time lost waiting for it (`share`, the finding's `severity`), why it is
    late (`cause`: `input_bound` or `host_overhead_bound`), and the
    processes' mean step (`mean_step_ms`) beside what they would save per
    step were it on time (`saved_ms`); `few_steps`: it is named on fewer
    than `FEW_ALIGNED_STEPS` aligned steps."""

    run: str
    process_index: int
    share: float
    severity: str
    cause: str
    mean_step_ms: float
    saved_ms: float
    few_steps: bool = False


@dataclasses.dataclass(frozen=True)
class SkewSeries:
    """The skew over the aligned steps, at most `MAX_SERIES_POINTS` of
    them: each step's global step, skew (ms) and the index of the process
    that arrived last."""

    step: tuple = ()
    skew_ms: tuple = ()
    late: tuple = ()


@dataclasses.dataclass(frozen=True)
class Job:
    """One distributed job's processes side by side (`analyze_group`).

    Attributes:
        group: The job's name (`ProcessClaim.group`).
        process_count: How many processes its runs' info says it had.
        missing_processes: `((first, last), ...)`: the indices with no run,
            as inclusive ranges.
        unaligned: Its runs that could not be lined up (`jobs.Unaligned`).
        problems: Why runs, or steps, could not be lined up, in words.
        aligned_steps: How many global steps every process recorded.
        processes: A `ProcessEntry` per lined-up process, by index.
        straggler: The `Straggler`, or `None`.
        skew_ms: How far apart the processes arrived, per aligned step.
        start_spread_ms, end_spread_ms: How far apart the steps started and
            ended on the one host's clock (unknown across hosts).
        same_host: Whether every process ran on one named host.
        device_busy_spread: The relative spread of the processes' device
            compute per traced step, `None` without two traced processes.
        series: The skew over steps (`SkewSeries`).
    """

    group: str
    process_count: int
    missing_processes: tuple
    unaligned: tuple
    problems: tuple
    aligned_steps: int
    processes: tuple
    straggler: Straggler = None
    skew_ms: Spread = Spread()
    start_spread_ms: Spread = Spread()
    end_spread_ms: Spread = Spread()
    same_host: bool = None
    device_busy_spread: float = None
    series: SkewSeries = SkewSeries()

    @property
    def missing_count(self):
        """How many processes have no run at all."""
        return sum(last - first + 1 for first, last in self.missing_processes)


def analyze_group(group, members, runs, unaligned=(), count=None, counts=()):
    """One distributed job's processes, side by side.

    Args:
        group: The group's name (`ProcessClaim.group`).
        members: `[(process_index, RunData)]` of its runs that are lined up.
        runs: `{run name: run object}` of the analysed runs.
        unaligned: The job's `jobs.Unaligned` runs, which could not be
            placed (`build_workers`). Defaults to none.
        count: The job's process count. Defaults to the largest its runs'
            info gives.
        counts: `((count, run), ...)` where the runs' info disagree on it
            (`jobs.JobRuns.counts`), said in `problems`.

    Returns:
        A `Job`; `report.group_object` writes it as the report's
        `"workers"` entry (`docs/CLI.md`).
    """
    members = sorted(members, key=lambda member: member[0])
    unaligned = tuple(unaligned)
    if count is None:
        count = max(member.process.count for _, member in members)
    # A run not lined up still says which process it holds: that process
    # is not "not recorded".
    present = {index for index, _ in members} | {
        item.claimed_index for item in unaligned if item.claimed_index is not None}
    names = [member.run for _, member in members]
    series = [member.steps for _, member in members]
    usable = [item for item in series if item is not None and len(item.step)]
    aligned = None
    if len(usable) == len(series) and len(series) > 1:
        aligned = usable[0].step
        for item in usable[1:]:
            aligned = np.intersect1d(aligned, item.step, assume_unique=True)
    problems = [reason("unaligned_run", run=item.run, why=item.reason) for item in unaligned]
    if jobs.count_problem(counts):
        problems.append(jobs.count_problem(counts))
    if aligned is None or not len(aligned):
        problems.append(jobs.alignment_problem(members, names, series))
    hosts = {member.process.hostname for _, member in members}
    # Each process's device compute per traced step (median, ms) side by
    # side, as a relative spread: processes doing the same work compute
    # alike (the devices that waited for another process idle longer); a
    # share of a step would differ with where each trace cut it.
    busy = [(runs.get(name) or {}).get("device_compute_ms") for name in names]
    busy = [value for value in busy if isinstance(value, (int, float))]
    job = Job(
        group=group,
        process_count=count,
        missing_processes=tuple(tuple(item) for item in jobs.missing_ranges(count, present)),
        unaligned=unaligned,
        problems=tuple(problems),
        aligned_steps=0 if aligned is None else int(len(aligned)),
        processes=tuple(
            ProcessEntry(run=name, process_index=index)
            for (index, _), name in zip(members, names)
        ),
        same_host=len(hosts) == 1 and None not in hosts,
        device_busy_spread=(
            (max(busy) - min(busy)) / max(busy) if len(busy) > 1 and max(busy) > 0 else None
        ),
    )
    if not job.aligned_steps:
        return job

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
    processes = []
    for position, entry in enumerate(job.processes):
        own = float(total[position].sum())
        processes.append(dataclasses.replace(
            entry,
            wait_ms=_spread(wait[position]),
            wait_share=float(wait[position].sum()) / own if own > 0 else None,
            late_steps=int(np.sum((late == position) & (skew > 0))),
            lost_share=float(lost[position]) / everyone if everyone > 0 else None,
        ))
    start_spread = end_spread = Spread()
    if job.same_host and all(item.start is not None for item in series):
        start = np.stack([item.start[at] for item, at in zip(series, positions)])
        if np.all(np.isfinite(start)):
            # Wall times are seconds since the epoch; compared across
            # processes only on one host (one clock).
            start_spread = _spread((start.max(0) - start.min(0)) * 1e3)
            end_ms = start * 1e3 + total
            end_spread = _spread(end_ms.max(0) - end_ms.min(0))
    stride = max(1, -(-len(aligned) // MAX_SERIES_POINTS))
    job = dataclasses.replace(
        job,
        processes=tuple(processes),
        skew_ms=_spread(skew),
        start_spread_ms=start_spread,
        end_spread_ms=end_spread,
        series=SkewSeries(
            step=tuple(aligned[::stride].tolist()),
            skew_ms=tuple(skew[::stride].tolist()),
            late=tuple(int(members[position][0]) for position in late[::stride]),
        ),
    )
    worst = int(np.argmax(lost))
    share = processes[worst].lost_share
    if (
        share is None
        or share < STRAGGLER_MODERATE - 1e-12
        or not _does_more_work(processes, runs, worst)
    ):
        return job
    straggler = processes[worst]
    waits = np.stack([item.data_wait[at] for item, at in zip(series, positions)])
    # How much longer its data wait was than the others' (the rest of its
    # stall is host overhead).
    others = np.delete(np.arange(len(members)), worst)
    excess_wait_ms = float(waits[worst].mean() - waits[others].mean())
    excess_stall_ms = float(stall[worst].mean() - stall[others].mean())
    # Were it on time, every process's step would be shorter by the
    # skew of the steps it was last in.
    saved_ms = float(skew[late == worst].sum()) / len(aligned)
    return dataclasses.replace(job, straggler=Straggler(
        run=straggler.run,
        process_index=straggler.process_index,
        share=share,
        severity="high" if share >= STRAGGLER_HIGH - 1e-12 else "moderate",
        cause=_cause(runs.get(straggler.run) or {}, excess_wait_ms,
                     excess_stall_ms - excess_wait_ms),
        mean_step_ms=float(total.mean()),
        saved_ms=saved_ms,
        few_steps=len(aligned) < FEW_ALIGNED_STEPS,
    ))


def _own_work_ms(run):
    """A process's own host-side work per step (ms): its full fetch,
    overlapped with device work or not, and its host overhead; `None` in
    data recorded without full fetch times."""
    fetch_ms = (run.get("fetch_ms") or {}).get("mean")
    host_ms = (run.get("host_overhead_ms") or {}).get("mean")
    if not isinstance(fetch_ms, (int, float)) or not isinstance(host_ms, (int, float)):
        return None
    return fetch_ms + host_ms


def _does_more_work(processes, runs, worst):
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
    own = [_own_work_ms(runs.get(entry.run) or {}) for entry in processes]
    if any(value is None for value in own) or len(own) < 2:
        return True
    others = [value for index, value in enumerate(own) if index != worst]
    step_ms = ((runs.get(processes[worst].run) or {}).get("step_ms") or {}).get("mean")
    if not isinstance(step_ms, (int, float)) or step_ms <= 0:
        return True
    typical_ms = float(np.median(others))
    excess_ms = own[worst] - typical_ms
    return excess_ms >= STRAGGLER_MODERATE * step_ms and excess_ms >= OWN_WORK_EXCESS * typical_ms


def _cause(run, excess_wait_ms, excess_host_ms):
    """Why the straggler is late: its own verdict when that names a stall
    (`input_bound`, `host_overhead_bound`), else its finding of one, else
    the part of its stall that exceeds the others' more."""
    verdict = run.get("steady_verdict") or run.get("verdict")
    if verdict in STALL_VERDICTS:
        return verdict
    found = [finding.get("id") for finding in run.get("findings") or ()
             if isinstance(finding, dict)]
    for candidate in STALL_VERDICTS:
        if candidate in found:
            return candidate
    return "input_bound" if excess_wait_ms >= excess_host_ms else "host_overhead_bound"


def build_workers(run_data, runs, skipped=()):
    """Every distributed job among `run_data`, lined up (`report.worker_groups`
    writes them as the report's `"workers"`).

    Args:
        run_data: `RunData`s (`record.read_run`) of the runs, with their
            processes' steps (`RunData.steps`).
        runs: The analysed run objects (`report.analyze_run`).
        skipped: `[(run name, ProcessClaim, reason)]` of runs not analysed
            (`jobs.group_runs`).

    Returns:
        A list of `Job`s, sorted by group name; empty when no run came from
        a process of a multi-process job.
    """
    by_name = {run["run"]: run for run in runs}
    groups = jobs.group_runs(run_data, by_name, skipped)
    return [
        analyze_group(group, job.members, by_name, unaligned=job.unaligned, count=job.count,
                      counts=job.counts)
        for group, job in sorted(groups.items())
    ]
