"""Runs compared with a baseline: speedups, differences, and why, in numbers.

Which run is compared with which is `pairing.py`'s (like with like, the
CPU counterpart by default); the explanation is a
`reasons.Reason` that `tb_devicecost.words.comparisons` says. Speedups and differences are of mean steady-state
steps: throughput is what a mean gives. Why two runs differ comes from
their numbers: each device's fixed cost and cost per sample over the same
model's runs at other batch sizes, or its sweep's (`scaling`), the device's busy time from
a trace, the batch's copy to the device (`parts`). `docs/VERDICTS.md`
("Comparing runs") documents the rules.
"""

from tb_devicecost.analysis import device_side
from tb_devicecost.analysis import names
from tb_devicecost.analysis import pairing
from tb_devicecost.analysis import sweeps
from tb_devicecost.analysis.guards import MAX_VALUE
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.analysis.thresholds import FLAT_STEP_SHARE
from tb_devicecost.analysis.thresholds import SAME_COMPONENT_MS
from tb_devicecost.analysis.thresholds import SAME_COMPONENT_RATIO
from tb_devicecost.analysis.thresholds import SAME_SPEED
from tb_devicecost.analysis.thresholds import SMALL_BATCH_SIZE
from tb_devicecost.analysis.thresholds import WARMUP_NOTE_MS
from tb_devicecost.analysis.thresholds import WARMUP_NOTE_RATIO
from tb_devicecost.format import vocabulary


def compare_runs(results, baseline=None, context=None):
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
            on the CPU (see `pairing.default_baseline`); runs without one are left
            out.
        context: Run objects whose numbers may explain the comparison
            without being compared: the same model at other batch sizes
            (see `scaling`). Defaults to `results`.

    Returns:
        `None` when nothing is compared (fewer than two runs, or no run has
        a baseline), else `{"baseline": name or None, "baseline_reason":
        text, "baselines": [...], "statistic": "mean", "rows": [...]}`: a
        row per compared run, each baseline included (`is_baseline`,
        speedup 1.0, explanation `"baseline"`); `against` names the run
        each row is compared with; `parts` and `scaling` hold the numbers
        the explanation quotes (docs/CLI.md, "Comparison"). Speedups and differences are of mean
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
    pairs, chosen, reason = pairing.plan(results, baseline)
    if not pairs:
        return None
    context = [result for result in (context or results) if result is not None]
    found = sweeps.find_sweeps(context)
    rows = [_compare(by_name[name], by_name[base], context, found) for name, base in pairs]
    return {
        "baseline": chosen,
        "baseline_reason": reason,
        "baselines": sorted({base for _, base in pairs}),
        "statistic": "mean",
        "rows": rows,
    }


def component_means(result):
    """Each component's mean per step (ms)."""
    return {
        name: result[vocabulary.component_column(name)]["mean"]
        for name in vocabulary.COMPONENTS
    }


def per_1000_samples(result, name):
    mean_ms = result[vocabulary.component_column(name)]["mean"]
    samples = result["samples_per_step"]
    if mean_ms is None or not samples:
        return None
    return mean_ms / samples * 1000.0


def _compare(run, base, context=(), found=None):
    same_run = run["run"] == base["run"]
    # Means, like samples/s and the per-step deltas beside it: a median
    # would hide rare long stalls and could even flip the direction.
    run_step_ms, base_step_ms = run["step_ms"]["mean"], base["step_ms"]["mean"]
    speedup_step = base_step_ms / run_step_ms if run_step_ms and base_step_ms else None
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
    per_step, base_per_step = component_means(run), component_means(base)
    per_1000 = {name: per_1000_samples(run, name) for name in vocabulary.COMPONENTS}
    base_per_1000 = {name: per_1000_samples(base, name) for name in vocabulary.COMPONENTS}
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
        "step_ms": run_step_ms,
        "baseline_step_ms": base_step_ms,
        "samples_per_s": run_rate,
        "per_step_ms": per_step,
        "per_1000_samples_ms": per_1000,
        "delta_ms": _deltas(per_step, base_per_step),
        "delta_per_1000_samples_ms": _deltas(per_1000, base_per_1000),
        "warmup_ms": run["warmup_ms"],
        "verdict": run["verdict"],
    }
    row["same_model"] = pairing.same_model(run["run"], base["run"])
    row["scaling"] = None if same_run else scaling(run, base, context, found)
    row["parts"] = None if same_run else parts(run, base, row["scaling"])
    # Said by `words.comparisons` from the row's numbers and both runs'.
    row["explanation"] = "baseline" if same_run else reason(
        "comparison", run=run, base=base, row=row, judged=judged(run, base, row))
    return row


def judged(run, base, row):
    """What a row's explanation rests on, decided by the thresholds of "as
    fast as" and "the same" (`words.comparisons` says it): whether the
    speedup is about 1 (`same_speed`); each component's difference, per
    step or per 1000 samples as the row compares them (`components`:
    `"different"`, `"about_same"` within `SAME_COMPONENT_RATIO`, else
    `"close"`, under `close_ms`); whether the warm-up is worth a note; each
    fitted device's step flat in the batch (`flat`); a small batch."""
    speedup = row["speedup"]
    if row["basis"] == "samples_per_s":
        values = {name: per_1000_samples(run, name) for name in vocabulary.COMPONENTS}
        base_values = {name: per_1000_samples(base, name) for name in vocabulary.COMPONENTS}
    else:
        values, base_values = component_means(run), component_means(base)
    components = {}
    for name in vocabulary.COMPONENTS:
        value_ms, base_value_ms = values[name], base_values[name]
        if value_ms is None or base_value_ms is None:
            continue
        difference = abs(value_ms - base_value_ms)
        near = SAME_COMPONENT_RATIO * max(abs(value_ms), abs(base_value_ms))
        components[name] = (
            "different" if not difference < max(SAME_COMPONENT_MS, near)
            else "about_same" if difference < near else "close")
    warmup_ms, base_warmup_ms = run["warmup_ms"], base["warmup_ms"]
    fits = (row["scaling"] or {}).get("devices") or {}
    return {
        "same_speed": speedup is not None and abs(speedup - 1.0) < SAME_SPEED,
        "components": components,
        "close_ms": SAME_COMPONENT_MS,
        "warmup_note": (
            warmup_ms is not None and base_warmup_ms is not None
            and warmup_ms >= WARMUP_NOTE_RATIO * base_warmup_ms
            and warmup_ms - base_warmup_ms >= WARMUP_NOTE_MS),
        "flat": {
            device: fits[device]["per_sample_us"] / 1e3
            * max(point["batch_size"] for point in fits[device]["points"])
            < FLAT_STEP_SHARE * fits[device]["fixed_ms"]
            for device in (run["device"], base["device"]) if device in fits
        },
        "small_batch": run["batch_size"] is not None and run["batch_size"] <= SMALL_BATCH_SIZE,
    }


def _deltas(values, base_values):
    return {
        name: (
            values[name] - base_values[name]
            if values[name] is not None and base_values[name] is not None
            else None
        )
        for name in vocabulary.COMPONENTS
    }


# Why, in the runs' numbers: the fixed cost of a step and its cost per sample
# on each device (from the same model's runs at other batch sizes), the
# device's busy time (from a trace), the batch's copy to the device, warm-up
# and input wait.


def _scaling_key(result):
    """(role, backend, name with its batch and device words replaced), or
    `None` unless the name holds one batch word whose number is the run's
    batch size."""
    prefix, role = names.role(result["run"])
    words = list(pairing.BATCH_WORD.finditer(prefix))
    batch = result.get("batch_size")
    if not batch or len(words) != 1 or int(words[0].group(1)) != batch:
        return None
    name = pairing.DEVICE_WORD.sub("<device>", pairing.BATCH_WORD.sub("<batch>", prefix).lower())
    return role, result.get("backend"), name


def _device_fits(result, context):
    """`{device: {"fixed_ms", "per_sample_us", "points"}}`: the step time of
    `result`'s model as a fixed cost plus a cost per sample, per device that
    ran it at two batch sizes or more (`sweeps.fit_step_time`, the sweep's
    own fit, on the runs' mean steps)."""
    key = _scaling_key(result)
    if key is None:
        return {}
    points = {}
    for other in context:
        step_ms = other["step_ms"]["mean"]
        if _scaling_key(other) != key or not step_ms or not other["device"]:
            continue
        points.setdefault(other["device"], []).append(
            {"run": other["run"], "batch_size": other["batch_size"], "step_ms": step_ms}
        )
    fits = {}
    for device, device_points in points.items():
        fixed_ms, per_sample_ms = sweeps.fit_step_time(
            [(point["batch_size"], point["step_ms"]) for point in device_points]
        )
        if fixed_ms is not None:
            fits[device] = {
                "fixed_ms": fixed_ms,
                "per_sample_us": per_sample_ms * 1e3,
                "points": sorted(device_points, key=lambda p: (p["batch_size"], p["run"])),
            }
    return fits


def scaling(run, base, context, found=None):
    """How the two runs' devices scale with the batch, or `None`.

    Each device's step time as a fixed cost plus a cost per sample. When a
    batch-size sweep of the same model (`RunData.model`: the
    same backend, parameter count and dtype policy; the same role) fitted
    both devices, its fits and crossover, so the comparison gives the one
    crossover the sweep and the README give for that model. Else fitted
    over the runs of the same model by name (names that differ only in
    device and batch words, the same backend and role) at two batch sizes
    or more; with both devices fitted, the batch size above which one
    overtakes the other (where their steps take equally long, so their
    samples/s are equal), as the sweep analysis computes it
    (`tb_devicecost.analysis.sweeps`).

    Args:
        run: A run object.
        base: The run object it is compared with, on another device.
        context: Run objects to look for the same model in.
        found: The sweeps among `context` (`sweeps.find_sweeps`), when
            already found.

    Returns:
        `None` when the two ran on one device or neither device has runs
        at two batch sizes, else `{"devices": {device: {"fixed_ms",
        "per_sample_us", "points": [{"run", "batch_size", "step_ms"}]}},
        "sweep", "crossover_batch", "crossover_extrapolated",
        "faster_above", "faster_below"}` (`sweep`: the name of the sweep
        whose fits these are, or `None`; the last four `None` without both
        fits).
    """
    if not run["device"] or not base["device"] or run["device"] == base["device"]:
        return None
    sweep = _model_sweep(run, base, context,
                         sweeps.find_sweeps(context) if found is None else found)
    if sweep is not None:
        return _sweep_scaling(sweep, (run["device"], base["device"]))
    devices = {}
    for side in (run, base):
        fit = _device_fits(side, context).get(side["device"])
        if fit is not None:
            devices[side["device"]] = fit
    if not devices:
        return None
    result = {
        "devices": devices,
        "sweep": None,
        "crossover_batch": None,
        "crossover_extrapolated": None,
        "faster_above": None,
        "faster_below": None,
    }
    if len(devices) < 2:
        return result
    return _crossing(result, (run["device"], base["device"]))


def _crossing(result, pair):
    """`result` (`scaling`'s, both devices of `pair` fitted) with the batch
    size where the two devices' steps take equally long."""
    devices = result["devices"]
    first, second = pair
    a, b = devices[first], devices[second]
    per_sample_gap_ms = (a["per_sample_us"] - b["per_sample_us"]) / 1e3
    batch = (b["fixed_ms"] - a["fixed_ms"]) / per_sample_gap_ms if per_sample_gap_ms else None
    batches = [p["batch_size"] for fit in (a, b) for p in fit["points"]]
    # As the sweep's: a per-sample gap near zero puts the crossing beyond any
    # batch size (and `round` of an infinity would raise).
    if batch is not None and 0 < batch < MAX_VALUE:
        above, below = (first, second) if per_sample_gap_ms < 0 else (second, first)
        result.update(
            crossover_batch=round(batch),
            crossover_extrapolated=not min(batches) <= batch <= max(batches),
            faster_above=above,
            faster_below=below,
        )
    else:
        # No crossing at a positive batch size: one is faster at every one.
        probe = max(batches)
        faster = min(
            (first, second),
            key=lambda device: devices[device]["fixed_ms"]
            + devices[device]["per_sample_us"] / 1e3 * probe,
        )
        result.update(faster_above=faster, faster_below=faster)
    return result


def _signature(result):
    """The run object's model: what `record.model_signature` read from
    its run info (`report.analyze_run`), or `None` when unknown."""
    if not result.get("parameters"):
        return None
    return result.get("backend"), result["parameters"], result.get("dtype_policy")


def _model_sweep(run, base, context, found):
    """The first sweep (by name) of the model both runs trained, in their
    role, that fitted both their devices; `None` when there is none or the
    model is not known (no parameter count recorded)."""
    signature = _signature(run)
    role = names.role(run["run"])[1]
    if (
        signature is None
        or _signature(base) != signature
        or names.role(base["run"])[1] != role
    ):
        return None
    by_name = {result["run"]: result for result in context}
    for sweep in sorted(found, key=lambda sweep: str(sweep["name"])):
        fits = sweep["devices"]
        members = [by_name.get(name) for name in sweep["runs"]]
        if (
            all((fits.get(device) or {}).get("fixed_ms") is not None
                for device in (run["device"], base["device"]))
            and members
            and all(
                member is not None
                and _signature(member) == signature
                and names.role(member["run"])[1] == role
                for member in members
            )
        ):
            return sweep
    return None


def _sweep_scaling(sweep, pair):
    """`scaling`'s object from a sweep's fits of the two devices `pair`."""
    devices = {
        device: {
            "fixed_ms": sweep["devices"][device]["fixed_ms"],
            "per_sample_us": sweep["devices"][device]["per_sample_us"],
            "points": [
                {key: point[key] for key in ("run", "batch_size", "step_ms")}
                for point in sweep["devices"][device]["points"]
            ],
        }
        for device in pair
    }
    result = {"devices": devices, "sweep": sweep["name"]}
    # The sweep's own crossover when it compared these two devices; else
    # the same arithmetic on its fits.
    if set(sweep.get("compared") or ()) == set(pair):
        result.update({key: sweep[key] for key in (
            "crossover_batch", "crossover_extrapolated", "faster_above", "faster_below")})
        return result
    return _crossing(result, pair)


def _busy_ms(result):
    """The device's busy ms per step from the run's trace, at most its mean
    step, or `None`."""
    trace = device_side.device_trace(result)
    step_ms = result["step_ms"]["mean"]
    if trace is None or trace["busy_ms"] is None or not step_ms:
        return None
    return min(trace["busy_ms"], step_ms)


def _fixed_ms(result, fits):
    """(fixed cost of a step, how it is known): from the batch-size fit of
    its device, else from its trace (the mean step less the device's busy
    time), else `(None, None)`."""
    fit = (fits or {}).get("devices", {}).get(result["device"])
    if fit is not None:
        return fit["fixed_ms"], "batch_sizes"
    busy_ms = _busy_ms(result)
    if busy_ms is not None:
        return result["step_ms"]["mean"] - busy_ms, "trace"
    return None, None


def parts(run, base, fits):
    """The numbers behind the explanation, each for the run and its baseline."""
    parts = {}
    run_fixed_ms, run_source = _fixed_ms(run, fits)
    base_fixed_ms, base_source = _fixed_ms(base, fits)
    parts["fixed_ms"] = {
        "run": run_fixed_ms, "baseline": base_fixed_ms,
        "source": {"run": run_source, "baseline": base_source},
    }
    parts["device_busy_ms"] = {"run": _busy_ms(run), "baseline": _busy_ms(base)}
    parts["input_bytes_per_step"] = {
        "run": run["placement"]["input_bytes_per_step"],
        "baseline": base["placement"]["input_bytes_per_step"],
    }
    parts["warmup_ms"] = {"run": run["warmup_ms"], "baseline": base["warmup_ms"]}
    parts["starved_data_wait_ms"] = {
        "run": run["starved_data_wait_ms"],
        "baseline": base["starved_data_wait_ms"],
    }
    return parts
