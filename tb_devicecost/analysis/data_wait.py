"""How much of a run's data wait is the cost of a ready batch: the fetch floor.

Even a pipeline that keeps ahead of the step costs something to hand over a
batch that is already there. The fetch floor (the p50 cost of `next()` on
an iterator whose batches are ready, measured by the recorder) sets that
cost apart, so that only the wait above it counts as starvation
(docs/VERDICTS.md, "The fetch floor").
"""

from tb_devicecost.analysis.thresholds import FETCH_FLOOR_MAX_FACTOR
from tb_devicecost.analysis.thresholds import MIN_READY_FETCH_MS


def split_data_wait(mean, p50, fetch_floor, fetch_in_graph):
    """(ready handover cost, mean wait above it) in milliseconds.

    The fetch floor is a p50 (of `next()` on an iterator whose batches are
    ready), so it is compared with the p50 data wait. When the p50 wait is
    within FETCH_FLOOR_MAX_FACTOR of the floor (or below it), the typical
    step got a ready batch and the p50 wait is this pipeline's own cost of
    handing one over; above that, the floor is. Either way the cost is never
    more than the p50 wait, nor than the mean wait it is taken from: a part
    is never larger than its whole. Without a floor the cost is unknown
    (`None`) and all of the wait is counted; `judge` is then conservative.

    Args:
        mean: The mean data wait per step.
        p50: The p50 data wait per step.
        fetch_floor: The fetch floor (ms), or `None` when not measured.
        fetch_in_graph: Whether the batch is fetched inside the compiled
            function (its wait is then in compute: nothing is starved).
    """
    if mean is None:
        return None, None
    if fetch_in_graph:
        return None, 0.0
    if fetch_floor is None:
        return None, mean
    fetch_floor = max(fetch_floor, MIN_READY_FETCH_MS)
    ready = fetch_floor
    if p50 is not None and p50 <= FETCH_FLOOR_MAX_FACTOR * fetch_floor:
        ready = p50
    ready = min(ready, mean)
    return ready, max(0.0, mean - ready)


def ready_cost(p50, floor):
    """The p50-based cost of a ready batch before it is clamped to the mean,
    from the p50 data wait and the fetch floor (ms, `None` when unknown)."""
    if floor is not None:
        floor = max(floor, MIN_READY_FETCH_MS)
    if p50 is not None and floor and p50 <= FETCH_FLOOR_MAX_FACTOR * floor:
        return p50
    return floor
