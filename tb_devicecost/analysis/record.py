"""Reads a run's raw documents once, into a typed `RunData`.

What the reader hands over is what was written: JSON documents and per-step
series, from this version, an older one or a damaged file. `read_run` is
the one entry that reads them, through the checks of `guards.py`; the rest
of `tb_devicecost.analysis` works on the `RunData` built here
(`run_data.py`), whose numbers are finite and non-negative, or `None` when
unknown.

Numbers come from the aggregate (`devicecost/aggregate`, exact), else from
the sampled per-step series (estimates: `step_numbers.py`). Where the step
ran comes from the placement document (`placement_summary.py`); the
device's busy share from the trace document (`trace_windows.py`); the
run's sweep from its run info or name (`sweep_marks.py`); a process's
place in a distributed job, its distribution and its steady steps from its
name, run info and series (`process_steps.py`).

The plugin asks the same questions of records before analysing them
(`process_of`, `same_group`, `without_series`): which runs are processes
of a job, and which need their series read.
"""

import dataclasses

from tb_devicecost.analysis import device_split
from tb_devicecost.analysis import fit_end
from tb_devicecost.analysis import process_steps
from tb_devicecost.analysis import tried
from tb_devicecost.analysis.guards import MAX_TRACE_WINDOWS
from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import as_list
from tb_devicecost.analysis.guards import as_number
from tb_devicecost.analysis.guards import record_field
from tb_devicecost.analysis.names import run_name
from tb_devicecost.analysis.placement_summary import read_placement
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.analysis.run_data import ModelSignature
from tb_devicecost.analysis.run_data import RunData
from tb_devicecost.analysis.run_data import StepNumbers
from tb_devicecost.analysis.step_numbers import numbers_from_aggregate
from tb_devicecost.analysis.step_numbers import numbers_from_series
from tb_devicecost.analysis.sweep_marks import sweep_mark
from tb_devicecost.analysis.trace_windows import device_busy_fraction
from tb_devicecost.analysis.trace_windows import read_trace_window
from tb_devicecost.format import vocabulary


def read_run(record):
    """A `RunData` from a `reader.RunRecord` (or a dict with its fields).

    Problems found on the way (invalid numbers, sampled steps used) are
    added to the record's own `problems` (the reader's sentences) as
    `reasons.Reason`s.
    """
    name = run_name(record)
    info = as_dict(record_field(record, "info", {}))
    problems = [str(problem) for problem in record_field(record, "problems", [])]
    aggregate = record_field(record, "aggregate")
    end = fit_end.read_end(info, aggregate, record_field(record, "series", {}))
    if end is not None and not end.own_aggregate and isinstance(aggregate, dict):
        problems.append(reason("aggregate_of_another_fit"))
        aggregate = None
    numbers = numbers_from_aggregate(aggregate, problems)
    if numbers is None:
        numbers = numbers_from_series(record_field(record, "series", {}), problems)
    if numbers is None:
        numbers = StepNumbers()
    if end is not None:
        # Whole only when the fit's closing aggregate says so.
        numbers = dataclasses.replace(numbers, status=end.status)
    placement = read_placement(record_field(record, "placement"))
    steps_per_record = max(
        1,
        as_count(info.get("steps_per_record"))
        or as_count(info.get("steps_per_execution"))
        or 1,
    )
    fetch_floor_ms = numbers.fetch_floor_ms
    if fetch_floor_ms is None:
        fetch_floor_ms = as_number(info.get("fetch_floor_ms"))
    windows = [
        read_trace_window(window)
        for window in as_list(
            as_dict(record_field(record, "trace")).get("windows"), MAX_TRACE_WINDOWS
        )
        if isinstance(window, dict)
    ]
    if placement.device_source == "visible_devices":
        problems.append(reason("device_only_visible", device=placement.device))
    split, figures = device_split.run_split(windows)
    batch_size = as_count(info.get("batch_size")) or numbers.batch_max
    claim = process_steps.read_claim(name, info)
    return RunData(
        run=name,
        numbers=numbers,
        placement=placement,
        steps_per_record=steps_per_record,
        fetch_floor_ms=fetch_floor_ms,
        batch_size=batch_size,
        fetch_in_graph=bool(info.get("fetch_in_graph")) or steps_per_record > 1,
        fetch_timed_in_graph=info.get("fetch_timed_in_graph") is True,
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        jit_compile=info.get("jit_compile") if isinstance(info.get("jit_compile"), bool) else None,
        input_pipeline=_input_pipeline(info.get("input_pipeline")),
        trace_windows=windows,
        device_busy_fraction=device_busy_fraction(windows),
        problems=problems,
        sweep=sweep_mark(info.get("sweep"), name),
        device_split=split,
        device_figures=figures,
        device_busy_window=device_split.busy_note(as_dict(record_field(record, "trace"))),
        model=model_signature(info),
        process=claim,
        distribution=process_steps.read_distribution(info, batch_size),
        # Lining steps up is for the processes of a job only: a run of one
        # process never pays for its series as arrays.
        steps=process_steps.read_steps(record_field(record, "series")) if claim else None,
        fit_end=end,
        tried=tried.read_mark(info.get("tried")),
        importable=_importable(info.get("importable")),
        cpu_count=as_count(info.get("cpu_count")),
    )


def _importable(value):
    """`{framework: bool}` of the run info's `importable`, or `None`."""
    if not isinstance(value, dict):
        return None
    return {str(name): value[name] for name in list(value)[:16]
            if isinstance(value[name], bool)}


def model_signature(info):
    """The `ModelSignature` of a run-info document; `None` without a
    parameter count.

    Args:
        info: A run-info document (`reader.RunRecord.info`), or anything.
    """
    if not isinstance(info, dict):
        return None
    parameters = info.get("parameters")
    if not isinstance(parameters, int) or isinstance(parameters, bool) or parameters <= 0:
        return None
    backend = info.get("backend") if isinstance(info.get("backend"), str) else None
    policy = info.get("dtype_policy") if isinstance(info.get("dtype_policy"), str) else None
    return ModelSignature(backend, parameters, policy)


def process_of(record):
    """`(group, process_index, process_count)` of a run written by one
    process of a multi-process job, else `None`: its directory and run
    info agree on its place (`ProcessClaim.lined_up`)."""
    claim = process_steps.read_claim(run_name(record), record_field(record, "info"))
    if claim is None or not claim.lined_up:
        return None
    return claim.group, claim.index, claim.count


def without_series(records):
    """Names of the runs of multi-process jobs among `records` whose
    per-step series were not read (a reader asked for none): lining the
    processes up needs them."""
    found = []
    for record in records:
        series = as_dict(record_field(record, "series"))
        if process_of(record) is not None and not len(series.get(vocabulary.STEP, ())):
            found.append(run_name(record))
    return found


def same_group(records, record):
    """The records of `records` from the same multi-process job as `record`
    (itself included), or `[]` when it is not one process of a job."""
    found = process_of(record)
    if found is None:
        return []
    return [
        other for other in records
        if (process_of(other) or (None,))[0] == found[0]
    ]


def skip_reason(record):
    """Why a run cannot be analysed at all, or `None`.

    A run written by a newer tb-devicecost is skipped unless an aggregate
    of a schema this code reads survived.
    """
    if not record_field(record, "newer_schema", False):
        return None
    if isinstance(record_field(record, "aggregate"), dict):
        return None
    problems = [str(problem) for problem in record_field(record, "problems", [])]
    return problems[0] if problems else reason("newer_schema")


# The settings of each kind of pipeline, and their types (`input_kind.py`).
_PIPELINE_SETTINGS = {
    "workers": int, "use_multiprocessing": bool, "num_workers": int,
    "pin_memory": bool, "persistent_workers": bool,
    "maps": int, "parallel_map": bool, "prefetch": bool, "cache": bool,
    "python_function": bool,
}


def _input_pipeline(value):
    """The recorded pipeline's kind and settings, checked; `None` when absent
    or not a kind's record (a setting of the wrong type reads as unknown)."""
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        return None
    result = {"kind": value["kind"][:40]}
    for key, kind in _PIPELINE_SETTINGS.items():
        if key in value:
            setting = value[key]
            ok = isinstance(setting, bool) if kind is bool else (
                isinstance(setting, int) and not isinstance(setting, bool))
            result[key] = setting if ok else None
    return result

