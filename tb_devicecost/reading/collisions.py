"""Two fits writing into one run directory at once, found from the files.

Each `DeviceCostCallback` (or `StepRecorder`) writes its own event file,
named `events.out.tfevents.<opened, s>.<host>.<pid>.<counter>.devicecost`
(`writer.SummaryWriter`). Repeated fits of one process write one file
after another; two processes given the same `log_dir` (not a distributed
job, whose processes write to `process_<i>`) write two files at once into
one run directory, and TensorBoard merges them into one run: the newest
documents win, so one fit's figures stand for both. A run directory whose
files of ours were open at the same time is said to hold colliding fits
(`docs/FORMAT.md`, "Two fits in one log_dir"): the run is still read and
shown, with that problem, never one fit in silence.

A file's time is from its opening (the name's whole seconds) to its last
write (its modification time). Two files collide when each was opened at
least a second before the other's last write: the name's whole seconds
never make fits that ran one after the other look simultaneous.
"""

import os
import re

_OUR_FILE = re.compile(
    r"^events\.out\.tfevents\.(?P<opened>\d{1,12})\.(?P<host>.*)\."
    r"(?P<pid>\d{1,10})\.(?P<counter>\d{6})\.devicecost$"
)


def _spans(paths):
    """`[(opened, last_write, name, host, pid)]` of our event files among `paths`."""
    spans = []
    for path in paths:
        name = os.path.basename(path)
        match = _OUR_FILE.match(name)
        if not match:
            continue
        try:
            last_write = os.stat(path).st_mtime
        except OSError:
            continue
        spans.append((int(match.group("opened")), last_write, name,
                      match.group("host"), match.group("pid")))
    return sorted(spans)


def collided(paths):
    """What a run directory's event files say of fits written at once.

    Args:
        paths: The run directory's event files (`reader.LogdirScan.runs`).

    Returns:
        A list of sentences, one per pair of files written at the same
        time (at most three, then how many more); empty when none were.
    """
    spans = _spans(paths)
    pairs = []
    for position, first in enumerate(spans):
        for second in spans[position + 1:]:
            if second[0] + 1 > first[1]:
                break  # Sorted by opening: no later file overlaps `first`.
            if first[0] + 1 <= second[1]:
                pairs.append((first, second))
    reasons = [
        f"Two fits wrote into this run directory at once: {first[2]} (process "
        f"{first[4]} on {first[3]}) and {second[2]} (process {second[4]} on "
        f"{second[3]}) were written at the same time. TensorBoard reads them as one "
        "run, so its figures are one fit's (the newest documents) and the other's "
        "are lost; give each fit its own log_dir, e.g. DeviceCostCallback('logs/a') "
        "and DeviceCostCallback('logs/b')."
        for first, second in pairs[:3]
    ]
    if len(pairs) > 3:
        reasons.append(f"And {len(pairs) - 3:,} more pairs of event files written at once.")
    return reasons
