"""The typed run: the frozen dataclasses that `record.read_run` builds.

A `RunData` is one run, read and checked: its step numbers (`StepNumbers`,
each component's `Stats`, the fit's `Wall` time, `Retraces`), where the
step ran (`Placement`), its profiler `TraceWindow`s, its `SweepMark`, the
model it trained (`ModelSignature`) and, for one process of a distributed
job, its place in the job (`ProcessClaim`), how its steps were spread
(`Distribution`) and its steady steps as arrays (`ProcessSteps`).
Every number in them is finite and non-negative, or `None` when unknown;
the rest of `tb_devicecost.analysis` reads runs through these types only.
"""

import dataclasses

from tb_devicecost.format import vocabulary

# The parts of a fit's wall time besides its total (`wall_ms`).
WALL_PARTS = ("steps", "warmup", "between_steps", "measurement")
# The statistics of each component besides `count` and `sum`.
_STATISTICS = ("mean", "p50", "p90", "p99", "min", "max")


def _div(value, divisor):
    return None if value is None else value / divisor


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

    The recording writes `{"total", "steps", "warmup", "between_steps",
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
    # Our own code's time inside the steps, all steps together (ms): on the
    # training thread, and on Keras's worker thread; `None` in data recorded
    # before it was (docs/FORMAT.md, `self_ms`).
    self_ms: float = None
    worker_self_ms: float = None
    # Our hooks' time between a fit's steps (epoch ends, validation's start
    # and end), ms; `None` in data recorded before it was.
    between_steps_self_ms: float = None


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
class ModelSignature:
    """What makes two runs' models the same, from the run info: its
    backend, parameter count (always known: no signature without one) and
    dtype policy."""

    backend: str
    parameters: int
    dtype_policy: str


@dataclasses.dataclass(frozen=True)
class ProcessClaim:
    """A run's claim to a place in a multi-process job (`process_steps.read_claim`).

    The run's name holds a `process_<i>` part (`directory_index`) and its
    run info says it is process `index` (`None` when unreadable) of `count`
    (at least 2). The two need not agree: a run that claims a place
    without fitting it is named as such (`jobs.group_runs`), not dropped.
    `group` is the run's name without that part (`jax/process_1/train` ->
    `jax/train`).
    """

    group: str
    directory_index: int
    index: int
    count: int
    # The run info's host name: processes are compared by wall time only
    # on one host (one clock).
    hostname: str = None
    # The run info's `process_index` as written, where it is no index (-1).
    given_index: str = None

    @property
    def lined_up(self):
        """Whether the directory and the run info agree on a place that
        exists: the run is then process `index` of its job."""
        return self.index is not None and self.directory_index == self.index < self.count


@dataclasses.dataclass(frozen=True)
class Distribution:
    """How a run's steps were spread over processes and devices
    (`process_steps.read_distribution`), docs/CLI.md's `distribution`."""

    strategy: str
    process_index: int
    process_count: int
    local_devices: list
    device_count: int
    replicas: int
    per_process_batch: object
    global_batch: object
    per_replica_batch: object

    def as_dict(self):
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True, eq=False)
class ProcessSteps:
    """A process's steady steps as arrays, one row per global step in step
    order (`process_steps.read_steps`): what lines a job's processes up.

    `stall` is what delayed the step's arrival at the collective (its data
    wait and the host overhead after the step before), `total` the whole
    step; `start` the steps' wall times (s), `None` when not recorded.
    """

    step: object
    stall: object
    data_wait: object
    compute: object
    total: object
    start: object = None


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
    # The model (`ModelSignature`), `None` without a parameter count.
    model: object = None
    # Its place in a multi-process job (`ProcessClaim`), how its steps were
    # spread (`Distribution`, `None` on one device of one process) and, for
    # a claimed process only, its steady steps (`ProcessSteps`, `None`
    # without a usable series).
    process: object = None
    distribution: object = None
    steps: object = None
    # The fetch ran inside Keras's graph as without the callback and was
    # timed there (`FetchTimedStep`, TensorFlow): no step of Keras's loop
    # was skipped.
    fetch_timed_in_graph: bool = False
    # How the newest fit ended (`fit_end.FitEnd`), `None` for data recorded
    # without a fit identity.
    fit_end: object = None
    # What `try_fixes` tried in this run (`tried.TriedMark`), or `None`.
    tried: object = None
    # `{framework: bool}`: what the recorded process could import (the run
    # info's `importable`), or `None` in older runs; the host's CPUs.
    importable: dict = None
    cpu_count: int = None


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
