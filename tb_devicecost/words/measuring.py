"""The words of what our own measuring took of a step.

Every run says it in one line (`self_cost_line`, the run object's
`self_cost_text`); where it is above `MEASURING_SHARE_MAX` of the mean
step, `verdicts.py` gives the run the `measuring_cost` finding, worded
here (`measuring_cost`; its headline is `phrases.py`'s): the callback's
own time lies inside the parts it splits the step into, so the split is
uncertain by about that share (docs/VERDICTS.md).
"""

from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.words import phrases


def self_cost_line(us_per_step, share, fetches_each_batch=False, between_steps_share=None):
    """`Measuring took 3.10 µs a step, 0.4% of the step.`, or that it was
    not recorded (data recorded before it was, or a custom loop's).

    `between_steps_share`: our hooks' time between the steps (each epoch's
    end, validation's start and end) as a share of the fit, said after it
    (`and 2.1% of the fit at epoch ends.`): short epochs pay it often.

    `fetches_each_batch`: the callback fetched each batch itself (TensorFlow
    runs recorded before the fetch was timed inside Keras's graph,
    `format/backend_facts.py`), so the recorded fit skipped two small
    operations of Keras's own loop a step: said, as the fit it measured is
    that much not the user's own (issue 36; docs/PERFORMANCE.md).
    """
    if us_per_step is None:
        return "What measuring took of each step was not recorded (older data, or a custom loop)."
    if share is None:
        line = f"Measuring took {fmt_ms(us_per_step)} µs a step"
    else:
        line = f"Measuring took {fmt_ms(us_per_step)} µs a step, {fmt_share(share)} of the step"
    if between_steps_share is not None:
        # Validation runs at an epoch's end too: "epoch ends" holds it.
        part = "under 0.1%" if between_steps_share < 0.001 else fmt_share(between_steps_share)
        line += f", and {part} of the fit at epoch ends"
    line += "."
    if fetches_each_batch:
        line += (" The callback fetched each batch itself, skipping two small operations "
                 "of Keras's own loop a step, so this fit may run faster than "
                 "the same fit without it.")
    return line


def measuring_cost(figures, finding):
    """`(headline, message, fix)` of `measuring_cost`, from a run's
    `RunFigures`."""
    share = figures.self_share
    worker = figures.worker_self_us_per_step
    return (
        phrases.measuring_cost(share),
        f"The callback's own code ran {fmt_ms(figures.self_us_per_step)} µs a step on "
        f"the training thread, {fmt_share(share)} of the {fmt_ms(figures.step.mean)} ms "
        f"mean step (above {fmt_share(finding.limit('share_max'))})"
        + (f", and {fmt_ms(worker)} µs a step on Keras's worker thread" if worker else "")
        + ". That time lies inside the parts it splits the step into, so each "
        "part's share may be off by about as much.",
        "Read each part's share with that margin. A longer step (a larger batch, "
        "or compile(..., steps_per_execution=N)) makes measuring a smaller part of it.",
    )


def data_wait_agreement(ours_ms, trace_ms, relative_difference, disagree):
    """A trace window's `data_wait_agreement.message`: our data wait and the
    trace's input wait for the same steps, and what a gap means."""
    return (
        f"Our mean data wait for these steps ({fmt_ms(ours_ms)} ms per "
        f"step) and the trace's mean input wait ({fmt_ms(trace_ms)} ms) "
        "differ by "
        f"{fmt_share(relative_difference)}. "
        + (
            "They measure the same wait from two sides, so a gap this "
            "large means the traced steps were not typical (the "
            "profiler slows the host) or the input runs outside "
            "tf.data (a Python generator), which the trace does "
            "not mark as input."
            if disagree
            else "They agree."
        )
    )
