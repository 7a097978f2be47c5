"""The verdict and findings of a run: the rules `docs/VERDICTS.md` documents.

Every threshold is a named constant below, and `judge` applies them to a
run object (the JSON-ready dict that `analyze_run` builds): one verdict,
the bottleneck that sets the pace, and findings, each with an id, a
severity, a message quoting the run's own numbers (written by
`tb_devicecost.formatting`, as the tables are) and a fix.

The input and host thresholds are the built-in profiler's (xprof's
`InputAnalysis`, `op_stats_to_input_pipeline_analysis.cc`), so both tools
call the same run input-bound.
"""

import math

from tb_devicecost import vocabulary
from tb_devicecost.analysis import record
from tb_devicecost.analysis import wording
from tb_devicecost.formatting import MISSING
from tb_devicecost.formatting import fmt_count
from tb_devicecost.formatting import fmt_ms
from tb_devicecost.formatting import fmt_share

# Steady-state share of each step spent waiting for data, above the fetch
# floor: xprof's kHighlyInfeedBoundThresholdInPercent and
# kModeratelyInfeedBoundThresholdInPercent (comparisons are `>=`).
INPUT_HIGH = 0.20
INPUT_MODERATE = 0.05
# Share of each step outside data wait and compute (the Keras loop,
# callbacks, logging): xprof's "All Others" thresholds. From HOST_HIGH it is
# the verdict; from HOST_MODERATE a finding.
HOST_HIGH = 0.15
HOST_MODERATE = 0.03
# Warm-up (the first step of each fit) as a share of the fit's wall time:
# from WARMUP_DOMINATED it is the verdict, from WARMUP_FINDING a finding.
WARMUP_DOMINATED = 0.5
WARMUP_FINDING = 0.2
# With a device trace: the accelerator busy less than this share of the step
# while the input keeps up is `latency_bound` (torch-tb-profiler's "GPU
# utilisation < 50%"); below LATENCY_HIGH_BUSY the finding is high.
LATENCY_DEVICE_BUSY = 0.5
LATENCY_HIGH_BUSY = 0.2
# The fetch floor (a p50) is measured on a synthetic ready iterator; the
# pipeline's own handover of a ready batch costs up to a few times more
# (measured here: 1.8-3.7x on CPU). When the p50 data wait is within this
# factor of the floor (or below it), the p50 wait is the run's own cost of a
# ready batch.
FETCH_FLOOR_MAX_FACTOR = 4.0
# Handing over a ready batch never costs less than this (ms): xprof's rule
# of thumb, a fetch that returns within 50 microseconds is no bottleneck. A
# floor measured lower (a Python handover of arrays already in memory) is
# raised to it, so a few tens of microseconds of loop are not a verdict.
MIN_READY_FETCH_MS = 0.05
# A share this close to a verdict's threshold (relative) is `borderline`:
# run-to-run noise moves it across, so it makes a finding, not the verdict.
BORDERLINE = 0.15
# Without a measured floor (validation and custom-loop runs, older data) the
# wait cannot be split into handover and starvation, so it is judged
# conservatively: only a HIGH share whose p50 wait is at least this long (above
# every fetch floor measured so far, 0.1-0.7 ms) is evidence of starvation.
NO_FLOOR_MIN_P50_MS = 1.0
# When 90% of the steps waited at most this multiple of the floor, the
# pipeline keeps up: waits above it are occasional stalls, not starvation.
STALL_P90_FACTOR = 2.0
# Batches of at most this many samples whose median step is shorter than
# SMALL_BATCH_STEP_MS get the `small_batch` finding: the fixed cost of a
# step (dispatch, synchronisation, the Python loop) outweighs the work.
SMALL_BATCH_SIZE = 64
SMALL_BATCH_STEP_MS = 10.0
# Retraces (counted by the backend, e.g. TensorFlow's tracing count of the
# train function) from this count on are a moderate finding (info below).
RETRACING_MODERATE = 3
# Spikes with no retrace to explain them (`stalls`): moderate from this
# count, info below.
STALLS_MODERATE = 10
# What a larger batch would buy is estimated from the trace of one batch
# size: for at most this many times the batch that ran. Further is
# extrapolation the trace cannot support (memory, per-sample costs that stop
# growing linearly).
LATENCY_MAX_BATCH_GROWTH = 32

SEVERITIES = ("high", "moderate", "info")
# In the order they are chosen (docs/VERDICTS.md, "Verdicts"); a process of a
# distributed job mostly waiting for another is `waiting_for_others`, which
# the job's analysis sets (`waiting`).
VERDICTS = (
    "waiting_for_others",
    "warmup_dominated",
    "input_bound",
    "host_overhead_bound",
    "latency_bound",
    "compute_bound",
)
# Shares are sums of float milliseconds: a threshold met exactly must not be
# missed by a rounding error in the last digit.
_EPSILON = 1e-9


# The fetch floor: how much of the data wait is the cost of a ready batch.


def split_data_wait(mean, p50, fetch_floor, fetch_in_graph):
    """(ready handover cost, mean wait above it) in milliseconds.

    The fetch floor is a p50 (of `next()` on an iterator whose batches are
    ready), so it is compared with the p50 data wait. When the p50 wait is
    within FETCH_FLOOR_MAX_FACTOR of the floor (or below it), the typical
    step got a ready batch and the p50 wait is this pipeline's own cost of
    handing one over; above that, the floor is. Either way the cost is never
    more than the p50 wait, nor than the mean wait it is taken from: a part
    is never larger than its whole. Without a floor the cost is unknown
    (`None`) and all of the wait is counted; `judge` is then conservative.

    Args:
        mean: The mean data wait per step.
        p50: The p50 data wait per step.
        fetch_floor: The fetch floor (ms), or `None` when not measured.
        fetch_in_graph: Whether the batch is fetched inside the compiled
            function (its wait is then in compute: nothing is starved).
    """
    if mean is None:
        return None, None
    if fetch_in_graph:
        return None, 0.0
    if fetch_floor is None:
        return None, mean
    fetch_floor = max(fetch_floor, MIN_READY_FETCH_MS)
    ready = fetch_floor
    if p50 is not None and p50 <= FETCH_FLOOR_MAX_FACTOR * fetch_floor:
        ready = p50
    ready = min(ready, mean)
    return ready, max(0.0, mean - ready)


# Verdict and findings.


def _severity(share, high, moderate):
    if share is None:
        return None
    if share >= high - _EPSILON:
        return "high"
    if share >= moderate - _EPSILON:
        return "moderate"
    return None


def borderline(share, high):
    """Whether `share` is within `BORDERLINE` (relative) of `high`."""
    return share is not None and abs(share - high) < BORDERLINE * high


def _finding(finding_id, severity, message, fix, expected=None, headline=None):
    """A finding: its `headline` (one plain sentence, `wording.py`), the
    `message` with the arithmetic behind it, the fix and what it buys."""
    if expected is None:
        expected = no_estimate(_NO_ESTIMATE[finding_id])
    return {
        "id": finding_id,
        "severity": severity,
        "headline": headline if headline is not None else message,
        "message": message,
        "fix": fix,
        "expected": expected,
    }


def judge(run):
    """Returns (verdict, steady-state verdict, findings).

    The verdict names the dominant bottleneck: only a HIGH input or host
    share makes it `input_bound` or `host_overhead_bound` (the larger share
    when both are high); a moderate one is a finding beside the verdict.
    `warmup_dominated` replaces the steady-state verdict only in the
    verdict. The verdict's own finding comes first, the others by severity.

    Args:
        run: A run object of `analyze_run` before its `verdict`,
            `steady_verdict` and `findings` are set.
    """
    step = run["step_ms"]["mean"]
    if step is None or not run["steady_steps"]:
        findings = []
        if run["warmup_ms"] is not None:
            findings.append(_warmup_finding(run, "warmup_dominated", "high"))
        else:
            findings.append(
                _finding(
                    "no_steps",
                    "info",
                    "No training step was recorded yet, so nothing can be judged.",
                    "Let the fit run past its first epoch (aggregates are written "
                    "at each epoch end), then report again.",
                    headline=wording.no_steps(),
                )
            )
        findings.extend(_run_findings(run))
        verdict = "warmup_dominated" if run["warmup_ms"] is not None else None
        return verdict, None, findings

    input_share = run["input_share"]
    host_share = run["shares"]["host_overhead"]
    input_severity = _severity(input_share, INPUT_HIGH, INPUT_MODERATE)
    host_severity = _severity(host_share, HOST_HIGH, HOST_MODERATE)
    # Near its threshold a share is a finding, never the verdict: the same
    # fit lands on either side from run to run.
    near = {
        "input_bound": borderline(input_share, INPUT_HIGH),
        "host_overhead_bound": borderline(host_share, HOST_HIGH),
    }
    if near["input_bound"] and input_severity == "high":
        input_severity = "moderate"
    if near["host_overhead_bound"] and host_severity == "high":
        host_severity = "moderate"
    host_p50, step_p50 = run["host_overhead_ms"]["p50"], run["step_ms"]["p50"]
    if (
        host_severity == "high"
        and host_p50 is not None
        and step_p50
        and host_p50 < HOST_MODERATE * step_p50
    ):
        # The typical step spends next to nothing outside its fetch and
        # compute: the share rests on a few long pauses (a collection, the
        # machine busy elsewhere), which is a finding, not the verdict.
        host_severity = "moderate"
    wait = run["data_wait_ms"]
    unjudged = None
    if input_severity and run["ready_fetch_ms"] is None and not run["fetch_in_graph"]:
        # No fetch floor: only a high share of long waits is evidence.
        long_waits = wait["p50"] is not None and wait["p50"] >= NO_FLOOR_MIN_P50_MS - _EPSILON
        if input_severity != "high" or not long_waits:
            unjudged, input_severity = input_severity, None
    stalls = None
    if (
        input_severity
        and run["ready_fetch_ms"]
        and wait["p90"] is not None
        and (
            wait["p90"] <= STALL_P90_FACTOR * run["ready_fetch_ms"]
            or (
                run["input_share_without_longest_wait"] is not None
                and run["input_share_without_longest_wait"] < INPUT_MODERATE
            )
        )
    ):
        # Nine steps in ten got a ready batch, or the share rests on one
        # wait: a few long waits, not a slow pipeline.
        stalls, input_severity = input_severity, None
    busy = run["device_busy_fraction"]
    on_accelerator = record.is_accelerator(run["device"])

    candidates = []
    if input_severity == "high":
        candidates.append((input_share, "input_bound"))
    if host_severity == "high":
        candidates.append((host_share, "host_overhead_bound"))
    if candidates:
        steady_verdict = max(candidates)[1]
    elif on_accelerator and busy is not None and busy < LATENCY_DEVICE_BUSY:
        steady_verdict = "latency_bound"
    else:
        steady_verdict = "compute_bound"

    findings = {}
    if input_severity:
        findings["input_bound"] = _input_finding(run, input_severity)
    if unjudged:
        findings["no_fetch_floor"] = _no_floor_finding(run)
    if stalls:
        findings["input_stalls"] = _stalls_finding(run)
    if host_severity:
        findings["host_overhead_bound"] = _host_finding(run, host_severity)
    if steady_verdict == "latency_bound":
        findings["latency_bound"] = _latency_finding(run, input_severity)
    if steady_verdict == "compute_bound":
        findings["compute_bound"] = _compute_finding(run, input_severity, unjudged)

    warmup_share = run["warmup_share_of_wall"]
    verdict = steady_verdict
    if warmup_share is not None and warmup_share >= WARMUP_DOMINATED - _EPSILON:
        verdict = "warmup_dominated"
        findings["warmup_dominated"] = _warmup_finding(
            run, verdict, "high", steady_verdict
        )
    elif warmup_share is not None and warmup_share >= WARMUP_FINDING - _EPSILON:
        findings["warmup"] = _warmup_finding(run, "warmup", "moderate")

    ordered = [findings.pop(verdict)] if verdict in findings else []
    rest = list(findings.values()) + _run_findings(run)
    rest.sort(key=lambda finding: SEVERITIES.index(finding["severity"]))
    return verdict, steady_verdict, ordered + rest


def _ready_cost(run):
    """The p50-based cost of a ready batch before it is clamped to the mean."""
    p50, floor = run["data_wait_ms"]["p50"], run["fetch_floor_ms"]
    if floor is not None:
        floor = max(floor, MIN_READY_FETCH_MS)
    if p50 is not None and floor and p50 <= FETCH_FLOOR_MAX_FACTOR * floor:
        return p50
    return floor


def _wait_clause(run):
    """How the data wait splits into the cost of a ready batch and waiting.

    The fetch floor (a p50) is compared with the p50 data wait; the cost it
    gives is then set apart from the mean wait, clamped to it, so the part
    printed is never larger than the whole (no final stop).
    """
    wait = run["data_wait_ms"]
    p50, mean = wait["p50"], wait["mean"]
    floor, ready = run["fetch_floor_ms"], run["ready_fetch_ms"]
    if ready is None:
        return (
            "no fetch floor was measured for this run, so none of its mean data "
            f"wait of {fmt_ms(mean)} ms per step (p50 {fmt_ms(p50)} ms) can be set "
            "apart as the fixed cost of handing over a batch that is already ready"
        )
    factor = f"{FETCH_FLOOR_MAX_FACTOR:g}x"
    typical = (
        f"the fetch floor, the p50 cost of next() on an iterator whose batches "
        f"are ready, is {fmt_ms(floor)} ms, and the p50 data wait {fmt_ms(p50)} ms"
    )
    if p50 is not None and p50 <= floor:
        typical += (
            ": no more than the floor, so the typical step got a ready batch and "
            "its cost is the p50 wait itself, not the larger floor"
        )
    elif p50 is not None and p50 <= FETCH_FLOOR_MAX_FACTOR * floor:
        typical += (
            f": within {factor} the floor, so the typical step got a ready batch "
            f"and {fmt_ms(p50)} ms (p50) is this pipeline's cost of handing one over"
        )
    else:
        typical += (
            f": more than {factor} the floor, so the typical step waited for its "
            "batch and only the floor counts as the cost of a ready one"
        )
    cost = _ready_cost(run)
    if cost is not None and mean is not None and cost > mean + _EPSILON:
        split = (
            f"that cost is more than the mean data wait of {fmt_ms(mean)} ms per "
            f"step, so it is clamped to it: of the mean data wait of {fmt_ms(mean)} ms "
            f"per step, {fmt_ms(ready)} ms (all of it) is that cost and none is waiting"
        )
    else:
        split = (
            f"of the mean data wait of {fmt_ms(mean)} ms per step, {fmt_ms(ready)} ms "
            f"is that cost and {fmt_ms(run['starved_data_wait_ms'])} ms is waiting"
        )
    return f"{typical}; {split}"


def _is_training(run):
    return record.role(run["run"])[1] in ("train", "")


def _input_finding(run, severity):
    step = run["step_ms"]["mean"]
    adverb = "HIGHLY" if severity == "high" else "MODERATELY"
    message = (
        f"{fmt_share(run['input_share'])} of the mean step is spent waiting for "
        "the input pipeline beyond the cost of a ready batch: "
        f"{fmt_ms(run['starved_data_wait_ms'])} ms of the {fmt_ms(step)} ms mean "
        f"step ({adverb} input-bound by the profiler's "
        f"{fmt_share(INPUT_HIGH)}/{fmt_share(INPUT_MODERATE)} thresholds, which "
        "apply to this share"
        + (
            ""
            if severity == "high"
            else "; a moderate share is a finding, not the run's bottleneck"
        )
        + "). In all, the data wait is "
        f"{fmt_share(run['shares']['data_wait'])} of the total steady-state time; "
        f"{_wait_clause(run)}."
    )
    pipeline = run.get("input_pipeline")
    fix = wording.input_fix(pipeline, run.get("backend"), record.is_accelerator(run["device"]))
    if _is_training(run):
        fix += (
            " If the pipeline augments the data (random flips, crops, "
            "rotations), move that into the model (keras.layers.RandomFlip, "
            "RandomRotation...) so it runs with the step on the accelerator."
        )
    elif (pipeline or {}).get("kind") in (None, "tf.data"):
        fix += (
            " A validation or evaluation pipeline only loads and batches: "
            ".cache() it when it fits in memory and end it with "
            ".prefetch(tf.data.AUTOTUNE)."
        )
    return _finding(
        "input_bound", severity, message, fix, _input_estimate(run),
        wording.input_bound(severity, run["starved_data_wait_ms"], step),
    )


def _no_floor_finding(run):
    wait = run["data_wait_ms"]
    share = run["input_share"]
    reasons = []
    if share is None or share < INPUT_HIGH - _EPSILON:
        reasons.append(
            f"a share under the {fmt_share(INPUT_HIGH)} high threshold could be the "
            "cost of handing over ready batches alone"
        )
    if wait["p50"] is None or wait["p50"] < NO_FLOOR_MIN_P50_MS - _EPSILON:
        reasons.append(
            f"the p50 wait is under {fmt_ms(NO_FLOOR_MIN_P50_MS)} ms, within what "
            "handing over a ready batch costs"
        )
    return _finding(
        "no_fetch_floor",
        "info",
        "No fetch floor was measured for this run (validation and custom-loop "
        "runs have none), so its data wait cannot be split into the fixed cost "
        "of handing over a ready batch and real waiting. The data wait is "
        f"{fmt_share(run['shares']['data_wait'])} of the total steady-state time: "
        f"{fmt_ms(wait['mean'])} ms per step (mean), p50 {fmt_ms(wait['p50'])} ms. "
        "Judged conservatively, that is no evidence of a slow pipeline: "
        + " and ".join(reasons)
        + ".",
        "Nothing to fix unless the wait grows. A pipeline that ends with "
        ".cache() (when it fits in memory) and .prefetch(tf.data.AUTOTUNE) hands "
        "over ready batches; training runs recorded by DeviceCostCallback get a "
        "fetch floor to judge the wait against.",
        headline=wording.no_fetch_floor(wait["mean"], run["shares"]["data_wait"]),
    )


def _stalls_finding(run):
    wait = run["data_wait_ms"]
    return _finding(
        "input_stalls",
        "info",
        f"Nine steps in ten got their batch within {fmt_ms(wait['p90'])} ms (the "
        f"p90 data wait; a ready batch costs {fmt_ms(run['ready_fetch_ms'])} ms), "
        f"but a few waited up to {fmt_ms(_wait_max(run))} ms (the max): "
        f"{fmt_ms(run['starved_data_wait_ms'])} ms per step as a mean, "
        f"{fmt_share(run['input_share'])} of the mean step. The pipeline keeps up; "
        "these are occasional stalls, not starvation.",
        "Stalls at epoch starts come from refilling a shuffle buffer or a cache "
        "that is not yet filled: a smaller shuffle buffer, .cache() before "
        ".shuffle(), and .prefetch(tf.data.AUTOTUNE) at the end smooth them.",
        _input_estimate(run),
        wording.input_stalls(_wait_max(run)),
    )


def _wait_max(run):
    value = run["data_wait_ms"]["max"]
    return value if value is not None else run["data_wait_ms"]["p99"]


def _host_finding(run, severity):
    step = run["step_ms"]["mean"]
    host = run["host_overhead_ms"]["mean"]
    adverb = "highly" if severity == "high" else "moderately"
    return _finding(
        "host_overhead_bound",
        severity,
        f"{fmt_share(run['shares']['host_overhead'])} of the total steady-state "
        "time is host overhead outside the step function: "
        f"{fmt_ms(host)} ms of the {fmt_ms(step)} ms mean step "
        "(the Keras loop, callbacks, logging and the progress bar; "
        f"{adverb} host-bound by the profiler's "
        f"{fmt_share(HOST_HIGH)}/{fmt_share(HOST_MODERATE)} thresholds"
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
        _host_estimate(run),
        wording.host_overhead_bound(severity, host, step),
    )


def _latency_finding(run, input_severity=None):
    busy = run["device_busy_fraction"]
    severity = "high" if busy < LATENCY_HIGH_BUSY else "moderate"
    if input_severity:
        # A moderate wait: the pipeline's Python may also hold the GIL
        # that dispatching and completing the step need.
        opening = (
            f"The input keeps up only in part ({fmt_share(run['input_share'])} "
            f"of the mean step waits for it), and {_busy_evidence(run)}. The "
            "rest is host time paid on every step: the Keras loop, "
            "dispatching the step, launching kernels and waiting for their "
            "results, and the input pipeline's Python, which holds the GIL "
            "that dispatching the step and reading its results need (so "
            "part of its wait is counted as compute: docs/FORMAT.md)"
        )
    else:
        opening = (
            f"The input keeps up, yet {_busy_evidence(run)}. The rest is a "
            "fixed cost paid on every step (the Keras loop, dispatching the "
            "step, launching kernels and waiting for their results)"
        )
    return _finding(
        "latency_bound",
        severity,
        f"{opening}, not arithmetic; our mean steady step is "
        f"{fmt_ms(run['step_ms']['mean'])} ms.",
        "Give each launch more work: a larger batch; "
        "compile(..., steps_per_execution=N); jit_compile=True to fuse small "
        "kernels (XLA); or train this model on the CPU, which has no launch "
        "latency."
        + (
            " " + wording.input_out_of_process(run.get("input_pipeline"))
            if input_severity and wording.input_out_of_process(run.get("input_pipeline"))
            else ""
        ),
        _batch_estimate(run),
        wording.latency_bound(run["device"], busy, run["step_ms"]["mean"]),
    )


def _busy_evidence(run):
    """`GPU:0 was busy only 2.2% of each traced step: ...`, from the trace.

    The share is the run's `device_busy_fraction`; the milliseconds, kernel
    counts and durations are the trace windows' per-step means, each quoted
    only when the trace holds it.
    """
    trace = device_trace(run) or {}
    windows = trace.get("windows") or 0
    text = (
        f"{run['device'] or 'the accelerator'} was busy only "
        f"{fmt_share(run['device_busy_fraction'])} of each traced step (under "
        f"{fmt_share(LATENCY_DEVICE_BUSY)})"
    )
    if trace.get("busy_ms") is not None and trace.get("traced_step_ms") is not None:
        # Windows digested since the split count compute kernels only
        # (collectives and copies apart); older ones kernels and copies.
        what = "compute kernels" if run.get("device_split") else "kernels and copies"
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


def _compute_finding(run, input_severity=None, unjudged=None):
    step = run["step_ms"]["mean"]
    compute = run["compute_ms"]["mean"]
    message = (
        f"Compute takes {fmt_share(run['shares']['compute'])} of the total "
        f"steady-state time: {fmt_ms(compute)} ms of the {fmt_ms(step)} ms mean "
        f"step on {run['device'] or 'the device'}. "
    )
    if run["fetch_in_graph"]:
        message += (
            f"With steps_per_execution={run['steps_per_record']} the batch is "
            "fetched inside the compiled function, so any data wait is counted "
            "in compute."
        )
    elif input_severity:
        message += (
            f"Waiting for data beyond the cost of a ready batch is "
            f"{fmt_share(run['input_share'])} of the mean step: a moderate share, "
            "reported as a finding (input_bound), while compute sets the pace."
        )
    elif unjudged or run["ready_fetch_ms"] is None:
        message += (
            f"As for the input, {_wait_clause(run)} (see no_fetch_floor)."
            if unjudged
            else f"As for the input, {_wait_clause(run)}."
        )
    else:
        message += (
            f"The input pipeline keeps up: {_wait_clause(run)}, so only "
            f"{fmt_share(run['input_share'])} of the mean step is spent waiting "
            "beyond that cost."
        )
    fix = (
        "The healthy case: the step itself sets the pace. To go faster make "
        "it cheaper: jit_compile=True (XLA fusion), mixed precision "
        "(keras.mixed_precision.set_global_policy('mixed_float16')) on GPUs "
        "with tensor cores, a larger batch for better device utilisation."
    )
    if record.is_accelerator(run["device"]) and run["device_busy_fraction"] is None:
        fix += (
            " A device trace would tell whether the accelerator is busy or "
            "waiting on kernel launches (latency_bound)."
        )
        note = run.get("device_busy_window") or {}
        if note.get("reason"):
            # The default window was not traced: say why (trace_budget).
            fix += " " + note["reason"]
    return _finding(
        "compute_bound", "info", message, fix,
        headline=wording.compute_bound(compute, step, run["fetch_in_graph"]),
    )


def _warmup_finding(run, finding_id, severity, steady_verdict=None):
    warmup = run["warmup_ms"]
    share = run["warmup_share_of_wall"]
    wall = run["wall_ms"]
    if wall["total"] and wall["warmup"] is not None:
        warmup = wall["warmup"]  # The part the share was computed from.
    count = run["warmups"] or 1
    fits = run["sessions"] or 1
    # A fit's warm-up can be two steps (Keras's first call traces the step,
    # the next instantiates it): count steps and fits apart.
    steps = "1 step" if count == 1 else f"{fmt_count(count)} steps"
    where = "the fit" if fits == 1 else f"{fmt_count(fits)} fits"
    message = (
        f"Warm-up ({steps} at the start of {where}: tracing, graph "
        "optimisation, compilation) took "
    )
    if wall["total"]:
        message += (
            f"{fmt_ms(warmup)} ms in total, {fmt_share(share)} of the fit's "
            f"{fmt_ms(wall['total'])} ms total wall time; the "
            f"{fmt_count(run['steady_steps'])} steady steps after it took "
            f"{fmt_ms(wall['steps'])} ms in total, the time between steps (epoch "
            "starts, validation, callbacks at epoch end) "
            f"{fmt_ms(wall['between_steps'])} ms and the tool's own measurements "
            f"{fmt_ms(wall['measurement'])} ms."
        )
    else:
        steady_wall = run["step_ms"]["mean"] or 0.0
        steady_wall *= run["steady_steps"] or 0
        message += (
            f"{fmt_ms(warmup)} ms in total, {fmt_share(share)} of the "
            f"{fmt_ms(warmup + steady_wall)} ms total of warm-up and steady steps; "
            f"the {fmt_count(run['steady_steps'])} steady steps after it took "
            f"{fmt_ms(steady_wall)} ms in total. The fit's time outside the steps "
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
    return _finding(
        finding_id, severity, message, fix, _warmup_estimate(run),
        wording.warmup(count, warmup, share, bool(wall["total"])),
    )


def _steps_text(steps, limit=5):
    """` (steps 12, 40, ...)`, or nothing without steps."""
    if not steps:
        return ""
    shown = ", ".join(str(step) for step in steps[:limit])
    return f" (step{'s' if len(steps) > 1 else ''} {shown}{', ...' if len(steps) > limit else ''})"


def _retrace_findings(run):
    """`retracing` only with a recorded retrace count; other spikes are `stalls`."""
    findings = []
    retraces = run["retraces"]
    count = retraces["count"]
    spikes = run["spikes"] or 0
    spike_steps = run["spike_steps"]
    if count:
        batches = run["batch_sizes"]
        reason = ""
        if batches["distinct"] and batches["distinct"] > 1:
            reason = (
                f" Batch sizes vary from {batches['min']} to {batches['max']}: "
                "a smaller last batch is a new input shape, which can make "
                "TensorFlow trace the step again."
            )
        findings.append(
            _finding(
                "retracing",
                "moderate" if count >= RETRACING_MODERATE else "info",
                f"The step function was traced again {fmt_count(count)} time(s) "
                f"after warm-up{_steps_text(retraces['steps'])}, by "
                f"{retraces['source'] or 'the backend'}: each retrace repeats "
                "tracing and graph optimisation inside a step." + reason,
                "Keep input shapes fixed: batch(..., drop_remainder=True), pad "
                "to bucketed lengths, pass tensors rather than Python values; "
                "for custom tf.functions use reduce_retracing=True or an "
                "input_signature.",
                _spike_estimate(run, _retraced_spikes(run), "retraced steps"),
                wording.retracing(count),
            )
        )
    unexplained, unexplained_steps = spikes, spike_steps
    if count:
        retraced = set(retraces["steps"])
        if retraced and spike_steps:
            unexplained_steps = [step for step in spike_steps if step not in retraced]
            unexplained = max(0, spikes - (len(spike_steps) - len(unexplained_steps)))
        else:
            unexplained = max(0, spikes - count)
            unexplained_steps = []
    if unexplained:
        if count is None:
            evidence = (
                "Whether the step function was traced again was not recorded, so "
                "they are not called retracing."
            )
        elif count == 0:
            evidence = (
                "The step function was not traced again (by "
                f"{retraces['source'] or 'the backend'}), so they are not retracing."
            )
        else:
            evidence = "The retraces recorded do not account for them."
        findings.append(
            _finding(
                "stalls",
                "moderate" if unexplained >= STALLS_MODERATE else "info",
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
                _spike_estimate(run, unexplained, "stalls"),
                wording.stalls(unexplained, vocabulary.SPIKE_RATIO),
            )
        )
    return findings


def _retraced_spikes(run):
    """How many spikes the recorded retraces explain (`_retrace_findings`'
    rule: by step when both lists are known, else by count)."""
    retraced, spike_steps = set(run["retraces"]["steps"]), run["spike_steps"]
    if retraced and spike_steps:
        return len([step for step in spike_steps if step in retraced])
    return min(run["spikes"] or 0, run["retraces"]["count"] or 0)


def _run_findings(run):
    """Findings that are never the verdict."""
    findings = []
    status = run["status"]
    if status in ("running", "interrupted"):
        findings.append(
            _finding(
                "incomplete_run",
                "info",
                (
                    "This run is still being written (or its process ended "
                    "without closing it)"
                    if status == "running"
                    else "This fit was interrupted"
                )
                + f": the numbers cover the {fmt_count(run['steps'])} step(s) "
                "recorded so far.",
                "Report again once the fit has finished.",
                headline=wording.incomplete_run(status, run["steps"]),
            )
        )
    if run["fetch_in_graph"]:
        findings.append(
            _finding(
                "fetch_in_graph",
                "info",
                f"With steps_per_execution={run['steps_per_record']} each record "
                "covers one execution, and the batches are fetched inside the "
                "compiled function: waiting for data is counted in compute, so "
                "this run cannot be judged input-bound or not.",
                "To measure the input pipeline, run one short fit with "
                "steps_per_execution=1.",
                headline=wording.fetch_in_graph(run["steps_per_record"]),
            )
        )
    findings.extend(_retrace_findings(run))
    placement = run["placement"]
    ops = placement["ops"]
    device = run["device"]
    if placement["accelerator_visible"] and ops and not record.is_accelerator(device):
        accelerators = [name for name in placement["devices"] if record.is_accelerator(name)]
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "high",
                f"An accelerator is visible ({', '.join(accelerators) or 'GPU'}) "
                f"but none of the step's {fmt_count(sum(ops.values()))} ops ran on it: "
                f"the model trained on {device}.",
                "Check that the model and its data are not pinned with "
                "tf.device('/CPU:0'), that the TensorFlow build sees the GPU "
                "(tf.config.list_physical_devices('GPU')), and that the ops have "
                "GPU kernels.",
                headline=wording.cpu_ops_off_accelerator(sum(ops.values())),
            )
        )
    elif placement["cpu_ops_on_accelerator_run"]:
        names = placement["cpu_ops_on_accelerator_run"]
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        cpu_ops = sum(n for name, n in ops.items() if not record.is_accelerator(name))
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "moderate",
                f"The step runs on {device}, yet {fmt_count(cpu_ops)} of its "
                f"{fmt_count(sum(ops.values()))} ops ran on the CPU, of {len(names)} "
                f"type(s): {shown}. Each forces copies between host and device "
                "in the middle of the step.",
                "Keep ops on the accelerator: replace ops without GPU kernels "
                "(tf.py_function, string ops, some int64 ops) with ones that "
                "have them, create layers and variables inside the model rather "
                "than under tf.device('/CPU:0'), and pin only the input "
                "pipeline to the CPU.",
                headline=wording.cpu_ops_on_accelerator_run(cpu_ops, sum(ops.values()), device),
            )
        )
    copies = placement["cross_device_copies"]
    if copies:
        busy = ", ".join(
            f"{name} ({fmt_count(n)} ops)" for name, n in sorted(ops.items()) if n
        )
        findings.append(
            _finding(
                "cross_device_copies",
                "moderate" if record.is_accelerator(device) else "info",
                f"The step's graph has {fmt_count(copies)} edge(s) where data crosses "
                f"between devices (Send/Recv pairs); its ops ran on "
                f"{busy or MISSING}. "
                f"Each copy is paid on every step.",
                "Keep the step on one device: remove tf.device(...) pins inside "
                "layers, keep variables on the device that uses them, and move "
                "data to the accelerator once per batch with "
                ".prefetch(tf.data.AUTOTUNE) (or "
                "tf.data.experimental.prefetch_to_device) rather than per op.",
                headline=wording.cross_device_copies(copies),
            )
        )
    batch = run["batch_size"]
    median = run["step_ms"]["p50"]
    if batch and median is not None and batch <= SMALL_BATCH_SIZE and median < SMALL_BATCH_STEP_MS:
        on_accelerator = record.is_accelerator(device)
        findings.append(
            _finding(
                "small_batch",
                "moderate" if on_accelerator else "info",
                f"Each step processes only {batch} samples in {fmt_ms(median)} ms "
                f"(p50): at this size the fixed cost of a step (the Python "
                "loop, dispatch"
                + (", kernel launches, host-device synchronisation" if on_accelerator else "")
                + ") is a large part of it, so "
                + ("an accelerator cannot pay off." if on_accelerator else "throughput is low."),
                "Use a larger batch (e.g. 256 or more, adjusting the learning "
                "rate), or compile(..., steps_per_execution=N) to run N steps "
                "per call; for a model this small the CPU may simply be the "
                "faster device.",
                _batch_estimate(run),
                wording.small_batch(batch, median),
            )
        )
    return findings


# What a fix would buy: each finding's `expected` (docs/VERDICTS.md, "What a
# fix would buy"). Every estimate is computed from the run's own numbers and
# says how (`basis`); where they are missing it says so and claims nothing.

# Why a finding has no estimate.
_NO_ESTIMATE = {
    "no_steps": "nothing was measured yet",
    "incomplete_run": "this finding is about the record, not the speed",
    "fetch_in_graph": "this finding is about what can be measured, not the speed",
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


def _rounded(value, bound="about", digits=2):
    """`value` (positive) to `digits` significant digits, with commas: an
    estimate's words claim no more precision than it has (`3.1`, `10`,
    `410,000`), rounded so that a bound stays true (`_ROUNDING`); its fields
    keep the exact figure."""
    if value <= 0:
        return "0"
    exponent = math.floor(math.log10(value)) - (digits - 1)
    rounded = _ROUNDING[bound](value / 10.0**exponent)
    return f"{rounded * 10.0**exponent:,.{max(0, -exponent)}f}"


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


def _samples_estimate(run, bound, step_ms, basis, samples_per_step=None, batch_size=None,
                      capped=False):
    """What a fix buys in samples/s: a mean step of `step_ms` for
    `samples_per_step` samples (the run's own by default)."""
    before = run["samples_per_s"]
    samples = samples_per_step or run["samples_per_step"]
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
            f"{_BOUND_WORDS[bound]} {_rounded(speedup, bound)}x the samples/s"
            + (f" at batch {fmt_count(batch_size)}" if batch_size else "")
            + f" ({_rounded(after, bound)} instead of {fmt_count(before)})"
        ),
    )
    return expected


def _fit_wall(run):
    """(the fit's wall time, whether it was recorded whole): the total the
    warm-up share is of (the warm-up finding's rule)."""
    wall = run["wall_ms"]
    if wall["total"]:
        return wall["total"], True
    steady = (run["step_ms"]["mean"] or 0.0) * (run["steady_steps"] or 0)
    return (run["warmup_ms"] or 0.0) + steady, False


def _wall_estimate(run, bound, saved_ms, basis):
    """What a fix buys in the fit's wall time: `saved_ms` less of it."""
    before, whole = _fit_wall(run)
    after = before - saved_ms
    if not before:
        return no_estimate("the fit's wall time was not recorded")
    if saved_ms <= 0:
        return no_estimate("it took no longer than steady steps would have")
    if after <= 0:
        return no_estimate("the time it took is the whole fit's, so no ratio can be given")
    if not whole:
        basis += (
            "; the fit's time outside the steps was not recorded, so its wall "
            "time here is warm-up and steady steps only"
        )
    speedup = before / after
    if speedup < 1.1:
        # "1.0x as fast" says nothing: the time saved does.
        text = (
            f"{_BOUND_WORDS[bound]} {_rounded(saved_ms, bound)} ms less wall "
            f"time, {fmt_share(saved_ms / before)} of the fit's {fmt_ms(before)} ms"
        )
    else:
        # Three digits for the wall time, so that it reads as less than
        # the time it is set against.
        text = (
            f"{_BOUND_WORDS[bound]} {_rounded(speedup, bound)}x as fast a fit "
            f"({_rounded(after, _OPPOSITE[bound], digits=3)} ms of wall time "
            f"instead of {fmt_ms(before)} ms)"
        )
    expected = no_estimate(basis)
    expected.update(
        bound=bound,
        speedup=speedup,
        of="fit_wall_time",
        wall_ms=after,
        text=text,
    )
    return expected


def _input_estimate(run):
    """The mean step without the wait above the cost of a ready batch."""
    step, starved = run["step_ms"]["mean"], run["starved_data_wait_ms"]
    if step is None or starved is None:
        return no_estimate("the run's mean step or data wait was not recorded")
    after = step - min(starved, step)
    wait = (
        "wait above the cost of a ready batch"
        if run["ready_fetch_ms"] is not None
        else "data wait (no fetch floor was measured, so all of it)"
    )
    return _samples_estimate(
        run,
        "about",
        after,
        f"the {fmt_ms(step)} ms mean step without its {fmt_ms(starved)} ms mean "
        f"{wait}: {fmt_ms(after)} ms, if the pipeline kept ahead of the step",
    )


def _host_estimate(run):
    """At most: the mean step without any host overhead."""
    step, host = run["step_ms"]["mean"], run["host_overhead_ms"]["mean"]
    if step is None or host is None:
        return no_estimate("the run's mean step or host overhead was not recorded")
    after = step - min(host, step)
    return _samples_estimate(
        run,
        "at_most",
        after,
        f"the {fmt_ms(step)} ms mean step without any of its {fmt_ms(host)} ms "
        f"mean host overhead: {fmt_ms(after)} ms; some of the Keras loop always "
        "remains, so this is a bound",
    )


def _warmup_estimate(run):
    """At most: the fit's wall time had its warm-up steps taken a steady step."""
    step = run["step_ms"]["mean"]
    wall = run["wall_ms"]
    warmup = wall["warmup"] if wall["total"] and wall["warmup"] is not None else run["warmup_ms"]
    count = run["warmups"] or 1
    if step is None or warmup is None:
        return no_estimate(
            "no steady step was recorded to set against the warm-up"
            if step is None
            else "the warm-up was not recorded"
        )
    saved = max(0.0, warmup - count * step)
    steps = "step" if count == 1 else f"{fmt_count(count)} steps"
    return _wall_estimate(
        run,
        "at_most",
        saved,
        f"the fit's wall time if its warm-up {steps} ({fmt_ms(warmup)} ms in "
        f"total) had taken the {fmt_ms(step)} ms mean steady step; compilation "
        "is never free, so this is a bound",
    )


def _spike_estimate(run, spikes, what):
    """At least: `spikes` steps each longer than SPIKE_RATIO x the p50 compute
    were at least (SPIKE_RATIO - 1) x the p50 compute longer than a typical one."""
    compute = run["compute_ms"]["p50"]
    if not spikes or not compute:
        return no_estimate(
            f"none of the {what} was a step longer than {vocabulary.SPIKE_RATIO:g}x "
            "the p50 compute, so its cost is not set apart from the other steps'"
        )
    saved = spikes * (vocabulary.SPIKE_RATIO - 1.0) * compute
    return _wall_estimate(
        run,
        "at_least",
        saved,
        f"{fmt_count(spikes)} step(s) each took more than "
        f"{vocabulary.SPIKE_RATIO:g}x the {fmt_ms(compute)} ms p50 compute, so "
        f"each was at least {fmt_ms((vocabulary.SPIKE_RATIO - 1.0) * compute)} ms "
        f"longer than a typical step: {fmt_ms(saved)} ms in all",
    )


def device_trace(run):
    """The device side of a run's trace windows, or `None` without one.

    Means over the windows with a device plane of their per-step means
    (`summary`): device busy ms, the traced step's ms, kernels and their mean
    duration, host-to-device bytes. `busy_fraction` is the run's
    `device_busy_fraction` (the windows' mean share); with one window it is
    `device_busy_ms / traced_step_ms`. A figure no window holds is `None`.

    Args:
        run: A run object of `analyze_run`.
    """
    windows = [
        window["summary"]
        for window in run.get("trace_windows") or ()
        if window.get("has_device_plane") and isinstance(window.get("summary"), dict)
    ]
    if not windows or run.get("device_busy_fraction") is None:
        return None

    def mean(key):
        values = [summary.get(key) for summary in windows]
        if any(value is None for value in values):
            return None
        return sum(values) / len(values)

    return {
        "windows": len(windows),
        "busy_fraction": run["device_busy_fraction"],
        "busy_ms": mean("mean_device_busy_ms"),
        "traced_step_ms": mean("mean_step_ms"),
        "kernels": mean("mean_kernels"),
        "kernel_mean_us": mean("mean_kernel_mean_us"),
        "h2d_bytes": mean("mean_h2d_bytes"),
        "h2d_ms": mean("mean_h2d_ms"),
    }


def _batch_estimate(run):
    """A larger batch, from the trace's device time per sample.

    The device time per step grows with the batch (its time per sample, from
    the trace, at the batch that ran); the rest of the mean step is a fixed
    cost paid at any batch. The batch N chosen is the largest power of two at
    which the device would be busy at most half the step, and at most
    LATENCY_MAX_BATCH_GROWTH times the batch that ran. Samples/s can never
    exceed the mean step over the device time per step (the device busy all
    the time); at N it is below that.
    """
    trace = device_trace(run)
    step, batch = run["step_ms"]["mean"], run["samples_per_step"] or run["batch_size"]
    if trace is None or trace["busy_ms"] is None:
        return no_estimate(
            "what a larger batch buys needs the device's time per sample: a "
            "trace window with a device plane (profile_steps), or runs of this "
            "model at two batch sizes (see the comparison)"
        )
    if not step or not batch:
        return no_estimate("the run's mean step or batch size was not recorded")
    busy = min(trace["busy_ms"], step)
    fixed = step - busy
    if busy <= 0 or fixed <= 0:
        return no_estimate(
            "the trace shows no device time, or no time outside it, to set apart"
        )
    per_sample = busy / batch
    half = batch * fixed / busy
    limit = LATENCY_MAX_BATCH_GROWTH * batch
    capped = half > limit
    target = 1
    while target * 2 <= min(half, limit):
        target *= 2
    if target <= batch:
        return no_estimate(
            f"the device is already busy {fmt_share(busy / step)} of the mean "
            "step: a larger batch fills little more of it"
        )
    after = fixed + per_sample * target
    why = (
        f"the largest power of two up to {fmt_count(limit)}, "
        f"{fmt_count(LATENCY_MAX_BATCH_GROWTH)}x the batch that ran; capped there: "
        "the device would be busy half the step only at about "
        f"{fmt_count(half)} samples, further than one traced batch size supports"
        if capped
        else f"the largest power of two up to {fmt_count(half)}, the batch at "
        "which the device would be busy half the step"
    )
    return _samples_estimate(
        run,
        "about",
        after,
        f"the trace's {fmt_ms(busy)} ms of device time per step for "
        f"{fmt_count(batch)} samples is {fmt_ms(per_sample * 1e3)} µs per sample; "
        f"the rest of the {fmt_ms(step)} ms mean step, {fmt_ms(fixed)} ms, is a "
        f"fixed cost paid at any batch. At batch {fmt_count(target)} ({why}) a "
        f"step would take about {fmt_ms(after)} ms",
        samples_per_step=target,
        batch_size=target,
        capped=capped,
    )
