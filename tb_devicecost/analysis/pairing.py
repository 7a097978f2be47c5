"""Which run is compared with which: like with like, the CPU counterpart.

Like is compared with like: a training run with a training run, a
validation run with a validation run, an evaluation with an evaluation
(`names.role`); never a run with itself. By default each run is compared
with the same model trained on the CPU: the CPU run whose name differs from
its own only in device words (`cpu/train` for `gpu/train`). `compare.py`
compares the pairs `plan` makes; `docs/VERDICTS.md` ("Comparing runs")
documents the rules.
"""

import re

from tb_devicecost.analysis import names
from tb_devicecost.analysis.reasons import reason

# A device named in a run name: `cpu`, `gpu0`, `GPU:1`, `tpu_2`... Two runs
# whose names differ only in such words are the same model on two devices.
DEVICE_WORD = re.compile(
    r"(?<![a-z0-9])(cpu|gpu|tpu|cuda|mps|xpu)(?:[:_]?\d+)?(?![a-z])", re.IGNORECASE
)
# A batch size named in a run name: `b32`, `bs64`, `batch_128`... Runs whose
# names differ only in device and batch words are the same model at other
# batch sizes, when each name's number is its run's batch size.
BATCH_WORD = re.compile(
    r"(?<![a-z0-9])(?:b|bs|batch|batch_size|batchsize)[_-]?(\d{1,9})(?![0-9])",
    re.IGNORECASE,
)


def _model_key(run_name):
    """(role, name with its device words replaced), or `None` without one."""
    prefix, role = names.role(run_name)
    key = DEVICE_WORD.sub("<device>", prefix.lower())
    return (role, key) if key != prefix.lower() else None


def same_model(run_name, base_name):
    """Whether two runs are the same model: their names differ only in
    device and batch-size words (`mlp/b32-gpu0/train`, `mlp/b1024-cpu0/train`)
    and they have the same role. Anything else compares two models (or two
    set-ups of one), not two devices."""
    def key(name):
        prefix, role = names.role(name)
        prefix = DEVICE_WORD.sub("<device>", prefix.lower())
        return role, BATCH_WORD.sub("<batch>", prefix)

    return run_name == base_name or key(run_name) == key(base_name)


def _on_cpu(result):
    """Whether a run trained on the CPU (by its device, else by its name)."""
    device = result.get("device")
    if isinstance(device, str):
        return not names.is_accelerator(device)
    words = [m.group(1).lower() for m in DEVICE_WORD.finditer(names.role(result["run"])[0])]
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


def plan(results, baseline):
    """(pairs of run and the run it is compared with, baseline, reason).

    Pairs hold run names, in the order of `results`; a run paired with
    itself is a baseline (of its role). Nothing is compared across roles,
    and no group holds only its baseline.
    """
    run_names = [result["run"] for result in results]
    chosen_by_name = baseline is not None
    against = {}
    left_out = []
    if baseline is not None:
        base_prefix, base_role = names.role(baseline)
        siblings = []
        for name in run_names:
            prefix, role = names.role(name)
            sibling = f"{base_prefix}/{role}" if role and base_role else None
            if role == base_role:
                against[name] = baseline
            elif sibling in run_names:
                against[name] = sibling
                if sibling not in siblings:
                    siblings.append(sibling)
            else:
                left_out.append(name)
        figures = {"chosen": baseline, "siblings": tuple(siblings)}
    else:
        pairs = []
        for result in results:
            counterpart = _cpu_counterpart(result, results)
            if counterpart is not None:
                against[result["run"]] = counterpart
                against.setdefault(counterpart, counterpart)
                pairs.append((result["run"], counterpart))
        figures = {"pairs": tuple(pairs[:3]), "more": len(pairs) > 3}
    compared = {base for name, base in against.items() if name != base}
    pairs = [(name, against[name]) for name in run_names if against.get(name) in compared]
    if not compared:
        return [], None, None
    dropped = [name for name in run_names if name in against and against[name] not in compared]
    left_out = sorted(set(left_out + dropped) - compared)
    if baseline is None:
        train = {base for name, base in pairs if names.role(base)[1] == "train"}
        every = {base for name, base in pairs}
        baseline = next(
            (min(group) for group in (train, every) if len(group) == 1), None
        )
    if not chosen_by_name:
        left_out = [name for name in run_names if name not in against]
    code = "baseline_named" if chosen_by_name else "baseline_cpu_counterparts"
    return pairs, baseline, reason(code, left_out=tuple(left_out[:5]),
                                   more_left_out=len(left_out) > 5, **figures)


def default_baseline(results):
    """The baseline `compare_runs` picks when none is named, or `None`.

    The same model trained on the CPU: a CPU run of the same role whose
    name differs from another run's only in the device (`cpu/train` for
    `gpu/train`). With several models, each is compared with its own, and
    this returns the one training baseline when there is exactly one.
    """
    results = [result for result in results if result is not None]
    return plan(results, None)[1]
