"""Running statistics in constant memory (`stats.RunningStats`), against
numpy's exact figures on the same values."""

import numpy as np

from tb_devicecost.recording import stats


def test_percentiles_are_within_a_bin_of_the_exact_ones():
    """Geometric bins 2% wide: each percentile is within 1% of numpy's
    (the nearest-rank value), over values spanning six decades."""
    rng = np.random.default_rng(0)
    values = np.exp(rng.uniform(np.log(0.002), np.log(5000.0), 20_000))
    running = stats.RunningStats()
    for chunk in np.array_split(values, 37):  # added in batches, as steps are
        running.add(chunk)
    for q in (1, 10, 50, 90, 99, 100):
        exact = np.percentile(values, q, method="inverted_cdf")
        assert abs(running.percentile(q) - exact) <= 0.01 * exact, q


def test_count_total_and_extremes_are_exact():
    values = np.array([3.0, 0.5, 12.25, 0.0, 7.0])
    running = stats.RunningStats()
    running.add(values[:2])
    running.add(values[2:])
    summary = running.summary()
    assert summary["count"] == 5
    assert summary["sum_ms"] == values.sum()
    assert summary["mean_ms"] == values.mean()
    assert (summary["min_ms"], summary["max_ms"]) == (0.0, 12.25)
    # A percentile never leaves the observed range (a bin's centre may).
    assert 0.0 <= summary["p50_ms"] <= 12.25 and summary["p99_ms"] == 12.25


def test_nan_infinite_and_negative_values_are_left_out():
    running = stats.RunningStats()
    running.add([1.0, np.nan, -2.0, np.inf, 3.0])
    assert (running.count, running.total) == (2, 4.0)


def test_an_empty_stream_has_no_figures():
    summary = stats.RunningStats().summary()
    assert summary["count"] == 0
    assert all(summary[key] is None for key in ("mean_ms", "min_ms", "max_ms", "p50_ms", "p99_ms"))


def test_memory_does_not_grow_with_the_number_of_values():
    running = stats.RunningStats()
    running.add(np.ones(10))
    size = running._histogram.nbytes
    for _ in range(100):
        running.add(np.random.default_rng(1).uniform(0, 1e6, 10_000))
    assert running._histogram.nbytes == size
    assert running.count == 1_000_010
