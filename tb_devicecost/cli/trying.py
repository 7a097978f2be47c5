"""`tb_devicecost.try_fixes` and `tb-devicecost try`: advice that is tried.

The fits are the recording's (`recording/fix_trials.py`); which changes to
try comes from the baseline's findings (`analysis`, each finding's
`change`), read back from its run as the report reads it; what they
measured is judged by `analysis/tried.py`. This module wires the three:
the one place above both the recording and the analysis.
"""

import os

from tb_devicecost import words
from tb_devicecost.analysis import interventions
from tb_devicecost.analysis import record as record_module
from tb_devicecost.format import vocabulary
from tb_devicecost.reading import without_tensorflow


def _report(log_dir):
    """The report of every run under `log_dir`."""
    without_tensorflow.avoid_tensorflow_import()
    from tb_devicecost.reading import reader  # pylint: disable=import-outside-toplevel

    scan = reader.scan_logdir(log_dir)
    records, unread = reader.read_logdir(reader.local_provider(log_dir, scan=scan), scan)
    return words.build_report(records, unread=unread), records


def _advised_changes(log_dir, baseline_dir):
    """The changes the baseline's findings name (with their companions)."""
    report, records = _report(log_dir)
    run_name = os.path.relpath(os.path.join(baseline_dir, "train"), log_dir).replace(os.sep, "/")
    base = next((run for run in report["runs"] if run["run"] == run_name), None)
    if base is None:
        return []
    findings = base.get("findings") or ()
    changes = [finding.get("change") for finding in findings]
    record = next((r for r in records if getattr(r, "run", None) == run_name), None)
    if record is not None:
        run = record_module.read_run(record)
        if any(finding.get("id") in interventions.INPUT_FINDINGS for finding in findings):
            changes += interventions.input_alternatives(run)
        changes += interventions.companions(run)
    return list(dict.fromkeys(change for change in changes if change not in ("none", None)))


def try_fixes(build_model, data, *, log_dir, batch_size=None, steps=None, budget_s=120,
              changes=None):
    """Tries the fixes a diagnosis advises on your own model, and measures them.

    Fits the model from `build_model` on the input from `data` once with
    `DeviceCostCallback` (the baseline, run `log_dir/tried/baseline`), reads
    its findings, and tries each change they name that applies to this
    pipeline and backend (`change` on every finding: `workers`,
    `use_multiprocessing`, `prefetch`, `parallel_map`,
    `steps_per_execution`, `batch_size`, `device`, `jit_compile`,
    `data_on_device`), with two measured ceilings always: `input_free`, the
    same model stepping on batches already converted (what removing the
    input entirely buys), and `empty_step`, a one-layer model on them (the
    loop's fixed cost). Each change is a run `log_dir/tried/<change>` of
    short fits on fresh models and fresh data, interleaved with the
    baseline's (baseline, changes, changes reversed, baseline; repeated
    while `budget_s` lasts), so the baseline's fits measure the noise.
    `build_model` and `data` are called once per fit: neither your model
    nor your data objects are changed (a change sets its settings on the
    new object `data()` returned, or a copy).

    The report (`tb-devicecost report log_dir`, the Device Cost tab) then
    shows "FIXES TRIED" (`fixes_tried` in JSON): each change's predicted
    and measured gain with the noise, and which change is advised: the best
    measured among those that keep the training's arithmetic (`batch_size`
    changes it) and beat the noise.

    Args:
        build_model: Function of no arguments returning a compiled
            `keras.Model`.
        data: Function of no arguments returning what you pass to `fit`:
            NumPy arrays `(x, y)` (or `x`), a `keras.utils.PyDataset`, a
            `tf.data.Dataset`, a Python generator (or a function returning
            one), or a torch `DataLoader`.
        log_dir: Directory for the runs (under `log_dir/tried`); it must
            not hold trials already.
        batch_size: The batch size of arrays (other data has its own).
            Defaults to `None`: 32.
        steps: Steps of each fit, warm-up included. Defaults to `None`: 100
            (fewer where the data holds fewer batches; a fit of
            `steps_per_execution` runs whole executions of 8 steps, at
            least 4 of them).
        budget_s: Seconds the trials may take after the baseline's first
            fit; at least one round runs. Defaults to `120`.
        changes: The changes to try, a list of words of the vocabulary
            above, or `None` for those the baseline's findings name.
            Defaults to `None`.

    Returns:
        A dict: `log_dir` (the trials' directory), `fixes_tried` (the
        report's entries: `run`, `change`, `predicted`, `measured`,
        `noise`, `kept`, `advised`...), `advised` (the change advised, or
        `None`), `failed` (`{change: why}` of changes that could not run).

    Raises:
        ValueError: on an invalid argument or data `fit` cannot take.

    Example:

    ```python
    result = tb_devicecost.try_fixes(build_model, make_data, log_dir="logs/try")
    print(result["advised"])
    ```
    """
    from tb_devicecost.recording import fix_trials  # Imports Keras.

    if changes is not None:
        known = vocabulary.CHANGES + vocabulary.CEILINGS
        if isinstance(changes, str) or not isinstance(changes, (list, tuple)) or not all(
                change in known for change in changes):
            raise fix_trials.TrialArgumentError(
                f"`changes` must be None or a list of {', '.join(known)}. "
                f"Received: changes={changes!r}")
    trials = fix_trials.FixTrials(build_model, data, log_dir, batch_size=batch_size,
                                  steps=steps, budget_s=budget_s)
    try:
        baseline_dir = trials.run_baseline()
        wanted = list(changes) if changes is not None else _advised_changes(
            os.fspath(log_dir), baseline_dir)
        # The ceilings always (measured, they bound every input fix's
        # prediction), then the changes; one is never tried automatically.
        order = list(vocabulary.CEILINGS)
        order += [c for c in wanted if c not in order]
        ran = trials.run(order)
    finally:
        failed, root = dict(trials.failed), trials.root
        trials.close()
    report, _ = _report(os.fspath(log_dir))
    entries = [entry for entry in report["fixes_tried"] if entry["run"].split("/")[-2] in ran]
    advised = next((entry for entry in entries if entry.get("advised")), None)
    return {
        "log_dir": root,
        "fixes_tried": entries,
        "advised": advised["change"] if advised else None,
        "failed": failed,
        "report": report,
    }
