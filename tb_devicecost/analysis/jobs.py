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

from tb_devicecost.analysis.formatting import confined


@dataclasses.dataclass(frozen=True)
class Unaligned:
    """A run of a job that could not be lined up with the others.

    `process_index` is the index its directory gives; `claimed_index` the
    one its run info gives, when that is a place in the job (`None`
    otherwise); `reason` says why, in words.
    """

    run: str
    process_index: int
    claimed_index: int
    reason: str


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
    """Why no step could be lined up, in words (`None` when some were)."""
    if len(members) < 2:
        which = f"process {members[0][0]}" if members else "no process"
        return (f"Only {which} could be placed in the job, so there is nothing to "
                "line it up with: no straggler can be named.")
    empty = [name for name, item in zip(names, series) if item is None or not len(item.step)]
    if empty:
        return (f"No steps lined up: {_names(empty)} {'has' if len(empty) == 1 else 'have'} "
                "no steady steps (no per-step series was read, or every step is warm-up "
                "or damaged), so no straggler can be named.")
    spans = ", ".join(
        f"process {index} steps {int(item.step[0]):,}\u2013{int(item.step[-1]):,}"
        for (index, _), item in list(zip(members, series))[:4])
    return (f"No steps lined up: the processes share no global step ({spans}"
            f"{', ...' if len(members) > 4 else ''}), so no straggler can be named.")


def _names(names, most=3):
    shown = ", ".join(confined(name) for name in names[:most])
    return shown + (f" and {len(names) - most:,} more" if len(names) > most else "")


def count_problem(counts):
    """Why the job's size is uncertain, in words, or `None`: its runs' info
    disagree on the process count (`JobRuns.counts`)."""
    if len(counts) < 2:
        return None
    said = ", ".join(f"{confined(run)} says {count:,}" for count, run in counts[:4])
    return (f"The processes' run info disagree on the job's size ({said}"
            f"{', ...' if len(counts) > 4 else ''}): it is taken as "
            f"{max(count for count, _ in counts):,} processes.")


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
            reason=f"it is not reported ({why.rstrip('.')}), so it is not lined up.",
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
        reason = None
        if index is None and claim.given_index is not None:
            reason = (f"its directory says process {directory_index:,} but its run info "
                      f"gives process index {confined(claim.given_index)}, which is no "
                      "process's place, so it is not lined up.")
        elif index is None:
            reason = (f"its directory says process {directory_index:,} but its run info "
                      "gives no process index, so it is not lined up.")
        elif directory_index != index:
            reason = (f"its directory says process {directory_index:,} but its run info "
                      f"says process {index:,}, so it is not lined up (rename its "
                      f"directory process_{index}).")
        elif index >= count:
            reason = (f"its run info says process {index:,} of {count:,} processes, "
                      "an index beyond the count, so it is not lined up.")
        elif index in job["members"]:
            # Two runs claiming one index (`process_1` and `process_01`, or a
            # rerun into the same log_dir): the one named as the recording
            # names it (`process_1`) is lined up, else the first by name.
            first = job["members"][index]
            if f"/process_{index}/" in f"/{name}/" and \
                    f"/process_{index}/" not in f"/{first.run}/":
                job["members"][index], run, name = run, first, first.run
                directory_index = first.process.directory_index
            reason = (f"process {index:,} is also recorded as "
                      f"{confined(job['members'][index].run)}, which is "
                      "the one lined up; this run is not.")
        if reason is None:
            job["members"][index] = run
        else:
            job["unaligned"].append(Unaligned(
                run=name, process_index=directory_index,
                claimed_index=index if index is not None and index < count else None,
                reason=reason,
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
