"""Batch-size sweeps: where one device's samples/s overtakes another's.

A sweep (`tb_devicecost.sweep`) records one short fit per device and batch
size, each as a run marked in its run info (`run_data.SweepMark`; older runs
by their names). This module groups a report's run objects into sweeps and,
per device, fits the step time as a fixed cost plus a cost per sample:

    step_ms = fixed_ms + per_sample_us / 1000 * batch_size

on each run's mean steady-state step (`step_ms.mean`). The fit is least
squares on the relative error (each run weighted by 1 / its mean step
squared): a sweep spans batch sizes three orders of magnitude apart, and an
unweighted fit would let the largest batch decide the fixed cost, which is
what small batches pay. Neither cost can be negative: when the best line
has a negative one, it is held at zero and the other fitted alone.

From the two fits, the crossover is the batch size at which the two
devices' steps take equally long, so their samples/s are equal; above it
the device with the smaller per-sample cost is faster. The crossover is
also read directly from the points when the sweep brackets it (the faster
device changes once between two adjacent batch sizes measured on both).
"""

import math

from tb_devicecost.analysis.guards import MAX_VALUE
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.reasons import reason

# The statistic of each run's steady steps that the fit and the points use.
STEP_STATISTIC = "mean"


def find_sweeps(runs):
    """Groups run objects into sweeps and fits each.

    Args:
        runs: Run objects (`report.analyze_run`), each with its `sweep` mark
            (`run_data.SweepMark.as_dict()` or `None`).

    Returns:
        A list of sweep objects (`docs/CLI.md`, "Sweeps"), ordered by name:
        `{"name", "source", "step_statistic", "runs", "devices": {device:
        {"fixed_ms", "per_sample_us", "points": [{"run", "batch_size",
        "step_ms", "samples_per_s"}]}}, "compared", "crossover_batch",
        "crossover_extrapolated", "faster_above", "faster_below",
        "measured_crossover", "your_batch_size", "faster_at", "message",
        "problems"}`. A group of a single run is not a sweep.
    """
    groups = {}
    for run in runs:
        mark = run.get("sweep") if isinstance(run, dict) else None
        if not isinstance(mark, dict):
            continue
        groups.setdefault((mark["prefix"], mark["name"]), []).append((run, mark))
    sweeps = [
        _guarded_sweep(prefix or name, members)
        for (prefix, name), members in groups.items()
        if len(members) >= 2
    ]
    return sorted(sweeps, key=lambda sweep: sweep["name"])


def _guarded_sweep(name, members):
    """`_sweep`, or, should its arithmetic fail on hostile figures, the
    sweep with its runs and that problem: a sweep that cannot be fitted is
    the sweep's problem, never the report's."""
    try:
        return _sweep(name, members)
    except (ArithmeticError, ValueError, TypeError, KeyError) as error:
        return {
            "name": name, "source": members[0][1]["source"],
            "step_statistic": STEP_STATISTIC,
            "runs": sorted(run["run"] for run, _ in members), "devices": {},
            "compared": None, "crossover_batch": None, "crossover_extrapolated": None,
            "faster_above": None, "faster_below": None, "measured_crossover": None,
            "your_batch_size": None, "faster_at": None,
            "message": reason("sweep_unfitted"),
            "problems": [reason("sweep_failed", error=type(error).__name__,
                                detail=str(error))],
        }


def fit_step_time(points):
    """`(fixed_ms, per_sample_ms)` of `step_ms = fixed + per_sample * batch`.

    Least squares on the relative error, both costs non-negative (see the
    module docstring).

    Args:
        points: `(batch_size, step_ms)` pairs with positive step times.

    Returns:
        The two costs in milliseconds, or `(None, None)` when the points
        hold fewer than two distinct batch sizes or cannot be fitted (see
        `_fit`).
    """
    if len({batch for batch, _ in points}) < 2:
        return None, None
    try:
        fixed_ms, per_sample_ms = _fit([float(batch) for batch, _ in points],
                                       [float(step_ms) for _, step_ms in points])
    except (ArithmeticError, ValueError):
        return None, None
    if not (math.isfinite(fixed_ms) and math.isfinite(per_sample_ms)):
        return None, None
    return fixed_ms, per_sample_ms


def _fit(batches, steps_ms):
    """The weighted least squares of `fit_step_time`. Its sums, or when
    they cancel (batch sizes one apart near 1e15, each squared beyond a
    float's 53 bits: a zero determinant) the same fit about the weighted
    mean batch. The weights are scaled by the shortest step, so that a step
    of 1e-300 ms does not make them infinite."""
    shortest_ms = min(steps_ms)
    weights = [(shortest_ms / step_ms) ** 2 for step_ms in steps_ms]
    s = sum(weights)
    sx = sum(w * x for w, x in zip(weights, batches))
    sy = sum(w * y for w, y in zip(weights, steps_ms))
    sxx = sum(w * x * x for w, x in zip(weights, batches))
    sxy = sum(w * x * y for w, x, y in zip(weights, batches, steps_ms))
    determinant = s * sxx - sx * sx
    if determinant > 0 and math.isfinite(determinant):
        per_sample_ms = (s * sxy - sx * sy) / determinant
        fixed_ms = (sy - per_sample_ms * sx) / s
        if per_sample_ms < 0:
            # A step no slower at larger batches: all fixed cost.
            return sy / s, 0.0
        if fixed_ms < 0:
            # All per-sample cost: the line through the origin.
            return 0.0, sxy / sxx
        if math.isfinite(per_sample_ms) and math.isfinite(fixed_ms):
            return fixed_ms, per_sample_ms
    mean_batch = sum(w * x for w, x in zip(weights, batches)) / s
    mean_step_ms = sum(w * y for w, y in zip(weights, steps_ms)) / s
    sxx = sum(w * (x - mean_batch) ** 2 for w, x in zip(weights, batches))
    sxy = sum(w * (x - mean_batch) * (y - mean_step_ms)
              for w, x, y in zip(weights, batches, steps_ms))
    if not sxx > 0:
        raise ZeroDivisionError("the batch sizes do not differ within a float's precision")
    per_sample_ms = sxy / sxx
    fixed_ms = mean_step_ms - per_sample_ms * mean_batch
    if per_sample_ms < 0:
        # A step no slower at larger batches: all fixed cost.
        return mean_step_ms, 0.0
    if fixed_ms < 0:
        # All per-sample cost: the line through the origin.
        return 0.0, (sum(w * x * y for w, x, y in zip(weights, batches, steps_ms))
                     / sum(w * x * x for w, x in zip(weights, batches)))
    return fixed_ms, per_sample_ms


def _sweep(name, members):
    problems = []
    by_device = {}
    runs = []
    your_batch_sizes = {}
    for run, mark in sorted(members, key=lambda item: (item[1]["device"], item[1]["batch_size"])):
        runs.append(run["run"])
        if mark.get("your_batch_size"):
            batch = mark["your_batch_size"]
            your_batch_sizes[batch] = your_batch_sizes.get(batch, 0) + 1
        step_ms = (run.get("step_ms") or {}).get(STEP_STATISTIC)
        if not step_ms:
            problems.append(reason("sweep_no_steady_step", run=run["run"]))
            continue
        by_device.setdefault(mark["device"], []).append(
            {
                "run": run["run"],
                "batch_size": mark["batch_size"],
                "step_ms": step_ms,
                # The run object's own figure, so the chart and the table agree.
                "samples_per_s": run.get("samples_per_s"),
            }
        )
    devices = {}
    for device in sorted(by_device, key=_device_order):
        points = by_device[device]
        fixed_ms, per_sample_ms = fit_step_time([(p["batch_size"], p["step_ms"]) for p in points])
        if fixed_ms is None and len({p["batch_size"] for p in points}) >= 2:
            problems.append(reason("sweep_device_unfitted", device=device))
        devices[device] = {
            "fixed_ms": fixed_ms,
            "per_sample_us": None if per_sample_ms is None else per_sample_ms * 1e3,
            "points": points,
        }
    # The one most of the runs name, should they differ.
    your_batch_size = (
        max(your_batch_sizes, key=lambda batch: (your_batch_sizes[batch], -batch))
        if your_batch_sizes
        else None
    )
    result = {
        "name": name,
        "source": members[0][1]["source"],
        "step_statistic": STEP_STATISTIC,
        "runs": runs,
        "devices": devices,
        "compared": None,
        "crossover_batch": None,
        "crossover_extrapolated": None,
        "faster_above": None,
        "faster_below": None,
        "measured_crossover": None,
        "your_batch_size": your_batch_size,
        "faster_at": None,
        "message": None,
        "problems": problems,
    }
    pair = _pair(devices)
    if pair is None:
        result["message"] = _single_device_message(devices)
        return result
    result["compared"] = list(pair)
    _crossover(result, devices, pair)
    result["measured_crossover"] = _measured_crossover(devices, pair, problems)
    if your_batch_size:
        result["faster_at"] = _faster_at(devices, pair, your_batch_size)
    result["message"] = _message(result)
    return result


def _device_order(device):
    # CPUs first, then accelerators, each by index.
    kind, _, index = device.partition(":")
    return (is_accelerator(device), kind, int(index) if index.isdigit() else 0)


def _pair(devices):
    """The two fitted devices compared: a CPU and an accelerator when the
    sweep has both (the first of each), else its first two."""
    fitted = [device for device, fit in devices.items() if fit["fixed_ms"] is not None]
    cpus = [device for device in fitted if not is_accelerator(device)]
    accelerators = [device for device in fitted if is_accelerator(device)]
    if cpus and accelerators:
        return cpus[0], accelerators[0]
    return tuple(fitted[:2]) if len(fitted) >= 2 else None


def _step_at(fit, batch_size):
    return fit["fixed_ms"] + fit["per_sample_us"] / 1e3 * batch_size


def _crossover(result, devices, pair):
    first, second = (devices[device] for device in pair)
    fixed_gap_ms = second["fixed_ms"] - first["fixed_ms"]
    per_sample_gap_ms = (first["per_sample_us"] - second["per_sample_us"]) / 1e3
    batch = fixed_gap_ms / per_sample_gap_ms if per_sample_gap_ms else None
    # A per-sample gap near zero puts the crossing beyond any batch size.
    if batch is not None and 0 < batch < MAX_VALUE:
        # Above `batch` the device with the smaller per-sample cost wins.
        above, below = pair if per_sample_gap_ms < 0 else pair[::-1]
        result["crossover_batch"] = round(batch)
        batches = [p["batch_size"] for d in pair for p in devices[d]["points"]]
        result["crossover_extrapolated"] = not min(batches) <= batch <= max(batches)
        result["faster_above"], result["faster_below"] = above, below
        return
    # No crossing at a positive batch size: one device is faster at all.
    probe = max(p["batch_size"] for d in pair for p in devices[d]["points"])
    faster = min(pair, key=lambda device: _step_at(devices[device], probe))
    result["faster_above"] = result["faster_below"] = faster


def _measured_steps(points):
    """`{batch_size: mean of the points' step_ms}` (a batch size may be
    recorded more than once)."""
    steps_ms = {}
    for point in points:
        steps_ms.setdefault(point["batch_size"], []).append(point["step_ms"])
    return {batch: sum(values) / len(values) for batch, values in steps_ms.items()}


def _measured_crossover(devices, pair, problems):
    """Where the faster device changes between adjacent measured batch sizes,
    or `None` when it never does, or does more than once (noise)."""
    first, second = (_measured_steps(devices[device]["points"]) for device in pair)
    common = sorted(set(first) & set(second))
    # Positive: the second device's step is shorter (it is faster).
    gaps = [(batch, first[batch] - second[batch]) for batch in common if first[batch] != second[batch]]
    changes = [
        (low, high) for low, high in zip(gaps, gaps[1:]) if (low[1] > 0) != (high[1] > 0)
    ]
    if len(changes) > 1:
        problems.append(reason("sweep_noisy", first=pair[0], second=pair[1],
                               changes=len(changes)))
    if len(changes) != 1:
        return None
    (low, low_gap_ms), (high, high_gap_ms) = changes[0]
    # Where the difference of the two steps, linear between the two points,
    # is zero: there the samples/s are equal.
    batch = low + (high - low) * low_gap_ms / (low_gap_ms - high_gap_ms)
    return {
        "between": [low, high],
        "batch": round(batch),
        "faster_above": pair[1] if high_gap_ms > 0 else pair[0],
    }


def _faster_at(devices, pair, batch_size):
    """Which device is faster at `batch_size`, by how much: measured when
    both devices ran that batch size, else from the fits."""
    measured_ms = [_measured_steps(devices[device]["points"]).get(batch_size) for device in pair]
    if None not in measured_ms:
        steps_ms, source = measured_ms, "measured"
    else:
        steps_ms, source = [_step_at(devices[device], batch_size) for device in pair], "fit"
    if not all(steps_ms):
        return None
    faster, slower = (0, 1) if steps_ms[0] <= steps_ms[1] else (1, 0)
    return {
        "batch_size": batch_size,
        "device": pair[faster],
        "other": pair[slower],
        # The same samples at both: samples/s over samples/s is the inverse
        # ratio of the step times.
        "times": steps_ms[slower] / steps_ms[faster],
        "step_ms": {pair[0]: steps_ms[0], pair[1]: steps_ms[1]},
        "source": source,
    }


def _single_device_message(devices):
    """Why a sweep compares no two devices: none fitted, or only one."""
    fitted = [(device, fit) for device, fit in devices.items() if fit["fixed_ms"] is not None]
    if not fitted:
        return reason("sweep_nothing_fitted")
    device, fit = fitted[0]
    return reason("sweep_one_device", device=device, fixed_ms=fit["fixed_ms"],
                  per_sample_us=fit["per_sample_us"])


def _message(result):
    """The sweep in one sentence (`words.sweeps`): the crossover, then the
    user's batch size."""
    above = result["faster_above"]
    return reason(
        "sweep_message", above=above, below=result["faster_below"],
        other=[device for device in result["compared"] if device != above][0],
        crossover_batch=result["crossover_batch"],
        extrapolated=result["crossover_extrapolated"],
        measured=result["measured_crossover"], faster_at=result["faster_at"])
