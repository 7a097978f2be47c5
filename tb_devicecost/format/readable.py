"""What of a recorded number can be trusted, and when an aggregate is usable.

Both sides of the format apply these rules (docs/FORMAT.md, "Damaged
data"): the analysis reads every number through `as_number`
(`analysis/guards.py`), and the reader asks `aggregate_usable` whether a
run's numbers can come from its aggregate or need its per-step series
(`provider_reads.read_runs`), so the two never disagree about a run.
"""

import math

from tb_devicecost.format import vocabulary

# Bounds of every number read (ms, counts, rates, bytes), besides 0: a
# nanosecond is far below any step's part, 1e15 ms is 31,000 years. Ratios
# and sums of numbers inside them stay finite (docs/FORMAT.md, "Damaged
# data").
MIN_VALUE = 1e-9
MAX_VALUE = 1e15


def plausible(value):
    """Whether a float is finite and 0 or inside `[MIN_VALUE, MAX_VALUE]`."""
    return math.isfinite(value) and (value == 0 or MIN_VALUE <= value <= MAX_VALUE)


def as_number(value):
    """A plausible non-negative float, or `None`.

    NaN, infinities, negatives and anything outside `0` or
    `[MIN_VALUE, MAX_VALUE]` (an integer too large for a float, 1e308 ms,
    a subnormal 1e-310 ms) are ignored: no time, count or rate that was
    really recorded lies there, and within those bounds no sum, ratio or
    product the analysis forms can overflow to infinity.
    """
    if isinstance(value, bool) or value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not plausible(value):
        return None
    return value


def unreadable_components(components):
    """The parts of the step (and `step`) whose count or total in the
    aggregate's `components` object is not a plausible number, in the
    vocabulary's order."""
    unreadable = []
    for name in vocabulary.COMPONENTS + ("step",):
        summary = components.get(name)
        summary = summary if isinstance(summary, dict) else {}
        if as_number(summary.get("count")) is None or as_number(summary.get("sum_ms")) is None:
            unreadable.append(name)
    return unreadable


def same_recording(aggregate, info):
    """Whether the aggregate was written by the recording whose run info is
    the run's newest (`recording_id`, docs/FORMAT.md "Two fits in one
    log_dir"): true where the run info carries no identity (older data).
    An aggregate of another recording (an earlier script's, in one
    log_dir) holds none of the newest fit's steps."""
    recording = info.get("recording_id") if isinstance(info, dict) else None
    if not isinstance(recording, str):
        return True
    return isinstance(aggregate, dict) and aggregate.get("recording_id") == recording


def aggregate_usable(aggregate, info=None):
    """Whether a run's numbers can come from this aggregate
    (`devicecost/aggregate`), else from its per-step series: an object whose
    `components` hold a plausible count and total for every part of the
    step, of the recording of the run info `info` (`same_recording`)."""
    if not isinstance(aggregate, dict) or not same_recording(aggregate, info):
        return False
    components = aggregate.get("components")
    return isinstance(components, dict) and not unreadable_components(components)
