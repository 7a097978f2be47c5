"""Predictions checked: what a finding's fix was expected to buy, beside
what the same model with the fix applied achieved.

A finding's `expected` estimates the gain of its fix from the run's own
numbers (`verdicts`). Where the log directory also holds a fixed
counterpart of the run, the same model with that fix applied, the gain is
measured: the counterpart's samples/s over the run's. `check_predictions`
pairs the runs and sets the two gains side by side.

The pairing rule (docs/READING.md, docs/FORMAT.md "Runs checked against
each other"): two runs are of the same model when they have the same role
(`train`, ...), backend, parameter count and dtype policy (the run info's
`keras_model_info`). Of those,

- **a faster input pipeline**: runs in the same directory (`naive-gpu0` and
  `tf_ops-gpu0` under `input_pipeline/`) on the same device at the same
  batch size, where the run has an input finding (`input_bound`,
  `input_stalls`) with an estimate and the counterpart is the run's
  pipeline with a fix applied, by its recorded settings (`workers=4`
  against one, `use_multiprocessing`, a parallel map), whether it was
  faster or slower, so regressions show; where the settings cannot tell
  (arrays against a `PyDataset`, settings not recorded) the counterpart's
  mean wait above a ready batch is at most `FASTER_INPUT_WAIT` of the
  run's. Runs with identical settings are never a fix, and repeats of one
  set-up give one pair per two set-ups;
- **a larger batch**: runs whose names differ only in batch-size words
  (`pairing.same_model`: `batch10-gpu0`, `batch1024-gpu0`), on the same
  device, where the run has a finding that estimates a larger batch
  (`latency_bound`, `small_batch`); the counterpart is the larger batch
  nearest the one the finding chose;
- **the other device**: runs whose names differ only in device words, at
  the same batch size, predicted by a batch-size sweep of the same model in
  the log directory (each device's step as a fixed cost plus a cost per
  sample, `sweeps`): from the device the sweep says is slower at that batch
  to the faster one. The sweep's own runs are not checked against it.

Pure functions over the report's run objects and the runs' info documents;
everything returned is JSON-ready data.
"""

import math

from tb_devicecost.analysis import names
from tb_devicecost.analysis import pairing
from tb_devicecost.analysis.reasons import reason

# A counterpart is a faster input pipeline when its mean wait above a ready
# batch is at most this share of the run's: a quarter of the waiting gone.
# (Two fits of one pipeline differ by a few percent, so longer and shorter
# fits of one pipeline are never taken for a fix.)
FASTER_INPUT_WAIT = 0.75
# The findings whose fix is a faster input pipeline, and those whose fix is
# a larger batch, in the order they are looked for.
INPUT_FINDINGS = ("input_bound", "input_stalls")
BATCH_FINDINGS = ("latency_bound", "small_batch")
CHANGES = ("input_pipeline", "batch_size", "device")
def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _directory(run_name):
    """`("input_pipeline", "naive-gpu0", "train")` for
    `input_pipeline/naive-gpu0/train`."""
    prefix, role = names.role(run_name)
    directory, _, leaf = prefix.rpartition("/")
    return directory, leaf, role


def _finding(run, ids, of="samples_per_s", estimated=True):
    """The run's first finding among `ids` (in that order) whose `expected`
    estimates a gain in `of` (any, where not `estimated`), or `None`."""
    for finding_id in ids:
        for finding in run.get("findings") or ():
            expected = finding.get("expected") or {}
            if finding.get("id") == finding_id and (not estimated or (
                    _number(expected.get("speedup")) is not None
                    and expected.get("of") == of)):
                return finding
    return None


def _rate(run):
    return _number(run.get("samples_per_s"))


def check_predictions(runs, run_data=(), sweeps=()):
    """Each run with a fixed counterpart: the gain predicted and achieved.

    Args:
        runs: Run objects of `report.analyze_run`.
        run_data: The runs' `RunData`s (`record.read_run`): their `model`
            says which model each run trained.
        sweeps: The report's sweeps (`sweeps.find_sweeps`), which predict
            what the other device buys.

    Returns:
        A list of pair objects (docs/CLI.md, "Predictions"), in the order
        of `CHANGES`, then by run and counterpart name: `run` (before the
        fix), `counterpart` (the fix applied), `change`, `predicted_by` (a
        finding id, or `"sweep"`), `sweep`, `predicted` (the estimate as
        stated: `speedup`, `bound`, `text`, `batch_size`),
        `predicted_speedup` (at the counterpart's batch size; `None` where
        no honest figure exists), `unpredicted` (why, then),
        `achieved_speedup` (the counterpart's samples/s over the run's),
        `achieved_over_predicted`, `within_bound` (for an `at_most` or
        `at_least` estimate, else `None`), `extrapolated`,
        `samples_per_s`, `batch_size` and `device` (`{"run",
        "counterpart"}` each), `basis` and `text`.
    """
    # Runs of `try_fixes` are checked against their baseline in "Fixes
    # tried", interleaved and with the noise; never paired here.
    signatures = {run.run: run.model for run in run_data
                  if getattr(run, "tried", None) is None}
    usable = [
        run for run in runs
        if signatures.get(run["run"]) is not None and _rate(run) is not None
    ]
    in_sweeps = {name for sweep in sweeps or () for name in sweep.get("runs") or ()}
    pairs = []
    for run in usable:
        pairs.extend(_input_pairs(run, usable, signatures))
        pairs.extend(_batch_pairs(run, usable, signatures, sweeps or (), in_sweeps))
    pairs.extend(_device_pairs(
        [run for run in usable if run["run"] not in in_sweeps], signatures, sweeps or (),
    ))
    pairs.sort(key=lambda pair: (CHANGES.index(pair["change"]), pair["run"], pair["counterpart"]))
    return pairs


def _same_model(run, other, signatures):
    return (
        run["run"] != other["run"]
        and signatures[run["run"]] == signatures[other["run"]]
        and names.role(run["run"])[1] == names.role(other["run"])[1]
    )


def _input_pairs(run, runs, signatures):
    """The run against each input pipeline of the same set-up that is the
    run's with a fix applied: judged by which run is the change (its
    recorded settings), never by which is faster, so a fix that made
    things worse is listed too; where the settings cannot tell (other
    kinds, settings not recorded), a counterpart that waits at most
    `FASTER_INPUT_WAIT` as long. Runs with identical settings are repeats:
    one pair per two set-ups, from the first of each by name."""
    finding = _finding(run, INPUT_FINDINGS, estimated=False)
    starved_ms = _number(run.get("starved_data_wait_ms"))
    if finding is None or starved_ms is None or not run.get("device"):
        return []
    directory, _, _ = _directory(run["run"])
    if _repeat_of_earlier(run, runs, directory):
        return []
    pairs = []
    for other in runs:
        other_starved_ms = other.get("starved_data_wait_ms")
        if (
            not _same_model(run, other, signatures)
            or _directory(other["run"])[0] != directory
            or other.get("device") != run["device"]
            or other.get("batch_size") != run.get("batch_size")
            or not isinstance(other_starved_ms, (int, float))
            or not _other_pipeline(run, other)
            or _repeat_of_earlier(other, runs, directory)
        ):
            continue
        direction = _is_change(run.get("input_pipeline"), other.get("input_pipeline"))
        if direction is False or (
                direction is None and other_starved_ms > FASTER_INPUT_WAIT * starved_ms):
            continue
        predicted, unpredicted = _input_prediction(run, other, finding)
        pairs.append(_pair(
            run, other, "input_pipeline", finding["id"], finding, predicted,
            reason("prediction_same_setup", finding=finding["id"]),
            unpredicted=unpredicted,
        ))
    return pairs


def _input_prediction(run, other, finding):
    """`(speedup or None, why none)`: what the input finding of `run`
    predicts for the pipeline of `other`, by what `other` changed.

    The estimate is the step without its wait: a pipeline that keeps ahead
    of the step. Worker threads and worker processes are not that pipeline
    (issue 34, on an H100: threads achieved 0.01-0.14 of the estimate,
    processes 0.63 of it), so they get no prediction, and say why."""
    expected = finding.get("expected") or {}
    speedup = _number(expected.get("speedup"))
    if speedup is None or expected.get("of") != "samples_per_s":
        return None, reason("prediction_no_estimate", finding=finding["id"],
                            basis=expected.get("basis"))
    change = _input_change(run.get("input_pipeline"), other.get("input_pipeline"))
    if change in ("threads", "processes"):
        return None, reason("workers_unpredicted", kind=change, estimate=expected.get("text"))
    return speedup, None


def _input_change(first, second):
    """`"threads"`, `"processes"` or `None`: the kind of workers pipeline
    `second` adds to pipeline `first`, where that is what changed."""
    if not isinstance(first, dict) or not isinstance(second, dict) \
            or first.get("kind") != second.get("kind"):
        return None
    kind = first.get("kind")
    if kind == "PyDataset":
        if second.get("use_multiprocessing") and not first.get("use_multiprocessing"):
            return "processes"
        if (second.get("workers") or 1) > (first.get("workers") or 1):
            return "processes" if second.get("use_multiprocessing") else "threads"
    if kind == "torch DataLoader" and (second.get("num_workers") or 0) > (
            first.get("num_workers") or 0):
        return "processes"
    return None


def _setup(run):
    return (run.get("device"), run.get("batch_size"), repr(run.get("input_pipeline")))


def _repeat_of_earlier(run, runs, directory):
    """Whether a run of the same set-up (device, batch, recorded pipeline)
    in the directory comes before it by name: a repeat, not another fix."""
    if not isinstance(run.get("input_pipeline"), dict):
        return False
    return any(
        other["run"] < run["run"] and _directory(other["run"])[0] == directory
        and names.role(other["run"])[1] == names.role(run["run"])[1]
        and _setup(other) == _setup(run)
        for other in runs
    )


# The settings a fix turns on or raises, per pipeline kind.
_MORE = {
    "PyDataset": ("workers", "use_multiprocessing"),
    "torch DataLoader": ("num_workers", "pin_memory", "persistent_workers"),
    "tf.data": ("parallel_map", "prefetch", "cache"),
}


def _is_change(first, second):
    """`True` when pipeline `second` is `first` with a fix applied (more
    workers, processes, a parallel map...), `False` when it is the reverse,
    `None` when the settings cannot tell (other kinds, unknown settings)."""
    if not isinstance(first, dict) or not isinstance(second, dict):
        return None
    kind = first.get("kind")
    if kind != second.get("kind") or kind not in _MORE:
        return None
    ups = downs = 0
    for key in _MORE[kind]:
        a, b = first.get(key), second.get(key)
        if a is None or b is None:
            continue
        a, b = float(a or 0), float(b or 0)
        ups += b > a
        downs += b < a
    if kind == "tf.data" and first.get("python_function") is not None \
            and second.get("python_function") is not None:
        ups += bool(first["python_function"]) and not second["python_function"]
        downs += not first["python_function"] and bool(second["python_function"])
    if ups and not downs:
        return True
    if downs and not ups:
        return False
    return None


def _other_pipeline(run, other):
    """Whether the two runs were fed differently: identical recorded
    settings are two fits of one pipeline, never a fix."""
    first, second = run.get("input_pipeline"), other.get("input_pipeline")
    if not isinstance(first, dict) or not isinstance(second, dict):
        return True  # Not recorded: the waits alone decide.
    return first != second


def _batch_pairs(run, runs, signatures, sweeps=(), in_sweeps=()):
    """The run against the same model at the larger batch nearest the one
    its finding chose (the largest, where it chose none). Predicted by a
    sweep of the model on the run's device where the log directory has
    one (its fitted step at both batches), else by the finding's own line,
    never beyond the batch the finding chose."""
    finding = _finding(run, BATCH_FINDINGS, estimated=False)
    batch = run.get("batch_size")
    if finding is None or not batch or not run.get("device") or run["run"] in in_sweeps:
        return []
    expected = finding.get("expected") or {}
    target = expected.get("batch_size")
    candidates = [
        other for other in runs
        if _same_model(run, other, signatures)
        and pairing.same_model(run["run"], other["run"])
        and other.get("device") == run["device"]
        and (other.get("batch_size") or 0) > batch
        and other["run"] not in in_sweeps
    ]
    if not candidates:
        return []
    other = min(
        candidates,
        key=lambda o: (abs(math.log(o["batch_size"] / (target or 1e12))), o["batch_size"], o["run"]),
    )
    size = other["batch_size"]
    sweep = _sweep_of(signatures[run["run"]], (run["device"],), sweeps, signatures)
    if sweep is not None:
        fit = sweep["devices"][run["device"]]

        def fitted_ms(samples):
            return fit["fixed_ms"] + fit["per_sample_us"] / 1e3 * samples

        if fitted_ms(batch) <= 0 or fitted_ms(size) <= 0:
            return []  # A fit that reaches no time at all predicts nothing.
        predicted = size / batch * fitted_ms(batch) / fitted_ms(size)
        measured = [point["batch_size"] for point in fit.get("points") or ()]
        extrapolated = bool(measured) and not all(
            min(measured) <= b <= max(measured) for b in (batch, size))
        basis = reason("sweep_batch_basis", sweep=sweep["name"], device=run["device"],
                       batch=batch, batch_ms=fitted_ms(batch), size=size,
                       size_ms=fitted_ms(size))
        stated = {"speedup": predicted, "bound": "about", "batch_size": size,
                  "text": reason("sweep_batch_text", speedup=predicted, size=size)}
        return [_pair(run, other, "batch_size", "sweep", stated, predicted, basis,
                      extrapolated=extrapolated, sweep=sweep["name"])]
    speedup = _number(expected.get("speedup"))
    if speedup is None or expected.get("of") != "samples_per_s" or not target:
        return [_pair(run, other, "batch_size", finding["id"], finding, None, None,
                      unpredicted=reason("prediction_no_estimate", finding=finding["id"],
                                         basis=expected.get("basis")))]
    if size > target:
        return [_pair(
            run, other, "batch_size", finding["id"], finding, None, None,
            unpredicted=reason("batch_beyond_estimate", size=size, target=target,
                               finding=finding["id"]))]
    if size == target:
        return [_pair(run, other, "batch_size", finding["id"], finding, speedup,
                      reason("estimate_at_batch", finding=finding["id"], size=size))]
    # The finding's own line through the run's mean step and the step it
    # predicts at its batch, read at the counterpart's batch.
    samples = _number(run.get("samples_per_step")) or float(batch)
    step_ms = _number((run.get("step_ms") or {}).get("mean"))
    step_at_target_ms = _number(expected.get("step_ms"))
    if step_ms is None or step_at_target_ms is None or target == samples:
        return []
    step_at_size_ms = (
        step_ms + (step_at_target_ms - step_ms) * (size - samples) / (target - samples)
    )
    if step_at_size_ms <= 0:
        return []
    predicted = size / step_at_size_ms * 1e3 / _rate(run)
    basis = reason("finding_line_basis", finding=finding["id"], target=target, size=size)
    return [_pair(run, other, "batch_size", finding["id"], finding, predicted, basis)]


def _device_pairs(runs, signatures, sweeps):
    """Runs of one model at one batch size on two devices, against the
    sweep of that model that predicts which device is faster there."""
    pairs = []
    for index, run in enumerate(runs):
        for other in runs[index + 1:]:
            if (
                not _same_model(run, other, signatures)
                or not pairing.same_model(run["run"], other["run"])
                or not run.get("device") or not other.get("device")
                or run["device"] == other["device"]
                or not run.get("batch_size")
                or run.get("batch_size") != other.get("batch_size")
            ):
                continue
            sweep = _sweep_of(signatures[run["run"]], (run["device"], other["device"]),
                              sweeps, signatures)
            if sweep is None:
                continue
            pairs.append(_device_pair(run, other, sweep))
    return pairs


def _sweep_of(signature, devices, sweeps, signatures):
    """The first sweep (by name) of the model `signature` with a fit for
    both `devices`, or `None`."""
    for sweep in sorted(sweeps, key=lambda s: str(s.get("name"))):
        sweep_runs = sweep.get("runs") or ()
        fits = sweep.get("devices") or {}
        if (
            sweep_runs
            and all(signatures.get(name) == signature for name in sweep_runs)
            and all(
                isinstance(fits.get(device), dict)
                and _number(fits[device].get("fixed_ms")) is not None
                and isinstance(fits[device].get("per_sample_us"), (int, float))
                for device in devices
            )
        ):
            return sweep
    return None


def _device_pair(first, second, sweep):
    """The two runs ordered from the device the sweep says is slower at
    their batch size to the faster one, with the sweep's ratio of steps."""
    batch = first["batch_size"]

    def fitted_ms(run):
        fit = sweep["devices"][run["device"]]
        return fit["fixed_ms"] + fit["per_sample_us"] / 1e3 * batch

    slow, fast = sorted((first, second), key=lambda run: (-fitted_ms(run), run["run"]))
    predicted = fitted_ms(slow) / fitted_ms(fast)
    measured = [
        point["batch_size"]
        for fit in sweep["devices"].values()
        for point in fit.get("points") or ()
    ]
    extrapolated = bool(measured) and not min(measured) <= batch <= max(measured)
    basis = reason("sweep_device_basis", sweep=sweep["name"], batch=batch,
                   slow_ms=fitted_ms(slow), slow=slow["device"], fast_ms=fitted_ms(fast),
                   fast=fast["device"])
    predicted_by = {"speedup": predicted, "bound": "about", "batch_size": batch,
                    "text": reason("sweep_device_text", speedup=predicted, fast=fast["device"])}
    warming = [run["run"] for run in (slow, fast) if run.get("verdict") == "warmup_dominated"]
    if warming:
        # Issue 34: a short fit's steps after its warm-up are not yet
        # steady (JAX's CPU steps of warmup/short took 3.6 ms, of
        # warmup/long 1.5 ms); the sweep's fits are of steady steps.
        return _pair(slow, fast, "device", "sweep", predicted_by, None, basis,
                     extrapolated=extrapolated, sweep=sweep["name"],
                     unpredicted=reason("mostly_warmup", run=warming[0]))
    return _pair(slow, fast, "device", "sweep", predicted_by, predicted, basis,
                 extrapolated=extrapolated, sweep=sweep["name"])


def _pair(run, other, change, predicted_by, stated, predicted, basis,
          extrapolated=False, sweep=None, unpredicted=None):
    """One pair object (see `check_predictions`); `predicted` `None`, with
    `unpredicted` saying why, where no honest figure exists."""
    expected = stated.get("expected") if "expected" in stated else stated
    achieved = _rate(other) / _rate(run)
    bound = expected.get("bound")
    within = None
    if predicted is None:
        ratio = None
    elif bound == "at_most":
        within, ratio = achieved <= predicted, None
    elif bound == "at_least":
        within, ratio = achieved >= predicted, None
    else:
        ratio = achieved / predicted if predicted else None
    # Said by `words.predictions`: what was predicted, what was achieved.
    text = reason(
        "prediction", run=run["run"], device=run["device"], counterpart=other["run"],
        counterpart_device=other["device"], counterpart_batch=other["batch_size"],
        change=change, predicted_by=predicted_by, sweep=sweep, predicted=predicted,
        bound=bound, estimate=expected.get("text"), estimate_batch=expected.get("batch_size"),
        unpredicted=unpredicted, within=within, ratio=ratio, achieved=achieved,
        rate=_rate(run), counterpart_rate=_rate(other))
    return {
        "run": run["run"],
        "counterpart": other["run"],
        "change": change,
        "predicted_by": predicted_by,
        "sweep": sweep,
        "predicted": {
            "speedup": expected.get("speedup"),
            "bound": bound,
            "text": expected.get("text"),
            "batch_size": expected.get("batch_size"),
        },
        "predicted_speedup": predicted,
        "unpredicted": unpredicted if predicted is None else None,
        "achieved_speedup": achieved,
        "achieved_over_predicted": ratio,
        "within_bound": within,
        "extrapolated": extrapolated,
        "samples_per_s": {"run": _rate(run), "counterpart": _rate(other)},
        "batch_size": {"run": run.get("batch_size"), "counterpart": other.get("batch_size")},
        "device": {"run": run.get("device"), "counterpart": other.get("device")},
        "basis": basis,
        "text": text,
    }
