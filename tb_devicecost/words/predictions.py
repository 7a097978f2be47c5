"""The words of a prediction checked (`analysis/predictions.py`): what a
finding or a sweep predicted for a fixed counterpart, what it achieved."""

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_speedup

_BOUND_WORDS = {"about": "about", "at_most": "at most", "at_least": "at least"}


def prediction(run, device, counterpart, counterpart_device, counterpart_batch, change,
               predicted_by, sweep, predicted, bound, estimate, estimate_batch,
               unpredicted, within, ratio, achieved, rate, counterpart_rate):
    """A pair's `text`: the claim, then what `counterpart` achieved."""
    words = _BOUND_WORDS.get(bound, "about")
    if predicted is None:
        claim = f"no prediction for {counterpart}: {unpredicted}"
    elif predicted_by == "sweep" and change == "batch_size":
        claim = (
            f"the sweep {sweep} (this model's step fitted on {device}) predicted "
            f"about {fmt_speedup(predicted)} the samples/s at batch "
            f"{fmt_count(counterpart_batch)}"
        )
    elif predicted_by == "sweep":
        claim = (
            f"the sweep {sweep} (this model's step fitted on each device) predicted "
            f"{words} {fmt_speedup(predicted)} the samples/s on {counterpart_device} at "
            f"batch {fmt_count(counterpart_batch)}"
        )
    else:
        claim = f"the {predicted_by} finding of {run} predicted {estimate}"
        if change == "batch_size" and counterpart_batch != estimate_batch:
            claim += (
                f", so {words} {fmt_speedup(predicted)} at batch "
                f"{fmt_count(counterpart_batch)} by its own line"
            )
    if within is not None:
        verdict = ": the bound held." if within else ": the bound did not hold."
    else:
        verdict = f": {fmt_speedup(ratio)} the prediction." if ratio is not None else "."
    text = (
        f"{claim}; {counterpart} achieved {fmt_speedup(achieved)} "
        f"({fmt_count(rate)} to {fmt_count(counterpart_rate)} samples/s)" + verdict
    )
    return text[0].upper() + text[1:]


def prediction_same_setup(finding):
    return f"the {finding} finding's estimate, at the same batch size and device"


def prediction_no_estimate(finding, basis):
    return f"the {finding} finding has no estimate: {basis}"


def sweep_batch_basis(sweep, device, batch, batch_ms, size, size_ms):
    return (
        f"the sweep {sweep}'s fit of this model's step on {device} (a "
        f"fixed cost plus a cost per sample): {fmt_ms(batch_ms)} ms at batch "
        f"{fmt_count(batch)}, {fmt_ms(size_ms)} ms at batch {fmt_count(size)}"
    )


def sweep_batch_text(speedup, size):
    return f"about {fmt_speedup(speedup)} the samples/s at batch {fmt_count(size)}"


def batch_beyond_estimate(size, target, finding):
    return (
        f"batch {fmt_count(size)} is beyond the {fmt_count(target)} the "
        f"{finding} finding's estimate reaches from one traced batch; "
        "a sweep of this model's batch sizes (tb_devicecost.sweep) predicts it")


def estimate_at_batch(finding, size):
    return f"the {finding} finding's estimate at batch {fmt_count(size)}"


def finding_line_basis(finding, target, size):
    return (
        f"the {finding} finding estimated batch {fmt_count(target)}; its own "
        f"line (the step as a fixed cost plus a cost per sample, through this "
        f"run's mean step and the step it predicts there) at batch {fmt_count(size)}"
    )


def sweep_device_basis(sweep, batch, slow_ms, slow, fast_ms, fast):
    return (
        f"the sweep {sweep}'s fits of this model's step on each device "
        f"(a fixed cost plus a cost per sample) at batch {fmt_count(batch)}: "
        f"{fmt_ms(slow_ms)} ms on {slow}, {fmt_ms(fast_ms)} ms on {fast}"
    )


def sweep_device_text(speedup, fast):
    return f"about {fmt_speedup(speedup)} the samples/s on {fast}"


def mostly_warmup(run):
    return (f"{run} is mostly warm-up, its steps not yet steady, and "
            "the sweep predicts the steps of a warmed-up fit")


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "prediction": prediction,
    "prediction_same_setup": prediction_same_setup,
    "prediction_no_estimate": prediction_no_estimate,
    "sweep_batch_basis": sweep_batch_basis,
    "sweep_batch_text": sweep_batch_text,
    "batch_beyond_estimate": batch_beyond_estimate,
    "estimate_at_batch": estimate_at_batch,
    "finding_line_basis": finding_line_basis,
    "sweep_device_basis": sweep_device_basis,
    "sweep_device_text": sweep_device_text,
    "mostly_warmup": mostly_warmup,
}
