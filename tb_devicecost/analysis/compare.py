"""Runs compared with a baseline: speedups, differences, and why, in words.

Like is compared with like: a training run with a training run, a
validation run with a validation run, an evaluation with an evaluation
(`record.role`); never a run with itself. By default each run is compared
with the same model trained on the CPU: the CPU run whose name differs from
its own only in device words (`cpu/train` for `gpu/train`). Speedups and
differences are of mean steady-state steps: throughput is what a mean
gives. `docs/VERDICTS.md` ("Comparing runs") documents the rules.
"""

import re

from tb_devicecost import vocabulary
from tb_devicecost.analysis import record
from tb_devicecost.analysis import sweeps
from tb_devicecost.analysis import verdicts
from tb_devicecost.formatting import MISSING
from tb_devicecost.formatting import fmt_count
from tb_devicecost.formatting import fmt_ms
from tb_devicecost.formatting import fmt_speedup

# Speedups within this distance of 1 read "as fast as".
SAME_SPEED = 0.05
# Components that differ by less than either of these are not explained as
# a difference: under 50 µs (xprof's bar for a fetch that is no bottleneck,
# MIN_READY_FETCH_MS) or within 10% of each other. Their words still quote
# both figures unless they print the same (`_alike`).
SAME_COMPONENT_MS = 0.05
SAME_COMPONENT_RATIO = 0.10
# A run's warm-up is mentioned when it is this many times the baseline's
# and longer by at least WARMUP_NOTE_MS.
WARMUP_NOTE_RATIO = 2.0
WARMUP_NOTE_MS = 100.0
# A device's step reads "about X ms whatever the batch" when, at the largest
# batch measured, its per-sample part is under this share of its fixed cost.
FLAT_STEP_SHARE = 0.25

_LABELS = {
    "data_wait": "data wait",
    "compute": "compute",
    "host_overhead": "host overhead",
}
# A device named in a run name: `cpu`, `gpu0`, `GPU:1`, `tpu_2`... Two runs
# whose names differ only in such words are the same model on two devices.
_DEVICE_WORD = re.compile(
    r"(?<![a-z0-9])(cpu|gpu|tpu|cuda|mps|xpu)(?:[:_]?\d+)?(?![a-z])", re.IGNORECASE
)
# A batch size named in a run name: `b32`, `bs64`, `batch_128`... Runs whose
# names differ only in device and batch words are the same model at other
# batch sizes, when each name's number is its run's batch size.
_BATCH_WORD = re.compile(
    r"(?<![a-z0-9])(?:b|bs|batch|batch_size|batchsize)[_-]?(\d{1,9})(?![0-9])",
    re.IGNORECASE,
)


def _model_key(run_name):
    """(role, name with its device words replaced), or `None` without one."""
    prefix, role = record.role(run_name)
    key = _DEVICE_WORD.sub("<device>", prefix.lower())
    return (role, key) if key != prefix.lower() else None


def same_model(run_name, base_name):
    """Whether two runs are the same model: their names differ only in
    device and batch-size words (`mlp/b32-gpu0/train`, `mlp/b1024-cpu0/train`)
    and they have the same role. Anything else compares two models (or two
    set-ups of one), not two devices."""
    def key(name):
        prefix, role = record.role(name)
        prefix = _DEVICE_WORD.sub("<device>", prefix.lower())
        return role, _BATCH_WORD.sub("<batch>", prefix)

    return run_name == base_name or key(run_name) == key(base_name)


def _on_cpu(result):
    """Whether a run trained on the CPU (by its device, else by its name)."""
    device = result.get("device")
    if isinstance(device, str):
        return not record.is_accelerator(device)
    words = [m.group(1).lower() for m in _DEVICE_WORD.finditer(record.role(result["run"])[0])]
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
        base_prefix, base_role = record.role(baseline)
        siblings = []
        for name in names:
            prefix, role = record.role(name)
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
        train = {base for name, base in pairs if record.role(base)[1] == "train"}
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
            on the CPU (see `default_baseline`); runs without one are left
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
    pairs, chosen, reason = _plan(results, baseline)
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


def _means(result):
    """Each component's mean per step (ms)."""
    return {
        name: result[vocabulary.component_column(name)]["mean"]
        for name in vocabulary.COMPONENTS
    }


def _per_sample(result, name):
    mean = result[vocabulary.component_column(name)]["mean"]
    samples = result["samples_per_step"]
    if mean is None or not samples:
        return None
    return mean / samples * 1000.0


def _compare(run, base, context=(), found=None):
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
    per_step, base_per_step = _means(run), _means(base)
    per_1000 = {name: _per_sample(run, name) for name in vocabulary.COMPONENTS}
    base_per_1000 = {name: _per_sample(base, name) for name in vocabulary.COMPONENTS}
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
    row["same_model"] = same_model(run["run"], base["run"])
    row["scaling"] = None if same_run else scaling(run, base, context, found)
    row["parts"] = None if same_run else _parts(run, base, row["scaling"])
    row["explanation"] = (
        "baseline" if same_run else _explain(run, base, row, per_step,
                                             base_per_step, per_1000,
                                             base_per_1000)
        + _why(run, base, row)
    )
    if not row["same_model"]:
        row["explanation"] += (
            f" Different models or set-ups: {run['run']} and {base['run']} differ "
            "in more than the device and batch size, so this ratio compares "
            "them, not two devices."
        )
    return row


def _deltas(values, base_values):
    return {
        name: (
            values[name] - base_values[name]
            if values[name] is not None and base_values[name] is not None
            else None
        )
        for name in vocabulary.COMPONENTS
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
            f"{fmt_count(row['samples_per_s'])} against "
            f"{fmt_count(base['samples_per_s'])} samples/s in steady state; batch "
            f"{run['batch_size'] or MISSING} against {base['batch_size'] or MISSING}, "
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
        head = f"{name} is as fast as {base_name} ({fmt_speedup(speedup)}; {detail})"
    else:
        head = f"{name} is {fmt_speedup(speedup)} as fast as {base_name} ({detail})"

    known = [
        c for c in vocabulary.COMPONENTS
        if values[c] is not None and base_values[c] is not None
    ]
    if not known:
        return head + "."
    slower = speedup < 1.0
    ranked = sorted(known, key=lambda c: abs(values[c] - base_values[c]), reverse=True)
    different = [c for c in ranked if not _same(values[c], base_values[c])]
    same = [c for c in vocabulary.COMPONENTS if c in known and c not in different]
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
    clauses.extend(_alike(same, values, base_values, unit))
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


def _alike(components, values, base_values, unit):
    """The clauses for components too close to explain, worded so that
    they never contradict the figures the table prints beside them: "the
    same" only where both print alike."""
    equal = [c for c in components if fmt_ms(values[c]) == fmt_ms(base_values[c])]
    clauses = []
    if equal:
        names = [_LABELS[c] for c in equal]
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        clauses.append(f"the {joined} {'is' if len(names) == 1 else 'are'} the same")
    for component in components:
        if component in equal:
            continue
        value, base_value = values[component], base_values[component]
        figures = f"{fmt_ms(value)} ms against {fmt_ms(base_value)} ms {unit}"
        if abs(value - base_value) < SAME_COMPONENT_RATIO * max(abs(value), abs(base_value)):
            clauses.append(f"the {_LABELS[component]} is about the same ({figures})")
        else:
            clauses.append(
                f"the {_LABELS[component]} differs by under {fmt_ms(SAME_COMPONENT_MS)} ms "
                f"({figures})"
            )
    return clauses


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
            record.is_accelerator(run["device"]),
            record.is_accelerator(base["device"]),
        )
        small = run["batch_size"] is not None and run["batch_size"] <= verdicts.SMALL_BATCH_SIZE
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


# Why, in the runs' numbers: the fixed cost of a step and its cost per sample
# on each device (from the same model's runs at other batch sizes), the
# device's busy time (from a trace), the batch's copy to the device, warm-up
# and input wait.


def _scaling_key(result):
    """(role, backend, name with its batch and device words replaced), or
    `None` unless the name holds one batch word whose number is the run's
    batch size."""
    prefix, role = record.role(result["run"])
    words = list(_BATCH_WORD.finditer(prefix))
    batch = result.get("batch_size")
    if not batch or len(words) != 1 or int(words[0].group(1)) != batch:
        return None
    name = _DEVICE_WORD.sub("<device>", _BATCH_WORD.sub("<batch>", prefix).lower())
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
        step = other["step_ms"]["mean"]
        if _scaling_key(other) != key or not step or not other["device"]:
            continue
        points.setdefault(other["device"], []).append(
            {"run": other["run"], "batch_size": other["batch_size"], "step_ms": step}
        )
    fits = {}
    for device, device_points in points.items():
        fixed, per_sample = sweeps.fit_step_time(
            [(point["batch_size"], point["step_ms"]) for point in device_points]
        )
        if fixed is not None:
            fits[device] = {
                "fixed_ms": fixed,
                "per_sample_us": per_sample * 1e3,
                "points": sorted(device_points, key=lambda p: (p["batch_size"], p["run"])),
            }
    return fits


def scaling(run, base, context, found=None):
    """How the two runs' devices scale with the batch, or `None`.

    Each device's step time as a fixed cost plus a cost per sample. When a
    batch-size sweep of the same model (`predictions.model_signature`: the
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
    per_sample_gap = (a["per_sample_us"] - b["per_sample_us"]) / 1e3
    batch = (b["fixed_ms"] - a["fixed_ms"]) / per_sample_gap if per_sample_gap else None
    batches = [p["batch_size"] for fit in (a, b) for p in fit["points"]]
    # As the sweep's: a per-sample gap near zero puts the crossing beyond any
    # batch size (and `round` of an infinity would raise).
    if batch is not None and 0 < batch < record.MAX_VALUE:
        above, below = (first, second) if per_sample_gap < 0 else (second, first)
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
    """The run object's model: what `predictions.model_signature` read from
    its run info (`report.analyze_run`), or `None` when unknown."""
    if not result.get("parameters"):
        return None
    return result.get("backend"), result["parameters"], result.get("dtype_policy")


def _model_sweep(run, base, context, found):
    """The first sweep (by name) of the model both runs trained, in their
    role, that fitted both their devices; `None` when there is none or the
    model is not known (no parameter count recorded)."""
    signature = _signature(run)
    role = record.role(run["run"])[1]
    if (
        signature is None
        or _signature(base) != signature
        or record.role(base["run"])[1] != role
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
                and record.role(member["run"])[1] == role
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
    trace = verdicts.device_trace(result)
    step = result["step_ms"]["mean"]
    if trace is None or trace["busy_ms"] is None or not step:
        return None
    return min(trace["busy_ms"], step)


def _fixed_ms(result, fits):
    """(fixed cost of a step, how it is known): from the batch-size fit of
    its device, else from its trace (the mean step less the device's busy
    time), else `(None, None)`."""
    fit = (fits or {}).get("devices", {}).get(result["device"])
    if fit is not None:
        return fit["fixed_ms"], "batch_sizes"
    busy = _busy_ms(result)
    if busy is not None:
        return result["step_ms"]["mean"] - busy, "trace"
    return None, None


def _parts(run, base, fits):
    """The numbers behind the explanation, each for the run and its baseline."""
    parts = {}
    run_fixed, run_source = _fixed_ms(run, fits)
    base_fixed, base_source = _fixed_ms(base, fits)
    parts["fixed_ms"] = {
        "run": run_fixed, "baseline": base_fixed,
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


def _batches_text(points):
    batches = sorted({point["batch_size"] for point in points})
    if len(batches) == 2:
        return f"{fmt_count(batches[0])} and {fmt_count(batches[1])}"
    return (
        f"{len(batches)} batch sizes from {fmt_count(batches[0])} to "
        f"{fmt_count(batches[-1])}"
    )


def _fit_text(device, fit):
    """`GPU:0's step is about 0.655 ms whatever the batch (...)`."""
    top = max(point["batch_size"] for point in fit["points"])
    fixed, per_sample = fit["fixed_ms"], fit["per_sample_us"]
    if per_sample / 1e3 * top < FLAT_STEP_SHARE * fixed:
        text = f"{device}'s step is about {fmt_ms(fixed)} ms whatever the batch"
        if fmt_ms(per_sample) != fmt_ms(0.0):
            text += f" (plus {fmt_ms(per_sample)} µs per sample)"
        return text
    return (
        f"{device}'s step grows {fmt_ms(per_sample)} µs per sample from a fixed "
        f"{fmt_ms(fixed)} ms"
    )


def _why(run, base, row):
    """Sentences on why the two differ, from the row's `scaling` and
    `parts` (each leading space included), or `""`."""
    text = ""
    fits = row["scaling"]
    if fits is not None:
        devices = [d for d in (run["device"], base["device"]) if d in fits["devices"]]
        runs = "; ".join(
            f"{_batches_text(fits['devices'][d]['points'])} on {d}" for d in devices
        )
        clauses = [_fit_text(d, fits["devices"][d]) for d in devices]
        speedup = row["speedup"]
        if row["same_batch_size"] and speedup and run["batch_size"]:
            if abs(speedup - 1.0) < SAME_SPEED:
                clauses.append(
                    f"at this batch of {fmt_count(run['batch_size'])} both are as fast"
                )
            else:
                faster, slower = (run, base) if speedup > 1 else (base, run)
                times = speedup if speedup > 1 else 1.0 / speedup
                clauses.append(
                    f"at this batch of {fmt_count(run['batch_size'])} "
                    f"{faster['device']} is {fmt_speedup(times)} as fast as "
                    f"{slower['device']}"
                )
        if fits["crossover_batch"] is not None:
            clause = (
                f"{fits['faster_above']} wins above about "
                f"{fmt_count(fits['crossover_batch'])} samples per step"
            )
            if fits["crossover_extrapolated"]:
                clause += " (beyond the batch sizes measured, so an extrapolation)"
            clauses.append(clause)
        elif fits["faster_above"] is not None:
            clauses.append(f"{fits['faster_above']} is faster at every batch size, by the fit")
        # Which runs the fits come from: the model's sweep when it has one,
        # so the crossover is the one the sweep's own panel gives.
        source = (
            f'the sweep "{fits["sweep"]}" of this model, its runs at'
            if fits.get("sweep") is not None else "this model's runs at"
        )
        text += (
            f" Across batch sizes ({source} {runs}, mean steps): "
            + "; ".join(clauses) + "."
        )
    parts = row["parts"]
    for side in (run, base):
        busy = parts["device_busy_ms"]["run" if side is run else "baseline"]
        if busy is None:
            continue
        step = side["step_ms"]["mean"]
        text += (
            f" Its trace shows {side['device']} busy {fmt_ms(busy)} ms of each step"
            if side is run
            else f" {base['run']}'s trace shows {side['device']} busy {fmt_ms(busy)} ms of each step"
        )
        text += f": the other {fmt_ms(step - busy)} ms of its {fmt_ms(step)} ms mean step is fixed cost."
    text += _transfer_text(run, base)
    return text


def _transfer_text(run, base):
    """` Each step copies its 12,928-byte batch from the host to GPU:0 ...`
    when one of the two ran on an accelerator and the other did not."""
    accelerated = [side for side in (run, base) if record.is_accelerator(side["device"])]
    if len(accelerated) != 1:
        return ""
    side = accelerated[0]
    other = base if side is run else run
    size = side["placement"]["input_bytes_per_step"]
    if not size:
        return ""
    text = (
        f" Each step {'of ' + base['run'] + ' ' if side is base else ''}copies its "
        f"{fmt_count(size)}-byte batch from the host to {side['device']}"
    )
    trace = verdicts.device_trace(side)
    if trace is not None and trace["h2d_ms"] is not None:
        text += f" ({fmt_ms(trace['h2d_ms'])} ms of copying in its trace)"
    return text + f"; {other['device'] or 'the other device'} reads it in place."
