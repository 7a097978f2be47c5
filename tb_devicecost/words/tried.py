"""The words of fixes tried (`analysis/tried.py`): each change's measured
gain against the noise, why it has no prediction, and a baseline's
findings as annotated by what was tried."""

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.formatting import fmt_speedup


def _measure(gain, spread, standing):
    """`1.3x (noise ±4%)`, `0.61x, slower (noise ±3%)`."""
    if standing == "unmeasured":
        return "no measurement (no fit of it or of the baseline completed)"
    noise_words = f"noise ±{fmt_share(spread)}" if spread is not None else "noise unknown"
    if standing == "slower":
        return f"{fmt_speedup(gain)}, slower ({noise_words})"
    if standing == "within_noise":
        return f"{fmt_speedup(gain)}, within the noise ({noise_words})"
    return f"{fmt_speedup(gain)} ({noise_words})"


def tried_text(gain, spread, standing):
    """An entry's `text`: `tried: 1.3x (noise ±4%)`."""
    return "tried: " + _measure(gain, spread, standing)


def not_advised(what, gain, spread, standing, best, best_gain, fix):
    """A tried finding's `fix` where its change measured no better than the
    noise: what it measured, the best measured, then the finding's fix."""
    lead = f"Tried on this model, {what} measured {_measure(gain, spread, standing)}: not advised."
    if best is not None:
        lead += f" Measured best: {best} ({fmt_speedup(best_gain)})."
    return lead + " " + str(fix or "")


def ceiling_evidence(gain, min_gain):
    """Why a run whose `input_free` gained under `min_gain` is not input-bound."""
    return (
        f"Tried: the same model stepping on batches already converted ran "
        f"{fmt_speedup(gain)} as fast (under {fmt_share(min_gain - 1.0)} "
        "more), so no input fix can buy much: the input is not what limits "
        "this run, whatever its data-wait share."
    )


def capped_text(ceiling):
    return f"at most {fmt_speedup(ceiling)} the samples/s"


def capped_basis(basis, ceiling):
    return (f"{basis}; capped at the {fmt_speedup(ceiling)} that input_free "
            "measured (the same model with the input removed): no input fix buys more")


def tried_ceiling(finding, speedup):
    return "a ceiling, measured, not a fix" + (
        f"; the {finding} finding estimated {fmt_speedup(speedup)} for the "
        "step without its wait" if finding is not None and speedup is not None else "")


def tried_no_finding(change):
    return f"no finding of the baseline estimates what {change} buys"


def tried_no_estimate(finding, basis):
    return f"its {finding} finding has no estimate: " + str(basis or "none was given")


def tried_bound(finding, estimate):
    return (f"its {finding} finding gives a bound ({estimate}), "
            "not a prediction of what this change buys")


def tried_other_batch():
    return ("the finding's estimate is at another batch than the one tried; the "
            "measured gain is of samples/s at the larger batch")


def tried_shared_cores(cores):
    return (f"on a CPU-only host of {fmt_count(cores)} cores the workers take the "
            "model's own cores, so what they buy cannot be told from the run")


def tried_no_gain_possible(ceiling):
    return (f"input_free, the same model with the input removed, measured "
            f"{fmt_speedup(ceiling)}: no input fix can buy a gain here")


def tried_above_ceiling(finding, speedup, ceiling):
    return (f"the {finding} estimate ({fmt_speedup(speedup)}) is above what "
            f"input_free measured ({fmt_speedup(ceiling)}), which no input fix can "
            "beat: at most that, a ceiling, not a prediction")


def tried_estimate(finding):
    return f"the {finding} finding's estimate"


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "tried_text": tried_text,
    "not_advised": not_advised,
    "ceiling_evidence": ceiling_evidence,
    "capped_text": capped_text,
    "capped_basis": capped_basis,
    "tried_ceiling": tried_ceiling,
    "tried_no_finding": tried_no_finding,
    "tried_no_estimate": tried_no_estimate,
    "tried_bound": tried_bound,
    "tried_other_batch": tried_other_batch,
    "tried_shared_cores": tried_shared_cores,
    "tried_no_gain_possible": tried_no_gain_possible,
    "tried_above_ceiling": tried_above_ceiling,
    "tried_estimate": tried_estimate,
}
