"""Reads a run's raw documents once, into a typed `RunData`.

What the reader hands over is what was written: JSON documents and per-step
series, from this version, an older one or a damaged file. They can hold
anything: a missing key, NaN, a negative time, a string where a list
belongs. This module is the one place that checks; the rest of
`tb_devicecost.analysis` works on the `RunData` built here, whose numbers
are finite and non-negative, or `None` when unknown.

Numbers come from the aggregate (`devicecost/aggregate`, exact), else from
the sampled per-step series (estimates). Where the step ran comes from the
placement document; the device's busy share from the trace document. Run
names are read here too: `role` tells a training run from a validation or
evaluation run.
"""

import dataclasses
import math
import re

import numpy as np

from tb_devicecost import vocabulary
from tb_devicecost.analysis import device_split

# The parts of a fit's wall time besides its total (`wall_ms`).
WALL_PARTS = ("steps", "warmup", "between_steps", "measurement")
# Roles of a run, from the last part of its name: `fit` writes `train` and
# `validation`, `evaluate` writes `evaluation`.
ROLES = ("train", "validation", "evaluation")
# The statistics of each component besides `count` and `sum`.
_STATISTICS = ("mean", "p50", "p90", "p99", "min", "max")
# Bounds of every number read (ms, counts, rates, bytes), besides 0: a
# nanosecond is far below any step's part, 1e15 ms is 31,000 years. Ratios
# and sums of numbers inside them stay finite (docs/FORMAT.md, "Damaged
# data").
MIN_VALUE = 1e-9
MAX_VALUE = 1e15
# At most this many items of a list (the newest) or keys of an object are
# read, and the newest MAX_TRACE_WINDOWS trace windows (the recorder keeps
# 20): what a run object holds, and what analysing it costs, stays bounded
# whatever a document holds.
MAX_ITEMS = 1000
MAX_TRACE_WINDOWS = 20
# Op types that belong on the host in any run: the input pipeline and
# resource bookkeeping. Left out of `cpu_ops_on_accelerator_run`.
_HOST_OP = re.compile(
    r"(Dataset|Iterator|^Optional|^_EagerConst$|^VarIsInitializedOp$"
    r"|^DestroyResourceOp$|PartitionedCall$)"
)


# Guards: the only code that looks at raw values.


def _field(record, name, default=None):
    """A field of a `reader.RunRecord` or of a dict; `default` for `None`."""
    if isinstance(record, dict):
        value = record.get(name, default)
    else:
        value = getattr(record, name, default)
    return default if value is None else value


def _as_dict(value):
    """A JSON object field, or `{}` when it is missing or malformed."""
    return value if isinstance(value, dict) else {}


def _as_list(value, limit=MAX_ITEMS):
    """A JSON list field (its last `limit` items), or `[]` when it is
    missing or malformed."""
    return value[-limit:] if isinstance(value, list) else []


def _items(value, limit=MAX_ITEMS):
    """The first `limit` `(key, value)` pairs of a JSON object field."""
    items = []
    for item in _as_dict(value).items():
        if len(items) == limit:
            break
        items.append(item)
    return items


def _as_text(value):
    """A JSON string field, or `None` when it is missing or not a string."""
    return value if isinstance(value, str) else None


def _as_number(value):
    """A plausible non-negative float, or `None`.

    NaN, infinities, negatives and anything outside `0` or
    `[MIN_VALUE, MAX_VALUE]` (an integer too large for a float, 1e308 ms,
    a subnormal 1e-310 ms) are ignored: no time, count or rate that was
    really recorded lies there, and within those bounds no sum, ratio or
    product the analysis forms can overflow to infinity.
    """
    if isinstance(value, bool) or value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not _plausible(value):
        return None
    return value


def _plausible(value):
    return math.isfinite(value) and (value == 0 or MIN_VALUE <= value <= MAX_VALUE)


def _as_count(value):
    """A non-negative whole number (a fraction is truncated), or `None`."""
    value = _as_number(value)
    return None if value is None else int(value)


def _as_counts(values):
    """The readable counts of a JSON list (e.g. step numbers)."""
    return [_as_count(value) for value in _as_list(values) if _as_count(value) is not None]


def _as_count_map(value):
    """`{name: count}` of a JSON object, unreadable counts left out."""
    counts = {}
    for key, count in _items(value):
        count = _as_count(count)
        if count is not None:
            counts[str(key)] = count
    return counts


def _div(value, divisor):
    return None if value is None else value / divisor


# The typed record.


@dataclasses.dataclass(frozen=True)
class Stats:
    """One component's steady-state statistics in milliseconds.

    Per record (one step, or one execution of `steps_per_execution` steps)
    until `per_step` divides them. `None` where unknown; `count` is `None`
    only in an aggregate that holds no readable count.
    """

    count: int = 0
    sum: float = None
    mean: float = None
    p50: float = None
    p90: float = None
    p99: float = None
    min: float = None
    max: float = None

    def per_step(self, steps_per_record):
        """Each statistic per step; `count` and `sum` (totals) unchanged."""
        return dataclasses.replace(
            self, **{name: _div(getattr(self, name), steps_per_record) for name in _STATISTICS}
        )

    def percentiles(self):
        """The run object's `{p50, p90, p99, mean, min, max}`."""
        return {name: getattr(self, name) for name in ("p50", "p90", "p99", "mean", "min", "max")}


@dataclasses.dataclass(frozen=True)
class Wall:
    """The fit's wall time and its parts (ms), each `None` when unknown.

    The recorder writes `{"total", "steps", "warmup", "between_steps",
    "measurement"}` with total = the sum of the four parts; older data has
    no such key, and then every part is unknown (never guessed).
    """

    total: float = None
    steps: float = None
    warmup: float = None
    between_steps: float = None
    measurement: float = None

    def as_dict(self):
        return {name: getattr(self, name) for name in ("total",) + WALL_PARTS}


@dataclasses.dataclass(frozen=True)
class Retraces:
    """Retraces of the step function after warm-up; `count` `None`: not recorded."""

    count: int = None
    steps: list = dataclasses.field(default_factory=list)
    source: str = None

    def as_dict(self):
        return {"count": self.count, "steps": self.steps, "source": self.source}


def _empty_stats():
    return {name: Stats() for name in vocabulary.COMPONENTS + ("step",)}


@dataclasses.dataclass(frozen=True)
class StepNumbers:
    """A run's step numbers, per record, and where they come from.

    The defaults are a run with no readable step (`source` `None`).
    """

    # "aggregate" (exact), "series" (sampled steps, estimates) or None.
    source: str = None
    # The aggregate's "complete", "running" or "interrupted", else "unknown".
    status: str = "unknown"
    # Records written, and those of them in steady state (warm-up excluded).
    records: int = 0
    steady_records: int = 0
    sessions: int = None
    # Per component and for the whole step ("step").
    stats: dict = dataclasses.field(default_factory=_empty_stats)
    # Warm-up: total ms (`None` without a warm-up step), count, step numbers.
    warmup_ms: float = None
    warmup_count: int = 0
    warmup_steps: list = dataclasses.field(default_factory=list)
    spikes: int = 0
    spike_steps: list = dataclasses.field(default_factory=list)
    samples: int = None
    samples_per_s: float = None
    batch_min: int = None
    batch_max: int = None
    batch_distinct: int = None
    fetch_floor_ms: float = None
    # How long the steady steps' fetches took, overlapped or not (`Stats`);
    # `None` in data recorded before it was.
    fetch: object = None
    wall: Wall = Wall()
    retraces: Retraces = dataclasses.field(default_factory=Retraces)
    # Steps under asynchronous dispatch whose pace the device set (it was
    # still busy with the step before at dispatch) and those the training
    # thread set; `None` when not recorded (TensorFlow, older data).
    device_paced_steps: int = None
    host_paced_steps: int = None


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where the step ran, and what the placement document says of it."""

    devices: list = dataclasses.field(default_factory=list)
    device_models: dict = dataclasses.field(default_factory=dict)
    accelerator_visible: bool = False
    # The device the step ran on, how that is known ("ops", "variables",
    # "visible_devices") and the devices that ran its ops, busiest first.
    device: str = None
    device_source: str = None
    devices_used: list = dataclasses.field(default_factory=list)
    variables: dict = dataclasses.field(default_factory=dict)
    optimizer_variables: dict = dataclasses.field(default_factory=dict)
    ops: dict = dataclasses.field(default_factory=dict)
    step_ops_captured: bool = False
    cpu_ops_on_accelerator_run: list = dataclasses.field(default_factory=list)
    cross_device_copies: int = None
    input_bytes_per_step: int = None
    input_devices: list = dataclasses.field(default_factory=list)

    def as_dict(self):
        """The run object's `placement`: every field but where the step ran,
        which the run object holds itself."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name not in ("device", "device_source", "devices_used")
        }


@dataclasses.dataclass(frozen=True)
class TraceWindow:
    """One profiler trace window of the `devicecost/trace` document.

    The descriptive fields are as written; `summary` holds the trace's
    per-step means, `steps` per traced step the trace's numbers (`trace`)
    beside ours (`ours`), and `ours` our means for the same steps
    (`data_wait_ms`, `compute_ms`, `host_overhead_ms`).
    """

    start_step: object = None
    stop_step: object = None
    source: object = None
    # Why it was traced: `profile_steps`, `keras_tensorboard`, or
    # `device_busy` (the default window of an accelerator run, whose files
    # are deleted once digested: `trace_deleted`).
    purpose: object = None
    trace_deleted: bool = False
    capture: object = None
    host: object = None
    profile_run_dir: object = None
    trace_bytes: object = None
    error: object = None
    has_device_plane: bool = False
    summary: dict = dataclasses.field(default_factory=dict)
    ours: dict = dataclasses.field(default_factory=dict)
    steps: list = dataclasses.field(default_factory=list)
    device_busy_fraction: float = None
    # The device's time split (`device_split.window_split`): `{compute,
    # communication, memory, idle}` fractions, or `None` in windows
    # digested before the split; and one figure per device.
    split: dict = None
    devices: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class RunData:
    """One run, read and checked: what `analyze_run` judges."""

    run: str
    numbers: StepNumbers
    placement: Placement
    # Steps each record covers (`steps_per_execution`), at least 1.
    steps_per_record: int
    # The p50 cost of a ready batch, from the aggregate or the run info.
    fetch_floor_ms: float
    batch_size: int
    # The batch is fetched inside the compiled function (so its wait is in
    # compute).
    fetch_in_graph: bool
    backend: str
    jit_compile: object
    # What fed the fit (`input_kind.describe`): `{"kind", ...settings}`, or
    # `None` when not recorded.
    input_pipeline: object
    trace_windows: list
    # Share of the traced steps the accelerator was busy, or `None`.
    device_busy_fraction: float
    problems: list
    # The sweep the run belongs to (`SweepMark`), or `None`.
    sweep: object = None
    # The windows' device split and per-device figures (`device_split`).
    device_split: dict = None
    device_figures: list = dataclasses.field(default_factory=list)
    # Why the default device-busy window was not traced yet (the trace
    # document's `device_busy`), or `None`.
    device_busy_window: dict = None


def read_run(record):
    """A `RunData` from a `reader.RunRecord` (or a dict with its fields).

    Problems found on the way (invalid numbers, sampled steps used) are
    added to the record's own `problems`, as sentences.
    """
    info = _as_dict(_field(record, "info", {}))
    problems = [str(problem) for problem in _field(record, "problems", [])]
    numbers = _numbers_from_aggregate(_field(record, "aggregate"), problems)
    if numbers is None:
        numbers = _numbers_from_series(_field(record, "series", {}), problems)
    if numbers is None:
        numbers = StepNumbers()
    placement = _placement(_field(record, "placement"))
    steps_per_record = max(
        1,
        _as_count(info.get("steps_per_record"))
        or _as_count(info.get("steps_per_execution"))
        or 1,
    )
    fetch_floor = numbers.fetch_floor_ms
    if fetch_floor is None:
        fetch_floor = _as_number(info.get("fetch_floor_ms"))
    windows = [
        _trace_window(window)
        for window in _as_list(
            _as_dict(_field(record, "trace")).get("windows"), MAX_TRACE_WINDOWS
        )
        if isinstance(window, dict)
    ]
    if placement.device_source == "visible_devices":
        problems.append(
            "Where the step ran was not recorded (no op or variable placement): "
            f"the device shown, {placement.device}, is only a visible one."
        )
    split, figures = device_split.run_split(windows)
    return RunData(
        run=str(_field(record, "run", "")),
        numbers=numbers,
        placement=placement,
        steps_per_record=steps_per_record,
        fetch_floor_ms=fetch_floor,
        batch_size=_as_count(info.get("batch_size")) or numbers.batch_max,
        fetch_in_graph=bool(info.get("fetch_in_graph")) or steps_per_record > 1,
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        jit_compile=info.get("jit_compile") if isinstance(info.get("jit_compile"), bool) else None,
        input_pipeline=_input_pipeline(info.get("input_pipeline")),
        trace_windows=windows,
        device_busy_fraction=_device_busy_fraction(windows),
        problems=problems,
        sweep=_sweep_mark(info.get("sweep"), str(_field(record, "run", ""))),
        device_split=split,
        device_figures=figures,
        device_busy_window=device_split.busy_note(_as_dict(_field(record, "trace"))),
    )


@dataclasses.dataclass(frozen=True)
class SweepMark:
    """Which sweep (`tb_devicecost.sweep`) a run belongs to, and its place in it.

    `source` says how it is known: `"run_info"`, the `sweep` entry that
    `tb_devicecost.sweep` writes into the run-info document; or
    `"run_name"`, for runs recorded before that entry existed, from a name
    `<prefix>/<cpu|gpu>[index]_b<batch size>/train` (a training run only).
    `prefix` is the part of the run name above the run's own directory.
    """

    name: str
    prefix: str
    device: str
    batch_size: int
    your_batch_size: int = None
    source: str = "run_info"

    def as_dict(self):
        return dataclasses.asdict(self)


# `sweep/gpu_b64/train`, `cpu1_b1024/train`: the names `tb_devicecost.sweep`
# gives its runs, and those of sweeps recorded before it marked them.
_SWEEP_RUN_NAME = re.compile(
    r"^(?:(?P<prefix>.+)/)?(?P<kind>cpu|gpu)(?P<index>\d{0,3})_b(?P<batch>\d{1,9})/train$"
)
# A device as a sweep names it: `cpu`, `GPU`, `gpu:1`.
_SWEEP_DEVICE = re.compile(r"^(?P<kind>cpu|gpu)(?::(?P<index>\d{1,3}))?$", re.IGNORECASE)
_MAX_NAME = 1024


def _sweep_device(kind, index):
    return f"{kind.upper()}:{int(index) if index else 0}"


def _sweep_mark(entry, run):
    """The run's `SweepMark` from its run info's `sweep` entry, else from its
    name; `None` when neither says it belongs to a sweep."""
    head, role_name = role(run)
    prefix = head.rpartition("/")[0]
    if isinstance(entry, dict):
        name = _as_text(entry.get("name"))
        device = _SWEEP_DEVICE.match(_as_text(entry.get("device")) or "")
        batch_size = _as_count(entry.get("batch_size"))
        if name and len(name) <= _MAX_NAME and device and batch_size:
            return SweepMark(
                name=name,
                prefix=prefix,
                device=_sweep_device(device.group("kind"), device.group("index")),
                batch_size=batch_size,
                your_batch_size=_as_count(entry.get("your_batch_size")) or None,
            )
    if role_name != "train":
        return None
    match = _SWEEP_RUN_NAME.match(run)
    if not match or not int(match.group("batch")):
        return None
    return SweepMark(
        name=match.group("prefix") or "sweep",
        prefix=match.group("prefix") or "",
        device=_sweep_device(match.group("kind"), match.group("index")),
        batch_size=int(match.group("batch")),
        source="run_name",
    )


def run_name(record):
    """The run's name as a string (`""` without one)."""
    return str(_field(record, "run", ""))


def aggregate_usable(aggregate):
    """Whether the numbers can come from this aggregate (else from the series)."""
    return _numbers_from_aggregate(aggregate, []) is not None


def skip_reason(record):
    """Why a run cannot be analysed at all, or `None`.

    A run written by a newer tb-devicecost is skipped unless an aggregate
    of a schema this code reads survived.
    """
    if not _field(record, "newer_schema", False) or isinstance(_field(record, "aggregate"), dict):
        return None
    problems = [str(problem) for problem in _field(record, "problems", [])]
    return problems[0] if problems else "Written by a newer tb-devicecost."


# The settings of each kind of pipeline, and their types (`input_kind.py`).
_PIPELINE_SETTINGS = {
    "workers": int, "use_multiprocessing": bool, "num_workers": int,
    "pin_memory": bool, "persistent_workers": bool,
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


def role(run_name):
    """`"gpu/train"` -> (`"gpu"`, `"train"`); a bare name has no role."""
    head, _, tail = run_name.rpartition("/")
    if head and tail in ROLES:
        return head, tail
    return run_name, ""


def is_accelerator(device):
    """Whether a device name (`"GPU:0"`) is not a CPU."""
    return isinstance(device, str) and not device.upper().startswith("CPU")


# Step numbers from the aggregate (exact) or the sampled series (fallback).


def _component_stats(summary):
    """Per-component digest from one `components` entry of the aggregate."""
    summary = _as_dict(summary)
    count, total = _as_count(summary.get("count")), _as_number(summary.get("sum_ms"))
    mean = _as_number(summary.get("mean_ms"))
    if mean is None and total is not None and count:
        mean = total / count
    return Stats(
        count=count,
        sum=total,
        mean=mean,
        **{
            key: _as_number(summary.get(f"{key}_ms"))
            for key in ("p50", "p90", "p99", "min", "max")
        },
    )


def _numbers_from_aggregate(aggregate, problems):
    if not isinstance(aggregate, dict):
        return None
    error = aggregate.get("error")
    if isinstance(error, str) and error:
        # Written by a recorder that could not write on (docs/FORMAT.md).
        problems.append(
            f"Recording stopped before the fit ended ({error}): the numbers "
            "cover the steps recorded until then."
        )
    components = aggregate.get("components")
    if not isinstance(components, dict):
        problems.append("The aggregate has no components; used the sampled steps.")
        return None
    stats = {
        name: _component_stats(components.get(name))
        for name in vocabulary.COMPONENTS + ("step",)
    }
    invalid = [
        name
        for name, digest in stats.items()
        if digest.count is None or digest.sum is None
    ]
    if invalid:
        problems.append(
            "The aggregate holds invalid numbers (NaN, negative or missing) for "
            f"{', '.join(invalid)}; used the sampled steps instead."
        )
        return None
    warmup = _as_dict(aggregate.get("warmup"))
    spikes = _as_dict(aggregate.get("spikes"))
    batch = _as_dict(aggregate.get("batch_size"))
    steady_records = _as_count(aggregate.get("steady_steps"))
    if steady_records is None:
        steady_records = stats["step"].count
    status = aggregate.get("status")
    return StepNumbers(
        source="aggregate",
        status=status if isinstance(status, str) else "unknown",
        records=_as_count(aggregate.get("steps")),
        steady_records=steady_records,
        sessions=_as_count(aggregate.get("sessions")),
        stats=stats,
        # No warm-up step recorded: no warm-up time (rather than 0 ms).
        warmup_ms=(
            _as_number(warmup.get("sum_ms")) if _as_count(warmup.get("count")) else None
        ),
        warmup_count=_as_count(warmup.get("count")) or 0,
        warmup_steps=_as_counts(warmup.get("steps")),
        spikes=_as_count(spikes.get("count")) or 0,
        spike_steps=_as_counts(spikes.get("steps")),
        samples=_as_count(aggregate.get("samples")),
        samples_per_s=_as_number(aggregate.get("samples_per_s")),
        batch_min=_as_count(batch.get("min")),
        batch_max=_as_count(batch.get("max")),
        batch_distinct=_as_count(batch.get("distinct")),
        fetch_floor_ms=_as_number(aggregate.get("fetch_floor_ms")),
        fetch=(
            _component_stats(aggregate["fetch"])
            if isinstance(aggregate.get("fetch"), dict)
            else None
        ),
        wall=_wall(aggregate.get("wall_ms")),
        retraces=_retraces(aggregate.get("retraces")),
        device_paced_steps=_as_count(_as_dict(aggregate.get("pace")).get("device_steps")),
        host_paced_steps=_as_count(_as_dict(aggregate.get("pace")).get("host_steps")),
    )


def _wall(wall):
    wall = _as_dict(wall)
    parts = {key: _as_number(wall.get(key)) for key in ("total",) + WALL_PARTS}
    if parts["total"] is None and all(parts[key] is not None for key in WALL_PARTS):
        parts["total"] = sum(parts[key] for key in WALL_PARTS)
    return Wall(**parts)


def _retraces(retraces):
    if not isinstance(retraces, dict):
        return Retraces()
    source = retraces.get("source")
    return Retraces(
        count=_as_count(retraces.get("count")),
        steps=_as_counts(retraces.get("steps")),
        source=source if isinstance(source, str) else None,
    )


def _float_array(values):
    """A 1-D float array of `values`, or `None` when they are not numbers."""
    if values is None:
        return None
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        return None


def _series_array(series, key, length):
    values = _float_array(series.get(key))
    if values is None or len(values) != length:
        return np.full(length, np.nan)
    return values


def _plausible_array(values):
    """`_plausible` of each value of a float array."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (
            (values == 0) | ((values >= MIN_VALUE) & (values <= MAX_VALUE))
        )


def _numbers_from_series(series, problems):
    series = _as_dict(series)
    steps = _float_array(series.get("step", ()))
    if steps is None or steps.size == 0:
        return None
    columns = {
        name: _series_array(series, vocabulary.component_column(name), len(steps))
        for name in vocabulary.COMPONENTS
    }
    batch = _series_array(series, vocabulary.BATCH_SIZE, len(steps))
    # 1.0 for a warm-up step; absent (NaN here) in runs written before the
    # flag was.
    flags = _series_array(series, vocabulary.WARMUP, len(steps))
    valid = np.isfinite(steps) & (steps >= 0) & (steps <= MAX_VALUE)
    for values in columns.values():
        valid &= _plausible_array(values)
    dropped = int((~valid).sum())
    if dropped:
        problems.append(
            f"Ignored {dropped} sampled step(s) holding NaN, negative or "
            "implausible values."
        )
    steps = steps[valid]
    columns = {name: values[valid] for name, values in columns.items()}
    batch = batch[valid]
    flags = flags[valid]
    if steps.size == 0:
        return None
    order = np.argsort(steps, kind="stable")
    steps = steps[order]
    columns = {name: values[order] for name, values in columns.items()}
    batch = batch[order]
    flags = flags[order]
    step_ms = sum(columns.values())
    flagged = bool(np.isfinite(flags).all())
    if flagged:
        warmup = flags > 0.5
    else:
        # Older data: the global step starts at 0 with the warm-up step of
        # the first fit; later fits' warm-ups cannot be told apart.
        warmup = steps == 0
    steady = ~warmup
    problems.append(
        f"No readable aggregate: the numbers come from {int(steps.size)} sampled "
        "step(s), so totals are estimates"
        + (" (step 0 taken as the warm-up)." if warmup.any() and not flagged else ".")
    )
    stats = {}
    for name, values in list(columns.items()) + [("step", step_ms)]:
        values = values[steady]
        if values.size:
            stats[name] = Stats(
                count=int(values.size),
                sum=float(values.sum()),
                mean=float(values.mean()),
                p50=float(np.percentile(values, 50)),
                p90=float(np.percentile(values, 90)),
                p99=float(np.percentile(values, 99)),
                min=float(values.min()),
                max=float(values.max()),
            )
        else:
            stats[name] = Stats(count=0, sum=0.0)
    compute = columns["compute"][steady]
    spikes = 0
    if compute.size:
        median = float(np.median(compute))
        spikes = int((compute > vocabulary.SPIKE_RATIO * max(median, 1e-6)).sum())
    known = batch[steady][_plausible_array(batch[steady]) & (batch[steady] >= 1)]
    samples = int(known.sum()) if known.size else None
    steady_wall_ms = stats["step"].sum
    return StepNumbers(
        source="series",
        status="unknown",
        records=int(steps.max()) + 1,
        steady_records=int(steady.sum()),
        sessions=None,
        stats=stats,
        warmup_ms=float(step_ms[warmup].sum()) if warmup.any() else None,
        warmup_count=int(warmup.sum()),
        warmup_steps=[int(step) for step in steps[warmup]],
        spikes=spikes,
        spike_steps=[],
        samples=samples,
        samples_per_s=(
            samples / (steady_wall_ms / 1e3) if samples and steady_wall_ms else None
        ),
        batch_min=int(known.min()) if known.size else None,
        batch_max=int(known.max()) if known.size else None,
        batch_distinct=int(np.unique(known).size) if known.size else None,
    )


# Placement: where the step ran.


def _device_names(devices):
    names = []
    for key in ("logical", "physical"):
        for device in _as_list(_as_dict(devices).get(key)):
            name = device.get("name") if isinstance(device, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


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
        accelerators = {n: c for n, c in used_ops.items() if is_accelerator(n)}
        device = _busiest(accelerators or used_ops)
        return device, "ops", sorted(used_ops, key=lambda n: (-used_ops[n], n))
    if used_variables:
        return (
            _busiest(used_variables),
            "variables",
            sorted(used_variables, key=lambda n: (-used_variables[n], n)),
        )
    if visible:
        accelerators = [name for name in visible if is_accelerator(name)]
        return (accelerators or visible)[0], "visible_devices", []
    return None, None, []


def _placement(placement):
    placement = _as_dict(placement)
    devices = placement.get("devices")
    names = _device_names(devices)
    ops = _as_count_map(placement.get("ops"))
    variables = _as_count_map(placement.get("variables"))
    accelerator_visible = bool(placement.get("accelerator_visible")) or any(
        is_accelerator(name) for name in names
    )
    models = {}
    for device in _as_list(_as_dict(devices).get("physical")):
        if isinstance(device, dict) and device.get("model"):
            models[str(device.get("name"))] = str(device["model"])
    device, device_source, devices_used = _where_the_step_ran(names, ops, variables)
    cpu_ops = []
    if device is not None and is_accelerator(device):
        cpu_ops = [
            str(op)
            for op in _as_list(placement.get("cpu_op_types"))
            if isinstance(op, str) and not _HOST_OP.search(op)
        ]
    return Placement(
        devices=names,
        device_models=models,
        accelerator_visible=accelerator_visible,
        device=device,
        device_source=device_source,
        devices_used=devices_used,
        variables=variables,
        optimizer_variables=_as_count_map(placement.get("optimizer_variables")),
        ops=ops,
        step_ops_captured=bool(placement.get("step_ops_captured", bool(ops))),
        cpu_ops_on_accelerator_run=cpu_ops,
        cross_device_copies=_as_count(placement.get("cross_device_copies")),
        input_bytes_per_step=_as_count(placement.get("input_bytes_per_step")),
        input_devices=[str(name) for name in _as_list(placement.get("input_devices")) if name],
    )


# Trace windows (the `devicecost/trace` document, docs/FORMAT.md).


def _mean_of(entries, key):
    values = [_as_number(entry.get(key)) for entry in entries]
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def _trace_window(window):
    recorded = [e for e in _as_list(window.get("recorded_steps")) if isinstance(e, dict)]
    traced = [e for e in _as_list(window.get("steps")) if isinstance(e, dict)]
    ours_by_step = {_as_count(entry.get("step")): entry for entry in recorded}
    ours_by_step.pop(None, None)
    steps = [
        {
            "step": _as_count(entry.get("step")),
            "trace": {str(k): _as_number(v) for k, v in _items(entry, 100) if k != "step"},
            "ours": {
                str(k): _as_number(v)
                for k, v in _items(ours_by_step.get(_as_count(entry.get("step"))), 100)
                if k != "step"
            },
        }
        for entry in traced
    ]
    summary = _as_dict(window.get("summary"))
    # With a device plane the recorder repeats the summary's busy share on
    # the window itself.
    busy = _as_number(window.get("device_busy_fraction"))
    if busy is None:
        busy = _as_number(summary.get("device_busy_fraction"))
    split, devices = device_split.window_split(window)
    return TraceWindow(
        start_step=_as_count(window.get("start_step")),
        stop_step=_as_count(window.get("stop_step")),
        source=_as_text(window.get("source")),
        purpose=_as_text(window.get("purpose")),
        trace_deleted=window.get("trace_deleted") is True,
        capture=_as_text(window.get("capture")),
        host=_as_text(window.get("host")),
        profile_run_dir=_as_text(window.get("profile_run_dir")),
        trace_bytes=_as_count(window.get("trace_bytes")),
        error=_as_text(window.get("error")),
        has_device_plane=bool(window.get("has_device_plane")),
        summary={str(k): _as_number(v) for k, v in _items(summary, 100)},
        ours={
            vocabulary.component_column(name): _mean_of(
                recorded, vocabulary.component_column(name)
            )
            for name in vocabulary.COMPONENTS
        },
        steps=steps,
        device_busy_fraction=busy,
        split=split,
        devices=devices,
    )


def _device_busy_fraction(windows):
    """The accelerator's busy share of the traced steps: the windows' mean.

    Each window with a device plane carries `device_busy_fraction` (the
    share of its steps' time the device ran kernels or copies); a trace of
    a CPU-only run has none, and then the share is unknown (`None`).
    """
    fractions = [
        window.device_busy_fraction
        for window in windows
        if window.device_busy_fraction is not None
    ]
    if not fractions:
        return None
    return min(sum(fractions) / len(fractions), 1.0)
