"""Turns recorded runs into numbers, a verdict with fixes, and a comparison.

Pure functions over the `RunRecord`s of `tb_devicecost.reader` (or plain
dicts with the same fields): the TensorBoard plugin and
`tb-devicecost report` both call them, so the tab and the command can never
disagree. Nothing here imports Keras, TensorFlow or TensorBoard, and every
result is plain JSON-ready data (no NaN: missing numbers are `None`).

The thresholds below are the built-in profiler's (xprof's
`InputAnalysis`, `op_stats_to_input_pipeline_analysis.cc`), so both tools
call the same run input-bound; `docs/VERDICTS.md` explains each one.
"""

import math
import re

import numpy as np

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
# The fetch floor is measured on a synthetic ready iterator; the pipeline's
# own handover of a ready batch costs up to a few times more (measured here:
# 1.8-3.7x on CPU). When the median data wait is within this factor of the
# floor, the median is taken as the run's own floor.
FETCH_FLOOR_MAX_FACTOR = 4.0
# When 90% of the steps waited at most this multiple of the floor, the
# pipeline keeps up: waits above it are occasional stalls, not starvation.
STALL_P90_FACTOR = 2.0
# Batches of at most this many samples whose median step is shorter than
# SMALL_BATCH_STEP_MS get the `small_batch` finding: the fixed cost of a
# step (dispatch, synchronisation, the Python loop) outweighs the work.
SMALL_BATCH_SIZE = 64
SMALL_BATCH_STEP_MS = 10.0
# Retracing spikes from this count on are a moderate finding (info below).
RETRACING_MODERATE = 3
# The recorder's spike rule, applied to sampled series when no aggregate
# survived: a step whose compute exceeds this multiple of the median.
SPIKE_RATIO = 10.0

# Comparison: speedups within this distance of 1 read "as fast as".
SAME_SPEED = 0.05
# Components that differ by less than both of these are "the same".
SAME_COMPONENT_MS = 0.05
SAME_COMPONENT_RATIO = 0.10
# A run's warm-up is mentioned when it is this many times the baseline's
# and longer by at least WARMUP_NOTE_MS.
WARMUP_NOTE_RATIO = 2.0
WARMUP_NOTE_MS = 100.0

# Our data wait and the trace's input wait for the same steps disagree when
# they differ by more than this share of the larger one (and by more than
# TRACE_DISAGREE_MIN_MS, below which both are noise).
TRACE_DISAGREE_RATIO = 0.20
TRACE_DISAGREE_MIN_MS = 0.05

SCHEMA = 1
COMPONENTS = ("data_wait", "compute", "host_overhead")
SEVERITIES = ("high", "moderate", "info")
VERDICTS = (
    "warmup_dominated",
    "input_bound",
    "host_overhead_bound",
    "latency_bound",
    "compute_bound",
)

_LABELS = {
    "data_wait": "data wait",
    "compute": "compute",
    "host_overhead": "host overhead",
}
# Op types that belong on the host in any run: the input pipeline and
# resource bookkeeping. Left out of `cpu_ops_on_accelerator_run`.
_HOST_OP = re.compile(
    r"(Dataset|Iterator|^Optional|^_EagerConst$|^VarIsInitializedOp$"
    r"|^DestroyResourceOp$|PartitionedCall$)"
)
_EPSILON = 1e-9


# Small helpers.


def _get(record, name, default=None):
    if isinstance(record, dict):
        value = record.get(name, default)
    else:
        value = getattr(record, name, default)
    return default if value is None else value


def _list(value):
    """A JSON list field, or `[]` when it is missing or malformed."""
    return value if isinstance(value, list) else []


def _number(value):
    """A finite, non-negative float, or `None` (NaN and negatives are ignored)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def _count(value):
    value = _number(value)
    return None if value is None else int(value)


def _ratio(part, whole):
    if part is None or not whole:
        return None
    return part / whole


def _div(value, divisor):
    return None if value is None else value / divisor


def fmt_ms(value):
    """`0.188`, `3.74`, `41.2`, `1,823`: three significant figures or so."""
    if value is None:
        return "?"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_share(value):
    """`73%`, `4.2%`: a share of 1 as a percentage."""
    if value is None:
        return "?"
    # Truncated, not rounded: 14.96% must not read "15%" next to a verdict
    # that a 15% threshold did not give.
    percent = 100.0 * value + 1e-9
    if percent < 10 and math.floor(percent * 10) % 10:
        return f"{math.floor(percent * 10) / 10:.1f}%"
    return f"{math.floor(percent):.0f}%"


def _fmt_count(value):
    return "?" if value is None else f"{value:,.0f}"


# Numbers from the aggregate (exact) or the sampled series (fallback).


def _component_stats(summary):
    """Per-component digest from one `components` entry of the aggregate."""
    summary = summary if isinstance(summary, dict) else {}
    stats = {
        "count": _count(summary.get("count")),
        "sum": _number(summary.get("sum_ms")),
        "mean": _number(summary.get("mean_ms")),
    }
    for key in ("p50", "p90", "p99", "min", "max"):
        stats[key] = _number(summary.get(f"{key}_ms"))
    if stats["mean"] is None and stats["sum"] is not None and stats["count"]:
        stats["mean"] = stats["sum"] / stats["count"]
    return stats


def _numbers_from_aggregate(aggregate, problems):
    if not isinstance(aggregate, dict):
        return None
    components = aggregate.get("components")
    if not isinstance(components, dict):
        problems.append("The aggregate has no components; used the sampled steps.")
        return None
    stats = {
        name: _component_stats(components.get(name))
        for name in COMPONENTS + ("step",)
    }
    invalid = [
        name
        for name, digest in stats.items()
        if digest["count"] is None or digest["sum"] is None
    ]
    if invalid:
        problems.append(
            "The aggregate holds invalid numbers (NaN, negative or missing) for "
            f"{', '.join(invalid)}; used the sampled steps instead."
        )
        return None
    warmup = aggregate.get("warmup") if isinstance(aggregate.get("warmup"), dict) else {}
    spikes = aggregate.get("spikes") if isinstance(aggregate.get("spikes"), dict) else {}
    batch = (
        aggregate.get("batch_size")
        if isinstance(aggregate.get("batch_size"), dict)
        else {}
    )
    steady_steps = _count(aggregate.get("steady_steps"))
    if steady_steps is None:
        steady_steps = stats["step"]["count"]
    samples = _count(aggregate.get("samples"))
    return {
        "source": "aggregate",
        "status": aggregate.get("status") if isinstance(aggregate.get("status"), str) else "unknown",
        "records": _count(aggregate.get("steps")),
        "steady_records": steady_steps,
        "sessions": _count(aggregate.get("sessions")),
        "stats": stats,
        # No warm-up step recorded: no warm-up time (rather than 0 ms).
        "warmup_ms": (
            _number(warmup.get("sum_ms")) if _count(warmup.get("count")) else None
        ),
        "warmup_count": _count(warmup.get("count")) or 0,
        "warmup_step_numbers": [
            _count(step) for step in _list(warmup.get("steps")) if _count(step) is not None
        ],
        "spikes": _count(spikes.get("count")) or 0,
        "spike_steps": [
            _count(step) for step in _list(spikes.get("steps")) if _count(step) is not None
        ],
        "samples": samples,
        "samples_per_s": _number(aggregate.get("samples_per_s")),
        "batch_min": _count(batch.get("min")),
        "batch_max": _count(batch.get("max")),
        "batch_distinct": _count(batch.get("distinct")),
        "fetch_floor_ms": _number(aggregate.get("fetch_floor_ms")),
    }


def _series_array(series, key, length):
    values = series.get(key)
    if values is None:
        return np.full(length, np.nan)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(values) != length:
        return np.full(length, np.nan)
    return values


def _numbers_from_series(series, problems):
    series = series if isinstance(series, dict) else {}
    steps = np.asarray(series.get("step", ()), dtype=np.float64).reshape(-1)
    if steps.size == 0:
        return None
    columns = {name: _series_array(series, f"{name}_ms", len(steps)) for name in COMPONENTS}
    batch = _series_array(series, "batch_size", len(steps))
    valid = np.isfinite(steps) & (steps >= 0)
    for values in columns.values():
        valid &= np.isfinite(values) & (values >= 0)
    dropped = int((~valid).sum())
    if dropped:
        problems.append(
            f"Ignored {dropped} sampled step(s) holding NaN or negative values."
        )
    steps = steps[valid]
    columns = {name: values[valid] for name, values in columns.items()}
    batch = batch[valid]
    if steps.size == 0:
        return None
    order = np.argsort(steps, kind="stable")
    steps = steps[order]
    columns = {name: values[order] for name, values in columns.items()}
    batch = batch[order]
    step_ms = sum(columns.values())
    # The global step starts at 0 with the warm-up step of the first fit.
    warmup = steps == 0
    steady = ~warmup
    problems.append(
        f"No readable aggregate: the numbers come from {int(steps.size)} sampled "
        "step(s), so totals are estimates"
        + (" (step 0 taken as the warm-up)." if warmup.any() else ".")
    )
    stats = {}
    for name, values in list(columns.items()) + [("step", step_ms)]:
        values = values[steady]
        if values.size:
            stats[name] = {
                "count": int(values.size),
                "sum": float(values.sum()),
                "mean": float(values.mean()),
                "p50": float(np.percentile(values, 50)),
                "p90": float(np.percentile(values, 90)),
                "p99": float(np.percentile(values, 99)),
                "min": float(values.min()),
                "max": float(values.max()),
            }
        else:
            stats[name] = dict.fromkeys(
                ("sum", "mean", "p50", "p90", "p99", "min", "max")
            )
            stats[name]["count"] = 0
            stats[name]["sum"] = 0.0
    compute = columns["compute"][steady]
    spikes = 0
    if compute.size:
        median = float(np.median(compute))
        spikes = int((compute > SPIKE_RATIO * max(median, 1e-6)).sum())
    known = batch[steady][np.isfinite(batch[steady]) & (batch[steady] > 0)]
    samples = int(known.sum()) if known.size else None
    steady_wall_ms = stats["step"]["sum"]
    return {
        "source": "series",
        "status": "unknown",
        "records": int(steps.max()) + 1,
        "steady_records": int(steady.sum()),
        "sessions": None,
        "stats": stats,
        "warmup_ms": float(step_ms[warmup].sum()) if warmup.any() else None,
        "warmup_count": int(warmup.sum()),
        "warmup_step_numbers": [int(step) for step in steps[warmup]],
        "spikes": spikes,
        "spike_steps": [],
        "samples": samples,
        "samples_per_s": (
            samples / (steady_wall_ms / 1e3) if samples and steady_wall_ms else None
        ),
        "batch_min": int(known.min()) if known.size else None,
        "batch_max": int(known.max()) if known.size else None,
        "batch_distinct": int(np.unique(known).size) if known.size else None,
        "fetch_floor_ms": None,
    }


# Placement.


def _device_names(devices):
    if not isinstance(devices, dict):
        return []
    names = []
    for key in ("logical", "physical"):
        for device in _list(devices.get(key)):
            name = device.get("name") if isinstance(device, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


def _is_accelerator(name):
    return isinstance(name, str) and not name.upper().startswith("CPU")


def _count_map(value):
    if not isinstance(value, dict):
        return {}
    counts = {}
    for key, count in value.items():
        count = _count(count)
        if count is not None:
            counts[str(key)] = count
    return counts


def _placement_digest(placement):
    placement = placement if isinstance(placement, dict) else {}
    devices = placement.get("devices")
    names = _device_names(devices)
    ops = _count_map(placement.get("ops"))
    variables = _count_map(placement.get("variables"))
    accelerator_visible = bool(placement.get("accelerator_visible")) or any(
        _is_accelerator(name) for name in names
    )
    models = {}
    if isinstance(devices, dict):
        for device in _list(devices.get("physical")):
            if isinstance(device, dict) and device.get("model"):
                models[str(device.get("name"))] = str(device["model"])
    # The accelerator holding most of the step's ops, else the busiest device.
    device = None
    accelerator_ops = {name: n for name, n in ops.items() if _is_accelerator(name) and n}
    if accelerator_visible and accelerator_ops:
        device = max(accelerator_ops, key=lambda name: (accelerator_ops[name], name))
    elif ops:
        device = max(ops, key=lambda name: (ops[name], name))
    elif variables:
        device = max(variables, key=lambda name: (variables[name], name))
    cpu_ops = []
    if device is not None and _is_accelerator(device):
        cpu_ops = [
            str(op)
            for op in _list(placement.get("cpu_op_types"))
            if isinstance(op, str) and not _HOST_OP.search(op)
        ]
    return {
        "devices": names,
        "device_models": models,
        "accelerator_visible": accelerator_visible,
        "device": device,
        "variables": variables,
        "optimizer_variables": _count_map(placement.get("optimizer_variables")),
        "ops": ops,
        "step_ops_captured": bool(placement.get("step_ops_captured", bool(ops))),
        "cpu_ops_on_accelerator_run": cpu_ops,
        "cross_device_copies": _count(placement.get("cross_device_copies")),
        "input_bytes_per_step": _count(placement.get("input_bytes_per_step")),
        "input_devices": [
            str(name) for name in _list(placement.get("input_devices")) if name
        ],
    }


def _device_busy_fraction(trace):
    """Device busy share of the traced steps, from the trace document.

    Accepts `device_busy_fraction` at the top level, or `windows` whose
    entries carry `device_busy_fraction`, or `device_busy_ms` and `step_ms`.
    """
    if not isinstance(trace, dict):
        return None
    fraction = _number(trace.get("device_busy_fraction"))
    if fraction is not None:
        return min(fraction, 1.0)
    busy_total = step_total = 0.0
    fractions = []
    for window in _list(trace.get("windows")):
        if not isinstance(window, dict):
            continue
        busy, step = _number(window.get("device_busy_ms")), _number(window.get("step_ms"))
        if busy is not None and step:
            busy_total += busy
            step_total += step
        elif _number(window.get("device_busy_fraction")) is not None:
            fractions.append(_number(window["device_busy_fraction"]))
    if step_total:
        return min(busy_total / step_total, 1.0)
    if fractions:
        return min(sum(fractions) / len(fractions), 1.0)
    busy, step = _number(trace.get("device_busy_ms")), _number(trace.get("step_ms"))
    if busy is not None and step:
        return min(busy / step, 1.0)
    return None


def _mean_of(entries, key):
    values = [_number(entry.get(key)) for entry in entries if isinstance(entry, dict)]
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def trace_windows(trace):
    """Traced windows set beside our own numbers for the same steps.

    Args:
        trace: The `devicecost/trace` document (or `None`).

    Returns:
        A list of windows: `start_step`, `stop_step`, `source`, `capture`,
        `host`, `profile_run_dir`, `trace_bytes`, `error`,
        `has_device_plane`, `summary` (the trace's means per step), `ours`
        (our means for the same steps), `steps` (per step: `step`, `ours`,
        `trace`), and `data_wait_agreement` with `disagree` set when our
        data wait and the trace's input wait differ by more than
        `TRACE_DISAGREE_RATIO`.
    """
    if not isinstance(trace, dict):
        return []
    windows = []
    for window in _list(trace.get("windows")):
        if not isinstance(window, dict):
            continue
        recorded = [e for e in _list(window.get("recorded_steps")) if isinstance(e, dict)]
        traced = [e for e in _list(window.get("steps")) if isinstance(e, dict)]
        ours_by_step = {entry.get("step"): entry for entry in recorded}
        steps = [
            {
                "step": entry.get("step"),
                "trace": {k: _number(v) for k, v in entry.items() if k != "step"},
                "ours": {
                    k: _number(v)
                    for k, v in (ours_by_step.get(entry.get("step")) or {}).items()
                    if k != "step"
                },
            }
            for entry in traced
        ]
        ours = {
            f"{name}_ms": _mean_of(recorded, f"{name}_ms") for name in COMPONENTS
        }
        summary = window.get("summary") if isinstance(window.get("summary"), dict) else {}
        ours_wait, trace_wait = ours["data_wait_ms"], _number(summary.get("mean_input_wait_ms"))
        agreement = None
        if ours_wait is not None and trace_wait is not None:
            larger = max(ours_wait, trace_wait)
            difference = abs(ours_wait - trace_wait)
            relative = difference / larger if larger > 0 else 0.0
            disagree = relative > TRACE_DISAGREE_RATIO and difference > TRACE_DISAGREE_MIN_MS
            agreement = {
                "ours_ms": ours_wait,
                "trace_ms": trace_wait,
                "relative_difference": relative,
                "disagree": disagree,
                "message": (
                    f"Our data wait for these steps ({fmt_ms(ours_wait)} ms per step) "
                    f"and the trace's input wait ({fmt_ms(trace_wait)} ms) differ by "
                    f"{fmt_share(relative)}. "
                    + (
                        "They measure the same wait from two sides, so a gap this "
                        "large means the traced steps were not typical (the "
                        "profiler slows the host) or the input runs outside "
                        "tf.data (a Python generator), which the trace does "
                        "not mark as input."
                        if disagree
                        else "They agree."
                    )
                ),
            }
        windows.append(
            {
                "start_step": window.get("start_step"),
                "stop_step": window.get("stop_step"),
                "source": window.get("source"),
                "capture": window.get("capture"),
                "host": window.get("host"),
                "profile_run_dir": window.get("profile_run_dir"),
                "trace_bytes": window.get("trace_bytes"),
                "error": window.get("error"),
                "has_device_plane": bool(window.get("has_device_plane")),
                "summary": {k: _number(v) for k, v in summary.items()},
                "ours": ours,
                "steps": steps,
                "data_wait_agreement": agreement,
            }
        )
    return windows


# The run object.


def analyze_run(record):
    """Numbers, verdict and findings of one run.

    Args:
        record: A `reader.RunRecord`, or a dict with the same fields (`run`,
            `aggregate`, `info`, `placement`, `trace`, `series`,
            `problems`).

    Returns:
        The run object of `tb-devicecost report --json` (DESIGN.md section 4
        and `docs/CLI.md`): JSON-ready, `None` where a number is unknown.
        Times are per training step in milliseconds, steady state (the
        warm-up step of each fit excluded) unless named `warmup`.
    """
    run = str(_get(record, "run", ""))
    info = _get(record, "info", {})
    info = info if isinstance(info, dict) else {}
    problems = [str(problem) for problem in _get(record, "problems", [])]
    numbers = _numbers_from_aggregate(_get(record, "aggregate"), problems)
    if numbers is None:
        numbers = _numbers_from_series(_get(record, "series", {}), problems)
    if numbers is None:
        numbers = _empty_numbers()
    placement = _placement_digest(_get(record, "placement"))

    per_record = _count(info.get("steps_per_record")) or _count(
        info.get("steps_per_execution")
    ) or 1
    per_record = max(1, per_record)
    # Records cover `per_record` steps each: per-step figures divide by it;
    # counts and totals (wall time) do not.
    stats = {
        name: {
            key: (value if key in ("count", "sum") else _div(value, per_record))
            for key, value in digest.items()
        }
        for name, digest in numbers["stats"].items()
    }
    fetch_floor = numbers["fetch_floor_ms"]
    if fetch_floor is None:
        fetch_floor = _number(info.get("fetch_floor_ms"))
    batch_size = _count(info.get("batch_size")) or numbers["batch_max"]
    samples_per_s = numbers["samples_per_s"]
    steady = numbers["steady_records"] or 0
    samples_per_step = None
    if numbers["samples"] and steady:
        samples_per_step = numbers["samples"] / (steady * per_record)
    elif batch_size:
        samples_per_step = float(batch_size)
    step_mean = stats["step"]["mean"]
    if samples_per_s is None and samples_per_step and step_mean:
        samples_per_s = samples_per_step / (step_mean / 1e3)

    sums = {name: stats[name]["sum"] or 0.0 for name in COMPONENTS}
    total = sum(sums.values())
    shares = {
        name: (sums[name] / total if total > 0 else None) for name in COMPONENTS
    }
    steady_wall_ms = stats["step"]["sum"] or 0.0
    warmup_ms = numbers["warmup_ms"]
    warmup_share = None
    if warmup_ms is not None and warmup_ms + steady_wall_ms > 0:
        warmup_share = warmup_ms / (warmup_ms + steady_wall_ms)

    fetch_in_graph = bool(info.get("fetch_in_graph")) or per_record > 1
    wait = stats["data_wait"]
    ready_ms, starved_ms = _starvation(wait, fetch_floor, fetch_in_graph)
    records = numbers["records"]
    result = {
        "run": run,
        "status": numbers["status"],
        "source": numbers["source"],
        "steps": None if records is None else records * per_record,
        "steady_steps": steady * per_record,
        "sessions": numbers["sessions"],
        "steps_per_record": per_record,
        "device": placement["device"],
        "backend": info.get("backend") if isinstance(info.get("backend"), str) else None,
        "batch_size": batch_size,
        "batch_sizes": {
            "min": numbers["batch_min"],
            "max": numbers["batch_max"],
            "distinct": numbers["batch_distinct"],
        },
        "samples_per_step": samples_per_step,
        "step_ms": _percentiles(stats["step"]),
        "data_wait_ms": _percentiles(stats["data_wait"]),
        "compute_ms": _percentiles(stats["compute"]),
        "host_overhead_ms": _percentiles(stats["host_overhead"]),
        "shares": shares,
        "fetch_floor_ms": fetch_floor,
        "ready_fetch_ms": ready_ms,
        "starved_data_wait_ms": starved_ms,
        "input_share": _ratio(starved_ms, step_mean),
        "fetch_in_graph": fetch_in_graph,
        "warmup_ms": warmup_ms,
        "warmups": numbers["warmup_count"],
        "warmup_steps": numbers["warmup_step_numbers"],
        "warmup_share_of_wall": warmup_share,
        "spikes": numbers["spikes"],
        "spike_steps": numbers["spike_steps"],
        "samples_per_s": samples_per_s,
        "device_busy_fraction": _device_busy_fraction(_get(record, "trace")),
        "trace_windows": trace_windows(_get(record, "trace")),
        "placement": {
            key: placement[key]
            for key in (
                "devices",
                "device_models",
                "accelerator_visible",
                "variables",
                "optimizer_variables",
                "ops",
                "step_ops_captured",
                "cpu_ops_on_accelerator_run",
                "cross_device_copies",
                "input_bytes_per_step",
                "input_devices",
            )
        },
        "jit_compile": info.get("jit_compile"),
        "problems": problems,
    }
    verdict, steady_verdict, findings = _judge(result)
    result["verdict"] = verdict
    result["steady_verdict"] = steady_verdict
    result["findings"] = findings
    return _json_ready(result)


def _json_ready(value):
    """Plain JSON types only: numpy scalars unwrapped, NaN and inf as `None`."""
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _empty_numbers():
    stats = {
        name: {"count": 0, "sum": None, "mean": None, "p50": None, "p90": None,
               "p99": None, "min": None, "max": None}
        for name in COMPONENTS + ("step",)
    }
    return {
        "source": None,
        "status": "unknown",
        "records": 0,
        "steady_records": 0,
        "sessions": None,
        "stats": stats,
        "warmup_ms": None,
        "warmup_count": 0,
        "warmup_step_numbers": [],
        "spikes": 0,
        "spike_steps": [],
        "samples": None,
        "samples_per_s": None,
        "batch_min": None,
        "batch_max": None,
        "batch_distinct": None,
        "fetch_floor_ms": None,
    }


def _percentiles(stats):
    return {key: stats[key] for key in ("p50", "p90", "p99", "mean", "min", "max")}


def _starvation(wait, fetch_floor, fetch_in_graph):
    """(ready handover cost, mean wait above it) in milliseconds.

    The measured floor is the cost of `next()` on a synthetic iterator
    whose batches are ready; the run's own pipeline hands a ready batch over
    a little slower. When the median wait is within FETCH_FLOOR_MAX_FACTOR of
    the floor, most steps got a ready batch and the median is that cost.
    """
    mean = wait["mean"]
    if mean is None:
        return None, None
    if fetch_in_graph:
        return None, 0.0
    ready = fetch_floor or 0.0
    median = wait["p50"]
    if fetch_floor and median is not None and median <= FETCH_FLOOR_MAX_FACTOR * fetch_floor:
        ready = max(ready, median)
    return ready, max(0.0, mean - ready)


# Verdict and findings.


def _severity(share, high, moderate):
    if share is None:
        return None
    # Shares are sums of float milliseconds: a threshold met exactly must not
    # be missed by a rounding error in the last digit.
    if share >= high - _EPSILON:
        return "high"
    if share >= moderate - _EPSILON:
        return "moderate"
    return None


def _finding(finding_id, severity, message, fix):
    return {"id": finding_id, "severity": severity, "message": message, "fix": fix}


def _judge(run):
    """Returns (verdict, steady-state verdict, findings)."""
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
                )
            )
        findings.extend(_run_findings(run))
        verdict = "warmup_dominated" if run["warmup_ms"] is not None else None
        return verdict, None, findings

    input_share = run["input_share"]
    host_share = run["shares"]["host_overhead"]
    input_severity = _severity(input_share, INPUT_HIGH, INPUT_MODERATE)
    stalls = None
    wait = run["data_wait_ms"]
    if (
        input_severity
        and run["ready_fetch_ms"]
        and wait["p90"] is not None
        and wait["p90"] <= STALL_P90_FACTOR * run["ready_fetch_ms"]
    ):
        # Nine steps in ten got a ready batch: a few long waits, not a slow
        # pipeline.
        stalls, input_severity = input_severity, None
    host_severity = _severity(host_share, HOST_HIGH, HOST_MODERATE)
    busy = run["device_busy_fraction"]
    on_accelerator = _is_accelerator(run["device"])

    candidates = []
    if input_severity:
        candidates.append((input_severity == "high", input_share, "input_bound"))
    if host_severity == "high":
        candidates.append((True, host_share, "host_overhead_bound"))
    if candidates:
        steady_verdict = max(candidates)[2]
    elif on_accelerator and busy is not None and busy < LATENCY_DEVICE_BUSY:
        steady_verdict = "latency_bound"
    else:
        steady_verdict = "compute_bound"

    findings = {}
    if input_severity:
        findings["input_bound"] = _input_finding(run, input_severity)
    if stalls:
        findings["input_stalls"] = _stalls_finding(run)
    if host_severity:
        findings["host_overhead_bound"] = _host_finding(run, host_severity)
    if steady_verdict == "latency_bound":
        findings["latency_bound"] = _latency_finding(run)
    if steady_verdict == "compute_bound":
        findings["compute_bound"] = _compute_finding(run)

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


def _wait_clause(run):
    """`the data wait is 0.205 ms per step, of which ...` (no final stop)."""
    wait = run["data_wait_ms"]["mean"]
    ready = run["ready_fetch_ms"]
    floor = run["fetch_floor_ms"]
    if not ready:
        return (
            f"the data wait is {fmt_ms(wait)} ms per step (no fetch floor was "
            "measured, so all of it counts as waiting)"
        )
    if floor is not None and abs(ready - floor) > 1e-9:
        floor_text = (
            f"the fetch floor: {fmt_ms(floor)} ms measured on a synthetic ready "
            f"iterator, {fmt_ms(ready)} ms this pipeline's median wait"
        )
    else:
        floor_text = "the fetch floor"
    return (
        f"the data wait is {fmt_ms(wait)} ms per step, of which {fmt_ms(ready)} ms "
        f"is the fixed cost of handing over a batch that is already ready "
        f"({floor_text})"
    )


def _input_finding(run, severity):
    step = run["step_ms"]["mean"]
    adverb = "HIGHLY" if severity == "high" else "MODERATELY"
    message = (
        f"{fmt_share(run['input_share'])} of each step is spent waiting for the "
        f"input pipeline: {fmt_ms(run['starved_data_wait_ms'])} ms of "
        f"{fmt_ms(step)} ms ({adverb} input-bound by the profiler's "
        f"{fmt_share(INPUT_HIGH)}/{fmt_share(INPUT_MODERATE)} thresholds); "
        f"{_wait_clause(run)}."
    )
    fix = (
        "Make the pipeline parallel and ahead of the model: "
        "dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE), end the pipeline "
        "with .prefetch(tf.data.AUTOTUNE), add .cache() after expensive loading "
        "or decoding when the data fits in memory, replace tf.py_function and "
        "Python generators with TensorFlow ops, and move augmentation into the "
        "model (keras.layers.RandomFlip, RandomRotation...) so it runs with the "
        "step on the accelerator."
    )
    return _finding("input_bound", severity, message, fix)


def _stalls_finding(run):
    wait = run["data_wait_ms"]
    return _finding(
        "input_stalls",
        "info",
        f"Nine steps in ten got their batch within {fmt_ms(wait['p90'])} ms "
        f"(about the {fmt_ms(run['ready_fetch_ms'])} ms it costs to hand over a "
        f"ready batch), but a few waited up to {fmt_ms(_wait_max(run))} ms: "
        f"{fmt_ms(run['starved_data_wait_ms'])} ms per step on average, "
        f"{fmt_share(run['input_share'])} of the step. The pipeline keeps up; "
        "these are occasional stalls, not starvation.",
        "Stalls at epoch starts come from refilling a shuffle buffer or a cache "
        "that is not yet filled: a smaller shuffle buffer, .cache() before "
        ".shuffle(), and .prefetch(tf.data.AUTOTUNE) at the end smooth them.",
    )


def _wait_max(run):
    value = run["data_wait_ms"]["max"]
    return value if value is not None else run["data_wait_ms"]["p99"]


def _host_finding(run, severity):
    step = run["step_ms"]["mean"]
    host = run["host_overhead_ms"]["mean"]
    adverb = "HIGHLY" if severity == "high" else "MODERATELY"
    return _finding(
        "host_overhead_bound",
        severity,
        f"{fmt_share(run['shares']['host_overhead'])} of each step is host "
        f"overhead outside the step function: {fmt_ms(host)} ms of {fmt_ms(step)} ms "
        "(the Keras loop, callbacks, logging and the progress bar; "
        f"{adverb.lower()} host-bound by the profiler's "
        f"{fmt_share(HOST_HIGH)}/{fmt_share(HOST_MODERATE)} thresholds).",
        "Cut per-batch Python work: fit(..., verbose=2) or verbose=0 instead of "
        "the per-batch progress bar; callbacks that log every N batches or per "
        "epoch (update_freq='epoch'); no .numpy() or float() on tensors in "
        "batch hooks; compile(..., steps_per_execution=N) to run N steps per "
        "call from Python.",
    )


def _latency_finding(run):
    busy = run["device_busy_fraction"]
    severity = "high" if busy < LATENCY_HIGH_BUSY else "moderate"
    return _finding(
        "latency_bound",
        severity,
        f"The input keeps up, yet {run['device']} is busy only "
        f"{fmt_share(busy)} of each traced step (under "
        f"{fmt_share(LATENCY_DEVICE_BUSY)}): the {fmt_ms(run['step_ms']['mean'])} ms "
        "step is mostly the fixed cost of launching kernels and synchronising "
        "with the host, not arithmetic.",
        "Give each launch more work: a larger batch; "
        "compile(..., steps_per_execution=N); jit_compile=True to fuse small "
        "kernels (XLA); or train this model on the CPU, which has no launch "
        "latency.",
    )


def _compute_finding(run):
    step = run["step_ms"]["mean"]
    compute = run["compute_ms"]["mean"]
    message = (
        f"Compute takes {fmt_share(run['shares']['compute'])} of each step: "
        f"{fmt_ms(compute)} ms of {fmt_ms(step)} ms on {run['device'] or 'the device'}. "
    )
    if run["fetch_in_graph"]:
        message += (
            f"With steps_per_execution={run['steps_per_record']} the batch is "
            "fetched inside the compiled function, so any data wait is counted "
            "in compute."
        )
    else:
        message += (
            f"The input pipeline keeps up: {_wait_clause(run)}, so only "
            f"{fmt_share(run['input_share'])} of the step is spent waiting "
            "beyond it."
        )
    fix = (
        "The healthy case: the step itself sets the pace. To go faster make "
        "it cheaper: jit_compile=True (XLA fusion), mixed precision "
        "(keras.mixed_precision.set_global_policy('mixed_float16')) on GPUs "
        "with tensor cores, a larger batch for better device utilisation."
    )
    if _is_accelerator(run["device"]) and run["device_busy_fraction"] is None:
        fix += (
            " A device trace would tell whether the accelerator is busy or "
            "waiting on kernel launches (latency_bound)."
        )
    return _finding("compute_bound", "info", message, fix)


def _warmup_finding(run, finding_id, severity, steady_verdict=None):
    warmup = run["warmup_ms"]
    share = run["warmup_share_of_wall"]
    # The same steady wall time the share was computed from.
    steady_wall = warmup * (1 - share) / share if share else 0.0
    count = run["warmups"] or 1
    first = "first step" if count == 1 else f"first step of each of {count} fits"
    message = (
        f"Warm-up (the {first}: tracing, graph optimisation, compilation) took "
        f"{fmt_ms(warmup)} ms, {fmt_share(share)} of the fit's "
        f"{fmt_ms(warmup + steady_wall)} ms; the {_fmt_count(run['steady_steps'])} "
        f"steady steps after it took {fmt_ms(steady_wall)} ms."
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
    return _finding(finding_id, severity, message, fix)


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
                + f": the numbers cover the {_fmt_count(run['steps'])} step(s) "
                "recorded so far.",
                "Report again once the fit has finished.",
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
            )
        )
    spikes = run["spikes"] or 0
    if spikes:
        steps = run["spike_steps"][:5]
        where = f" (steps {', '.join(str(step) for step in steps)}" + (
            ", ...)" if len(run["spike_steps"]) > 5 else ")"
        ) if steps else ""
        batches = run["batch_sizes"]
        reason = ""
        if batches["distinct"] and batches["distinct"] > 1:
            reason = (
                f" Batch sizes vary from {batches['min']} to {batches['max']}: "
                "a smaller last batch gives the step a new input shape, which "
                "makes TensorFlow trace it again."
            )
        findings.append(
            _finding(
                "retracing",
                "moderate" if spikes >= RETRACING_MODERATE else "info",
                f"{spikes} step(s) after warm-up took more than "
                f"{SPIKE_RATIO:g}x the median compute{where}: typically "
                "retracing or recompiling when an input shape or a Python "
                "argument changes, or garbage collection." + reason,
                "Keep input shapes fixed: batch(..., drop_remainder=True), pad "
                "to bucketed lengths, pass tensors rather than Python values; "
                "for custom tf.functions use reduce_retracing=True or an "
                "input_signature.",
            )
        )
    placement = run["placement"]
    ops = placement["ops"]
    device = run["device"]
    if placement["accelerator_visible"] and ops and not _is_accelerator(device):
        accelerators = [name for name in placement["devices"] if _is_accelerator(name)]
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "high",
                f"An accelerator is visible ({', '.join(accelerators) or 'GPU'}) "
                f"but none of the step's {sum(ops.values()):,} ops ran on it: "
                f"the model trained on {device}.",
                "Check that the model and its data are not pinned with "
                "tf.device('/CPU:0'), that the TensorFlow build sees the GPU "
                "(tf.config.list_physical_devices('GPU')), and that the ops have "
                "GPU kernels.",
            )
        )
    elif placement["cpu_ops_on_accelerator_run"]:
        names = placement["cpu_ops_on_accelerator_run"]
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        cpu_ops = sum(n for name, n in ops.items() if not _is_accelerator(name))
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "moderate",
                f"The step runs on {device}, yet {cpu_ops:,} of its "
                f"{sum(ops.values()):,} ops ran on the CPU, of {len(names)} "
                f"type(s): {shown}. Each forces copies between host and device "
                "in the middle of the step.",
                "Keep ops on the accelerator: replace ops without GPU kernels "
                "(tf.py_function, string ops, some int64 ops) with ones that "
                "have them, create layers and variables inside the model rather "
                "than under tf.device('/CPU:0'), and pin only the input "
                "pipeline to the CPU.",
            )
        )
    copies = placement["cross_device_copies"]
    if copies:
        busy = ", ".join(f"{name} ({n:,} ops)" for name, n in sorted(ops.items()) if n)
        findings.append(
            _finding(
                "cross_device_copies",
                "moderate" if _is_accelerator(device) else "info",
                f"The step's graph has {copies:,} edge(s) where data crosses "
                f"between devices (Send/Recv pairs); its ops ran on {busy or '?'}. "
                f"Each copy is paid on every step.",
                "Keep the step on one device: remove tf.device(...) pins inside "
                "layers, keep variables on the device that uses them, and move "
                "data to the accelerator once per batch with "
                ".prefetch(tf.data.AUTOTUNE) (or "
                "tf.data.experimental.prefetch_to_device) rather than per op.",
            )
        )
    batch = run["batch_size"]
    median = run["step_ms"]["p50"]
    if batch and median is not None and batch <= SMALL_BATCH_SIZE and median < SMALL_BATCH_STEP_MS:
        on_accelerator = _is_accelerator(device)
        findings.append(
            _finding(
                "small_batch",
                "moderate" if on_accelerator else "info",
                f"Each step processes only {batch} samples in {fmt_ms(median)} ms "
                f"(median): at this size the fixed cost of a step (the Python "
                "loop, dispatch"
                + (", kernel launches, host-device synchronisation" if on_accelerator else "")
                + ") is a large part of it, so "
                + ("an accelerator cannot pay off." if on_accelerator else "throughput is low."),
                "Use a larger batch (e.g. 256 or more, adjusting the learning "
                "rate), or compile(..., steps_per_execution=N) to run N steps "
                "per call; for a model this small the CPU may simply be the "
                "faster device.",
            )
        )
    return findings


# Comparison.


def _role(run_name):
    """`"gpu/train"` -> (`"gpu"`, `"train"`); a bare name has no role."""
    head, _, tail = run_name.rpartition("/")
    if tail in ("train", "validation"):
        return head, tail
    return run_name, ""


def default_baseline(results):
    """The first CPU training run, else the first CPU run, else the first
    training run, else the first run."""
    def cpu(result):
        return isinstance(result.get("device"), str) and not _is_accelerator(
            result["device"]
        )

    for test in (
        lambda r: cpu(r) and _role(r["run"])[1] == "train",
        cpu,
        lambda r: _role(r["run"])[1] == "train",
        lambda r: True,
    ):
        for result in results:
            if test(result):
                return result["run"]
    return None


def compare_runs(results, baseline=None):
    """Each run against a baseline: speedups, differences, reasons in words.

    Args:
        results: `analyze_run` results.
        baseline: Run name to compare against. Defaults to the first CPU
            training run, else the first CPU run, else the first run.

    Returns:
        `None` with fewer than two runs, else `{"baseline": name, "rows":
        [...]}` with a row per run, the baseline included (speedup 1.0).
        A run is compared with the baseline's sibling of the same role
        (`cpu/validation` for `gpu/validation`) when there is one; its row
        names it in `against`.

    Raises:
        ValueError: when `baseline` is not one of the runs.
    """
    results = [result for result in results if result is not None]
    by_name = {result["run"]: result for result in results}
    if baseline is not None and baseline not in by_name:
        raise ValueError(
            f"Unknown baseline run {baseline!r}. Expected one of: "
            f"{', '.join(sorted(by_name)) or 'no runs'}."
        )
    if len(results) < 2:
        return None
    if baseline is None:
        baseline = default_baseline(results)
    base_prefix, base_role = _role(baseline)
    rows = []
    for result in results:
        against = baseline
        prefix, role = _role(result["run"])
        sibling = f"{base_prefix}/{role}" if role else None
        if role and role != base_role and sibling in by_name:
            against = sibling
        rows.append(_compare(result, by_name[against]))
    return {"baseline": baseline, "rows": rows}


def _per_sample(result, name):
    mean = result[f"{name}_ms"]["mean"]
    samples = result["samples_per_step"]
    if mean is None or not samples:
        return None
    return mean / samples * 1000.0


def _compare(run, base):
    same_run = run["run"] == base["run"]
    # Means, like samples/s and the per-step deltas beside it: a median
    # would hide rare long stalls and could even flip the direction.
    run_step, base_step = run["step_ms"]["mean"], base["step_ms"]["mean"]
    speedup_step = base_step / run_step if run_step and base_step else None
    run_rate, base_rate = run["samples_per_s"], base["samples_per_s"]
    speedup_rate = run_rate / base_rate if run_rate and base_rate else None
    same_batch = (
        run["samples_per_step"] is not None
        and base["samples_per_step"] is not None
        and abs(run["samples_per_step"] - base["samples_per_step"])
        <= 0.01 * max(run["samples_per_step"], base["samples_per_step"])
    ) or (run["batch_size"] is not None and run["batch_size"] == base["batch_size"])
    if same_run:
        speedup_step = speedup_rate = 1.0
    if same_batch or speedup_rate is None:
        basis, speedup = "step_time", speedup_step
    else:
        basis, speedup = "samples_per_s", speedup_rate
    per_step = {name: run[f"{name}_ms"]["mean"] for name in COMPONENTS}
    base_per_step = {name: base[f"{name}_ms"]["mean"] for name in COMPONENTS}
    per_1000 = {name: _per_sample(run, name) for name in COMPONENTS}
    base_per_1000 = {name: _per_sample(base, name) for name in COMPONENTS}
    row = {
        "run": run["run"],
        "against": base["run"],
        "device": run["device"],
        "batch_size": run["batch_size"],
        "speedup": speedup,
        "basis": basis,
        "speedup_step": speedup_step,
        "speedup_samples_per_s": speedup_rate,
        "same_batch_size": bool(same_batch),
        "step_ms": run_step,
        "baseline_step_ms": base_step,
        "samples_per_s": run_rate,
        "per_step_ms": per_step,
        "per_1000_samples_ms": per_1000,
        "delta_ms": _deltas(per_step, base_per_step),
        "delta_per_1000_samples_ms": _deltas(per_1000, base_per_1000),
        "warmup_ms": run["warmup_ms"],
        "verdict": run["verdict"],
    }
    row["explanation"] = (
        "baseline" if same_run else _explain(run, base, row, per_step,
                                             base_per_step, per_1000,
                                             base_per_1000)
    )
    return row


def _deltas(values, base_values):
    return {
        name: (
            values[name] - base_values[name]
            if values[name] is not None and base_values[name] is not None
            else None
        )
        for name in COMPONENTS
    }


def _same(value, base_value):
    return abs(value - base_value) < max(
        SAME_COMPONENT_MS, SAME_COMPONENT_RATIO * max(abs(value), abs(base_value))
    )


def _explain(run, base, row, per_step, base_per_step, per_1000, base_per_1000):
    name, base_name = run["run"], base["run"]
    speedup = row["speedup"]
    if row["basis"] == "samples_per_s":
        unit, values, base_values = "per 1000 samples", per_1000, base_per_1000
        detail = (
            f"{_fmt_count(row['samples_per_s'])} against "
            f"{_fmt_count(base['samples_per_s'])} samples/s; batch "
            f"{run['batch_size'] or '?'} against {base['batch_size'] or '?'}, "
            "so compared per sample, not per step"
        )
    else:
        unit, values, base_values = "per step", per_step, base_per_step
        detail = (
            f"median step {fmt_ms(row['step_ms'])} ms against "
            f"{fmt_ms(row['baseline_step_ms'])} ms"
        )
    if speedup is None:
        head = f"{name} cannot be compared with {base_name} (no step times)"
        return head + "."
    if abs(speedup - 1.0) < SAME_SPEED:
        head = f"{name} is as fast as {base_name} ({speedup:.2f}x; {detail})"
    else:
        head = f"{name} is {speedup:.2f}x as fast as {base_name} ({detail})"

    known = [c for c in COMPONENTS if values[c] is not None and base_values[c] is not None]
    if not known:
        return head + "."
    slower = speedup < 1.0
    ranked = sorted(known, key=lambda c: abs(values[c] - base_values[c]), reverse=True)
    different = [c for c in ranked if not _same(values[c], base_values[c])]
    same = [c for c in COMPONENTS if c in known and c not in different]
    clauses = []
    batch_note = ""
    if row["basis"] == "step_time" and run["batch_size"]:
        batch_note = f" at batch {run['batch_size']}"
    for index, component in enumerate(different):
        value, base_value = values[component], base_values[component]
        clause = (
            f"its {_LABELS[component]} {unit} is "
            f"{fmt_ms(value)} ms against {fmt_ms(base_value)} ms"
        )
        if index == 0:
            clause += batch_note + _reason(component, run, base, value > base_value)
        clauses.append(clause)
    if not different:
        clauses.append("no part of the step differs much")
    if same:
        names = [_LABELS[c] for c in same]
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        clauses.append(f"the {joined} {'is' if len(names) == 1 else 'are'} the same")
    text = head + ": " + "; ".join(clauses) + "."
    warm, base_warm = run["warmup_ms"], base["warmup_ms"]
    if (
        warm is not None
        and base_warm is not None
        and warm >= WARMUP_NOTE_RATIO * base_warm
        and warm - base_warm >= WARMUP_NOTE_MS
    ):
        text += (
            f" Its warm-up took {fmt_ms(warm)} ms against {fmt_ms(base_warm)} ms, "
            "left out of this ratio."
        )
    if slower and run["verdict"] and run["verdict"] != base["verdict"]:
        text += f" {name} is {run['verdict']}; {base_name} is {base['verdict']}."
    return text


def _reason(component, run, base, higher):
    """Why one component differs, in words (leading separator included)."""
    if component == "data_wait":
        if higher and run["steady_verdict"] == "input_bound":
            return ", because its input pipeline cannot keep up (input_bound)"
        if not higher and base["steady_verdict"] == "input_bound":
            return f", because {base['run']}'s input pipeline cannot keep up"
        return ""
    if component == "compute":
        accelerator, base_accelerator = (
            _is_accelerator(run["device"]),
            _is_accelerator(base["device"]),
        )
        small = run["batch_size"] is not None and run["batch_size"] <= SMALL_BATCH_SIZE
        if higher and accelerator and not base_accelerator:
            return (
                ", a fixed per-step cost (kernel launches, host-device "
                "synchronisation)"
                + (" that so small a batch cannot amortise" if small else "")
            )
        if not higher and accelerator and not base_accelerator:
            return f", {run['device']} computes faster"
        if run["device"] != base["device"] and run["device"] and base["device"]:
            return f" ({run['device']} against {base['device']})"
        return ""
    if higher:
        return ": more time in the Keras loop, callbacks and logging"
    return ""


# The report.


def _skip_reason(record):
    if not _get(record, "newer_schema", False) or isinstance(_get(record, "aggregate"), dict):
        return None
    problems = [str(problem) for problem in _get(record, "problems", [])]
    return problems[0] if problems else "Written by a newer tb-devicecost."


def build_report(records, baseline=None):
    """The whole report: every run analysed, compared, and what was skipped.

    Args:
        records: `reader.RunRecord`s (or dicts with the same fields).
        baseline: Run name for the comparison (see `compare_runs`).

    Returns:
        `{"schema": 1, "runs": [...], "comparison": {...} or None,
        "skipped": [{"run": name, "reason": text}]}`. Runs with nothing to
        analyse (no steps, a newer schema, unreadable documents) are skipped
        with the reason.

    Raises:
        ValueError: when `baseline` names no analysed run.
    """
    runs, skipped = [], []
    for record in records:
        reason = _skip_reason(record)
        result = None
        if not reason:
            try:
                result = analyze_run(record)
            except (TypeError, ValueError, KeyError, AttributeError) as error:
                # One malformed run must not take the whole report down.
                reason = f"Its data could not be analysed ({type(error).__name__}: {error})."
        nothing = result is not None and (
            result["source"] is None
            or (not result["steady_steps"] and result["warmup_ms"] is None)
        )
        if nothing:
            problems = result["problems"]
            reason = (
                "; ".join(problems)
                if problems
                else "It holds tb-devicecost documents but no recorded step yet "
                "(the fit may still be in its first epoch)."
            )
        if reason:
            skipped.append({"run": str(_get(record, "run", "")), "reason": reason})
        else:
            runs.append(result)
    if baseline is not None and baseline not in {run["run"] for run in runs}:
        known = ", ".join(run["run"] for run in runs) or "none"
        skipped_names = {item["run"]: item["reason"] for item in skipped}
        why = (
            f" It was skipped: {skipped_names[baseline]}"
            if baseline in skipped_names
            else ""
        )
        raise ValueError(
            f"Unknown baseline run {baseline!r}; the runs are: {known}.{why}"
        )
    return {
        "schema": SCHEMA,
        "runs": runs,
        "comparison": compare_runs(runs, baseline),
        "skipped": skipped,
    }
