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

from tb_devicecost import formatting

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


# Every figure in a message is written by `tb_devicecost.formatting`, the
# same rule the report's tables and the tab use.
fmt_ms = formatting.fmt_ms
fmt_share = formatting.fmt_share
_fmt_count = formatting.fmt_count
_fmt_speedup = formatting.fmt_speedup


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
        "wall": _wall_parts(aggregate.get("wall_ms")),
        "retraces": _retraces(aggregate.get("retraces")),
    }


WALL_PARTS = ("steps", "warmup", "between_steps", "measurement")


def _wall_parts(wall):
    """The fit's wall time and its parts (ms), each `None` when unknown.

    The recorder writes `{"total", "steps", "warmup", "between_steps",
    "measurement"}` with total = the sum of the four parts; older data has
    no such key, and then every part is unknown (never guessed).
    """
    wall = wall if isinstance(wall, dict) else {}
    parts = {key: _number(wall.get(key)) for key in ("total",) + WALL_PARTS}
    if parts["total"] is None and all(parts[key] is not None for key in WALL_PARTS):
        parts["total"] = sum(parts[key] for key in WALL_PARTS)
    return parts


def _retraces(retraces):
    """`{"count", "steps", "source"}`; `count` is `None` when not recorded."""
    if not isinstance(retraces, dict):
        return {"count": None, "steps": [], "source": None}
    source = retraces.get("source")
    return {
        "count": _count(retraces.get("count")),
        "steps": [
            _count(step) for step in _list(retraces.get("steps")) if _count(step) is not None
        ],
        "source": source if isinstance(source, str) else None,
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
        "wall": _wall_parts(None),
        "retraces": _retraces(None),
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


def _busiest(counts):
    return max(counts, key=lambda name: (counts[name], name))


def _where_the_step_ran(visible, ops, variables):
    """(device, how it is known, devices used): where the step ran.

    From the first step's ops (device -> op count): the accelerator holding
    most of them when any accelerator ran some (a GPU step also runs input
    and bookkeeping ops on the host CPU), else the device holding most. No
    op counts: the device holding most variables. Neither: a visible
    device (the first accelerator, else the first), marked
    `"visible_devices"`, since nothing says the step ran there.
    """
    used_ops = {name: n for name, n in ops.items() if n}
    used_variables = {name: n for name, n in variables.items() if n}
    if used_ops:
        accelerators = {n: c for n, c in used_ops.items() if _is_accelerator(n)}
        device = _busiest(accelerators or used_ops)
        return device, "ops", sorted(used_ops, key=lambda n: (-used_ops[n], n))
    if used_variables:
        return (
            _busiest(used_variables),
            "variables",
            sorted(used_variables, key=lambda n: (-used_variables[n], n)),
        )
    if visible:
        accelerators = [name for name in visible if _is_accelerator(name)]
        return (accelerators or visible)[0], "visible_devices", []
    return None, None, []


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
    device, device_source, devices_used = _where_the_step_ran(names, ops, variables)
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
        "device_source": device_source,
        "devices_used": devices_used,
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
                    f"Our mean data wait for these steps ({fmt_ms(ours_wait)} ms per "
                    f"step) and the trace's mean input wait ({fmt_ms(trace_wait)} ms) "
                    "differ by "
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
    wall = numbers["wall"]
    wall_shares = {
        key: (_ratio(wall[key], wall["total"]) if wall["total"] else None)
        for key in WALL_PARTS
    }
    # Warm-up over the fit's whole wall time when it was recorded; else over
    # the time in warm-up and steady steps (all that older data knows).
    warmup_share = None
    if wall["total"] and (wall["warmup"] is not None or warmup_ms is not None):
        warmup_part = wall["warmup"] if wall["warmup"] is not None else warmup_ms
        warmup_share = min(1.0, warmup_part / wall["total"])
    elif warmup_ms is not None and warmup_ms + steady_wall_ms > 0:
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
        "device_source": placement["device_source"],
        "devices_used": placement["devices_used"],
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
        "wall_ms": wall,
        "wall_shares": wall_shares,
        "spikes": numbers["spikes"],
        "spike_steps": numbers["spike_steps"],
        "retraces": numbers["retraces"],
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
    if placement["device_source"] == "visible_devices":
        problems.append(
            "Where the step ran was not recorded (no op or variable placement): "
            f"the device shown, {placement['device']}, is only a visible one."
        )
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
        "wall": _wall_parts(None),
        "retraces": _retraces(None),
    }


def _percentiles(stats):
    return {key: stats[key] for key in ("p50", "p90", "p99", "mean", "min", "max")}


def _starvation(wait, fetch_floor, fetch_in_graph):
    """(ready handover cost, mean wait above it) in milliseconds.

    The fetch floor is a p50 (of `next()` on an iterator whose batches are
    ready), so it is compared with the p50 data wait. When the p50 wait is
    within FETCH_FLOOR_MAX_FACTOR of the floor (or below it), the typical
    step got a ready batch and the p50 wait is this pipeline's own cost of
    handing one over; above that, the floor is. Either way the cost is never
    more than the p50 wait, nor than the mean wait it is taken from: a part
    is never larger than its whole. Without a floor the cost is unknown
    (`None`) and all of the wait is counted; `_judge` is then conservative.
    """
    mean = wait["mean"]
    if mean is None:
        return None, None
    if fetch_in_graph:
        return None, 0.0
    if not fetch_floor:
        return None, mean
    median = wait["p50"]
    ready = fetch_floor
    if median is not None and median <= FETCH_FLOOR_MAX_FACTOR * fetch_floor:
        ready = median
    ready = min(ready, mean)
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
    """Returns (verdict, steady-state verdict, findings).

    The verdict names the dominant bottleneck: only a HIGH input or host
    share makes it `input_bound` or `host_overhead_bound` (the larger share
    when both are high); a moderate one is a finding beside the verdict.
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
                )
            )
        findings.extend(_run_findings(run))
        verdict = "warmup_dominated" if run["warmup_ms"] is not None else None
        return verdict, None, findings

    input_share = run["input_share"]
    host_share = run["shares"]["host_overhead"]
    input_severity = _severity(input_share, INPUT_HIGH, INPUT_MODERATE)
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
        and wait["p90"] <= STALL_P90_FACTOR * run["ready_fetch_ms"]
    ):
        # Nine steps in ten got a ready batch: a few long waits, not a slow
        # pipeline.
        stalls, input_severity = input_severity, None
    host_severity = _severity(host_share, HOST_HIGH, HOST_MODERATE)
    busy = run["device_busy_fraction"]
    on_accelerator = _is_accelerator(run["device"])

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
        findings["latency_bound"] = _latency_finding(run)
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
    return _role(run["run"])[1] in ("train", "")


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
    fix = (
        "Make the pipeline parallel and ahead of the model: "
        "dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE), end the pipeline "
        "with .prefetch(tf.data.AUTOTUNE), add .cache() after expensive loading "
        "or decoding when the data fits in memory, and replace tf.py_function "
        "and Python generators with TensorFlow ops."
    )
    if _is_training(run):
        fix += (
            " If the pipeline augments the data (random flips, crops, "
            "rotations), move that into the model (keras.layers.RandomFlip, "
            "RandomRotation...) so it runs with the step on the accelerator."
        )
    else:
        fix += (
            " A validation or evaluation pipeline only loads and batches: "
            ".cache() it when it fits in memory and end it with "
            ".prefetch(tf.data.AUTOTUNE)."
        )
    return _finding("input_bound", severity, message, fix)


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
        "mean step is mostly the fixed cost of launching kernels and "
        "synchronising with the host, not arithmetic.",
        "Give each launch more work: a larger batch; "
        "compile(..., steps_per_execution=N); jit_compile=True to fuse small "
        "kernels (XLA); or train this model on the CPU, which has no launch "
        "latency.",
    )


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
    if _is_accelerator(run["device"]) and run["device_busy_fraction"] is None:
        fix += (
            " A device trace would tell whether the accelerator is busy or "
            "waiting on kernel launches (latency_bound)."
        )
    return _finding("compute_bound", "info", message, fix)


def _warmup_finding(run, finding_id, severity, steady_verdict=None):
    warmup = run["warmup_ms"]
    share = run["warmup_share_of_wall"]
    wall = run["wall_ms"]
    if wall["total"] and wall["warmup"] is not None:
        warmup = wall["warmup"]  # The part the share was computed from.
    count = run["warmups"] or 1
    first = "first step" if count == 1 else f"first step of each of {count} fits"
    message = f"Warm-up (the {first}: tracing, graph optimisation, compilation) took "
    if wall["total"]:
        message += (
            f"{fmt_ms(warmup)} ms in total, {fmt_share(share)} of the fit's "
            f"{fmt_ms(wall['total'])} ms total wall time; the "
            f"{_fmt_count(run['steady_steps'])} steady steps after it took "
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
            f"the {_fmt_count(run['steady_steps'])} steady steps after it took "
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
    return _finding(finding_id, severity, message, fix)


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
                f"The step function was traced again {_fmt_count(count)} time(s) "
                f"after warm-up{_steps_text(retraces['steps'])}, by "
                f"{retraces['source'] or 'the backend'}: each retrace repeats "
                "tracing and graph optimisation inside a step." + reason,
                "Keep input shapes fixed: batch(..., drop_remainder=True), pad "
                "to bucketed lengths, pass tensors rather than Python values; "
                "for custom tf.functions use reduce_retracing=True or an "
                "input_signature.",
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
                f"{_fmt_count(unexplained)} step(s) after warm-up took more than "
                f"{SPIKE_RATIO:g}x the p50 compute{_steps_text(unexplained_steps)}. "
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
        )
    return findings


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
    findings.extend(_retrace_findings(run))
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
                f"but none of the step's {_fmt_count(sum(ops.values()))} ops ran on it: "
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
                f"The step runs on {device}, yet {_fmt_count(cpu_ops)} of its "
                f"{_fmt_count(sum(ops.values()))} ops ran on the CPU, of {len(names)} "
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
        busy = ", ".join(
            f"{name} ({_fmt_count(n)} ops)" for name, n in sorted(ops.items()) if n
        )
        findings.append(
            _finding(
                "cross_device_copies",
                "moderate" if _is_accelerator(device) else "info",
                f"The step's graph has {_fmt_count(copies)} edge(s) where data crosses "
                f"between devices (Send/Recv pairs); its ops ran on "
                f"{busy or formatting.MISSING}. "
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
        )
    return findings


# Comparison.

# Roles of a run, from the last part of its name: `fit` writes `train` and
# `validation`, `evaluate` writes `evaluation`. Runs are compared only with
# runs of the same role.
ROLES = ("train", "validation", "evaluation")
# A device named in a run name: `cpu`, `gpu0`, `GPU:1`, `tpu_2`... Two runs
# whose names differ only in such words are the same model on two devices.
_DEVICE_WORD = re.compile(
    r"(?<![a-z0-9])(cpu|gpu|tpu|cuda|mps|xpu)(?:[:_]?\d+)?(?![a-z])", re.IGNORECASE
)


def _role(run_name):
    """`"gpu/train"` -> (`"gpu"`, `"train"`); a bare name has no role."""
    head, _, tail = run_name.rpartition("/")
    if head and tail in ROLES:
        return head, tail
    return run_name, ""


def _model_key(run_name):
    """(role, name with its device words replaced), or `None` without one."""
    prefix, role = _role(run_name)
    key = _DEVICE_WORD.sub("<device>", prefix.lower())
    return (role, key) if key != prefix.lower() else None


def _on_cpu(result):
    """Whether a run trained on the CPU (by its device, else by its name)."""
    device = result.get("device")
    if isinstance(device, str):
        return not _is_accelerator(device)
    words = [m.group(1).lower() for m in _DEVICE_WORD.finditer(_role(result["run"])[0])]
    return bool(words) and all(word == "cpu" for word in words)


def _cpu_counterpart(result, results):
    """The same model's CPU run of the same role, or `None`.

    Same model: the run names differ only in device words (`cpu/train` for
    `gpu/train`, `mlp/batch64-cpu0/train` for `mlp/batch64-gpu0/train`). A
    run on the CPU has no counterpart: it is one.
    """
    if _on_cpu(result):
        return None
    key = _model_key(result["run"])
    if key is None:
        return None
    candidates = [
        other
        for other in results
        if other["run"] != result["run"] and _model_key(other["run"]) == key and _on_cpu(other)
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda other: other["run"])["run"]


def _plan(results, baseline):
    """(pairs of run and the run it is compared with, baseline, reason).

    Pairs hold run names, in the order of `results`; a run paired with
    itself is a baseline (of its role). Nothing is compared across roles,
    and no group holds only its baseline.
    """
    names = [result["run"] for result in results]
    chosen_by_name = baseline is not None
    against = {}
    left_out = []
    if baseline is not None:
        base_prefix, base_role = _role(baseline)
        siblings = []
        for name in names:
            prefix, role = _role(name)
            sibling = f"{base_prefix}/{role}" if role and base_role else None
            if role == base_role:
                against[name] = baseline
            elif sibling in names:
                against[name] = sibling
                if sibling not in siblings:
                    siblings.append(sibling)
            else:
                left_out.append(name)
        reason = f"{baseline} was chosen as the baseline"
        if siblings:
            reason += (
                "; runs of another role are compared with its run of that role ("
                + ", ".join(siblings)
                + ")"
            )
    else:
        pairs = []
        for result in results:
            counterpart = _cpu_counterpart(result, results)
            if counterpart is not None:
                against[result["run"]] = counterpart
                against.setdefault(counterpart, counterpart)
                pairs.append(f"{result['run']} with {counterpart}")
        reason = (
            "Each run is compared with the same model trained on the CPU: the "
            "run of the same role whose name differs only in the device ("
            + "; ".join(pairs[:3])
            + ("; ..." if len(pairs) > 3 else "")
            + ")"
        )
    compared = {base for name, base in against.items() if name != base}
    pairs = [(name, against[name]) for name in names if against.get(name) in compared]
    if not compared:
        return [], None, None
    dropped = [name for name in names if name in against and against[name] not in compared]
    left_out = sorted(set(left_out + dropped) - compared)
    if baseline is None:
        train = {base for name, base in pairs if _role(base)[1] == "train"}
        every = {base for name, base in pairs}
        baseline = next(
            (min(group) for group in (train, every) if len(group) == 1), None
        )
    if not chosen_by_name:
        left_out = [name for name in names if name not in against]
    if left_out:
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        reason += (
            "; left out, with no run of their role to compare with: "
            if chosen_by_name
            else "; left out, with no such run: "
        ) + shown
    return pairs, baseline, reason + "."


def default_baseline(results):
    """The baseline `compare_runs` picks when none is named, or `None`.

    The same model trained on the CPU: a CPU run of the same role whose
    name differs from another run's only in the device (`cpu/train` for
    `gpu/train`). With several models, each is compared with its own, and
    this returns the one training baseline when there is exactly one.
    """
    results = [result for result in results if result is not None]
    return _plan(results, None)[1]


def compare_runs(results, baseline=None):
    """Runs against a baseline: speedups, differences, reasons in words.

    Like is compared with like: a training run with a training run, a
    validation run with a validation run, an evaluation with an evaluation;
    never a run with itself.

    Args:
        results: `analyze_run` results.
        baseline: Run name to compare against. Runs of its role are compared
            with it, runs of another role with its run of that role (its
            sibling: `cpu/validation` for `cpu/train`), and runs with no such
            sibling are left out. Defaults to each run's same model trained
            on the CPU (see `default_baseline`); runs without one are left
            out.

    Returns:
        `None` when nothing is compared (fewer than two runs, or no run has
        a baseline), else `{"baseline": name or None, "baseline_reason":
        text, "baselines": [...], "statistic": "mean", "rows": [...]}`: a
        row per compared run, each baseline included (`is_baseline`,
        speedup 1.0, explanation `"baseline"`); `against` names the run
        each row is compared with. Speedups and differences are of mean
        steady-state steps (`statistic`): throughput is what a mean gives.

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
    pairs, chosen, reason = _plan(results, baseline)
    if not pairs:
        return None
    rows = [_compare(by_name[name], by_name[base]) for name, base in pairs]
    return {
        "baseline": chosen,
        "baseline_reason": reason,
        "baselines": sorted({base for _, base in pairs}),
        "statistic": "mean",
        "rows": rows,
    }


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
        "is_baseline": same_run,
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
            f"{_fmt_count(base['samples_per_s'])} samples/s in steady state; batch "
            f"{run['batch_size'] or '?'} against {base['batch_size'] or '?'}, "
            "so compared per sample, not per step"
        )
    else:
        unit, values, base_values = "per step", per_step, base_per_step
        detail = (
            f"mean step {fmt_ms(row['step_ms'])} ms against "
            f"{fmt_ms(row['baseline_step_ms'])} ms"
        )
    if speedup is None:
        head = f"{name} cannot be compared with {base_name} (no step times)"
        return head + "."
    if abs(speedup - 1.0) < SAME_SPEED:
        head = f"{name} is as fast as {base_name} ({_fmt_speedup(speedup)}; {detail})"
    else:
        head = f"{name} is {_fmt_speedup(speedup)} as fast as {base_name} ({detail})"

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
            f"its mean {_LABELS[component]} {unit} is "
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
            f" Its warm-up took {fmt_ms(warm)} ms in total against {fmt_ms(base_warm)} ms, "
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
