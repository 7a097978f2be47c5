"""The words of a distributed job's findings: `straggler` and
`waiting_for_others` (docs/VERDICTS.md, "Stragglers").

`workers.py` decides who holds a job back and why (a `workers.Straggler`
in a `workers.Job`), `waiting.py` which processes mostly wait for it (a
`waiting.Waiting`); this module words them as `findings.py` words a
run's findings: each function returns `(headline, message, fix)`, the
headline from `phrases.py`, the message the arithmetic behind it, quoting
the figures as `formatting` writes them, the fix what to change.
"""

from tb_devicecost.analysis.formatting import confined
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.words import phrases

# The straggler's fix when its own findings hold none for its cause.
STRAGGLER_FIXES = {
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


def straggler(job, shares, own_verdict, own_fix):
    """The words of the `straggler` finding of `job` (a `workers.Job` with
    its `Straggler`).

    Args:
        job: The `workers.Job`.
        shares: The straggler's run's `shares` (run object), or `None`.
        own_verdict: The straggler's own verdict (steady, else overall),
            or `None`.
        own_fix: The fix of the straggler's own finding of its cause, or
            `None`.
    """
    late = job.straggler
    others = job.process_count - 1
    message = (
        f"Process {late.process_index} ({confined(late.run)}) holds "
        + ("the other process" if others == 1 else f"the other {others} processes")
        + " back: "
        f"{fmt_share(late.share)} of all the processes' step time together is spent "
        f"waiting for it, inside their compute (the all-reduce waits for the last "
        f"process). The processes arrive {fmt_ms(job.skew_ms.p50)} ms apart at p50 and "
        f"{fmt_ms(job.skew_ms.p90)} ms at p90, over {job.aligned_steps} aligned "
        f"steps. Its cause: {late.cause}"
        + (
            f" (its data wait is {fmt_share(shares.get('data_wait'))} "
            "and its host overhead "
            f"{fmt_share(shares.get('host_overhead'))} of its "
            "steady-state time"
            if shares
            else " ("
        )
        + f"; its own verdict: {own_verdict or 'none'})."
    )
    if late.few_steps:
        message += (
            f" Note: only {job.aligned_steps} step{'s' if job.aligned_steps != 1 else ''} "
            "of the processes line up (the steps they all recorded), few to name a "
            "straggler on; record the processes over the same, longer run of steps "
            "to confirm it."
        )
    fix = (
        f"Make process {late.process_index} as fast as the others "
        "outside its step: every process waits for it each step. "
        + (own_fix or STRAGGLER_FIXES.get(late.cause, ""))
        + " Check that every process gets the same share of the data, the "
        "same input pipeline and a host no busier than the others'."
    ).strip()
    return phrases.straggler(late.process_index, late.share), message, fix


def waiting_for_others(waiting):
    """The words of the `waiting_for_others` finding of a `waiting.Waiting`."""
    message = (
        f"Process {waiting.process_index} ({confined(waiting.run)}) spends "
        f"{fmt_share(waiting.wait_share)} of its step waiting for process "
        f"{waiting.waits_for} inside the collective (the all-reduce waits for the "
        f"last process to arrive): {fmt_ms(waiting.wait_p50_ms)} ms per step at p50 "
        f"(p90 {fmt_ms(waiting.wait_p90_ms)} ms)"
        + (f" of its {fmt_ms(waiting.step_p50_ms)} ms step"
           if waiting.step_p50_ms is not None else "")
        + "."
    )
    if waiting.communication_fraction is not None:
        message += (
            f" Its trace agrees: its device spent "
            f"{fmt_share(waiting.communication_fraction)} of each traced step in "
            f"collectives and {fmt_share(waiting.compute_fraction)} computing."
        )
    message += (
        f" Its own verdict, {waiting.own_verdict or 'none'}, is set aside: "
        "its step is not what sets the pace."
    )
    fix = (
        f"Nothing to change in this process: make process {waiting.waits_for} keep pace "
        f"(its `straggler` finding: cause {waiting.cause or 'unknown'})."
    )
    headline = phrases.waiting_for_others(
        waiting.process_index, waiting.wait_share, waiting.waits_for)
    return headline, message, fix


# Why runs of a job, or their steps, could not be lined up (`analysis/jobs.py`).


def _names(names, most=3):
    shown = ", ".join(confined(name) for name in names[:most])
    return shown + (f" and {len(names) - most:,} more" if len(names) > most else "")


def only_one_placed(index):
    which = f"process {index}" if index is not None else "no process"
    return (f"Only {which} could be placed in the job, so there is nothing to "
            "line it up with: no straggler can be named.")


def no_steady_steps(names):
    return (f"No steps lined up: {_names(names)} {'has' if len(names) == 1 else 'have'} "
            "no steady steps (no per-step series was read, or every step is warm-up "
            "or damaged), so no straggler can be named.")


def no_shared_step(spans, more):
    shown = ", ".join(f"process {index} steps {first:,}\u2013{last:,}"
                      for index, first, last in spans)
    return (f"No steps lined up: the processes share no global step ({shown}"
            f"{', ...' if more else ''}), so no straggler can be named.")


def job_size_disagrees(counts, more, taken):
    said = ", ".join(f"{confined(run)} says {count:,}" for count, run in counts)
    return (f"The processes' run info disagree on the job's size ({said}"
            f"{', ...' if more else ''}): it is taken as {taken:,} processes.")


def not_reported(why):
    return f"it is not reported ({why.rstrip('.')}), so it is not lined up."


def index_no_place(directory_index, given):
    return (f"its directory says process {directory_index:,} but its run info "
            f"gives process index {confined(given)}, which is no "
            "process's place, so it is not lined up.")


def index_missing(directory_index):
    return (f"its directory says process {directory_index:,} but its run info "
            "gives no process index, so it is not lined up.")


def index_disagrees(directory_index, index):
    return (f"its directory says process {directory_index:,} but its run info "
            f"says process {index:,}, so it is not lined up (rename its "
            f"directory process_{index}).")


def index_beyond_count(index, count):
    return (f"its run info says process {index:,} of {count:,} processes, "
            "an index beyond the count, so it is not lined up.")


def index_repeated(index, lined_up):
    return (f"process {index:,} is also recorded as {confined(lined_up)}, which is "
            "the one lined up; this run is not.")


def unaligned_run(run, why):
    return f"{confined(run)}: {why}"


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "only_one_placed": only_one_placed,
    "no_steady_steps": no_steady_steps,
    "no_shared_step": no_shared_step,
    "job_size_disagrees": job_size_disagrees,
    "not_reported": not_reported,
    "index_no_place": index_no_place,
    "index_missing": index_missing,
    "index_disagrees": index_disagrees,
    "index_beyond_count": index_beyond_count,
    "index_repeated": index_repeated,
    "unaligned_run": unaligned_run,
}
