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
from tb_devicecost.analysis import verdicts
from tb_devicecost.formatting import MISSING
from tb_devicecost.formatting import fmt_count
from tb_devicecost.formatting import fmt_ms
from tb_devicecost.formatting import fmt_speedup

# Speedups within this distance of 1 read "as fast as".
SAME_SPEED = 0.05
# Components that differ by less than both of these are "the same".
SAME_COMPONENT_MS = 0.05
SAME_COMPONENT_RATIO = 0.10
# A run's warm-up is mentioned when it is this many times the baseline's
# and longer by at least WARMUP_NOTE_MS.
WARMUP_NOTE_RATIO = 2.0
WARMUP_NOTE_MS = 100.0

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


def _model_key(run_name):
    """(role, name with its device words replaced), or `None` without one."""
    prefix, role = record.role(run_name)
    key = _DEVICE_WORD.sub("<device>", prefix.lower())
    return (role, key) if key != prefix.lower() else None


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
