"""Runs of the callback's cost on H200 hosts, pooled across runs.

`tests/data/h200/overhead/` keeps what `benchmarks/gpu_backends.py --json`
recorded on NVIDIA H200 hosts (single whole fits with and without the
callback, each pair's ratio; CI has no GPU and reads them here). One run's
bootstrap interval does not hold the next run's median there, so runs of
the same step code are pooled (`gpu_backends.py --pool`): the median of
every pair, with a two-level bootstrap interval (runs, then pairs).
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.support import paths


BENCHMARK = os.path.join(paths.REPO, "benchmarks", "gpu_backends.py")
KEPT = os.path.join(paths.DATA, "h200", "overhead")
# The JAX MLP's runs of one step code (c8c82d7's), on three hosts.
JAX_MLP_RUNS = ("jax_mlp32_single_fits_170_c8c82d7.json", "jax_single_fits_100_af8bfdb.json",
                "jax_mlp32_single_fits_170_479a9c5.json")


@pytest.fixture(scope="module")
def benchmark():
    spec = importlib.util.spec_from_file_location("gpu_backends", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pooled_interval_reaches_from_the_lowest_run_to_the_highest(benchmark):
    """Three runs of constant ratios: a resample drawing the same run three
    times (1 in 27, above 2.5%) gives that run's value, so the interval's
    ends are the outer runs'; the pooled median is the middle run's."""
    median, (low, high) = benchmark.pooled_median_interval([[1.0] * 40, [1.1] * 40, [1.2] * 40])
    assert median == pytest.approx(1.1)
    assert low == pytest.approx(1.0)
    assert high == pytest.approx(1.2)


def test_runs_that_disagree_widen_the_interval_that_pairs_alone_would_not(benchmark):
    """The same within-run spread, the runs 0.04 apart or together: the
    interval of the runs apart is wider by about the runs' distance."""
    spread = [-0.02, -0.01, 0.0, 0.01, 0.02] * 20
    together = [[1.02 + value for value in spread] for _ in range(3)]
    apart = [[centre + value for value in spread] for centre in (1.00, 1.02, 1.04)]
    _, (low, high) = benchmark.pooled_median_interval(together)
    _, (apart_low, apart_high) = benchmark.pooled_median_interval(apart)
    assert apart_high - apart_low > (high - low) + 0.02


def test_one_run_and_too_few_values(benchmark):
    assert benchmark.pooled_median_interval([[1.03] * 10]) == (pytest.approx(1.03), [
        pytest.approx(1.03), pytest.approx(1.03)])
    assert benchmark.pooled_median_interval([[1.0], []]) is None


def test_the_kept_jax_mlp_runs_pool_to_a_median_between_theirs(benchmark):
    """Recorded on H200 hosts: the pooled median of the three JAX MLP runs
    lies between the runs' medians, counts every pair, and its interval
    holds it."""
    rows = benchmark.pool([os.path.join(KEPT, name) for name in JAX_MLP_RUNS])
    mlp = [row for row in rows if row[0] == ("jax", "gpu", "mlp b32")]
    assert len(mlp) == 1
    _, each, median, (low, high) = mlp[0]
    assert [name for name, _, _ in each] == list(JAX_MLP_RUNS)
    assert [pairs for _, _, pairs in each] == [170, 100, 170]
    medians = [value for _, value, _ in each]
    assert min(medians) <= median <= max(medians)
    assert low <= median <= high
    # The af8bfdb file holds the CNN too: a row of its own.
    assert ("jax", "gpu", "cnn b128") in [row[0] for row in rows]


@pytest.mark.parametrize("text", [
    '{"a": 1}',
    'not json',
    '[{"backend": "jax", "device": "gpu", "case": "mlp b32", "single_ratios": ["x"]}]',
    '[{"backend": "jax", "device": "gpu", "case": "mlp b32", "single_ratios": null}]',
])
def test_a_file_that_is_not_a_kept_run_is_one_line_and_exit_1(tmp_path, text):
    bad = tmp_path / "notes.json"
    bad.write_text(text, encoding="utf-8")
    completed = subprocess.run([sys.executable, BENCHMARK, "--pool", str(bad)],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert "notes.json: not a kept `--json` file" in completed.stderr
