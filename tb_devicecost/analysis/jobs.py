"""Which runs make up a distributed job, and what could not be placed in one.

A process of a multi-process fit writes to `log_dir/process_<i>/train`
and says in its run info which process of how many it is. Grouping trusts
neither alone: a run whose directory and run info disagree, whose index is
beyond the count, or that repeats an index (`process_1` and `process_01`)
is kept beside its job as not lined up, with the reason, never dropped in
silence (`workers.build_workers`). Each run's claim to a place is its
`RunData.process` (`ProcessClaim`, read by `process_steps.read_claim`).
Nothing here walks `range(count)`: a run info may claim a million
processes.
"""

import dataclasses

from tb_devicecost.analysis.reasons import Reason
from tb_devicecost.analysis.reasons import reason


@dataclasses.dataclass(frozen=True)
class Unaligned:
    """A run of a job that could not be lined up with the others.

    `process_index` is the index its directory gives; `claimed_index` the
    one its run info gives, when that is a place in the job (`None`
    otherwise); `reason` says why (a `reasons.Reason`, said by `words.jobs`).
    """

    run: str
    process_index: int
    claimed_index: int
    reason: Reason


@dataclasses.dataclass(frozen=True)
class JobRuns:
    """The runs of one job (`group_runs`): `members`, `((index, RunData), ...)`
    lined up, by index; `unaligned`, the `Unaligned` runs, by name; `count`,
    the largest process count its runs' info gives."""

    members: tuple
    unaligned: tuple
    count: int
    # `((count, run), ...)`: where the runs' info disagree on the job's
    # size, one run per count said (the job is taken as the largest).
    counts: tuple = ()


def missing_ranges(count, present):
    """`[[first, last], ...]`: the indices below `count` not in `present`,
    as inclusive ranges. Bounded by the indices present, never by `count`
    (a run info may claim a million processes)."""
    ranges, start = [], 0
    for index in sorted(index for index in set(present) if 0 <= index < count):
        if index > start:
            ranges.append([start, index - 1])
        start = index + 1
    if start < count:
        ranges.append([start, count - 1])
    return ranges


def alignment_problem(members, names, series):
    """Why no step could be lined up, a `reasons.Reason`."""
    if len(members) < 2:
        return reason("only_one_placed", index=members[0][0] if members else None)
    empty = [name for name, item in zip(names, series) if item is None or not len(item.step)]
    if empty:
        return reason("no_steady_steps", names=tuple(empty))
    spans = tuple(
        (index, int(item.step[0]), int(item.step[-1]))
        for (index, _), item in list(zip(members, series))[:4])
    return reason("no_shared_step", spans=spans, more=len(members) > 4)


def count_problem(counts):
    """Why the job's size is uncertain (a `reasons.Reason`), or `None`: its
    runs' info disagree on the process count (`JobRuns.counts`)."""
    if len(counts) < 2:
        return None
    return reason("job_size_disagrees", counts=tuple(counts[:4]), more=len(counts) > 4,
                  taken=max(count for count, _ in counts))


def group_runs(runs, by_name, skipped=()):
    """`{group: JobRuns}`: the runs of each job, lined up or not.

    Args:
        runs: `RunData`s (`record.read_run`).
        by_name: `{run name: run object}` of the analysed runs; others are
            left out.
        skipped: `[(run name, ProcessClaim, reason)]` of a job's runs that
            were not analysed (a process with run info but no step): named
            beside the job with the reason, never "not recorded".
    """
    groups = {}
    for name, claim, why in sorted(skipped, key=lambda item: item[0]):
        if claim is None:
            continue
        job = groups.setdefault(claim.group, {"members": {}, "unaligned": [], "count": 0,
                                              "counts": {}})
        lined_up = claim.lined_up
        job["unaligned"].append(Unaligned(
            run=name, process_index=claim.directory_index,
            claimed_index=claim.index if lined_up else None,
            reason=reason("not_reported", why=why),
        ))
    for run in sorted(runs, key=lambda item: item.run):
        claim = run.process
        name = run.run
        if claim is None or name not in by_name:
            continue
        group, directory_index, index, count = (
            claim.group, claim.directory_index, claim.index, claim.count)
        job = groups.setdefault(group, {"members": {}, "unaligned": [], "count": 0,
                                        "counts": {}})
        job["count"] = max(job["count"], count)
        job["counts"].setdefault(count, name)
        why = None
        if index is None and claim.given_index is not None:
            why = reason("index_no_place", directory_index=directory_index,
                         given=claim.given_index)
        elif index is None:
            why = reason("index_missing", directory_index=directory_index)
        elif directory_index != index:
            why = reason("index_disagrees", directory_index=directory_index, index=index)
        elif index >= count:
            why = reason("index_beyond_count", index=index, count=count)
        elif index in job["members"]:
            # Two runs claiming one index (`process_1` and `process_01`, or a
            # rerun into the same log_dir): the one named as the recording
            # names it (`process_1`) is lined up, else the first by name.
            first = job["members"][index]
            if f"/process_{index}/" in f"/{name}/" and \
                    f"/process_{index}/" not in f"/{first.run}/":
                job["members"][index], run, name = run, first, first.run
                directory_index = first.process.directory_index
            why = reason("index_repeated", index=index, lined_up=job["members"][index].run)
        if why is None:
            job["members"][index] = run
        else:
            job["unaligned"].append(Unaligned(
                run=name, process_index=directory_index,
                claimed_index=index if index is not None and index < count else None,
                reason=why,
            ))
    return {
        group: JobRuns(
            members=tuple(sorted(job["members"].items(), key=lambda member: member[0])),
            unaligned=tuple(job["unaligned"]),
            count=job["count"],
            counts=tuple(sorted(job["counts"].items())),
        )
        for group, job in groups.items()
        if job["counts"]  # A job of which some run was analysed.
    }
