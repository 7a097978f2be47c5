"""The words of each finding: its headline, its details and its fix.

`verdicts.py` decides which findings a run gets, with their ids and
severities (`verdicts.Finding`); this module words them (`words`). Each
function takes the `RunData`, its `RunFigures` (and what the rules
decided: a severity, the share left unjudged) and returns `(headline,
message, fix)`: the headline is one plain sentence
written by `phrases.py`; the message the arithmetic behind it (the tab's
"details", the CLI's `--verbose`), quoting the run's own numbers as
`tb_devicecost.analysis.formatting` writes them and the thresholds they were judged
by (the `Finding`'s `limits`: this floor imports no threshold); the fix
what to change. A change of words, or a translation, touches
this module and `phrases.py` only.
"""

from tb_devicecost.analysis.data_wait import ready_batch_case
from tb_devicecost.analysis.device_side import run_device_trace
from tb_devicecost.analysis.estimates import input_shares_cores
from tb_devicecost.analysis.formatting import MISSING
from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.interventions import tf_data_advisable
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.names import role
from tb_devicecost.format import backend_facts
from tb_devicecost.format import vocabulary
from tb_devicecost.words import fit_end
from tb_devicecost.words import measuring
from tb_devicecost.words import phrases


def no_steps():
    """The words of `no_steps`: nothing recorded yet to judge."""
    return (
        phrases.no_steps(),
        "No training step was recorded yet, so nothing can be judged.",
        "Let the fit run past its first epoch (aggregates are written "
        "at each epoch end), then report again.",
    )


def _wait_clause(run, figures):
    """How the data wait splits into the cost of a ready batch and waiting.

    The fetch floor (a p50) is compared with the p50 data wait; the cost it
    gives is then set apart from the mean wait, clamped to it, so the part
    printed is never larger than the whole (no final stop).
    """
    wait = figures.data_wait
    p50_ms, mean_ms = wait.p50, wait.mean
    floor_ms, ready_fetch_ms = run.fetch_floor_ms, figures.ready_fetch_ms
    if ready_fetch_ms is None:
        return (
            "no fetch floor was measured for this run, so none of its mean data "
            f"wait of {fmt_ms(mean_ms)} ms per step (p50 {fmt_ms(p50_ms)} ms) can be set "
            "apart as the fixed cost of handing over a batch that is already ready"
        )
    case, factor, clamped = ready_batch_case(p50_ms, floor_ms, mean_ms)
    factor = f"{factor:g}x"
    typical = (
        f"the fetch floor, the p50 cost of next() on an iterator whose batches "
        f"are ready, is {fmt_ms(floor_ms)} ms, and the p50 data wait {fmt_ms(p50_ms)} ms"
    )
    if case == "at_floor":
        typical += (
            ": no more than the floor, so the typical step got a ready batch and "
            "its cost is the p50 wait itself, not the larger floor"
        )
    elif case == "within_factor":
        typical += (
            f": within {factor} the floor, so the typical step got a ready batch "
            f"and {fmt_ms(p50_ms)} ms (p50) is this pipeline's cost of handing one over"
        )
    else:
        typical += (
            f": more than {factor} the floor, so the typical step waited for its "
            "batch and only the floor counts as the cost of a ready one"
        )
    if clamped:
        split = (
            f"that cost is more than the mean data wait of {fmt_ms(mean_ms)} ms per "
            f"step, so it is clamped to it: of the mean data wait of {fmt_ms(mean_ms)} ms "
            f"per step, {fmt_ms(ready_fetch_ms)} ms (all of it) is that cost and none is waiting"
        )
    else:
        split = (
            f"of the mean data wait of {fmt_ms(mean_ms)} ms per step, {fmt_ms(ready_fetch_ms)} ms "
            f"is that cost and {fmt_ms(figures.starved_data_wait_ms)} ms is waiting"
        )
    return f"{typical}; {split}"


def _is_training(run):
    return role(run.run)[1] in ("train", "")


def input_bound(run, figures, finding):
    """The words of `input_bound`: the wait above the cost of a ready batch,
    and a fix for the pipeline that fed the fit."""
    step_ms = figures.step.mean
    severity = finding.severity
    adverb = "HIGHLY" if severity == "high" else "MODERATELY"
    message = (
        f"{fmt_share(figures.input_share)} of the mean step is spent waiting for "
        "the input pipeline beyond the cost of a ready batch: "
        f"{fmt_ms(figures.starved_data_wait_ms)} ms of the {fmt_ms(step_ms)} ms mean "
        f"step ({adverb} input-bound by the profiler's "
        f"{fmt_share(finding.limit('high'))}/{fmt_share(finding.limit('moderate'))} "
        "thresholds, which "
        "apply to this share"
        + (
            ""
            if severity == "high"
            else "; a moderate share is a finding, not the run's bottleneck"
        )
        + "). In all, the data wait is "
        f"{fmt_share(figures.shares['data_wait'])} of the total steady-state time; "
        f"{_wait_clause(run, figures)}."
    )
    pipeline = run.input_pipeline
    fix = phrases.input_fix(pipeline, run.backend, is_accelerator(run.placement.device),
                            tf_data_advisable(run))
    if _is_training(run):
        fix += (
            " If the pipeline augments the data (random flips, crops, "
            "rotations), move that into the model (keras.layers.RandomFlip, "
            "RandomRotation...) so it runs with the step on the accelerator."
        )
    elif (pipeline or {}).get("kind") in (None, "tf.data"):
        fix += phrases.tf_data_eval_fix(pipeline)
    return phrases.input_bound(severity, figures.starved_data_wait_ms, step_ms), message, fix


def no_fetch_floor(run, figures, finding):
    """The words of `no_fetch_floor`: why a wait without a floor is not
    called slow."""
    wait = figures.data_wait
    share = figures.input_share
    reasons = []
    if finding.limit("under_high"):
        reasons.append(
            f"a share under the {fmt_share(finding.limit('high'))} high threshold could be the "
            "cost of handing over ready batches alone"
        )
    if finding.limit("under_min_p50"):
        reasons.append(
            f"the p50 wait is under {fmt_ms(finding.limit('min_p50_ms'))} ms, within what "
            "handing over a ready batch costs"
        )
    return (
        phrases.no_fetch_floor(wait.mean, figures.shares["data_wait"]),
        "No fetch floor was measured for this run (validation and custom-loop "
        "runs have none), so its data wait cannot be split into the fixed cost "
        "of handing over a ready batch and real waiting. The data wait is "
        f"{fmt_share(figures.shares['data_wait'])} of the total steady-state time: "
        f"{fmt_ms(wait.mean)} ms per step (mean), p50 {fmt_ms(wait.p50)} ms. "
        "Judged conservatively, that is no evidence of a slow pipeline: "
        + " and ".join(reasons)
        + ".",
        "Nothing to fix unless the wait grows. " + phrases.ready_batches(tf_data_advisable(run))
        + "; training runs recorded by DeviceCostCallback get a "
        "fetch floor to judge the wait against.",
    )


def input_stalls(run, figures):
    """The words of `input_stalls`: a few long waits, not starvation."""
    wait = figures.data_wait
    return (
        phrases.input_stalls(_wait_max(wait)),
        f"Nine steps in ten got their batch within {fmt_ms(wait.p90)} ms (the "
        f"p90 data wait; a ready batch costs {fmt_ms(figures.ready_fetch_ms)} ms), "
        f"but a few waited up to {fmt_ms(_wait_max(wait))} ms (the max): "
        f"{fmt_ms(figures.starved_data_wait_ms)} ms per step as a mean, "
        f"{fmt_share(figures.input_share)} of the mean step. The pipeline keeps up; "
        "these are occasional stalls, not starvation.",
        phrases.stalls_fix(tf_data_advisable(run)),
    )


def _wait_max(wait):
    return wait.max if wait.max is not None else wait.p99


def host_overhead_bound(run, figures, finding):
    """The words of `host_overhead_bound`: the time outside the step function."""
    step_ms = figures.step.mean
    host_ms = figures.host_overhead.mean
    severity = finding.severity
    adverb = "highly" if severity == "high" else "moderately"
    return (
        phrases.host_overhead_bound(severity, host_ms, step_ms),
        f"{fmt_share(figures.shares['host_overhead'])} of the total steady-state "
        "time is host overhead outside the step function: "
        f"{fmt_ms(host_ms)} ms of the {fmt_ms(step_ms)} ms mean step "
        "(the Keras loop, callbacks, logging and the progress bar; "
        f"{adverb} host-bound by the profiler's "
        f"{fmt_share(finding.limit('high'))}/{fmt_share(finding.limit('moderate'))} thresholds"
        + (
            ""
            if severity == "high"
            else "; a moderate share is a finding, not the run's bottleneck"
        )
        + ").",
        "Cut per-batch Python work: fit(..., verbose=2) or verbose=0 instead of "
        "the per-batch progress bar; callbacks that log every N batches or per "
        "epoch (update_freq='epoch'); no .numpy() or float() on tensors in "
        "batch hooks; compile(..., steps_per_execution=N) to run N steps per "
        "call from Python.",
    )


def latency_bound(run, figures, finding):
    """The words of `latency_bound`: the accelerator idle most of the step,
    with the trace's evidence (its `input_severity`: a moderate wait beside it)."""
    input_severity = finding.input_severity
    busy_limit = finding.limit("device_busy")
    if input_severity:
        # A moderate wait: the pipeline's Python may also hold the GIL
        # that dispatching and completing the step need.
        opening = (
            f"The input keeps up only in part ({fmt_share(figures.input_share)} "
            f"of the mean step waits for it), and {_busy_evidence(run, busy_limit)}. The "
            "rest is host time paid on every step: the Keras loop, "
            "dispatching the step, launching kernels and waiting for their "
            "results, and the input pipeline's Python, which holds the GIL "
            "that dispatching the step and reading its results need (so "
            "part of its wait is counted as compute: docs/FORMAT.md)"
        )
    else:
        opening = (
            f"The input keeps up, yet {_busy_evidence(run, busy_limit)}. The rest is a "
            "fixed cost paid on every step (the Keras loop, dispatching the "
            "step, launching kernels and waiting for their results)"
        )
    return (
        phrases.latency_bound(run.placement.device, run.device_busy_fraction, figures.step.mean),
        f"{opening}, not arithmetic; our mean steady step is "
        f"{fmt_ms(figures.step.mean)} ms.",
        "Give each launch more work: a larger batch; "
        "compile(..., steps_per_execution=N); jit_compile=True to fuse small "
        "kernels (XLA); or train this model on the CPU, which has no launch "
        "latency."
        + (
            " " + phrases.input_out_of_process(run.input_pipeline, tf_data_advisable(run))
            if input_severity and phrases.input_out_of_process(run.input_pipeline)
            else ""
        ),
    )


def _busy_evidence(run, busy_limit):
    """`GPU:0 was busy only 2.2% of each traced step: ...`, from the trace.

    The share is the run's `device_busy_fraction`; the milliseconds, kernel
    counts and durations are the trace windows' per-step means, each quoted
    only when the trace holds it.
    """
    trace = run_device_trace(run) or {}
    windows = trace.get("windows") or 0
    text = (
        f"{run.placement.device or 'the accelerator'} was busy only "
        f"{fmt_share(run.device_busy_fraction)} of each traced step (under "
        f"{fmt_share(busy_limit)})"
    )
    if trace.get("busy_ms") is not None and trace.get("traced_step_ms") is not None:
        # Windows digested since the split count compute kernels only
        # (collectives and copies apart); older ones kernels and copies.
        what = "compute kernels" if run.device_split else "kernels and copies"
        text += (
            f": {fmt_ms(trace['busy_ms'])} ms of {what} in the "
            f"{fmt_ms(trace['traced_step_ms'])} ms mean traced step"
        )
    kernels = trace.get("kernels")
    if kernels is not None:
        text += f" ({fmt_count(kernels)} kernels per step"
        if trace.get("kernel_mean_us") is not None:
            text += f", {fmt_ms(trace['kernel_mean_us'])} µs each on average"
        text += ")"
    if windows > 1:
        text += f"; means over {fmt_count(windows)} trace windows"
    return text


def compute_bound(run, figures, input_severity=None, unjudged=None):
    """The words of `compute_bound`, with what the input's share was judged
    (`input_severity` moderate, or `unjudged` without a fetch floor)."""
    step_ms = figures.step.mean
    compute_ms = figures.compute.mean
    message = (
        f"Compute takes {fmt_share(figures.shares['compute'])} of the total "
        f"steady-state time: {fmt_ms(compute_ms)} ms of the {fmt_ms(step_ms)} ms mean "
        f"step on {run.placement.device or 'the device'}. "
    )
    if run.fetch_in_graph:
        message += (
            f"With steps_per_execution={run.steps_per_record} the batch is "
            "fetched inside the compiled function, so any data wait is counted "
            "in compute."
        )
    elif input_severity:
        message += (
            f"Waiting for data beyond the cost of a ready batch is "
            f"{fmt_share(figures.input_share)} of the mean step: a moderate share, "
            "reported as a finding (input_bound), while compute sets the pace."
        )
    elif unjudged or figures.ready_fetch_ms is None:
        message += (
            f"As for the input, {_wait_clause(run, figures)} (see no_fetch_floor)."
            if unjudged
            else f"As for the input, {_wait_clause(run, figures)}."
        )
    else:
        message += (
            f"The input pipeline keeps up: {_wait_clause(run, figures)}, so only "
            f"{fmt_share(figures.input_share)} of the mean step is spent waiting "
            "beyond that cost."
        )
    fix = (
        "The healthy case: the step itself sets the pace. To go faster make "
        "it cheaper: jit_compile=True (XLA fusion), mixed precision "
        "(keras.mixed_precision.set_global_policy('mixed_float16')) on GPUs "
        "with tensor cores, a larger batch for better device utilisation."
    )
    if backend_facts.of(run.backend).map_threads_share_cores and input_shares_cores(run):
        fix += phrases.shared_map_threads(run.cpu_count)
    if is_accelerator(run.placement.device) and run.device_busy_fraction is None:
        fix += (
            " A device trace would tell whether the accelerator is busy or "
            "waiting on kernel launches (latency_bound)."
        )
        note = run.device_busy_window or {}
        if note.get("reason"):
            # The default window was not traced: say why (trace_budget).
            fix += " " + note["reason"]
    return phrases.compute_bound(compute_ms, step_ms, run.fetch_in_graph), message, fix


def warmup(run, figures, finding_id, steady_verdict=None):
    """The words of `warmup` or `warmup_dominated` (`finding_id`), the latter
    naming the run's `steady_verdict`."""
    numbers = run.numbers
    warmup_ms = numbers.warmup_ms
    share = figures.warmup_share
    wall = numbers.wall
    if wall.total and wall.warmup is not None:
        warmup_ms = wall.warmup  # The part the share was computed from.
    count = numbers.warmup_count or 1
    fits = numbers.sessions or 1
    # A fit's warm-up can be two steps (Keras's first call traces the step,
    # the next instantiates it): count steps and fits apart.
    steps = "1 step" if count == 1 else f"{fmt_count(count)} steps"
    where = "the fit" if fits == 1 else f"{fmt_count(fits)} fits"
    message = (
        f"Warm-up ({steps} at the start of {where}: tracing, graph "
        "optimisation, compilation) took "
    )
    if wall.total:
        message += (
            f"{fmt_ms(warmup_ms)} ms in total, {fmt_share(share)} of the fit's "
            f"{fmt_ms(wall.total)} ms total wall time; the "
            f"{fmt_count(figures.steady_steps)} steady steps after it took "
            f"{fmt_ms(wall.steps)} ms in total, the time between steps (epoch "
            "starts, validation, callbacks at epoch end) "
            f"{fmt_ms(wall.between_steps)} ms and the tool's own measurements "
            f"{fmt_ms(wall.measurement)} ms."
        )
    else:
        steady_wall_ms = figures.step.mean or 0.0
        steady_wall_ms *= figures.steady_steps or 0
        message += (
            f"{fmt_ms(warmup_ms)} ms in total, {fmt_share(share)} of the "
            f"{fmt_ms(warmup_ms + steady_wall_ms)} ms total of warm-up and steady steps; "
            f"the {fmt_count(figures.steady_steps)} steady steps after it took "
            f"{fmt_ms(steady_wall_ms)} ms in total. The fit's time outside the steps "
            "was not recorded, so its total wall time is unknown."
        )
    if finding_id == "warmup_dominated" and steady_verdict:
        message += f" In steady state the run is {steady_verdict}."
    fix = (
        "Exclude warm-up when comparing devices: compare the steady-state step "
        "times (as this report does), not the fit's total time. Train for more "
        "steps so compilation is amortised, reuse one compiled model across fit "
        "calls instead of recompiling, and expect a longer first step with "
        "jit_compile=True."
    )
    return phrases.warmup(count, warmup_ms, share, bool(wall.total)), message, fix


def _steps_text(steps, limit=5):
    """` (steps 12, 40, ...)`, or nothing without steps."""
    if not steps:
        return ""
    shown = ", ".join(str(step) for step in steps[:limit])
    return f" (step{'s' if len(steps) > 1 else ''} {shown}{', ...' if len(steps) > limit else ''})"


def retracing(run):
    """The words of `retracing`: the recorded retraces after warm-up."""
    numbers = run.numbers
    retraces = numbers.retraces
    count = retraces.count
    reason = ""
    if numbers.batch_distinct and numbers.batch_distinct > 1:
        reason = (
            f" Batch sizes vary from {numbers.batch_min} to {numbers.batch_max}: "
            "a smaller last batch is a new input shape, which can make "
            "TensorFlow trace the step again."
        )
    return (
        phrases.retracing(count),
        f"The step function was traced again {fmt_count(count)} time(s) "
        f"after warm-up{_steps_text(retraces.steps)}, by "
        f"{retraces.source or 'the backend'}: each retrace repeats "
        "tracing and graph optimisation inside a step." + reason,
        "Keep input shapes fixed: batch(..., drop_remainder=True), pad "
        "to bucketed lengths, pass tensors rather than Python values; "
        "for custom tf.functions use reduce_retracing=True or an "
        "input_signature.",
    )


def stalls(run, unexplained, unexplained_steps):
    """The words of `unexplained` spikes (at `unexplained_steps`, when known)
    that the recorded retraces do not account for."""
    retraces = run.numbers.retraces
    count = retraces.count
    if count is None:
        evidence = (
            "Whether the step function was traced again was not recorded, so "
            "they are not called retracing."
        )
    elif count == 0:
        evidence = (
            "The step function was not traced again (by "
            f"{retraces.source or 'the backend'}), so they are not retracing."
        )
    else:
        evidence = "The retraces recorded do not account for them."
    return (
        phrases.stalls(unexplained, vocabulary.SPIKE_RATIO),
        f"{fmt_count(unexplained)} step(s) after warm-up took more than "
        f"{vocabulary.SPIKE_RATIO:g}x the p50 compute{_steps_text(unexplained_steps)}. "
        + evidence
        + " Causes can be Python garbage collection, another process on "
        "the machine or on a shared accelerator, or a checkpoint or log "
        "written in a batch hook.",
        "Look at what else ran at those steps: other processes, "
        "callbacks that save or log every N batches. gc.freeze() after "
        "building the model shortens garbage-collection pauses. A "
        "profiler trace window over such a step (profile_steps=...) "
        "shows what it waited for.",
    )


def incomplete_run(run, figures):
    """The words of `incomplete_run` (`fit_end.words`)."""
    return fit_end.words(run, figures)


def fetch_in_graph(run):
    """The words of `fetch_in_graph`: the input's wait hidden in compute."""
    return (
        phrases.fetch_in_graph(run.steps_per_record),
        f"With steps_per_execution={run.steps_per_record} each record "
        "covers one execution, and the batches are fetched inside the "
        "compiled function: waiting for data is counted in compute, so "
        "this run cannot be judged input-bound or not.",
        "To measure the input pipeline, run one short fit with "
        "steps_per_execution=1.",
    )


def cpu_ops_off_accelerator(run):
    """An accelerator visible, and none of the step's ops ran on it."""
    placement = run.placement
    ops = placement.ops
    accelerators = [name for name in placement.devices if is_accelerator(name)]
    return (
        phrases.cpu_ops_off_accelerator(sum(ops.values())),
        f"An accelerator is visible ({', '.join(accelerators) or 'GPU'}) "
        f"but none of the step's {fmt_count(sum(ops.values()))} ops ran on it: "
        f"the model trained on {placement.device}.",
        "Check that the model and its data are not pinned with "
        "tf.device('/CPU:0'), that the TensorFlow build sees the GPU "
        "(tf.config.list_physical_devices('GPU')), and that the ops have "
        "GPU kernels.",
    )


def cpu_ops_on_accelerator_run(run):
    """The step on an accelerator, some of its ops on the CPU."""
    device = run.placement.device
    ops = run.placement.ops
    names = run.placement.cpu_ops_on_accelerator_run
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    cpu_ops = sum(n for name, n in ops.items() if not is_accelerator(name))
    return (
        phrases.cpu_ops_on_accelerator_run(cpu_ops, sum(ops.values()), device),
        f"The step runs on {device}, yet {fmt_count(cpu_ops)} of its "
        f"{fmt_count(sum(ops.values()))} ops ran on the CPU, of {len(names)} "
        f"type(s): {shown}. Each forces copies between host and device "
        "in the middle of the step.",
        "Keep ops on the accelerator: replace ops without GPU kernels "
        "(tf.py_function, string ops, some int64 ops) with ones that "
        "have them, create layers and variables inside the model rather "
        "than under tf.device('/CPU:0'), and pin only the input "
        "pipeline to the CPU.",
    )


def cross_device_copies(run):
    """The words of `cross_device_copies`: the graph's Send/Recv pairs."""
    copies = run.placement.cross_device_copies
    busy = ", ".join(
        f"{name} ({fmt_count(n)} ops)"
        for name, n in sorted(run.placement.ops.items())
        if n
    )
    return (
        phrases.cross_device_copies(copies),
        f"The step's graph has {fmt_count(copies)} edge(s) where data crosses "
        f"between devices (Send/Recv pairs); its ops ran on "
        f"{busy or MISSING}. "
        f"Each copy is paid on every step.",
        "Keep the step on one device: remove tf.device(...) pins inside "
        "layers, keep variables on the device that uses them, and move "
        "data to the accelerator once per batch with "
        ".prefetch(tf.data.AUTOTUNE) (or "
        "tf.data.experimental.prefetch_to_device) rather than per op.",
    )


def small_batch(run, figures):
    """The words of `small_batch`: fixed per-step costs outweigh the work."""
    batch = run.batch_size
    median_ms = figures.step.p50
    on_accelerator = is_accelerator(run.placement.device)
    return (
        phrases.small_batch(batch, median_ms),
        f"Each step processes only {batch} samples in {fmt_ms(median_ms)} ms "
        f"(p50): at this size the fixed cost of a step (the Python "
        "loop, dispatch"
        + (", kernel launches, host-device synchronisation" if on_accelerator else "")
        + ") is a large part of it, so "
        + ("an accelerator cannot pay off." if on_accelerator else "throughput is low."),
        "Use a larger batch (e.g. 256 or more, adjusting the learning "
        "rate), or compile(..., steps_per_execution=N) to run N steps "
        "per call; for a model this small the CPU may simply be the "
        "faster device.",
    )


def words(finding, run, figures):
    """`(headline, message, fix)` of a `verdicts.Finding` of `run` (a
    `RunData`) with its `RunFigures`."""
    severity = finding.severity
    by_id = {
        "no_steps": no_steps,
        "input_bound": lambda: input_bound(run, figures, finding),
        "no_fetch_floor": lambda: no_fetch_floor(run, figures, finding),
        "input_stalls": lambda: input_stalls(run, figures),
        "host_overhead_bound": lambda: host_overhead_bound(run, figures, finding),
        "latency_bound": lambda: latency_bound(run, figures, finding),
        "compute_bound": lambda: compute_bound(
            run, figures, finding.input_severity, finding.unjudged),
        "warmup": lambda: warmup(run, figures, finding.id, finding.steady_verdict),
        "warmup_dominated": lambda: warmup(run, figures, finding.id, finding.steady_verdict),
        "retracing": lambda: retracing(run),
        "stalls": lambda: stalls(run, finding.count, list(finding.steps)),
        "incomplete_run": lambda: incomplete_run(run, figures),
        "fetch_in_graph": lambda: fetch_in_graph(run),
        # One id, two cases: the rule makes it high only when no op at all
        # ran on the visible accelerator (`verdicts._run_findings`).
        "cpu_ops_on_accelerator_run": lambda: (
            cpu_ops_off_accelerator(run) if severity == "high"
            else cpu_ops_on_accelerator_run(run)),
        "cross_device_copies": lambda: cross_device_copies(run),
        "small_batch": lambda: small_batch(run, figures),
        "measuring_cost": lambda: measuring.measuring_cost(figures, finding),
    }
    return by_id[finding.id]()
