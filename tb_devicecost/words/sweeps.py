"""The words of a batch-size sweep (`analysis/sweeps.py`): its sentence
(the crossover, then the user's batch size) and its problems."""

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_speedup


def sweep_message(above, below, other, crossover_batch, extrapolated, measured, faster_at):
    """The sweep in one sentence: the crossover, then the user's batch size."""
    if crossover_batch is not None:
        text = (
            f"{above} overtakes {below} above about {fmt_count(crossover_batch)} "
            "samples per step"
        )
        if extrapolated:
            text += " (beyond the batch sizes measured, so an extrapolation)"
        if measured is not None:
            text += (
                f" (measured: between {fmt_count(measured['between'][0])} and "
                f"{fmt_count(measured['between'][1])})"
            )
    else:
        text = f"{above} is faster than {other} at every batch size, by the fit"
    if faster_at is not None:
        how = "measured" if faster_at["source"] == "measured" else "by the fit"
        text += (
            f"; at your batch of {fmt_count(faster_at['batch_size'])} {faster_at['device']} "
            f"is {fmt_speedup(faster_at['times'])} as fast as {faster_at['other']} ({how})"
        )
    return text + "."


def sweep_one_device(device, fixed_ms, per_sample_us):
    return (
        f"Only {device} has a fit ({fmt_ms(fixed_ms)} ms per step plus "
        f"{fmt_ms(per_sample_us)} \u00b5s per sample): there is no device to "
        "compare it with."
    )


def sweep_failed(error, detail):
    return (f"The sweep could not be fitted ({error}: {detail}); "
            "its runs are reported on their own.")


def sweep_no_steady_step(run):
    return f"{run} has no steady-state step, so it is not a point of the sweep."


def sweep_device_unfitted(device):
    return (
        f"{device}'s step time could not be fitted over its batch sizes (too close "
        "together, or too large, for the arithmetic): it has no fixed and "
        "per-sample cost, and no crossover with it."
    )


def sweep_noisy(first, second, changes):
    return (
        f"The faster of {first} and {second} changes {changes} times across "
        "the batch sizes measured, so the points are too noisy to read a "
        "crossover from; the fit's crossover stands alone."
    )


# The sentence of each `reasons.Reason` code this module says.
SAYS = {
    "sweep_message": sweep_message,
    "sweep_one_device": sweep_one_device,
    "sweep_failed": sweep_failed,
    "sweep_no_steady_step": sweep_no_steady_step,
    "sweep_device_unfitted": sweep_device_unfitted,
    "sweep_noisy": sweep_noisy,
    "sweep_unfitted": lambda: "This sweep could not be fitted.",
    "sweep_nothing_fitted": lambda: (
        "No device of this sweep ran two batch sizes, so nothing could be fitted."),
}
