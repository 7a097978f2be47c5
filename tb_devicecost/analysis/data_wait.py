"""How much of a run's data wait is the cost of a ready batch: the fetch floor.

Even a pipeline that keeps ahead of the step costs something to hand over a
batch that is already there. The fetch floor (`fetch_floor_ms`: the p50
cost of `next()` on an iterator whose batches are ready, measured while
the run trained) sets that cost apart: the cost of a ready batch
(`ready_fetch_ms`), and the starved data wait above it
(`starved_data_wait_ms`), which alone counts as starvation
(docs/VERDICTS.md, "The fetch floor").
"""

from tb_devicecost.analysis.thresholds import EPSILON
from tb_devicecost.analysis.thresholds import FETCH_FLOOR_MAX_FACTOR
from tb_devicecost.analysis.thresholds import MIN_READY_FETCH_MS


def split_data_wait(mean_ms, p50_ms, fetch_floor_ms, fetch_in_graph):
    """`(ready_fetch_ms, starved_data_wait_ms)`: the mean data wait split into
    the cost of a ready batch and the starved data wait above it.

    The fetch floor is a p50 (of `next()` on an iterator whose batches are
    ready), so it is compared with the p50 data wait. When the p50 wait is
    within FETCH_FLOOR_MAX_FACTOR of the floor (or below it), the typical
    step got a ready batch and the p50 wait is this pipeline's own cost of
    handing one over; above that, the floor is. Either way the cost is never
    more than the p50 wait, nor than the mean wait it is taken from: a part
    is never larger than its whole. Without a floor the cost is unknown
    (`None`) and all of the wait is counted; `judge` is then conservative.

    Args:
        mean_ms: The mean data wait per step.
        p50_ms: The p50 data wait per step.
        fetch_floor_ms: The fetch floor, or `None` when not measured.
        fetch_in_graph: Whether the batch is fetched inside the compiled
            function (its wait is then in compute: nothing is starved).
    """
    if mean_ms is None:
        return None, None
    if fetch_in_graph:
        return None, 0.0
    if fetch_floor_ms is None:
        return None, mean_ms
    fetch_floor_ms = max(fetch_floor_ms, MIN_READY_FETCH_MS)
    ready_fetch_ms = fetch_floor_ms
    if p50_ms is not None and p50_ms <= FETCH_FLOOR_MAX_FACTOR * fetch_floor_ms:
        ready_fetch_ms = p50_ms
    ready_fetch_ms = min(ready_fetch_ms, mean_ms)
    return ready_fetch_ms, max(0.0, mean_ms - ready_fetch_ms)


def ready_batch_case(p50_ms, fetch_floor_ms, mean_ms):
    """How the typical step got its batch, as the words say it:
    `(case, factor, clamped)`. `case`: `"at_floor"` (the p50 wait no more
    than the fetch floor), `"within_factor"` (within `factor` =
    `FETCH_FLOOR_MAX_FACTOR` times it) or `"waited"`; `clamped`: the cost of
    a ready batch is more than the mean wait, so it is clamped to it."""
    if p50_ms is not None and p50_ms <= fetch_floor_ms:
        case = "at_floor"
    elif p50_ms is not None and p50_ms <= FETCH_FLOOR_MAX_FACTOR * fetch_floor_ms:
        case = "within_factor"
    else:
        case = "waited"
    cost_ms = unclamped_ready_fetch_ms(p50_ms, fetch_floor_ms)
    clamped = cost_ms is not None and mean_ms is not None and cost_ms > mean_ms + EPSILON
    return case, FETCH_FLOOR_MAX_FACTOR, clamped


def unclamped_ready_fetch_ms(p50_ms, fetch_floor_ms):
    """The p50-based cost of a ready batch before it is clamped to the mean
    data wait (the run object's `ready_fetch_ms` is clamped), from the p50
    data wait and the fetch floor (ms, `None` when unknown)."""
    if fetch_floor_ms is not None:
        fetch_floor_ms = max(fetch_floor_ms, MIN_READY_FETCH_MS)
    if p50_ms is not None and fetch_floor_ms and p50_ms <= FETCH_FLOOR_MAX_FACTOR * fetch_floor_ms:
        return p50_ms
    return fetch_floor_ms
