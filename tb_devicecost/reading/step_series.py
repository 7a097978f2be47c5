"""Per-step series decoded from either schema into arrays by column.

A run's per-step numbers arrive as blocks of steps (schema 2: one
`[steps, columns]` float tensor per block, `metadata.BLOCK_COLUMNS`) or as
one scalar per tag per step (schema 1, runs written before blocks). Both
become the same `RunRecord.series` here (`fill_series`), one row per step,
so nothing after the reader knows which schema a run was written in.
"""

import numpy as np

from tb_devicecost.format import metadata
from tb_devicecost.format import readable
from tb_devicecost.format import vocabulary

# Written since the warm-up flag is written per step; older runs lack it.
_OPTIONAL_SERIES = frozenset({metadata.TAG_WARMUP})


def _as_float(value):
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


_SERIES_KEYS = (vocabulary.STEP,) + metadata.BLOCK_COLUMNS


def _plausible_step(step):
    """Whether a step number is one a fit reaches (`readable.MAX_VALUE`):
    one near 2**63 would overflow the series' integers."""
    return -readable.MAX_VALUE <= step <= readable.MAX_VALUE


def _too_far(run, count, what, problems):
    if count:
        problems.setdefault(run, []).append(
            f"{what}: {count:,} numbered beyond {readable.MAX_VALUE:,.0f} were left out "
            "(no fit reaches such a step)."
        )


def _rows_from_blocks(run, data, problems):
    """The rows of blocks of steps (schema 2) as a float64 array of
    `_SERIES_KEYS` columns, wall times absolute. A block of another shape
    or type is left out, and said."""
    parts = []
    bad = far = 0
    width = len(metadata.BLOCK_COLUMNS)
    for datum in data:
        values = getattr(datum, "numpy", None)
        if (
            not isinstance(values, np.ndarray)
            or values.ndim != 2
            or values.shape[1] != width
            or values.dtype.kind != "f"
        ):
            bad += 1
            continue
        first = int(datum.step)
        if not (_plausible_step(first) and _plausible_step(first + len(values))):
            far += 1
            continue
        block = np.empty((len(values), width + 1), dtype=np.float64)
        block[:, 0] = first + np.arange(len(values))
        block[:, 1:] = values
        block[:, 1] += float(datum.wall_time)
        parts.append(block)
    if bad:
        problems.setdefault(run, []).append(
            f"{metadata.TAG_STEPS}: {bad} block(s) of steps are not "
            f"[steps, {width}] float tensors and were left out."
        )
    _too_far(run, far, f"{metadata.TAG_STEPS}: block(s) of steps", problems)
    if not parts:
        return np.empty((0, width + 1), dtype=np.float64)
    return np.concatenate(parts)


def _rows_from_scalars(run, by_tag, problems):
    """The rows of per-step scalars (schema 1): steps that have every
    column (the warm-up flag may be missing: runs written before it)."""
    steps = None
    far = set()
    columns = {}
    wall_times = {}
    for tag, key in metadata.SERIES_KEY.items():
        data = by_tag.get(tag) or []
        if not data and tag in _OPTIONAL_SERIES:
            continue
        by_step = {}
        for datum in data:
            try:
                step = int(datum.step)
            except (TypeError, ValueError, OverflowError):
                continue
            if not _plausible_step(step):
                far.add(step)
                continue
            by_step[step] = _as_float(datum.value)
            wall_times.setdefault(step, _as_float(datum.wall_time))
        columns[key] = by_step
        steps = set(by_step) if steps is None else steps & set(by_step)
    _too_far(run, len(far), "per-step series: step(s)", problems)
    steps = sorted(steps or ())
    rows = np.full((len(steps), len(_SERIES_KEYS)), np.nan, dtype=np.float64)
    rows[:, 0] = steps
    rows[:, 1] = [wall_times[step] for step in steps]
    for index, key in enumerate(_SERIES_KEYS[2:], start=2):
        if key in columns:
            rows[:, index] = [columns[key][step] for step in steps]
    return rows, set(columns)


def fill_series(run_record, block_data, by_tag, points, problems):
    """`run_record.series`: per-step arrays by column name (`step`,
    `wall_time` in seconds since the epoch, `data_wait_ms`, `compute_ms`,
    `host_overhead_ms`, `batch_size`, `warmup`), in step order, one row per
    step (blocks win over scalars of the same step), at most `points`
    rows, evenly spread over the rows read, the last one kept."""
    block_rows = _rows_from_blocks(run_record.run, block_data, problems)
    scalar_rows, present = (
        _rows_from_scalars(run_record.run, by_tag, problems) if by_tag else (None, set()))
    parts = [rows for rows in (scalar_rows, block_rows) if rows is not None and len(rows)]
    if not parts:
        rows = block_rows
    else:
        rows = np.concatenate(parts)
        # Sorted by step, stable, then the last row of each step: a block's.
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        last = np.ones(len(rows), dtype=bool)
        last[:-1] = rows[1:, 0] != rows[:-1, 0]
        rows = rows[last]
    if points and len(rows) > points:
        keep = np.unique(np.round(np.linspace(0, len(rows) - 1, points)).astype(np.int64))
        rows = rows[keep]
    series = {vocabulary.STEP: rows[:, 0].astype(np.int64)}
    for index, key in enumerate(_SERIES_KEYS[1:], start=1):
        if key == vocabulary.WARMUP and not len(block_rows) and key not in present:
            continue  # Runs written before the flag existed.
        series[key] = rows[:, index]
    run_record.series = series
