"""The words of what a fix would buy (`analysis/estimates.py`): each
finding's `expected` `text` and `basis`, from the codes and figures the
estimate set (`reasons.Reason`), rounded so that a bound stays true.
"""

import math

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_rate
from tb_devicecost.analysis.formatting import fmt_share

# Why a finding has no estimate.
_NO_ESTIMATE = {
    "no_steps": "nothing was measured yet",
    "incomplete_run": "this finding is about the record, not the speed",
    "fetch_in_graph": "this finding is about what can be measured, not the speed",
    "measuring_cost": "this finding is about what can be measured, not the speed",
    "no_fetch_floor": "nothing here is evidence of a slowdown to remove",
    "compute_bound": (
        "what a cheaper step buys depends on the change (XLA fusion, mixed "
        "precision); nothing in this run's numbers predicts it"
    ),
    "cpu_ops_on_accelerator_run": (
        "the time those ops and their copies take is part of compute and not "
        "recorded apart"
    ),
    "cross_device_copies": (
        "the time the copies take is part of compute and not recorded apart"
    ),
}
_BOUND_WORDS = {"about": "about", "at_most": "at most", "at_least": "at least"}


# How an estimate's figures are rounded in words: a bound from below never
# rounds up, a bound from above never rounds down. (The 1e-9 absorbs the
# float error of the scaling, as in `formatting.fmt_share`.)
_ROUNDING = {
    "about": lambda scaled: math.floor(scaled + 0.5),
    "at_most": lambda scaled: math.ceil(scaled - 1e-9),
    "at_least": lambda scaled: math.floor(scaled + 1e-9),
}
_OPPOSITE = {"about": "about", "at_most": "at_least", "at_least": "at_most"}


def rounded(value, bound="about", digits=2):
    """`value` (positive) to `digits` significant digits, with commas: an
    estimate's words claim no more precision than it has (`3.1`, `10`,
    `410,000`), rounded so that a bound stays true (`_ROUNDING`); its fields
    keep the exact figure."""
    if value <= 0:
        return "0"
    exponent = math.floor(math.log10(value)) - (digits - 1)
    mantissa = _ROUNDING[bound](value / 10.0**exponent)
    return f"{mantissa * 10.0**exponent:,.{max(0, -exponent)}f}"


# Whose steps a spike estimate counts, by its finding.
_SPIKES_OF = {"retracing": "retraced steps", "stalls": "stalls"}


def no_estimate():
    return "no estimate"


def not_estimated(finding):
    return _NO_ESTIMATE[finding]


def samples_text(bound, speedup, batch_size, after, before):
    """`about 2.4x the samples/s (1,200 instead of 500)`."""
    return (
        f"{_BOUND_WORDS[bound]} {rounded(speedup, bound)}x the samples/s"
        + (f" at batch {fmt_count(batch_size)}" if batch_size else "")
        + f" ({rounded(after, bound)} instead of {fmt_rate(before)})"
    )


def wall_saved_text(bound, saved_ms, before_ms):
    """The time a fit saves, where a ratio would read "1.0x as fast"."""
    return (
        f"{_BOUND_WORDS[bound]} {rounded(saved_ms, bound)} ms less wall "
        f"time, {fmt_share(saved_ms / before_ms)} of the fit's {fmt_ms(before_ms)} ms"
    )


def wall_speedup_text(bound, speedup, after_ms, before_ms):
    """`at most 1.5x as fast a fit (...)`: three digits for the wall time,
    so that it reads as less than the time it is set against."""
    return (
        f"{_BOUND_WORDS[bound]} {rounded(speedup, bound)}x as fast a fit "
        f"({rounded(after_ms, _OPPOSITE[bound], digits=3)} ms of wall time "
        f"instead of {fmt_ms(before_ms)} ms)"
    )


def wall_of_steps_only(basis):
    return (basis + "; the fit's time outside the steps was not recorded, so its wall "
            "time here is warm-up and steady steps only")


def workers_share_cores(cores):
    return (
        f"the model trains on this host's {fmt_count(cores)} CPU cores, and "
        "input workers would share them: what they buy depends on how much "
        "of the model's compute they take, which this run cannot tell "
        "(tb_devicecost.try_fixes measures it)"
    )


def input_basis(step_ms, starved_ms, after_ms, floor_measured, why):
    wait = (
        "wait above the cost of a ready batch"
        if floor_measured
        else "data wait (no fetch floor was measured, so all of it)"
    )
    return (
        f"the {fmt_ms(step_ms)} ms mean step without its {fmt_ms(starved_ms)} ms mean "
        f"{wait}: {fmt_ms(after_ms)} ms, if the pipeline kept ahead of the step"
        + (why or "")
    )


def input_threads_shared_cores(cores):
    return (
        f"; the pipeline's own threads ran on the {fmt_count(cores)} CPU "
        "cores the model trains on, slowing its compute too, so this is a bound "
        "from below"
    )


def host_basis(step_ms, host_ms, after_ms):
    return (
        f"the {fmt_ms(step_ms)} ms mean step without any of its {fmt_ms(host_ms)} ms "
        f"mean host overhead: {fmt_ms(after_ms)} ms; some of the Keras loop always "
        "remains, so this is a bound"
    )


def warmup_basis(count, warmup_ms, step_ms):
    steps = "step" if count == 1 else f"{fmt_count(count)} steps"
    return (
        f"the fit's wall time if its warm-up {steps} ({fmt_ms(warmup_ms)} ms in "
        f"total) had taken the {fmt_ms(step_ms)} ms mean steady step; compilation "
        "is never free, so this is a bound"
    )


def no_spike(finding, ratio):
    return (
        f"none of the {_SPIKES_OF[finding]} was a step longer than {ratio:g}x "
        "the p50 compute, so its cost is not set apart from the other steps'"
    )


def spike_basis(spikes, ratio, compute_ms, saved_ms):
    return (
        f"{fmt_count(spikes)} step(s) each took more than "
        f"{ratio:g}x the {fmt_ms(compute_ms)} ms p50 compute, so "
        f"each was at least {fmt_ms((ratio - 1.0) * compute_ms)} ms "
        f"longer than a typical step: {fmt_ms(saved_ms)} ms in all"
    )


def device_busy_already(share):
    return (
        f"the device is already busy {fmt_share(share)} of the mean "
        "step: a larger batch fills little more of it"
    )


def batch_basis(busy_ms, batch, per_sample_ms, step_ms, fixed_ms, target, after_ms,
                capped, limit, growth, half):
    why = (
        f"the largest power of two up to {fmt_count(limit)}, "
        f"{fmt_count(growth)}x the batch that ran; capped there: "
        "the device would be busy half the step only at about "
        f"{fmt_count(half)} samples, further than one traced batch size supports"
        if capped
        else f"the largest power of two up to {fmt_count(half)}, the batch at "
        "which the device would be busy half the step"
    )
    return (
        f"the trace's {fmt_ms(busy_ms)} ms of device time per step for "
        f"{fmt_count(batch)} samples is {fmt_ms(per_sample_ms * 1e3)} µs per sample; "
        f"the rest of the {fmt_ms(step_ms)} ms mean step, {fmt_ms(fixed_ms)} ms, is a "
        f"fixed cost paid at any batch. At batch {fmt_count(target)} ({why}) a "
        f"step would take at most {fmt_ms(after_ms)} ms: one traced batch counts the "
        "device's cost per step as a cost per sample, and the device works while "
        "the host prepares the next step, so this is a bound from below"
    )


def straggler_text(speedup, after_ms, mean_step_ms):
    return (
        f"at most {rounded(speedup)}x faster steps ({fmt_ms(after_ms)} ms "
        f"instead of {fmt_ms(mean_step_ms)} ms, mean over the processes)"
    )


def _fixed(sentence):
    """A code whose sentence quotes no figure."""
    return lambda: sentence


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "no_estimate": no_estimate,
    "not_estimated": not_estimated,
    "samples_text": samples_text,
    "wall_saved_text": wall_saved_text,
    "wall_speedup_text": wall_speedup_text,
    "wall_of_steps_only": wall_of_steps_only,
    "workers_share_cores": workers_share_cores,
    "input_basis": input_basis,
    "input_threads_shared_cores": input_threads_shared_cores,
    "host_basis": host_basis,
    "warmup_basis": warmup_basis,
    "no_spike": no_spike,
    "spike_basis": spike_basis,
    "device_busy_already": device_busy_already,
    "batch_basis": batch_basis,
    "straggler_text": straggler_text,
    "samples_unrecorded": _fixed("the run's samples per step or samples/s were not recorded"),
    "no_time_left": _fixed(
        "without it the step would take no time at all, which no fix can buy"),
    "wall_unrecorded": _fixed("the fit's wall time was not recorded"),
    "nothing_saved": _fixed("it took no longer than steady steps would have"),
    "whole_fit": _fixed("the time it took is the whole fit's, so no ratio can be given"),
    "step_or_wait_unrecorded": _fixed("the run's mean step or data wait was not recorded"),
    "input_threads_held_gil": _fixed(
        "; the input's Python ran on threads beside the loop and held the Python "
        "lock (the GIL) the loop needs, a cost booked as compute and host overhead "
        "that such a pipeline removes too, so this is a bound from below"),
    "input_dispatched_asynchronously": _fixed(
        "; the steps are dispatched asynchronously, so the device may still be "
        "working while the loop waits, and a faster pipeline buys at most this"),
    "step_or_host_unrecorded": _fixed("the run's mean step or host overhead was not recorded"),
    "no_steady_step": _fixed("no steady step was recorded to set against the warm-up"),
    "warmup_unrecorded": _fixed("the warm-up was not recorded"),
    "batch_needs_trace": _fixed(
        "what a larger batch buys needs the device's time per sample: a "
        "trace window with a device plane (profile_steps), or runs of this "
        "model at two batch sizes (see the comparison)"),
    "step_or_batch_unrecorded": _fixed("the run's mean step or batch size was not recorded"),
    "trace_not_split": _fixed(
        "the trace shows no device time, or no time outside it, to set apart"),
    "straggler_basis": _fixed(
        "the processes' mean step less the mean skew of the steps this "
        "process arrived last at: what they wait for it; the steps are no "
        "shorter than the next slowest process allows"),
    "waiting_basis": _fixed("what this process gains is what the straggler's fix buys"),
}
