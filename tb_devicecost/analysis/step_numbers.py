"""A run's step numbers: from the aggregate (exact), else the sampled series.

The aggregate (`devicecost/aggregate`) holds every step's statistics as the
recording computed them; the per-step series only the sampled steps, whose
totals are then estimates. `numbers_from_aggregate` and
`numbers_from_series` read one of them into a `StepNumbers`, adding to the
run's problems what they had to leave out or estimate.
"""

import numpy as np

from tb_devicecost.analysis.guards import MAX_VALUE
from tb_devicecost.analysis.guards import as_count
from tb_devicecost.analysis.guards import as_counts
from tb_devicecost.analysis.guards import as_dict
from tb_devicecost.analysis.guards import as_number
from tb_devicecost.analysis.guards import plausible_array
from tb_devicecost.analysis.guards import series_columns
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.analysis.run_data import Retraces
from tb_devicecost.analysis.run_data import Stats
from tb_devicecost.analysis.run_data import StepNumbers
from tb_devicecost.analysis.run_data import WALL_PARTS
from tb_devicecost.analysis.run_data import Wall
from tb_devicecost.format import vocabulary
from tb_devicecost.format.readable import unreadable_components


def _component_stats(summary):
    """Per-component digest from one `components` entry of the aggregate."""
    summary = as_dict(summary)
    count, total = as_count(summary.get("count")), as_number(summary.get("sum_ms"))
    mean = as_number(summary.get("mean_ms"))
    if mean is None and total is not None and count:
        mean = total / count
    return Stats(
        count=count,
        sum=total,
        mean=mean,
        **{
            key: as_number(summary.get(f"{key}_ms"))
            for key in ("p50", "p90", "p99", "min", "max")
        },
    )


def numbers_from_aggregate(aggregate, problems):
    """Exact `StepNumbers` from the aggregate, or `None` (the series are
    read instead) when it is missing or holds invalid numbers; what it finds
    wrong is added to `problems`."""
    if not isinstance(aggregate, dict):
        return None
    error = aggregate.get("error")
    if isinstance(error, str) and error:
        # Written by a recording that could not write on (docs/FORMAT.md).
        problems.append(reason("recording_stopped", error=error))
    components = aggregate.get("components")
    if not isinstance(components, dict):
        problems.append(reason("aggregate_without_components"))
        return None
    stats = {
        name: _component_stats(components.get(name))
        for name in vocabulary.COMPONENTS + ("step",)
    }
    # The format's rule, which the reader applies too (`readable.py`).
    invalid = unreadable_components(components)
    if invalid:
        problems.append(reason("aggregate_invalid", components=tuple(invalid)))
        return None
    warmup = as_dict(aggregate.get("warmup"))
    spikes = as_dict(aggregate.get("spikes"))
    batch = as_dict(aggregate.get("batch_size"))
    steady_records = as_count(aggregate.get("steady_steps"))
    if steady_records is None:
        steady_records = stats["step"].count
    status = aggregate.get("status")
    return StepNumbers(
        source="aggregate",
        status=status if isinstance(status, str) else "unknown",
        records=as_count(aggregate.get("steps")),
        steady_records=steady_records,
        sessions=as_count(aggregate.get("sessions")),
        stats=stats,
        # No warm-up step recorded: no warm-up time (rather than 0 ms).
        warmup_ms=(
            as_number(warmup.get("sum_ms")) if as_count(warmup.get("count")) else None
        ),
        warmup_count=as_count(warmup.get("count")) or 0,
        warmup_steps=as_counts(warmup.get("steps")),
        spikes=as_count(spikes.get("count")) or 0,
        spike_steps=as_counts(spikes.get("steps")),
        samples=as_count(aggregate.get("samples")),
        samples_per_s=as_number(aggregate.get("samples_per_s")),
        batch_min=as_count(batch.get("min")),
        batch_max=as_count(batch.get("max")),
        batch_distinct=as_count(batch.get("distinct")),
        fetch_floor_ms=as_number(aggregate.get("fetch_floor_ms")),
        fetch=(
            _component_stats(aggregate["fetch"])
            if isinstance(aggregate.get("fetch"), dict)
            else None
        ),
        wall=_wall(aggregate.get("wall_ms")),
        retraces=_retraces(aggregate.get("retraces")),
        device_paced_steps=as_count(as_dict(aggregate.get("pace")).get("device_steps")),
        host_paced_steps=as_count(as_dict(aggregate.get("pace")).get("host_steps")),
        self_ms=as_number(as_dict(aggregate.get("self_ms")).get("training_thread")),
        worker_self_ms=as_number(as_dict(aggregate.get("self_ms")).get("worker")),
        between_steps_self_ms=as_number(as_dict(aggregate.get("self_ms")).get("between_steps")),
    )


def _wall(wall):
    wall = as_dict(wall)
    parts = {key: as_number(wall.get(key)) for key in ("total",) + WALL_PARTS}
    if parts["total"] is None and all(parts[key] is not None for key in WALL_PARTS):
        parts["total"] = sum(parts[key] for key in WALL_PARTS)
    return Wall(**parts)


def _retraces(retraces):
    if not isinstance(retraces, dict):
        return Retraces()
    source = retraces.get("source")
    return Retraces(
        count=as_count(retraces.get("count")),
        steps=as_counts(retraces.get("steps")),
        source=source if isinstance(source, str) else None,
    )


def numbers_from_series(series, problems):
    """Estimated `StepNumbers` from the sampled per-step series, or `None`
    without a readable step; implausible steps are dropped, in `problems`."""
    keys = [vocabulary.component_column(name) for name in vocabulary.COMPONENTS]
    steps, found = series_columns(series, keys + [vocabulary.BATCH_SIZE, vocabulary.WARMUP])
    if steps is None:
        return None
    # A missing column reads NaN: its steps are dropped, or its value unknown.
    missing = np.full(len(steps), np.nan)
    found = {key: missing if values is None else values for key, values in found.items()}
    columns = {name: found[key] for name, key in zip(vocabulary.COMPONENTS, keys)}
    batch = found[vocabulary.BATCH_SIZE]
    # 1.0 for a warm-up step; absent (NaN here) in runs written before the
    # flag was.
    flags = found[vocabulary.WARMUP]
    valid = np.isfinite(steps) & (steps >= 0) & (steps <= MAX_VALUE)
    for values in columns.values():
        valid &= plausible_array(values)
    dropped = int((~valid).sum())
    if dropped:
        problems.append(reason("steps_dropped", dropped=dropped))
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
    problems.append(reason("sampled_steps", steps=int(steps.size),
                           first_is_warmup=bool(warmup.any()) and not flagged))
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
    known = batch[steady][plausible_array(batch[steady]) & (batch[steady] >= 1)]
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
