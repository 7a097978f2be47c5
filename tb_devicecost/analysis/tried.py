"""Fixes tried: what each change measured on the user's own model.

`tb_devicecost.try_fixes` records a baseline and each change as runs
`<dir>/tried/<change>` whose run info says what was tried (`tried`) and
each fit's steady samples/s (`fits`; the baseline's first fit, round 0,
read the findings and is left out). The fits were interleaved (baseline,
changes, changes reversed, baseline), so:

- **measured**: the median samples/s of a change's fits over the median of
  the baseline's fits (rounds 1 and on);
- **noise**: the largest deviation of a baseline fit from that median, as
  a share of it, at least `NOISE_FLOOR`; `None` with fewer than two;
- **kept**: measured above 1 + noise; **slower**: below 1 - noise;
- **predicted**: the estimate of the baseline's finding whose `change` it
  is; an input change's never above what `input_free` measured (a
  ceiling: removing the input entirely), and none where the input and the
  model would share too few cores;
- **advised**: the best measured of the changes that keep the training's
  arithmetic (`batch_size` does not) and were kept; none when nothing beat
  the noise.

Pure functions over `RunData`s and the report's run objects.
"""

import dataclasses

import numpy as np

from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.analysis.thresholds import INPUT_FREE_MIN_GAIN
from tb_devicecost.analysis.thresholds import NOISE_FLOOR
from tb_devicecost.analysis.thresholds import SHARED_CORES
from tb_devicecost.format import vocabulary

_KNOWN = frozenset(vocabulary.CHANGES + vocabulary.CEILINGS + ("baseline",))
_MAX_FITS = 100


@dataclasses.dataclass(frozen=True)
class TriedMark:
    """A run's `tried` entry of its run info: what was tried and each fit."""

    name: str
    change: str
    what: str
    keeps_arithmetic: bool
    ceiling: bool
    tf_data: bool
    # `(round, samples_per_s)` of each fit with figures.
    fits: tuple


def _median(values):
    return float(np.median(values))


def _rate(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value > 0 and value == value and value != float("inf") else None


def read_mark(value):
    """The `TriedMark` of a run info's `tried`, or `None`."""
    if not isinstance(value, dict) or value.get("change") not in _KNOWN:
        return None
    fits = []
    for fit in value.get("fits") if isinstance(value.get("fits"), list) else ():
        if not isinstance(fit, dict):
            continue
        round_index = fit.get("round")
        rate = _rate(fit.get("samples_per_s"))
        if isinstance(round_index, int) and not isinstance(round_index, bool) and rate:
            fits.append((round_index, rate))
    return TriedMark(
        name=str(value.get("name") or ""),
        change=value["change"],
        what=str(value.get("what") or "")[:300],
        keeps_arithmetic=value.get("keeps_arithmetic") is not False,
        ceiling=value["change"] in vocabulary.CEILINGS,
        tf_data=value.get("tf_data") is True,
        fits=tuple(fits[:_MAX_FITS]),
    )


def session_key(run_name):
    """`logs/try` for `logs/try/tried/workers/train`: the trials' directory."""
    parts = run_name.split("/")
    if "tried" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index("tried")
    return "/".join(parts[:index])


def find_sessions(run_data):
    """`{session: {change: RunData}}` of the training runs `try_fixes`
    recorded, each session holding its baseline."""
    sessions = {}
    for run in run_data:
        mark = run.tried
        if mark is None or not run.run.endswith("/train"):
            continue
        key = session_key(run.run)
        if key is None:
            continue
        sessions.setdefault(key, {})[mark.change] = run
    return {key: runs for key, runs in sessions.items() if "baseline" in runs}


def _measured_rates(mark):
    return [rate for round_index, rate in mark.fits if round_index >= 1]


def noise(baseline):
    """The baseline's noise (a share), or `None` with fewer than two fits."""
    rates = _measured_rates(baseline.tried)
    if len(rates) < 2:
        return None
    middle = _median(rates)
    return max(NOISE_FLOOR, max(abs(rate / middle - 1.0) for rate in rates))


def measured(run, baseline):
    """A change's median samples/s over the baseline's, or `None`."""
    rates, base = _measured_rates(run.tried), _measured_rates(baseline.tried)
    if not rates or not base:
        return None
    return _median(rates) / _median(base)


def input_free_gain(session):
    """What `input_free` measured in a session, or `None`."""
    run = session.get("input_free")
    return measured(run, session["baseline"]) if run is not None else None


def _finding_for(change, findings):
    """The baseline's first finding whose `change` this is, with an estimate."""
    for finding in findings:
        if finding.get("change") == change:
            return finding
    if change == "input_free" or change in vocabulary.INPUT_CHANGES:
        # An input change tried beside the one the input finding names:
        # that finding's estimate is the one to judge it by.
        return next((f for f in findings if f.get("id") in ("input_bound", "input_stalls")), None)
    return None


def _predicted(change, run, baseline, base_object, ceiling):
    """`(speedup or None, why)`: what the baseline's findings predicted."""
    finding = _finding_for(change, base_object.get("findings") or ())
    expected = (finding or {}).get("expected") or {}
    speedup = _rate(expected.get("speedup")) if expected.get("of") == "samples_per_s" else None
    if change in vocabulary.CEILINGS:
        # Measured, not a fix: it bounds the input finding's estimate
        # (`_cap`), which the basis quotes.
        return None, reason(
            "tried_ceiling", finding=finding["id"] if finding is not None else None,
            speedup=speedup)
    if speedup is None:
        if finding is None:
            return None, reason("tried_no_finding", change=change)
        return None, reason("tried_no_estimate", finding=finding["id"],
                            basis=expected.get("basis"))
    if expected.get("bound") != "about":
        return None, reason("tried_bound", finding=finding["id"], estimate=expected.get("text"))
    if change == "batch_size":
        return None, reason("tried_other_batch")
    if change in vocabulary.INPUT_CHANGES:
        workers = change in ("workers", "use_multiprocessing")
        pipeline = baseline.input_pipeline or {}
        if change == "workers" and pipeline.get("kind") != "torch DataLoader" and not (
                pipeline.get("kind") == "PyDataset" and pipeline.get("use_multiprocessing")):
            # Issue 34: worker threads achieved 0.05-0.28 of what the wait
            # predicted: they share the GIL with the training loop.
            return None, reason("workers_unpredicted", kind="threads", estimate=None)
        cores = baseline.cpu_count
        if (workers and not is_accelerator(base_object.get("device")) and cores is not None
                and cores <= SHARED_CORES):
            return None, reason("tried_shared_cores", cores=cores)
        if workers:
            # Issue 34 on an H100: processes predicted 11x from the wait
            # measured 6.9x; each batch is pickled and sent between
            # processes, a cost the baseline never paid.
            return None, reason("workers_unpredicted", kind="processes",
                                estimate=reason("finding_speedup", finding=finding["id"],
                                                speedup=speedup))
        if ceiling is not None and ceiling <= 1.0:
            return None, reason("tried_no_gain_possible", ceiling=ceiling)
        if ceiling is not None and speedup > ceiling:
            return None, reason("tried_above_ceiling", finding=finding["id"], speedup=speedup,
                                ceiling=ceiling)
    return speedup, reason("tried_estimate", finding=finding["id"])


def judge_session(session, by_name):
    """The `fixes_tried` entries of one session (docs/CLI.md), best
    measured first, and the change advised.

    Args:
        session: `{change: RunData}` of `find_sessions`.
        by_name: The report's run objects by run name.
    """
    baseline = session["baseline"]
    base_object = by_name.get(baseline.run) or {}
    spread = noise(baseline)
    ceiling = input_free_gain(session)
    entries = []
    for change, run in session.items():
        if change == "baseline":
            continue
        gain = measured(run, baseline)
        predicted, why = _predicted(change, run, baseline, base_object, ceiling)
        kept = gain is not None and spread is not None and gain > 1.0 + spread
        slower = gain is not None and spread is not None and gain < 1.0 - spread
        entries.append({
            "run": run.run,
            "baseline": baseline.run,
            "change": change,
            "what": run.tried.what,
            "ceiling": run.tried.ceiling,
            "keeps_arithmetic": run.tried.keeps_arithmetic,
            "predicted": predicted,
            "predicted_basis": why,
            "measured": gain,
            "noise": spread,
            "kept": kept,
            "slower": slower,
            "fits": len(_measured_rates(run.tried)),
            "baseline_fits": len(_measured_rates(baseline.tried)),
            "text": tried_text(gain, spread),
        })
    entries.sort(key=lambda entry: (-(entry["measured"] or 0.0), entry["change"]))
    advised = next((
        entry for entry in entries
        if entry["kept"] and entry["keeps_arithmetic"] and not entry["ceiling"]
    ), None)
    for entry in entries:
        entry["advised"] = entry is advised
    return entries, advised


def standing(gain, spread):
    """Where a measured `gain` stands against the baseline's noise `spread`:
    `"unmeasured"`, `"slower"`, `"within_noise"` or `"measured"`."""
    if gain is None:
        return "unmeasured"
    if spread is not None and gain < 1.0 - spread:
        return "slower"
    if spread is not None and gain <= 1.0 + spread:
        return "within_noise"
    return "measured"


def tried_text(gain, spread):
    """An entry's `text` (`tried: 1.3x (noise ±4%)`), said by `words.tried`."""
    return reason("tried_text", gain=gain, spread=spread, standing=standing(gain, spread))


def ceiling_evidence(gain):
    """Why a run whose `input_free` gained under `INPUT_FREE_MIN_GAIN` is
    not input-bound, said by `words.tried`."""
    return reason("ceiling_evidence", gain=gain, min_gain=INPUT_FREE_MIN_GAIN)


def annotate(entries, advised, base_object):
    """Sets what was tried on the baseline's run object: `tried` on each
    finding whose change was tried (a change measured no better than the
    noise is never advised first: its fix says so), and `advised`."""
    by_change = {entry["change"]: entry for entry in entries}
    ceiling = (by_change.get("input_free") or {}).get("measured")
    for finding in base_object.get("findings") or ():
        _cap(finding, ceiling)
        entry = by_change.get(finding.get("change"))
        if entry is None:
            continue
        finding["tried"] = {key: entry[key] for key in (
            "run", "change", "measured", "noise", "kept", "slower", "text")}
        if not entry["kept"] and entry["measured"] is not None:
            finding["fix"] = reason(
                "not_advised", what=entry["what"] or entry["change"],
                gain=entry["measured"], spread=entry["noise"],
                standing=standing(entry["measured"], entry["noise"]),
                best=None if advised is None else advised["change"],
                best_gain=None if advised is None else advised["measured"],
                fix=finding.get("fix"))
    base_object["advised"] = None if advised is None else {
        "change": advised["change"],
        "what": advised["what"],
        "measured": advised["measured"],
        "noise": advised["noise"],
        "predicted": advised["predicted"],
    }


def _cap(finding, ceiling):
    """An input finding's expected gain held at what `input_free` measured:
    no input fix buys more than removing the input."""
    expected = finding.get("expected") or {}
    speedup = _rate(expected.get("speedup"))
    if (ceiling is None or speedup is None or speedup <= ceiling
            or finding.get("change") not in vocabulary.INPUT_CHANGES
            or expected.get("of") != "samples_per_s"):
        return
    finding["expected"] = dict(
        expected, speedup=ceiling, bound="at_most",
        text=reason("capped_text", ceiling=ceiling),
        basis=reason("capped_basis", basis=expected.get("basis"), ceiling=ceiling))


def fixes_tried(run_data, runs):
    """The report's `fixes_tried`: every session's entries, and each
    baseline's run object annotated (`annotate`)."""
    by_name = {run["run"]: run for run in runs}
    found = []
    for key, session in sorted(find_sessions(run_data).items()):
        entries, advised = judge_session(session, by_name)
        base_object = by_name.get(session["baseline"].run)
        if base_object is not None:
            annotate(entries, advised, base_object)
        for entry in entries:
            entry["session"] = key or "."
        found.extend(entries)
    return found
