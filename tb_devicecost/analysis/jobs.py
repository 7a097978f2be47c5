"""Which runs make up a distributed job, and what could not be placed in one.

A process of a multi-process fit writes to `log_dir/process_<i>/train`
and says in its run info which process of how many it is. Grouping trusts
neither alone: a run whose directory and run info disagree, whose index is
beyond the count, or that repeats an index (`process_1` and `process_01`)
is kept beside its job as not lined up, with the reason, never dropped in
silence (`workers.build_workers`). Nothing here walks `range(count)`: a
run info may claim a million processes.
"""

import re

from tb_devicecost.analysis.formatting import confined
from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import record_field
from tb_devicecost.analysis.names import run_name

# The part of a run's name that holds the process index: `log_dir/process_1/train`.
_PROCESS_PART = re.compile(r"^process_(\d{1,6})$")


def process_claim(record):
    """`(group, directory_index, info_index, info_count)` of a run whose
    name holds a `process_<i>` part and whose run info says it is one
    process of several, else `None`. Unlike `process_of`, the two indices
    need not agree: a run that claims a place in a job without fitting it
    is named as such (`build_workers`), not dropped."""
    name = run_name(record)
    info = as_dict(record_field(record, "info"))
    count = as_count(info.get("process_count"))
    index = as_count(info.get("process_index"))
    if not isinstance(name, str) or count is None or count < 2:
        return None
    parts = name.split("/")
    found = None
    for position, part in enumerate(parts):
        match = _PROCESS_PART.match(part)
        if match:
            found = position, int(match.group(1))
            # The part that agrees with the run info, should several match.
            if found[1] == index:
                break
    if found is None:
        return None
    position, directory_index = found
    group = "/".join(parts[:position] + parts[position + 1:]) or "."
    return group, directory_index, index, count


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
    empty = [name for name, item in zip(names, series) if item is None or not len(item["step"])]
    if empty:
        return (f"No steps lined up: {_names(empty)} {'has' if len(empty) == 1 else 'have'} "
                "no steady steps (no per-step series was read, or every step is warm-up "
                "or damaged), so no straggler can be named.")
    spans = ", ".join(
        f"process {index} steps {int(item['step'][0]):,}\u2013{int(item['step'][-1]):,}"
        for (index, _), item in list(zip(members, series))[:4])
    return (f"No steps lined up: the processes share no global step ({spans}"
            f"{', ...' if len(members) > 4 else ''}), so no straggler can be named.")


def _names(names, most=3):
    shown = ", ".join(confined(name) for name in names[:most])
    return shown + (f" and {len(names) - most:,} more" if len(names) > most else "")


def group_runs(records, by_name):
    """`{group: {"members": {index: record}, "unaligned": [...], "count"}}`.

    Args:
        records: `reader.RunRecord`s (or dicts).
        by_name: `{run name: run object}` of the analysed runs; others are
            left out.
    """
    groups = {}
    for record in sorted(records, key=lambda item: str(run_name(item))):
        claim = process_claim(record)
        name = run_name(record)
        if claim is None or name not in by_name:
            continue
        group, directory_index, index, count = claim
        job = groups.setdefault(group, {"members": {}, "unaligned": [], "count": 0})
        job["count"] = max(job["count"], count)
        reason = None
        if index is None:
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
                    f"/process_{index}/" not in f"/{run_name(first)}/":
                job["members"][index], record, name = record, first, run_name(first)
                directory_index = process_claim(first)[1]
            reason = (f"process {index:,} is also recorded as "
                      f"{confined(run_name(job['members'][index]))}, which is "
                      "the one lined up; this run is not.")
        if reason is None:
            job["members"][index] = record
        else:
            job["unaligned"].append({
                "run": name, "process_index": directory_index,
                "claimed_index": index if index is not None and index < count else None,
                "reason": reason,
            })
    return groups
