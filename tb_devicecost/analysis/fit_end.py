"""How a run's newest fit ended: whole only when its closing document says so.

Runs recorded with a fit identity (`fit_id` in the run info, written first
by each fit; docs/FORMAT.md, "Fits") are whole only when their newest
aggregate belongs to that fit and says it closed it (`closed`, written at
the fit's end, or where recording stopped, with the `error`). Any other run
of such data is unfinished: still being written, or its process ended
without closing it (kill -9, the OOM killer, SIGHUP, a full disk before
even the last aggregate could be written). How far it got is the newest
step on disk, from the aggregate or the per-step rows, whichever is later.
Runs recorded before the identity keep their aggregate's `status`.
"""

import dataclasses
import re

from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.format import vocabulary
from tb_devicecost.format.readable import same_recording

_ERRNO = re.compile(r"\[Errno -?\d+\]\s*(?P<text>[^:]*)")


@dataclasses.dataclass(frozen=True)
class FitEnd:
    """How the run's newest fit ended.

    Attributes:
        fit_id: The fit's identity (its run info's `fit_id`).
        closed: Whether its closing aggregate was found.
        status: `"complete"`, `"interrupted"` (it raised, SIGTERM, recording
            stopped) or `"running"` (not closed: still written, or ended
            without closing it).
        reached_step: The newest global step on disk, plus one (how far it
            got), or `None`.
        reason: Why recording stopped, in words (`"No space left on
            device"`), where the process left one; else `None`.
        own_aggregate: Whether the newest aggregate is of this fit's
            recording (its own, or an earlier fit's of one callback, which
            counts the same steps); else its numbers come from the rows.
    """

    fit_id: str
    closed: bool
    status: str
    reached_step: int = None
    reason: str = None
    own_aggregate: bool = True

    def as_dict(self):
        return dataclasses.asdict(self)


def short_reason(error):
    """`"No space left on device"` of `"OSError: [Errno 28] No space left
    on device"`; the error as it is otherwise (at most 200 characters)."""
    if not isinstance(error, str) or not error.strip():
        return None
    found = _ERRNO.search(error)
    text = found.group("text") if found else error
    return " ".join(text.split())[:200] or None


def read_end(info, aggregate, series):
    """The `FitEnd` of a run, or `None` for data recorded without a fit
    identity (whose aggregate's `status` stands as it was).

    Args:
        info: The run-info document.
        aggregate: The newest aggregate document, or `None`.
        series: The per-step series (`reader.RunRecord.series`).
    """
    info = as_dict(info)
    fit_id = info.get("fit_id")
    if not isinstance(fit_id, str) or not fit_id:
        return None
    aggregate = aggregate if isinstance(aggregate, dict) else None
    # The recording's aggregate is cumulative: an earlier fit's of the same
    # recording still counts its steps; another recording's holds none.
    own = aggregate is not None and same_recording(aggregate, info)
    this_fit = own and aggregate.get("fit_id") == fit_id
    steps = []
    if own:
        steps.append(as_count(aggregate.get("steps")))
    series = as_dict(series)
    recorded = series.get(vocabulary.STEP)
    if recorded is not None and len(recorded):
        try:
            steps.append(as_count(int(max(recorded)) + 1))
        except (TypeError, ValueError, OverflowError):
            pass
    steps = [step for step in steps if step is not None]
    reached = max(steps) if steps else None
    closed = this_fit and aggregate.get("closed") is True
    status = aggregate.get("status") if this_fit else None
    if status not in ("complete", "interrupted", "running"):
        status = "running"
    if not closed and status == "complete":
        status = "running"
    reason = short_reason(aggregate.get("error")) if this_fit else None
    return FitEnd(
        fit_id=fit_id[:64],
        closed=closed,
        status=status,
        reached_step=reached,
        reason=reason,
        own_aggregate=own,
    )

