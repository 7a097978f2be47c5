"""The words of a comparison: why a run is faster or slower than its baseline.

`compare.py` computes each row's numbers (speedups, per-component
differences, `scaling` and `parts`); this module writes the row's
`explanation` from them: the differences per component, largest first,
with a reason where one is known (`explain`), then why, in the runs' own
numbers (`why`): each device's fixed cost and cost per sample, the
crossover, the device's busy time, the batch's copy to the device.
`docs/VERDICTS.md` ("Comparing runs") documents the rules.
"""

from tb_devicecost.analysis import compare
from tb_devicecost.analysis import device_side
from tb_devicecost.analysis import names
from tb_devicecost.analysis.formatting import MISSING
from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_rate
from tb_devicecost.analysis.formatting import fmt_speedup
from tb_devicecost.format import vocabulary

_LABELS = {
    "data_wait": "data wait",
    "compute": "compute",
    "host_overhead": "host overhead",
}


def explain(run, base, row, per_step, base_per_step, per_1000, base_per_1000, judged):
    """The explanation's first sentences: how fast `run` is against `base`
    and which parts of the step differ (per step, or per 1000 samples when
    the row's `basis` is samples/s), largest first, with a reason, as
    `compare.judged` decided them."""
    name, base_name = run["run"], base["run"]
    speedup = row["speedup"]
    if row["basis"] == "samples_per_s":
        unit, values, base_values = "per 1000 samples", per_1000, base_per_1000
        detail = (
            f"{fmt_rate(row['samples_per_s'])} against "
            f"{fmt_rate(base['samples_per_s'])} samples/s in steady state; batch "
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
    if judged["same_speed"]:
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
    different = [c for c in ranked if judged["components"][c] == "different"]
    same = [c for c in vocabulary.COMPONENTS if c in known and c not in different]
    clauses = []
    batch_note = ""
    if row["basis"] == "step_time" and run["batch_size"]:
        batch_note = f" at batch {run['batch_size']}"
    for index, component in enumerate(different):
        value_ms, base_value_ms = values[component], base_values[component]
        clause = (
            f"its mean {_LABELS[component]} {unit} is "
            f"{fmt_ms(value_ms)} ms against {fmt_ms(base_value_ms)} ms"
        )
        if index == 0:
            clause += batch_note + _reason(component, run, base, value_ms > base_value_ms,
                                           judged["small_batch"])
        clauses.append(clause)
    if not different:
        clauses.append("no part of the step differs much")
    clauses.extend(_alike(same, values, base_values, unit, judged))
    text = head + ": " + "; ".join(clauses) + "."
    warmup_ms, base_warmup_ms = run["warmup_ms"], base["warmup_ms"]
    if judged["warmup_note"]:
        text += (
            f" Its warm-up took {fmt_ms(warmup_ms)} ms in total against "
            f"{fmt_ms(base_warmup_ms)} ms, "
            "left out of this ratio."
        )
    if slower and run["verdict"] and run["verdict"] != base["verdict"]:
        text += f" {name} is {run['verdict']}; {base_name} is {base['verdict']}."
    return text


def _alike(components, values, base_values, unit, judged):
    """The clauses for components too close to explain, worded so that
    they never contradict the figures the table prints beside them: "the
    same" only where both print alike."""
    equal = [c for c in components if fmt_ms(values[c]) == fmt_ms(base_values[c])]
    clauses = []
    if equal:
        labels = [_LABELS[c] for c in equal]
        joined = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
        clauses.append(f"the {joined} {'is' if len(labels) == 1 else 'are'} the same")
    for component in components:
        if component in equal:
            continue
        value_ms, base_value_ms = values[component], base_values[component]
        figures = f"{fmt_ms(value_ms)} ms against {fmt_ms(base_value_ms)} ms {unit}"
        if judged["components"][component] == "about_same":
            clauses.append(f"the {_LABELS[component]} is about the same ({figures})")
        else:
            clauses.append(
                f"the {_LABELS[component]} differs by under {fmt_ms(judged['close_ms'])} ms "
                f"({figures})"
            )
    return clauses


def _reason(component, run, base, higher, small_batch):
    """Why one component differs, in words (leading separator included)."""
    if component == "data_wait":
        if higher and run["steady_verdict"] == "input_bound":
            return ", because its input pipeline cannot keep up (input_bound)"
        if not higher and base["steady_verdict"] == "input_bound":
            return f", because {base['run']}'s input pipeline cannot keep up"
        return ""
    if component == "compute":
        accelerator, base_accelerator = (
            names.is_accelerator(run["device"]),
            names.is_accelerator(base["device"]),
        )
        if higher and accelerator and not base_accelerator:
            return (
                ", a fixed per-step cost (kernel launches, host-device "
                "synchronisation)"
                + (" that so small a batch cannot amortise" if small_batch else "")
            )
        if not higher and accelerator and not base_accelerator:
            return f", {run['device']} computes faster"
        if run["device"] != base["device"] and run["device"] and base["device"]:
            return f" ({run['device']} against {base['device']})"
        return ""
    if higher:
        return ": more time in the Keras loop, callbacks and logging"
    return ""


def _batches_text(points):
    batches = sorted({point["batch_size"] for point in points})
    if len(batches) == 2:
        return f"{fmt_count(batches[0])} and {fmt_count(batches[1])}"
    return (
        f"{len(batches)} batch sizes from {fmt_count(batches[0])} to "
        f"{fmt_count(batches[-1])}"
    )


def _fit_text(device, fit, flat):
    """`GPU:0's step is about 0.655 ms whatever the batch (...)`."""
    fixed_ms, per_sample_us = fit["fixed_ms"], fit["per_sample_us"]
    if flat:
        text = f"{device}'s step is about {fmt_ms(fixed_ms)} ms whatever the batch"
        if fmt_ms(per_sample_us) != fmt_ms(0.0):
            text += f" (plus {fmt_ms(per_sample_us)} µs per sample)"
        return text
    return (
        f"{device}'s step grows {fmt_ms(per_sample_us)} µs per sample from a fixed "
        f"{fmt_ms(fixed_ms)} ms"
    )


def why(run, base, row, judged):
    """Sentences on why the two differ, from the row's `scaling` and
    `parts` (each leading space included), or `""`."""
    text = ""
    fits = row["scaling"]
    if fits is not None:
        devices = [d for d in (run["device"], base["device"]) if d in fits["devices"]]
        runs = "; ".join(
            f"{_batches_text(fits['devices'][d]['points'])} on {d}" for d in devices
        )
        clauses = [_fit_text(d, fits["devices"][d], judged["flat"][d]) for d in devices]
        speedup = row["speedup"]
        if row["same_batch_size"] and speedup and run["batch_size"]:
            if judged["same_speed"]:
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
        busy_ms = parts["device_busy_ms"]["run" if side is run else "baseline"]
        if busy_ms is None:
            continue
        step_ms = side["step_ms"]["mean"]
        text += (
            f" Its trace shows {side['device']} busy {fmt_ms(busy_ms)} ms of each step"
            if side is run
            else f" {base['run']}'s trace shows {side['device']} busy {fmt_ms(busy_ms)} ms "
            "of each step"
        )
        text += (
            f": the other {fmt_ms(step_ms - busy_ms)} ms of its {fmt_ms(step_ms)} ms "
            "mean step is fixed cost."
        )
    text += _transfer_text(run, base)
    return text


def _transfer_text(run, base):
    """` Each step copies its 12,928-byte batch from the host to GPU:0 ...`
    when one of the two ran on an accelerator and the other did not."""
    accelerated = [side for side in (run, base) if names.is_accelerator(side["device"])]
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
    trace = device_side.device_trace(side)
    if trace is not None and trace["h2d_ms"] is not None:
        text += f" ({fmt_ms(trace['h2d_ms'])} ms of copying in its trace)"
    return text + f"; {other['device'] or 'the other device'} reads it in place."


def comparison(run, base, row, judged):
    """A compared row's `explanation` (`compare.compare_runs`): its
    differences (`explain`), why (`why`), and whether the runs are two
    set-ups of one model at all."""
    per_step, base_per_step = compare.component_means(run), compare.component_means(base)
    per_1000 = {name: compare.per_1000_samples(run, name) for name in vocabulary.COMPONENTS}
    base_per_1000 = {name: compare.per_1000_samples(base, name)
                     for name in vocabulary.COMPONENTS}
    text = (explain(run, base, row, per_step, base_per_step, per_1000, base_per_1000, judged)
            + why(run, base, row, judged))
    if not row["same_model"]:
        text += (
            f" Different models or set-ups: {run['run']} and {base['run']} differ "
            "in more than the device and batch size, so this ratio compares "
            "them, not two devices."
        )
    return text


# The sentence of each `reasons.Reason` code this module says.
SAYS = {"comparison": comparison}
