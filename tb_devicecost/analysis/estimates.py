"""What a fix would buy: each finding's `expected` (docs/VERDICTS.md).

Every estimate is computed from the run's own numbers (its `RunData` and
`RunFigures`) and says how
(`basis`): the mean step without the wait a faster pipeline would remove,
the fit's wall time with a warm-up as short as a steady step, the step at a
larger batch from the trace's device time per sample. Where the numbers
are missing it says so and claims nothing (`no_estimate`). Its `basis`
and `text` are `reasons.Reason`s: `tb_devicecost.words.estimates` says
them, rounded so that a bound stays true.
"""

from tb_devicecost.analysis.device_side import run_device_trace
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.reasons import reason as said
from tb_devicecost.analysis.thresholds import LATENCY_MAX_BATCH_GROWTH
from tb_devicecost.analysis.thresholds import SHARED_CORES
from tb_devicecost.format import vocabulary


# Where an estimate is a ratio under this, its words give the time saved
# instead: "1.0x as fast" says nothing.
WALL_SPEEDUP_WORDS = 1.1


def no_estimate(reason):
    """An `expected` that claims nothing, and says why (`reason`, a
    `reasons.Reason`)."""
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
        "text": said("no_estimate"),
    }


def not_estimated(finding_id):
    """The `expected` of a finding that never has an estimate, with why."""
    return no_estimate(said("not_estimated", finding=finding_id))


def _samples_estimate(figures, bound, step_ms, basis, samples_per_step=None,
                      batch_size=None, capped=False):
    """What a fix buys in samples/s: a mean step of `step_ms` for
    `samples_per_step` samples (the run's own by default)."""
    before = figures.samples_per_s
    samples = samples_per_step or figures.samples_per_step
    if not before or not samples:
        return no_estimate(said("samples_unrecorded"))
    if not step_ms or step_ms <= 0:
        return no_estimate(said("no_time_left"))
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
        text=said("samples_text", bound=bound, speedup=speedup, batch_size=batch_size,
                  after=after, before=before),
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
        return no_estimate(said("wall_unrecorded"))
    if saved_ms <= 0:
        return no_estimate(said("nothing_saved"))
    if after_ms <= 0:
        return no_estimate(said("whole_fit"))
    if not whole:
        basis = said("wall_of_steps_only", basis=basis)
    speedup = before_ms / after_ms
    if speedup < WALL_SPEEDUP_WORDS:
        text = said("wall_saved_text", bound=bound, saved_ms=saved_ms, before_ms=before_ms)
    else:
        text = said("wall_speedup_text", bound=bound, speedup=speedup, after_ms=after_ms,
                    before_ms=before_ms)
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
        return no_estimate(said("step_or_wait_unrecorded"))
    kind = (run.input_pipeline or {}).get("kind")
    if (
        kind in ("PyDataset", "generator", "torch DataLoader")
        and not is_accelerator(run.placement.device)
        and run.cpu_count is not None
        and run.cpu_count <= SHARED_CORES
    ):
        return no_estimate(said("workers_share_cores", cores=run.cpu_count))
    after_ms = step_ms - min(starved_ms, step_ms)
    bound, why = input_bound(run)
    return _samples_estimate(
        figures,
        bound,
        after_ms,
        said("input_basis", step_ms=step_ms, starved_ms=starved_ms, after_ms=after_ms,
             floor_measured=figures.ready_fetch_ms is not None, why=why),
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
    claims, by where the input ran; `why`, a `reasons.Reason` or `None`.

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
        return "at_least", said("input_threads_held_gil")
    if input_shares_cores(run):
        # Issue 34, this machine's demo: the naive map's step computed
        # 48 ms against 28 ms with the augmentation in the model (the
        # wait predicted 1.8x, 3.1x achieved).
        return "at_least", said("input_threads_shared_cores", cores=run.cpu_count)
    if (run.input_pipeline or {}).get("kind") == "arrays" and is_accelerator(
            run.placement.device):
        return "at_most", said("input_dispatched_asynchronously")
    return "about", None


def host_estimate(run, figures):
    """At most: the mean step without any host overhead."""
    step_ms, host_ms = figures.step.mean, figures.host_overhead.mean
    if step_ms is None or host_ms is None:
        return no_estimate(said("step_or_host_unrecorded"))
    after_ms = step_ms - min(host_ms, step_ms)
    return _samples_estimate(
        figures,
        "at_most",
        after_ms,
        said("host_basis", step_ms=step_ms, host_ms=host_ms, after_ms=after_ms),
    )


def warmup_estimate(run, figures):
    """At most: the fit's wall time had its warm-up steps taken a steady step."""
    step_ms = figures.step.mean
    wall = run.numbers.wall
    warmup_ms = wall.warmup if wall.total and wall.warmup is not None else run.numbers.warmup_ms
    count = run.numbers.warmup_count or 1
    if step_ms is None or warmup_ms is None:
        return no_estimate(said("no_steady_step" if step_ms is None else "warmup_unrecorded"))
    saved_ms = max(0.0, warmup_ms - count * step_ms)
    return _wall_estimate(
        run,
        figures,
        "at_most",
        saved_ms,
        said("warmup_basis", count=count, warmup_ms=warmup_ms, step_ms=step_ms),
    )


def spike_estimate(run, figures, spikes, finding_id):
    """At least: `spikes` steps each longer than SPIKE_RATIO x the p50 compute
    were at least (SPIKE_RATIO - 1) x the p50 compute longer than a typical
    one; `finding_id`, `retracing` or `stalls`, says whose steps."""
    compute_ms = figures.compute.p50
    if not spikes or not compute_ms:
        return no_estimate(said("no_spike", finding=finding_id, ratio=vocabulary.SPIKE_RATIO))
    saved_ms = spikes * (vocabulary.SPIKE_RATIO - 1.0) * compute_ms
    return _wall_estimate(
        run,
        figures,
        "at_least",
        saved_ms,
        said("spike_basis", spikes=spikes, ratio=vocabulary.SPIKE_RATIO,
             compute_ms=compute_ms, saved_ms=saved_ms),
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
        return no_estimate(said("batch_needs_trace"))
    if not step_ms or not batch:
        return no_estimate(said("step_or_batch_unrecorded"))
    busy_ms = min(trace["busy_ms"], step_ms)
    fixed_ms = step_ms - busy_ms
    if busy_ms <= 0 or fixed_ms <= 0:
        return no_estimate(said("trace_not_split"))
    per_sample_ms = busy_ms / batch
    half = batch * fixed_ms / busy_ms
    limit = LATENCY_MAX_BATCH_GROWTH * batch
    capped = half > limit
    target = 1
    while target * 2 <= min(half, limit):
        target *= 2
    if target <= batch:
        return no_estimate(said("device_busy_already", share=busy_ms / step_ms))
    after_ms = fixed_ms + per_sample_ms * target
    # At least: the traced batch's device time per sample includes the
    # device's own cost per step, and the device works while the host
    # prepares the next step; both make the larger batch's step shorter
    # than this line (issue 34, on an H100: 36x read on it at batch 1,024,
    # 101x achieved).
    return _samples_estimate(
        figures,
        "at_least",
        after_ms,
        said("batch_basis", busy_ms=busy_ms, batch=batch, per_sample_ms=per_sample_ms,
             step_ms=step_ms, fixed_ms=fixed_ms, target=target, after_ms=after_ms,
             capped=capped, limit=limit, growth=LATENCY_MAX_BATCH_GROWTH, half=half),
        samples_per_step=target,
        batch_size=target,
        capped=capped,
    )


def straggler_estimate(straggler):
    """What the `straggler` finding's fix would buy: the processes' mean
    step less what they wait for it (a `workers.Straggler`)."""
    mean_step_ms = straggler.mean_step_ms
    after_ms = mean_step_ms - straggler.saved_ms
    estimate = no_estimate(said("straggler_basis"))
    if mean_step_ms > 0 and after_ms > 0:
        speedup = mean_step_ms / after_ms
        estimate.update(
            bound="at_most",
            speedup=speedup,
            of="step_ms",
            step_ms=after_ms,
            text=said("straggler_text", speedup=speedup, after_ms=after_ms,
                      mean_step_ms=mean_step_ms),
        )
    return estimate


def waiting_estimate(straggler_expected):
    """What a process `waiting_for_others` would gain: what the straggler's
    fix buys (its finding's `expected`)."""
    return straggler_expected or no_estimate(said("waiting_basis"))


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
        return spike_estimate(run, figures, retraced_spikes, "retracing")
    if kind == "stalls":
        return spike_estimate(run, figures, finding.count, "stalls")
    return not_estimated(kind)
