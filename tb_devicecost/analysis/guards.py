"""Guards: the only code that looks at a run's raw values.

What the reader hands over is what was written: JSON documents and per-step
series, from this version, an older one or a damaged file. They can hold
anything: a missing key, NaN, a negative time, a string where a list
belongs. Each function here reads one kind of field and returns it checked,
or an empty or `None` value when it cannot be trusted: numbers finite,
non-negative and inside `[MIN_VALUE, MAX_VALUE]` (or 0: the format's rule,
`format/readable.py`, which the reader applies too), lists and objects
bounded by `MAX_ITEMS`. `record.read_run` and the modules it calls read raw
documents through them, and nothing else does.
"""

import numpy as np

from tb_devicecost.format import vocabulary
from tb_devicecost.format.readable import MAX_VALUE
from tb_devicecost.format.readable import MIN_VALUE
from tb_devicecost.format.readable import as_number
from tb_devicecost.format.readable import plausible

# At most this many items of a list (the newest) or keys of an object are
# read, and the newest MAX_TRACE_WINDOWS trace windows (the recording keeps
# 20): what a run object holds, and what analysing it costs, stays bounded
# whatever a document holds.
MAX_ITEMS = 1000
MAX_TRACE_WINDOWS = 20

__all__ = [
    "MAX_ITEMS", "MAX_TRACE_WINDOWS", "MAX_VALUE", "MIN_VALUE", "as_count",
    "as_count_map", "as_counts", "as_dict", "as_items", "as_list", "as_number",
    "as_text", "float_array", "plausible", "plausible_array", "record_field",
]


def record_field(record, name, default=None):
    """A field of a `reader.RunRecord` or of a dict; `default` for `None`."""
    if isinstance(record, dict):
        value = record.get(name, default)
    else:
        value = getattr(record, name, default)
    return default if value is None else value


def as_dict(value):
    """A JSON object field, or `{}` when it is missing or malformed."""
    return value if isinstance(value, dict) else {}


def as_list(value, limit=MAX_ITEMS):
    """A JSON list field (its last `limit` items), or `[]` when it is
    missing or malformed."""
    return value[-limit:] if isinstance(value, list) else []


def as_items(value, limit=MAX_ITEMS):
    """The first `limit` `(key, value)` pairs of a JSON object field."""
    items = []
    for item in as_dict(value).items():
        if len(items) == limit:
            break
        items.append(item)
    return items


def as_text(value):
    """A JSON string field, or `None` when it is missing or not a string."""
    return value if isinstance(value, str) else None


def as_count(value):
    """A non-negative whole number (a fraction is truncated), or `None`."""
    value = as_number(value)
    return None if value is None else int(value)


def as_counts(values):
    """The readable counts of a JSON list (e.g. step numbers)."""
    return [as_count(value) for value in as_list(values) if as_count(value) is not None]


def as_count_map(value):
    """`{name: count}` of a JSON object, unreadable counts left out."""
    counts = {}
    for key, count in as_items(value):
        count = as_count(count)
        if count is not None:
            counts[str(key)] = count
    return counts


def float_array(values):
    """A 1-D float array of `values`, or `None` when they are not numbers."""
    if values is None:
        return None
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        return None


def series_columns(series, keys):
    """`(steps, {key: values})` of a record's per-step series, as float
    arrays: each column the steps' length, or `None` where it is missing,
    not numbers or of another length; `(None, {})` without a step.

    Args:
        series: The record's series, `{column: values}` (anything: checked
            here).
        keys: The columns wanted besides `step`.
    """
    series = as_dict(series)
    steps = float_array(series.get(vocabulary.STEP))
    if steps is None or steps.size == 0:
        return None, {}
    columns = {}
    for key in keys:
        values = float_array(series.get(key))
        columns[key] = values if values is not None and len(values) == len(steps) else None
    return steps, columns


def plausible_array(values):
    """`plausible` of each value of a float array."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (
            (values == 0) | ((values >= MIN_VALUE) & (values <= MAX_VALUE))
        )
