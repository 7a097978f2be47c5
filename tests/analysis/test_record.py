"""`tb_devicecost.analysis.record`: raw documents read into a typed run.

Bad values (NaN, negatives, malformed fields) are dropped here and never
reach the verdicts; where the step ran and the device's busy share are read
from what the recorder writes.
"""

import numpy as np
import pytest

from tb_devicecost import words
from tb_devicecost.analysis import guards
from tb_devicecost.analysis import names
from tb_devicecost.analysis import record
from tb_devicecost.analysis import run_data

from tests.support.analyzed import analyzed_gpu_run, assert_json_clean
from tests.support.documents import (
    cpu_placement,
    gpu_placement,
    make_aggregate,
    make_record,
    make_trace,
)


def test_series_fallback_without_aggregate():
    rng = np.random.default_rng(3)
    steps = np.arange(0, 60)
    wait, compute, host = rng.random(60), 2 + rng.random(60), rng.random(60) / 10
    compute[0] = 300.0  # The warm-up step.
    series = {"step": steps, "data_wait_ms": wait, "compute_ms": compute,
              "host_overhead_ms": host, "batch_size": np.full(60, 32.0)}
    record = make_record("s/train", series=series, info={"batch_size": 32})
    result = words.analyze_run(record)
    step = (wait + compute + host)[1:]
    assert result["source"] == "series"
    assert result["steps"] == 60
    assert result["warmup_ms"] == pytest.approx(wait[0] + compute[0] + host[0])
    assert result["step_ms"]["mean"] == pytest.approx(step.mean())
    assert result["step_ms"]["p50"] == pytest.approx(np.percentile(step, 50))
    assert result["compute_ms"]["p90"] == pytest.approx(np.percentile(compute[1:], 90))
    assert result["shares"]["data_wait"] == pytest.approx(wait[1:].sum() / step.sum())
    assert result["samples_per_s"] == pytest.approx(32 * 59 / (step.sum() / 1e3))
    assert any("sampled step" in problem for problem in result["problems"])


def test_series_fallback_takes_the_warmup_steps_as_flagged():
    # Two fits: the first warms up over steps 0 and 1, the second at step 30.
    steps = np.arange(0, 60)
    compute = np.full(60, 2.0)
    compute[[0, 1, 30]] = [300.0, 40.0, 250.0]
    flags = np.zeros(60)
    flags[[0, 1, 30]] = 1.0
    series = {"step": steps, "data_wait_ms": np.full(60, 0.5), "compute_ms": compute,
              "host_overhead_ms": np.full(60, 0.1), "batch_size": np.full(60, 32.0),
              "warmup": flags}
    run = record.read_run(make_record("s/train", series=series))
    numbers = run.numbers
    assert numbers.source == "series"
    assert numbers.warmup_steps == [0, 1, 30]
    assert numbers.warmup_count == 3
    assert numbers.warmup_ms == pytest.approx(300.0 + 40.0 + 250.0 + 3 * 0.6)
    assert numbers.steady_records == 57
    assert numbers.stats["step"].mean == pytest.approx(2.6)
    assert not any("step 0 taken" in problem for problem in words.render(run.problems))
    # Without the flag (older runs), step 0 is taken as the only warm-up.
    del series["warmup"]
    run = record.read_run(make_record("s/train", series=series))
    assert run.numbers.warmup_steps == [0]
    assert any("step 0 taken as the warm-up" in problem for problem in words.render(run.problems))


def test_nan_and_negative_values_are_ignored():
    aggregate = make_aggregate(1.0, 3.0, 0.2)
    aggregate["components"]["compute"]["sum_ms"] = float("nan")
    aggregate["components"]["host_overhead"]["p90_ms"] = -1.0
    series = {
        "step": np.arange(6),
        "data_wait_ms": np.array([1.0, 1.0, np.nan, 1.0, 1.0, 1.0]),
        "compute_ms": np.array([50.0, 3.0, 3.0, -2.0, 3.0, 3.0]),
        "host_overhead_ms": np.array([0.0, 0.2, 0.2, 0.2, np.inf, 0.2]),
        "batch_size": np.full(6, 32.0),
    }
    record = make_record("n/train", aggregate=aggregate, series=series)
    result = words.analyze_run(record)
    assert result["source"] == "series"
    # Steps 2, 3, 4 hold NaN, negative or infinite values; 0 is the warm-up.
    assert result["steady_steps"] == 2
    assert result["step_ms"]["mean"] == pytest.approx(4.2)
    assert any("NaN" in problem for problem in result["problems"])
    assert_json_clean(result)


def test_invalid_percentile_in_aggregate_becomes_none():
    aggregate = make_aggregate(1.0, 3.0, 0.2)
    aggregate["components"]["host_overhead"]["p90_ms"] = float("nan")
    aggregate["samples_per_s"] = -3.0
    result = words.analyze_run(make_record("p/train", aggregate=aggregate))
    assert result["source"] == "aggregate"
    assert result["host_overhead_ms"]["p90"] is None
    # Derived from the batch size and the mean step instead.
    assert result["samples_per_s"] == pytest.approx(32 / (4.2 / 1e3))
    assert_json_clean(result)


def test_device_choice():
    assert analyzed_gpu_run()["device"] == "GPU:0"
    placement = cpu_placement()
    placement["ops"] = {}
    placement["variables"] = {"CPU:0": 1, "CPU:1": 5}
    record = make_record(
        "v/train", aggregate=make_aggregate(0.0, 1.0, 0.0), placement=placement
    )
    assert words.analyze_run(record)["device"] == "CPU:1"
    bare = make_record("none/train", aggregate=make_aggregate(0.0, 1.0, 0.0))
    bare.placement = None
    result = words.analyze_run(bare)
    assert result["device"] is None
    assert result["placement"]["ops"] == {}


def test_device_is_where_the_step_ran_not_the_visible_devices():
    def device_of(placement):
        record = make_record(
            "d/train", aggregate=make_aggregate(0.0, 1.0, 0.0),
            placement=placement)
        return words.analyze_run(record)

    # Two logical CPUs visible, every op on the first.
    plain = cpu_placement(ops=400)
    plain["devices"]["logical"].append({"name": "CPU:1", "kind": "CPU"})
    result = device_of(plain)
    assert result["device"] == "CPU:0"
    assert result["devices_used"] == ["CPU:0"]
    assert result["device_source"] == "ops"
    # A pinned layer: both devices ran ops, the busier first.
    result = device_of(cpu_placement(ops=400, extra_devices={"CPU:1": 10}))
    assert result["devices_used"] == ["CPU:0", "CPU:1"]
    # Nothing but the visible devices: said so, not taken as fact.
    bare = gpu_placement()
    bare["ops"], bare["variables"] = {}, {}
    result = device_of(bare)
    assert result["device"] == "GPU:0"
    assert result["device_source"] == "visible_devices"
    assert result["devices_used"] == []
    assert any("only a visible one" in problem for problem in result["problems"])


def test_analyze_run_accepts_a_dict():
    record = make_record("d/train", aggregate=make_aggregate(0.0, 1.0, 0.0))
    as_dict = {field: getattr(record, field) for field in
               ("run", "aggregate", "info", "placement", "trace", "series", "problems")}
    assert words.analyze_run(as_dict) == words.analyze_run(record)


# The typed record.


def test_a_run_without_steps_reads_as_no_numbers():
    run = record.read_run(make_record("empty/train"))
    assert run.numbers == run_data.StepNumbers()
    assert run.numbers.source is None
    assert run.numbers.stats["step"] == run_data.Stats()
    assert run.steps_per_record == 1


def test_stats_per_step_divide_statistics_but_not_totals():
    stats = run_data.Stats(count=3, sum=30.0, mean=10.0, p50=9.0, p90=12.0, p99=None)
    per_step = stats.per_step(10)
    assert (per_step.count, per_step.sum) == (3, 30.0)
    assert per_step.percentiles() == {"p50": 0.9, "p90": 1.2, "p99": None, "mean": 1.0,
                                      "min": None, "max": None}


@pytest.mark.parametrize("name, role", [
    ("gpu/train", ("gpu", "train")), ("a/b/evaluation", ("a/b", "evaluation")),
    ("cpu/validation", ("cpu", "validation")), ("mine", ("mine", "")),
    ("train", ("train", "")), ("x/other", ("x/other", "")),
])
def test_role_is_the_last_part_of_the_run_name(name, role):
    assert names.role(name) == role


# The device's busy share, from the trace document as written.


def test_device_busy_fraction_is_the_mean_of_the_trace_windows():
    def read(trace):
        return record.read_run(make_record(
            "gpu/train", aggregate=make_aggregate(0.02, 1.0, 0.01),
            placement=gpu_placement(), trace=trace))

    # A window without a device plane (None) has no busy share.
    run = read(make_trace(0.3, None, 0.1))
    assert [window.device_busy_fraction for window in run.trace_windows] == [0.3, None, 0.1]
    assert run.device_busy_fraction == pytest.approx(0.2)
    assert read(make_trace(None)).device_busy_fraction is None
    assert read(None).device_busy_fraction is None
    # The window repeats its summary's share; the summary alone is enough.
    trace = make_trace(0.3)
    del trace["windows"][0]["device_busy_fraction"]
    assert read(trace).device_busy_fraction == pytest.approx(0.3)


def test_trace_windows_set_our_numbers_beside_the_traces():
    trace = make_trace(0.4, step_ms=2.0)
    result = words.analyze_run(make_record(
        "gpu/train", aggregate=make_aggregate(0.1, 1.8, 0.1),
        placement=gpu_placement(), trace=trace))
    [window] = result["trace_windows"]
    assert (window["start_step"], window["stop_step"]) == (10, 13)
    assert window["ours"] == {"data_wait_ms": pytest.approx(0.1),
                              "compute_ms": pytest.approx(1.8),
                              "host_overhead_ms": pytest.approx(0.1)}
    assert [step["step"] for step in window["steps"]] == [10, 11, 12]
    assert window["steps"][0]["ours"]["compute_ms"] == pytest.approx(1.8)
    assert window["steps"][0]["trace"]["device_busy_ms"] == pytest.approx(0.8)
    # Our mean data wait (0.1 ms) is the trace's input wait (5% of 2 ms).
    agreement = window["data_wait_agreement"]
    assert agreement["disagree"] is False
    assert agreement["message"].endswith("They agree.")


# Issue 16: numbers that no recorder writes never reach the verdicts as
# infinities, and never raise.


def test_integers_too_large_for_a_float_are_ignored():
    aggregate = make_aggregate(0.5, 2.0, 0.1)
    aggregate["steps"] = 10**400
    aggregate["samples"] = 10**400
    aggregate["components"]["compute"]["p90_ms"] = 10**400
    result = words.analyze_run(make_record("big/train", aggregate=aggregate))
    assert result["steps"] is None
    assert result["compute_ms"]["p90"] is None
    assert result["step_ms"]["mean"] == pytest.approx(2.6)
    assert_json_clean(result)


@pytest.mark.parametrize("value", [1e308, 1e-310, 1e16, float("inf")])
def test_implausible_finite_values_are_invalid_numbers(value):
    assert guards.as_number(value) is None
    assert guards.as_number(0.0) == 0.0
    assert guards.as_number(1e-6) == 1e-6


def test_extreme_finite_values_in_the_series_are_ignored():
    steps = np.arange(6)
    series = {"step": steps, "data_wait_ms": np.array([1.0, 1.0, 1e308, 1.0, 1.0, 1.0]),
              "compute_ms": np.array([2.0, 2.0, 2.0, 1e-310, 2.0, 2.0]),
              "host_overhead_ms": np.full(6, 0.1), "batch_size": np.full(6, 32.0)}
    result = words.analyze_run(make_record("odd/train", series=series))
    assert result["steady_steps"] == 3
    assert result["step_ms"]["max"] == pytest.approx(3.1)
    assert_json_clean(result)


def test_a_trace_document_with_an_unhashable_step_is_read():
    trace = make_trace(0.5)
    window = trace["windows"][0]
    window["steps"][0]["step"] = [1, 2]
    window["recorded_steps"][1]["step"] = {"a": 1}
    window["start_step"] = {"deep": [1]}
    window["host"] = ["not", "a", "host"]
    result = words.analyze_run(make_record(
        "gpu/train", aggregate=make_aggregate(0.1, 1.0, 0.1), trace=trace))
    [analysed] = result["trace_windows"]
    assert analysed["steps"][0]["step"] is None
    assert analysed["start_step"] is None and analysed["host"] is None
    assert_json_clean(result)


def test_what_a_run_object_holds_is_bounded_whatever_a_document_holds():
    trace = make_trace(0.5)
    trace["windows"] = trace["windows"] * 100_000
    aggregate = make_aggregate(0.1, 1.0, 0.1)
    aggregate["warmup"]["steps"] = list(range(100_000))
    placement = cpu_placement()
    placement["ops"] = {f"CPU:{index}": 1 for index in range(100_000)}
    result = words.analyze_run(make_record(
        "big/train", aggregate=aggregate, trace=trace, placement=placement))
    assert len(result["trace_windows"]) == guards.MAX_TRACE_WINDOWS
    assert result["warmup_steps"] == list(range(100_000 - guards.MAX_ITEMS, 100_000))
    assert len(result["placement"]["ops"]) == guards.MAX_ITEMS
