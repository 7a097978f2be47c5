"""A run's figures per training step: what the verdict and the report read.

A `RunData` holds the numbers as recorded: per record (one step, or one
execution of `steps_per_execution` steps), totals and counts. `run_figures`
derives, once, what the rules and the words quote: each component per step
(`Stats`), the shares of the steady-state time, samples per step and per
second, the warm-up's share of the fit, the data wait split into the cost
of a ready batch and waiting (`data_wait.py`), the input share with the
longest wait left out, which side set the pace, the device's compute
per traced step, and what our own measuring took of a step (`self_share`).
`verdicts.judge` and `report.run_object` read these; the
report writes them into the run object.
"""

import dataclasses

from tb_devicecost.analysis import data_wait
from tb_devicecost.analysis.run_data import WALL_PARTS
from tb_devicecost.analysis.run_data import Stats
from tb_devicecost.format import backend_facts
from tb_devicecost.format import vocabulary


@dataclasses.dataclass(frozen=True)
class Pace:
    """Which side set the pace of the steps timed under asynchronous
    dispatch: `set_by` `"device"` or `"training_thread"`, and how many
    steps each side set."""

    set_by: str
    device_steps: int
    host_steps: int

    def as_dict(self):
        return {"set_by": self.set_by, "device_steps": self.device_steps,
                "host_steps": self.host_steps}


@dataclasses.dataclass(frozen=True)
class RunFigures:
    """A run's figures per training step, steady state (docs/CLI.md's run
    object names each). Every figure is `None` where unknown."""

    # Steps recorded (`None` when unknown) and steady steps, records times
    # the steps each covers.
    steps: int
    steady_steps: int
    # Each component and the whole step, per step (`Stats`); the steady
    # steps' fetches, overlapped or not (`None` in older data).
    step: Stats
    data_wait: Stats
    compute: Stats
    host_overhead: Stats
    fetch: Stats
    samples_per_step: float
    samples_per_s: float
    # `{component: share of the steady-state time}`.
    shares: dict
    # `{wall part: share of the fit's wall time}`.
    wall_shares: dict
    warmup_share: float
    # The mean data wait split into the cost of handing over a ready batch
    # and the wait above it (`data_wait.split_data_wait`).
    ready_fetch_ms: float
    starved_data_wait_ms: float
    handover_share: float
    input_share: float
    input_share_without_longest_wait: float
    pace: Pace
    device_compute_ms: float
    # Our own code's time inside a step (µs, over every step recorded) on
    # the training thread, its share of the mean step, and on Keras's
    # worker thread; `None` where not recorded (older data, custom loops).
    self_us_per_step: float = None
    self_share: float = None
    worker_self_us_per_step: float = None
    # Our hooks' time between the steps, as a share of the fit's wall time.
    between_steps_self_share: float = None
    # Whether the callback fetched each batch itself, skipping two small
    # operations of Keras's own loop a step (`backend_facts`, one step an
    # execution): the measured fit is that much not the user's own.
    fetched_each_batch: bool = False

    def component(self, name):
        """The `Stats` of a component (`vocabulary.COMPONENTS`) or `"step"`."""
        return getattr(self, name)


def _ratio(part, whole):
    if part is None or not whole:
        return None
    return part / whole


def run_figures(run):
    """The `RunFigures` of a `RunData`."""
    numbers = run.numbers
    per_record = run.steps_per_record
    # Records cover `per_record` steps each: per-step figures divide by it;
    # counts and totals (wall time) do not.
    stats = {name: digest.per_step(per_record) for name, digest in numbers.stats.items()}
    batch_size = run.batch_size
    samples_per_s = numbers.samples_per_s
    steady = numbers.steady_records or 0
    samples_per_step = None
    if numbers.samples and steady:
        samples_per_step = numbers.samples / (steady * per_record)
    elif batch_size:
        samples_per_step = float(batch_size)
    step_mean_ms = stats["step"].mean
    if samples_per_s is None and samples_per_step and step_mean_ms:
        samples_per_s = samples_per_step / (step_mean_ms / 1e3)

    sums = {name: stats[name].sum or 0.0 for name in vocabulary.COMPONENTS}
    total = sum(sums.values())
    shares = {
        name: (sums[name] / total if total > 0 else None)
        for name in vocabulary.COMPONENTS
    }
    steady_wall_ms = stats["step"].sum or 0.0
    warmup_ms = numbers.warmup_ms
    wall = numbers.wall
    wall_shares = {
        key: (_ratio(getattr(wall, key), wall.total) if wall.total else None)
        for key in WALL_PARTS
    }
    # Warm-up over the fit's whole wall time when it was recorded; else over
    # the time in warm-up and steady steps (all that older data knows).
    warmup_share = None
    if wall.total and (wall.warmup is not None or warmup_ms is not None):
        warmup_part_ms = wall.warmup if wall.warmup is not None else warmup_ms
        warmup_share = min(1.0, warmup_part_ms / wall.total)
    elif warmup_ms is not None and warmup_ms + steady_wall_ms > 0:
        warmup_share = warmup_ms / (warmup_ms + steady_wall_ms)

    wait = stats["data_wait"]
    ready_fetch_ms, starved_data_wait_ms = data_wait.split_data_wait(
        wait.mean, wait.p50, run.fetch_floor_ms, run.fetch_in_graph
    )
    records = numbers.records
    self_us = _per_step_us(numbers.self_ms, records, per_record)
    return RunFigures(
        steps=None if records is None else records * per_record,
        steady_steps=steady * per_record,
        step=stats["step"],
        data_wait=stats["data_wait"],
        compute=stats["compute"],
        host_overhead=stats["host_overhead"],
        fetch=numbers.fetch.per_step(per_record) if numbers.fetch is not None else None,
        samples_per_step=samples_per_step,
        samples_per_s=samples_per_s,
        shares=shares,
        wall_shares=wall_shares,
        warmup_share=warmup_share,
        ready_fetch_ms=ready_fetch_ms,
        starved_data_wait_ms=starved_data_wait_ms,
        # The part of the data wait's share that is handing over ready
        # batches: a bar shades it apart from waiting (docs/READING.md).
        handover_share=_handover_share(shares["data_wait"], ready_fetch_ms, wait.mean),
        input_share=_ratio(starved_data_wait_ms, step_mean_ms),
        input_share_without_longest_wait=_share_without_longest(
            stats["data_wait"], stats["step"], steady * per_record, ready_fetch_ms
        ),
        pace=_pace(numbers),
        device_compute_ms=_device_compute_ms(run.trace_windows),
        self_us_per_step=self_us,
        self_share=_ratio(self_us, step_mean_ms * 1e3 if step_mean_ms else None),
        worker_self_us_per_step=_per_step_us(numbers.worker_self_ms, records, per_record),
        between_steps_self_share=_ratio(numbers.between_steps_self_ms, wall.total),
        fetched_each_batch=(backend_facts.of(run.backend).fetches_each_batch
                            and per_record == 1 and not run.fetch_timed_in_graph),
    )


def _per_step_us(total_ms, records, per_record):
    """A total over every step recorded (ms), per step (µs); `None` where
    either is unknown."""
    if total_ms is None or not records:
        return None
    return total_ms * 1e3 / (records * per_record)


def _handover_share(wait_share, ready_fetch_ms, wait_mean_ms):
    """The share of the steady-state time spent handing over ready batches:
    the data wait's share times the ready cost's part of the mean wait;
    `None` without a ready cost (no fetch floor, or a fetch in the graph)."""
    if wait_share is None or ready_fetch_ms is None or not wait_mean_ms or wait_mean_ms <= 0:
        return None
    return wait_share * min(1.0, max(0.0, ready_fetch_ms / wait_mean_ms))


def _device_compute_ms(windows):
    """The median over traced steps of the device's compute per step (ms),
    or `None`. A window's first and last steps are left out: the profiler
    starts and stops inside them, so they hold part of a step, or two."""
    values = []
    for window in windows:
        inner = window.steps[1:-1] if len(window.steps) > 2 else []
        for step in inner:
            value = step["trace"].get("device_busy_ms")
            if isinstance(value, (int, float)) and value >= 0:
                values.append(value)
    if not values:
        return None
    values.sort()
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _pace(numbers):
    """Which side set the pace of the steps timed under asynchronous
    dispatch (`Pace`), or `None`."""
    device, host = numbers.device_paced_steps, numbers.host_paced_steps
    if device is None or host is None or device + host == 0:
        return None
    return Pace(
        set_by="device" if device >= host else "training_thread",
        device_steps=device,
        host_steps=host,
    )


def _share_without_longest(wait, step, count, ready_fetch_ms):
    """The input share with the step that waited longest left out (`None`
    below three steps): a verdict that rests on one wait is a stall."""
    if count < 3 or wait.mean is None or wait.max is None or not step.mean:
        return None
    others_wait_ms = (wait.mean * count - wait.max) / (count - 1)
    # The step left out: its wait, and the other parts of a mean step.
    others_step_ms = (step.mean * count - wait.max - (step.mean - wait.mean)) / (count - 1)
    starved_data_wait_ms = max(0.0, others_wait_ms - (ready_fetch_ms or 0.0))
    return _ratio(starved_data_wait_ms, others_step_ms) if others_step_ms > 0 else None
