"""Running statistics in constant memory: totals and percentiles per component.

Percentiles come from a histogram with geometric bins (2% wide), so a
percentile is within 1% of the exact value however long the run is, and
memory stays a few kilobytes per component.
"""

import math

import numpy as np

# Values below this (milliseconds) share the first bin; they are too small to
# matter next to a step and a log scale cannot hold zero.
_SMALLEST_MS = 1e-3
_BIN_RATIO = 1.02
_LOG_RATIO = math.log(_BIN_RATIO)
# From 1 microsecond to about 3 hours per step.
_NUM_BINS = int(math.ceil(math.log(1e7 / _SMALLEST_MS) / _LOG_RATIO)) + 2


def _bin_indices(values_ms):
    values = np.asarray(values_ms, dtype=np.float64)
    indices = np.floor(
        np.log(np.maximum(values, _SMALLEST_MS) / _SMALLEST_MS) / _LOG_RATIO
    ).astype(np.int64) + 1
    indices[values < _SMALLEST_MS] = 0
    # Ufuncs, not `np.clip`: its Python layers cost more than the binning
    # at an epoch's end, where the caches are cold (indices are >= 0).
    return np.minimum(indices, _NUM_BINS - 1, out=indices)


def _bin_value(index):
    if index == 0:
        return 0.0
    # Geometric centre of the bin.
    return _SMALLEST_MS * _BIN_RATIO ** (index - 1 + 0.5)


class RunningStats:
    """Count, total, extremes and percentiles of a stream of milliseconds."""

    def __init__(self):
        self.count = 0
        self.total = 0.0
        self.minimum = math.inf
        self.maximum = -math.inf
        self._histogram = np.zeros(_NUM_BINS, dtype=np.int64)

    def add(self, values_ms):
        """Adds a 1-D array of values (NaN and negative values are ignored)."""
        values = np.asarray(values_ms, dtype=np.float64)
        values = values[np.isfinite(values) & (values >= 0)]
        if values.size == 0:
            return
        self.count += int(values.size)
        # The ufuncs' reductions: the methods add a Python frame each.
        self.total += float(np.add.reduce(values))
        self.minimum = min(self.minimum, float(np.minimum.reduce(values)))
        self.maximum = max(self.maximum, float(np.maximum.reduce(values)))
        np.add.at(self._histogram, _bin_indices(values), 1)

    @property
    def mean(self):
        return self.total / self.count if self.count else None

    def percentile(self, q, cumulative=None):
        """Returns the `q`-th percentile (0-100), or `None` when empty;
        `cumulative`: the histogram's cumulative sum, where the caller
        reads several percentiles of one state."""
        if not self.count:
            return None
        if cumulative is None:
            cumulative = np.cumsum(self._histogram)
        rank = max(1, int(math.ceil(q / 100.0 * self.count)))
        index = int(np.searchsorted(cumulative, rank))
        # The bin centre can stray outside the observed range; clamp to it.
        return min(max(_bin_value(index), self.minimum), self.maximum)

    def summary(self):
        """Returns the JSON-ready digest written into the aggregate."""
        cumulative = np.cumsum(self._histogram) if self.count else None
        return {
            "count": self.count,
            "sum_ms": self.total,
            "mean_ms": self.mean,
            "min_ms": self.minimum if self.count else None,
            "max_ms": self.maximum if self.count else None,
            "p50_ms": self.percentile(50, cumulative),
            "p90_ms": self.percentile(90, cumulative),
            "p99_ms": self.percentile(99, cumulative),
        }
