"""The words of a prediction checked (`analysis/predictions.py`): what a
finding or a sweep predicted for a fixed counterpart, what it achieved."""

from tb_devicecost.analysis.formatting import fmt_count
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


# The sentence of each `reasons.Reason` code this module says.
SAYS = {"prediction": prediction}
