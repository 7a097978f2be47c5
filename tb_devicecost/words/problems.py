"""The words of a run's problems (`analysis/record.py`,
`analysis/step_numbers.py`: what the numbers had to leave out or estimate)
and of which runs are compared with which (`analysis/pairing.py`)."""


def recording_stopped(error):
    return (f"Recording stopped before the fit ended ({error}): the numbers "
            "cover the steps recorded until then.")


def aggregate_invalid(components):
    return ("The aggregate holds invalid numbers (NaN, negative or missing) for "
            f"{', '.join(components)}; used the sampled steps instead.")


def steps_dropped(dropped):
    return f"Ignored {dropped} sampled step(s) holding NaN, negative or implausible values."


def sampled_steps(steps, first_is_warmup):
    return (f"No readable aggregate: the numbers come from {steps} sampled "
            "step(s), so totals are estimates"
            + (" (step 0 taken as the warm-up)." if first_is_warmup else "."))


def device_only_visible(device):
    return ("Where the step ran was not recorded (no op or variable placement): "
            f"the device shown, {device}, is only a visible one.")


def _left_out(text, left_out, more_left_out, lead):
    if not left_out:
        return text + "."
    return text + lead + ", ".join(left_out) + (", ..." if more_left_out else "") + "."


def baseline_named(chosen, siblings, left_out, more_left_out):
    """A comparison's `baseline_reason` where the baseline was named."""
    text = f"{chosen} was chosen as the baseline"
    if siblings:
        text += ("; runs of another role are compared with its run of that role ("
                 + ", ".join(siblings) + ")")
    return _left_out(text, left_out, more_left_out,
                     "; left out, with no run of their role to compare with: ")


def baseline_cpu_counterparts(pairs, more, left_out, more_left_out):
    """A comparison's `baseline_reason` where each run has its CPU counterpart."""
    text = (
        "Each run is compared with the same model trained on the CPU: the "
        "run of the same role whose name differs only in the device ("
        + "; ".join(f"{run} with {counterpart}" for run, counterpart in pairs)
        + ("; ..." if more else "")
        + ")"
    )
    return _left_out(text, left_out, more_left_out, "; left out, with no such run: ")


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "recording_stopped": recording_stopped,
    "aggregate_without_components": lambda: (
        "The aggregate has no components; used the sampled steps."),
    "aggregate_invalid": aggregate_invalid,
    "steps_dropped": steps_dropped,
    "sampled_steps": sampled_steps,
    "aggregate_of_another_fit": lambda: (
        "The newest aggregate is another recording's (an earlier fit given "
        "the same log_dir): the newest fit wrote none before it ended (or is "
        "still starting), so its numbers come from the per-step rows."),
    "device_only_visible": device_only_visible,
    "newer_schema": lambda: "Written by a newer tb-devicecost.",
    "baseline_named": baseline_named,
    "baseline_cpu_counterparts": baseline_cpu_counterparts,
}
