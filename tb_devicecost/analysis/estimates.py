"""What a fix would buy: each finding's `expected` (docs/VERDICTS.md).

Every estimate is computed from the run's own numbers (its `RunData` and
`RunFigures`) and says how
(`basis`): the mean step without the wait a faster pipeline would remove,
the fit's wall time with a warm-up as short as a steady step, the step at a
larger batch from the trace's device time per sample. Where the numbers
are missing it says so and claims nothing (`no_estimate`). Its words
(`text`) are rounded so that a bound stays true.
"""

import math

from tb_devicecost.analysis.device_side import run_device_trace
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_rate
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.thresholds import LATENCY_MAX_BATCH_GROWTH
from tb_devicecost.analysis.thresholds import SHARED_CORES
from tb_devicecost.format import vocabulary


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


def no_estimate(reason):
    """An `expected` that claims nothing, and says why."""
    return {
        "bound": None,
        "speedup": None,
        "of": None,
        "samples_per_s": None,
        "step_ms": None,
        "wall_ms": None,
        "batch_size": None,
        "capped": False,
        "basis": reason,
        "text": "no estimate",
    }


def not_estimated(finding_id):
    """The `expected` of a finding that never has an estimate, with why."""
    return no_estimate(_NO_ESTIMATE[finding_id])


def _samples_estimate(figures, bound, step_ms, basis, samples_per_step=None,
                      batch_size=None, capped=False):
    """What a fix buys in samples/s: a mean step of `step_ms` for
    `samples_per_step` samples (the run's own by default)."""
    before = figures.samples_per_s
    samples = samples_per_step or figures.samples_per_step
    if not before or not samples:
        return no_estimate("the run's samples per step or samples/s were not recorded")
    if not step_ms or step_ms <= 0:
        return no_estimate(
            "without it the step would take no time at all, which no fix can buy"
        )
    after = samples / step_ms * 1e3
    speedup = after / before
    expected = no_estimate(basis)
    expected.update(
        bound=bound,
        speedup=speedup,
        of="samples_per_s",
        samples_per_s=after,
        step_ms=step_ms,
        batch_size=batch_size,
        capped=capped,
        text=(
            f"{_BOUND_WORDS[bound]} {rounded(speedup, bound)}x the samples/s"
            + (f" at batch {fmt_count(batch_size)}" if batch_size else "")
            + f" ({rounded(after, bound)} instead of {fmt_rate(before)})"
        ),
    )
    return expected


def _fit_wall(run, figures):
    """(the fit's wall time, whether it was recorded whole): the total the
    warm-up share is of (the warm-up finding's rule)."""
    wall = run.numbers.wall
    if wall.total:
        return wall.total, True
    steady_ms = (figures.step.mean or 0.0) * (figures.steady_steps or 0)
    return (run.numbers.warmup_ms or 0.0) + steady_ms, False


def _wall_estimate(run, figures, bound, saved_ms, basis):
    """What a fix buys in the fit's wall time: `saved_ms` less of it."""
    before_ms, whole = _fit_wall(run, figures)
    after_ms = before_ms - saved_ms
    if not before_ms:
        return no_estimate("the fit's wall time was not recorded")
    if saved_ms <= 0:
        return no_estimate("it took no longer than steady steps would have")
    if after_ms <= 0:
        return no_estimate("the time it took is the whole fit's, so no ratio can be given")
    if not whole:
        basis += (
            "; the fit's time outside the steps was not recorded, so its wall "
            "time here is warm-up and steady steps only"
        )
    speedup = before_ms / after_ms
    if speedup < 1.1:
        # "1.0x as fast" says nothing: the time saved does.
        text = (
            f"{_BOUND_WORDS[bound]} {rounded(saved_ms, bound)} ms less wall "
            f"time, {fmt_share(saved_ms / before_ms)} of the fit's {fmt_ms(before_ms)} ms"
        )
    else:
        # Three digits for the wall time, so that it reads as less than
        # the time it is set against.
        text = (
            f"{_BOUND_WORDS[bound]} {rounded(speedup, bound)}x as fast a fit "
            f"({rounded(after_ms, _OPPOSITE[bound], digits=3)} ms of wall time "
            f"instead of {fmt_ms(before_ms)} ms)"
        )
    expected = no_estimate(basis)
    expected.update(
        bound=bound,
        speedup=speedup,
        of="fit_wall_time",
        wall_ms=after_ms,
        text=text,
    )
    return expected




def input_estimate(run, figures):
    """The mean step without the wait above the cost of a ready batch; none
    where the fix is input workers on a CPU-only host of few cores."""
    step_ms, starved_ms = figures.step.mean, figures.starved_data_wait_ms
    if step_ms is None or starved_ms is None:
        return no_estimate("the run's mean step or data wait was not recorded")
    kind = (run.input_pipeline or {}).get("kind")
    if (
        kind in ("PyDataset", "generator", "torch DataLoader")
        and not is_accelerator(run.placement.device)
        and run.cpu_count is not None
        and run.cpu_count <= SHARED_CORES
    ):
        return no_estimate(
            f"the model trains on this host's {fmt_count(run.cpu_count)} CPU cores, and "
            "input workers would share them: what they buy depends on how much "
            "of the model's compute they take, which this run cannot tell "
            "(tb_devicecost.try_fixes measures it)"
        )
    after_ms = step_ms - min(starved_ms, step_ms)
    wait = (
        "wait above the cost of a ready batch"
        if figures.ready_fetch_ms is not None
        else "data wait (no fetch floor was measured, so all of it)"
    )
    bound, why = input_bound(run)
    return _samples_estimate(
        figures,
        bound,
        after_ms,
        f"the {fmt_ms(step_ms)} ms mean step without its {fmt_ms(starved_ms)} ms mean "
        f"{wait}: {fmt_ms(after_ms)} ms, if the pipeline kept ahead of the step" + why,
    )


def input_threads(run):
    """Whether the run's input ran Python on threads of the training
    process beside the loop: a `PyDataset` with `workers` > 1 and no
    processes, or a `tf.data` map of a Python function (TensorFlow runs it
    on its own threads)."""
    pipeline = run.input_pipeline or {}
    if pipeline.get("kind") == "tf.data":
        return bool(pipeline.get("python_function"))
    return (
        pipeline.get("kind") == "PyDataset"
        and (pipeline.get("workers") or 1) > 1
        and not pipeline.get("use_multiprocessing")
    )


def input_shares_cores(run):
    """Whether the input's own threads ran on the cores the model trains on:
    a `tf.data` pipeline with maps, on a CPU-only host of at most
    `SHARED_CORES` cores."""
    pipeline = run.input_pipeline or {}
    return (
        pipeline.get("kind") == "tf.data"
        and bool(pipeline.get("maps"))
        and not is_accelerator(run.placement.device)
        and run.cpu_count is not None
        and run.cpu_count <= SHARED_CORES
    )


def input_bound(run):
    """`(bound, why)` of the input estimate: what the step without its wait
    claims, by where the input ran.

    - Python input on threads beside the loop (`input_threads`), or a
      `tf.data` pipeline's threads on the few cores of a CPU-only host
      (`input_shares_cores`): at least. The
      threads hold the GIL that the training loop needs, so part of their
      cost is booked as compute and host overhead, and a pipeline that
      keeps ahead removes that too (issue 34, on an H100: 3.9x estimated
      from the wait, 81x achieved with the augmentation in the model).
    - Arrays in memory on an accelerator: at most. The steps are
      dispatched asynchronously, so the device may still be working while
      the loop waits for the next batch (issue 34, on an H100: 2.1x
      estimated, 1.2x measured with the data on the device).
    - Otherwise (the input runs on the training thread, or in processes of
      its own), about.
    """
    if input_threads(run):
        return "at_least", (
            "; the input's Python ran on threads beside the loop and held the Python "
            "lock (the GIL) the loop needs, a cost booked as compute and host overhead "
            "that such a pipeline removes too, so this is a bound from below"
        )
    if input_shares_cores(run):
        # Issue 34, this machine's demo: the naive map's step computed
        # 48 ms against 28 ms with the augmentation in the model (the
        # wait predicted 1.8x, 3.1x achieved).
        return "at_least", (
            f"; the pipeline's own threads ran on the {fmt_count(run.cpu_count)} CPU "
            "cores the model trains on, slowing its compute too, so this is a bound "
            "from below"
        )
    if (run.input_pipeline or {}).get("kind") == "arrays" and is_accelerator(
            run.placement.device):
        return "at_most", (
            "; the steps are dispatched asynchronously, so the device may still be "
            "working while the loop waits, and a faster pipeline buys at most this"
        )
    return "about", ""


def host_estimate(run, figures):
    """At most: the mean step without any host overhead."""
    step_ms, host_ms = figures.step.mean, figures.host_overhead.mean
    if step_ms is None or host_ms is None:
        return no_estimate("the run's mean step or host overhead was not recorded")
    after_ms = step_ms - min(host_ms, step_ms)
    return _samples_estimate(
        figures,
        "at_most",
        after_ms,
        f"the {fmt_ms(step_ms)} ms mean step without any of its {fmt_ms(host_ms)} ms "
        f"mean host overhead: {fmt_ms(after_ms)} ms; some of the Keras loop always "
        "remains, so this is a bound",
    )


def warmup_estimate(run, figures):
    """At most: the fit's wall time had its warm-up steps taken a steady step."""
    step_ms = figures.step.mean
    wall = run.numbers.wall
    warmup_ms = wall.warmup if wall.total and wall.warmup is not None else run.numbers.warmup_ms
    count = run.numbers.warmup_count or 1
    if step_ms is None or warmup_ms is None:
        return no_estimate(
            "no steady step was recorded to set against the warm-up"
            if step_ms is None
            else "the warm-up was not recorded"
        )
    saved_ms = max(0.0, warmup_ms - count * step_ms)
    steps = "step" if count == 1 else f"{fmt_count(count)} steps"
    return _wall_estimate(
        run,
        figures,
        "at_most",
        saved_ms,
        f"the fit's wall time if its warm-up {steps} ({fmt_ms(warmup_ms)} ms in "
        f"total) had taken the {fmt_ms(step_ms)} ms mean steady step; compilation "
        "is never free, so this is a bound",
    )


def spike_estimate(run, figures, spikes, what):
    """At least: `spikes` steps each longer than SPIKE_RATIO x the p50 compute
    were at least (SPIKE_RATIO - 1) x the p50 compute longer than a typical one."""
    compute_ms = figures.compute.p50
    if not spikes or not compute_ms:
        return no_estimate(
            f"none of the {what} was a step longer than {vocabulary.SPIKE_RATIO:g}x "
            "the p50 compute, so its cost is not set apart from the other steps'"
        )
    saved_ms = spikes * (vocabulary.SPIKE_RATIO - 1.0) * compute_ms
    return _wall_estimate(
        run,
        figures,
        "at_least",
        saved_ms,
        f"{fmt_count(spikes)} step(s) each took more than "
        f"{vocabulary.SPIKE_RATIO:g}x the {fmt_ms(compute_ms)} ms p50 compute, so "
        f"each was at least {fmt_ms((vocabulary.SPIKE_RATIO - 1.0) * compute_ms)} ms "
        f"longer than a typical step: {fmt_ms(saved_ms)} ms in all",
    )


def batch_estimate(run, figures):
    """A larger batch, from the trace's device time per sample.

    The device time per step grows with the batch (its time per sample, from
    the trace, at the batch that ran); the rest of the mean step is a fixed
    cost paid at any batch. The batch N chosen is the largest power of two at
    which the device would be busy at most half the step, and at most
    LATENCY_MAX_BATCH_GROWTH times the batch that ran. Samples/s can never
    exceed the mean step over the device time per step (the device busy all
    the time); at N it is below that.
    """
    trace = run_device_trace(run)
    step_ms, batch = figures.step.mean, figures.samples_per_step or run.batch_size
    if trace is None or trace["busy_ms"] is None:
        return no_estimate(
            "what a larger batch buys needs the device's time per sample: a "
            "trace window with a device plane (profile_steps), or runs of this "
            "model at two batch sizes (see the comparison)"
        )
    if not step_ms or not batch:
        return no_estimate("the run's mean step or batch size was not recorded")
    busy_ms = min(trace["busy_ms"], step_ms)
    fixed_ms = step_ms - busy_ms
    if busy_ms <= 0 or fixed_ms <= 0:
        return no_estimate(
            "the trace shows no device time, or no time outside it, to set apart"
        )
    per_sample_ms = busy_ms / batch
    half = batch * fixed_ms / busy_ms
    limit = LATENCY_MAX_BATCH_GROWTH * batch
    capped = half > limit
    target = 1
    while target * 2 <= min(half, limit):
        target *= 2
    if target <= batch:
        return no_estimate(
            f"the device is already busy {fmt_share(busy_ms / step_ms)} of the mean "
            "step: a larger batch fills little more of it"
        )
    after_ms = fixed_ms + per_sample_ms * target
    why = (
        f"the largest power of two up to {fmt_count(limit)}, "
        f"{fmt_count(LATENCY_MAX_BATCH_GROWTH)}x the batch that ran; capped there: "
        "the device would be busy half the step only at about "
        f"{fmt_count(half)} samples, further than one traced batch size supports"
        if capped
        else f"the largest power of two up to {fmt_count(half)}, the batch at "
        "which the device would be busy half the step"
    )
    # At least: the traced batch's device time per sample includes the
    # device's own cost per step, and the device works while the host
    # prepares the next step; both make the larger batch's step shorter
    # than this line (issue 34, on an H100: 36x read on it at batch 1,024,
    # 101x achieved).
    return _samples_estimate(
        figures,
        "at_least",
        after_ms,
        f"the trace's {fmt_ms(busy_ms)} ms of device time per step for "
        f"{fmt_count(batch)} samples is {fmt_ms(per_sample_ms * 1e3)} µs per sample; "
        f"the rest of the {fmt_ms(step_ms)} ms mean step, {fmt_ms(fixed_ms)} ms, is a "
        f"fixed cost paid at any batch. At batch {fmt_count(target)} ({why}) a "
        f"step would take at most {fmt_ms(after_ms)} ms: one traced batch counts the "
        "device's cost per step as a cost per sample, and the device works while "
        "the host prepares the next step, so this is a bound from below",
        samples_per_step=target,
        batch_size=target,
        capped=capped,
    )


def straggler_estimate(straggler):
    """What the `straggler` finding's fix would buy: the processes' mean
    step less what they wait for it (a `workers.Straggler`)."""
    mean_step_ms = straggler.mean_step_ms
    after_ms = mean_step_ms - straggler.saved_ms
    estimate = no_estimate(
        "the processes' mean step less the mean skew of the steps this "
        "process arrived last at: what they wait for it; the steps are no "
        "shorter than the next slowest process allows"
    )
    if mean_step_ms > 0 and after_ms > 0:
        speedup = mean_step_ms / after_ms
        estimate.update(
            bound="at_most",
            speedup=speedup,
            of="step_ms",
            step_ms=after_ms,
            text=(
                f"at most {rounded(speedup)}x faster steps ({fmt_ms(after_ms)} ms "
                f"instead of {fmt_ms(mean_step_ms)} ms, mean over the processes)"
            ),
        )
    return estimate


def waiting_estimate(straggler_expected):
    """What a process `waiting_for_others` would gain: what the straggler's
    fix buys (its finding's `expected`)."""
    return straggler_expected or no_estimate(
        "what this process gains is what the straggler's fix buys"
    )


def expected(finding, run, figures, retraced_spikes=0):
    """The `expected` of a `verdicts.Finding` of `run` (a `RunData`) with
    its `RunFigures`; `retraced_spikes`: the spikes the recorded retraces
    explain (`verdicts.retraced_spikes`), for `retracing`."""
    kind = finding.id
    if kind in ("input_bound", "input_stalls"):
        return input_estimate(run, figures)
    if kind == "host_overhead_bound":
        return host_estimate(run, figures)
    if kind in ("latency_bound", "small_batch"):
        return batch_estimate(run, figures)
    if kind in ("warmup", "warmup_dominated"):
        return warmup_estimate(run, figures)
    if kind == "retracing":
        return spike_estimate(run, figures, retraced_spikes, "retraced steps")
    if kind == "stalls":
        return spike_estimate(run, figures, finding.count, "stalls")
    return not_estimated(kind)
