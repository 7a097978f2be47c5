"""The analysis module: numbers, verdicts, findings and the comparison.

Real fits (the `fit_logdir` fixture) check the verdicts end to end;
synthetic records check each threshold, with the expected values computed
here from the inputs.
"""

import ast
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from tb_devicecost import analysis
from tb_devicecost import formatting
from tb_devicecost import metadata
from tb_devicecost import reader

from conftest import INPUT_SLEEP_S


def finding(result, finding_id):
    matches = [f for f in result["findings"] if f["id"] == finding_id]
    assert len(matches) <= 1, result["findings"]
    return matches[0] if matches else None


def ids(result):
    return [f["id"] for f in result["findings"]]


def run_with(helpers, data_wait, compute, host, name="cpu/train", **options):
    aggregate_options = {
        key: options.pop(key)
        for key in ("warmup_ms", "batch_size", "spikes", "fetch_floor_ms", "status")
        if key in options
    }
    aggregate = helpers.make_aggregate(data_wait, compute, host, **aggregate_options)
    return analysis.analyze_run(helpers.make_record(name, aggregate=aggregate, **options))


def assert_json_clean(value):
    json.dumps(value, allow_nan=False)


# The module stays pure.


def test_analysis_imports_neither_keras_tensorflow_nor_tensorboard():
    with open(analysis.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    # Its own formatting rule aside (which imports only the standard library).
    assert imported <= {"math", "re", "numpy", "tb_devicecost.formatting"}, imported
    with open(formatting.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    assert names <= {"decimal", "math"}, names
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    # Nor does importing it load a framework (the package loads only
    # TensorBoard's protobuf definitions, for its format module).
    code = (
        "import sys; import tb_devicecost.analysis; "
        "bad = [m for m in ('keras', 'tensorflow') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_thresholds_are_the_profilers():
    assert analysis.INPUT_HIGH == 0.20
    assert analysis.INPUT_MODERATE == 0.05
    assert analysis.HOST_HIGH == 0.15
    assert analysis.HOST_MODERATE == 0.03
    assert analysis.WARMUP_DOMINATED == 0.5
    assert analysis.WARMUP_FINDING == 0.2
    assert analysis.LATENCY_DEVICE_BUSY == 0.5


# Real fits.


def test_input_bound_fit_is_input_bound(fit_records):
    record = fit_records["input/train"]
    result = analysis.analyze_run(record)
    assert result["verdict"] == "input_bound"
    assert result["steady_verdict"] == "input_bound"
    assert result["findings"][0]["id"] == "input_bound"
    assert result["findings"][0]["severity"] == "high"
    # The pipeline sleeps INPUT_SLEEP_S per batch, one batch at a time: no
    # step can be shorter. (The wait alone can be: tf.data may start the
    # next batch while the step runs.)
    assert result["step_ms"]["p50"] >= INPUT_SLEEP_S * 1e3 * 0.95
    components = record.aggregate["components"]
    expected_share = (
        components["data_wait"]["mean_ms"] - result["ready_fetch_ms"]
    ) / components["step"]["mean_ms"]
    assert result["input_share"] == pytest.approx(expected_share)
    assert expected_share >= analysis.INPUT_HIGH
    message = result["findings"][0]["message"]
    assert analysis.fmt_share(expected_share) in message
    assert analysis.fmt_ms(components["step"]["mean_ms"]) + " ms" in message
    assert "num_parallel_calls=tf.data.AUTOTUNE" in result["findings"][0]["fix"]
    assert ".prefetch(tf.data.AUTOTUNE)" in result["findings"][0]["fix"]


def test_compute_bound_fit_is_not_input_bound(fit_records):
    record = fit_records["compute/train"]
    result = analysis.analyze_run(record)
    numbers = {key: result[key] for key in (
        "data_wait_ms", "step_ms", "fetch_floor_ms", "ready_fetch_ms", "input_share")}
    assert result["verdict"] != "input_bound", numbers
    assert result["steady_verdict"] == "compute_bound", numbers
    assert finding(result, "input_bound") is None
    assert finding(result, "compute_bound")["severity"] == "info"
    # Cached and prefetched: its wait is about the cost of a ready batch.
    assert result["starved_data_wait_ms"] < result["data_wait_ms"]["mean"]
    assert result["input_share"] < analysis.INPUT_MODERATE
    message = finding(result, "compute_bound")["message"]
    assert analysis.fmt_ms(result["fetch_floor_ms"]) + " ms" in message
    assert analysis.fmt_ms(result["data_wait_ms"]["mean"]) + " ms" in message


def test_pinned_layer_shows_second_device_and_copies(fit_records):
    result = analysis.analyze_run(fit_records["pinned/train"])
    placement = result["placement"]
    assert placement["ops"].get("CPU:1", 0) > 0
    assert placement["variables"].get("CPU:1", 0) >= 1
    assert placement["cross_device_copies"] > 0
    assert "CPU:1" in placement["devices"]
    assert result["device"] == "CPU:0"  # Most of the step's ops.
    copies = finding(result, "cross_device_copies")
    assert copies is not None
    assert f"{placement['cross_device_copies']:,} edge" in copies["message"]
    assert "CPU:1" in copies["message"]
    assert "tf.device" in copies["fix"]


def test_fit_numbers_come_from_the_aggregate(fit_records):
    for record in fit_records.values():
        result = analysis.analyze_run(record)
        components = record.aggregate["components"]
        for name in ("step", "data_wait", "compute", "host_overhead"):
            key = "step_ms" if name == "step" else f"{name}_ms"
            assert result[key]["p50"] == components[name]["p50_ms"]
            assert result[key]["p90"] == components[name]["p90_ms"]
            assert result[key]["mean"] == components[name]["mean_ms"]
        assert result["steps"] == record.aggregate["steps"]
        assert result["warmup_ms"] == record.aggregate["warmup"]["sum_ms"]
        assert math.isclose(sum(result["shares"].values()), 1.0)
        assert result["shares"]["data_wait"] == pytest.approx(
            components["data_wait"]["sum_ms"]
            / sum(components[c]["sum_ms"] for c in analysis.COMPONENTS)
        )
        assert result["backend"] == "tensorflow"
        assert result["source"] == "aggregate"
        assert result["problems"] == []
        assert_json_clean(result)


def test_fit_comparison_names_the_slower_run_and_why(fit_records):
    results = [analysis.analyze_run(r) for r in fit_records.values()]
    comparison = analysis.compare_runs(results, baseline="compute/train")
    rows = {row["run"]: row for row in comparison["rows"]}
    row = rows["input/train"]
    base = next(r for r in results if r["run"] == "compute/train")
    slow = next(r for r in results if r["run"] == "input/train")
    # Different batch sizes (32 against 256): compared in samples/s.
    assert row["basis"] == "samples_per_s"
    assert row["same_batch_size"] is False
    assert row["speedup"] == pytest.approx(slow["samples_per_s"] / base["samples_per_s"])
    assert row["speedup"] < 1
    explanation = row["explanation"]
    assert explanation.startswith("input/train is")
    assert f"{row['speedup']:.2f}x" in explanation
    assert "per sample" in explanation
    assert "data wait" in explanation
    assert "input_bound" in explanation


# Verdict thresholds on synthetic runs.


@pytest.mark.parametrize(
    "input_share, verdict, severity",
    [
        (0.20, "input_bound", "high"),
        # A moderate share is a finding; the verdict names the dominant part.
        (0.199, "compute_bound", "moderate"),
        (0.05, "compute_bound", "moderate"),
        (0.049, "compute_bound", None),
    ],
)
def test_input_thresholds(helpers, input_share, verdict, severity):
    # Every step waits `floor` for a ready batch plus the starved part.
    step, floor = 10.0, 0.01
    starved = input_share * step
    wait = starved + floor
    result = run_with(helpers, wait, step - wait, 0.0, batch_size=512,
                      fetch_floor_ms=floor)
    assert result["input_share"] == pytest.approx(input_share)
    assert result["verdict"] == verdict
    found = finding(result, "input_bound")
    assert (found and found["severity"]) == severity
    if found:
        assert analysis.fmt_share(input_share) in found["message"]
        assert (
            f"{analysis.fmt_ms(starved)} ms of the {analysis.fmt_ms(step)} ms mean step"
            in found["message"]
        )


@pytest.mark.parametrize(
    "host_share, verdict, severity",
    [
        (0.15, "host_overhead_bound", "high"),
        (0.149, "compute_bound", "moderate"),
        (0.03, "compute_bound", "moderate"),
        (0.029, "compute_bound", None),
    ],
)
def test_host_thresholds(helpers, host_share, verdict, severity):
    step = 10.0
    host = host_share * step
    result = run_with(helpers, 0.0, step - host, host, batch_size=512)
    assert result["shares"]["host_overhead"] == pytest.approx(host_share)
    assert result["verdict"] == verdict
    found = finding(result, "host_overhead_bound")
    assert (found and found["severity"]) == severity
    if found:
        assert (
            f"{analysis.fmt_ms(host)} ms of the {analysis.fmt_ms(step)} ms mean step"
            in found["message"]
        )
        assert "steps_per_execution" in found["fix"]


def test_high_host_beats_moderate_input(helpers):
    # 10% input (moderate) and 30% host (high): the host is the bottleneck.
    result = run_with(helpers, 1.0, 6.0, 3.0, batch_size=512, fetch_floor_ms=0.01)
    assert result["verdict"] == "host_overhead_bound"
    assert result["findings"][0]["id"] == "host_overhead_bound"
    assert finding(result, "input_bound")["severity"] == "moderate"


def test_both_high_takes_the_larger_share(helpers):
    result = run_with(helpers, 3.0, 2.0, 5.0, batch_size=512)
    assert result["verdict"] == "host_overhead_bound"
    result = run_with(helpers, 5.0, 2.0, 3.0, batch_size=512)
    assert result["verdict"] == "input_bound"


@pytest.mark.parametrize(
    "warmup_share, verdict, finding_id",
    [(0.5, "warmup_dominated", "warmup_dominated"), (0.49, "compute_bound", "warmup"),
     (0.2, "compute_bound", "warmup"), (0.19, "compute_bound", None)],
)
def test_warmup_thresholds(helpers, warmup_share, verdict, finding_id):
    steps, step = 100, 5.0
    steady_wall = steps * step
    warmup = warmup_share / (1 - warmup_share) * steady_wall
    result = run_with(helpers, 0.0, step, 0.0, warmup_ms=warmup, batch_size=512)
    assert result["warmup_share_of_wall"] == pytest.approx(warmup_share)
    assert result["verdict"] == verdict
    assert result["steady_verdict"] == "compute_bound"
    found_ids = {f["id"] for f in result["findings"]} & {"warmup", "warmup_dominated"}
    assert found_ids == ({finding_id} if finding_id else set())
    if finding_id:
        found = finding(result, finding_id)
        assert analysis.fmt_ms(warmup) + " ms" in found["message"]
        assert analysis.fmt_share(warmup_share) in found["message"]
        assert "Exclude warm-up when comparing devices" in found["fix"]
    if verdict == "warmup_dominated":
        assert result["findings"][0]["id"] == "warmup_dominated"
        assert "In steady state the run is compute_bound" in result["findings"][0]["message"]


def test_only_warmup_recorded(helpers):
    aggregate = helpers.make_aggregate([], [], [], warmup_ms=250.0)
    result = analysis.analyze_run(helpers.make_record("one/train", aggregate=aggregate))
    assert result["verdict"] == "warmup_dominated"
    assert result["shares"] == {"data_wait": None, "compute": None, "host_overhead": None}
    assert result["warmup_share_of_wall"] == 1.0
    assert_json_clean(result)


# The fetch floor.


def test_wait_at_the_fetch_floor_is_not_input_bound(helpers):
    # Every step waits 0.3 ms for a ready batch; the floor measured on a
    # synthetic iterator is 0.1 ms; steps are short (1 ms).
    floor, wait, compute = 0.1, 0.3, 0.7
    result = run_with(helpers, wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(wait / (wait + compute))
    assert result["ready_fetch_ms"] == pytest.approx(wait)  # median within 4x floor
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    assert result["verdict"] == "compute_bound"
    message = finding(result, "compute_bound")["message"]
    assert f"the p50 data wait {analysis.fmt_ms(wait)} ms" in message
    assert f"is {analysis.fmt_ms(floor)} ms" in message


def test_wait_far_above_the_floor_is_starvation(helpers):
    floor, wait, compute = 0.1, 3.0, 1.0
    result = run_with(helpers, wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(floor)
    assert result["starved_data_wait_ms"] == pytest.approx(wait - floor)
    assert result["input_share"] == pytest.approx((wait - floor) / (wait + compute))
    assert result["verdict"] == "input_bound"
    message = finding(result, "input_bound")["message"]
    assert (
        f"{analysis.fmt_ms(wait - floor)} ms of the {analysis.fmt_ms(wait + compute)} ms mean step"
        in message
    )
    assert f"of the mean data wait of {analysis.fmt_ms(wait)} ms per step" in message


def test_rare_stalls_are_not_input_bound(helpers):
    # 95 steps get a ready batch in 0.2 ms; 5 wait 20 ms (shuffle refills).
    floor = 0.1
    waits = [0.2] * 95 + [20.0] * 5
    result = run_with(helpers, waits, 4.0, 0.0, fetch_floor_ms=floor, batch_size=512)
    mean_wait = float(np.mean(waits))
    assert result["input_share"] == pytest.approx((mean_wait - 0.2) / (mean_wait + 4.0))
    assert result["input_share"] >= analysis.INPUT_MODERATE
    assert result["verdict"] == "compute_bound"
    stalls = finding(result, "input_stalls")
    assert stalls is not None
    assert "20.0 ms" in stalls["message"]


# Latency-bound needs device evidence.


def gpu_run(helpers, trace=None, batch_size=512, **placement):
    aggregate = helpers.make_aggregate(0.02, 1.0, 0.01, batch_size=batch_size)
    record = helpers.make_record(
        "gpu/train", aggregate=aggregate, placement=helpers.gpu_placement(**placement),
        trace=trace,
    )
    return analysis.analyze_run(record)


def test_latency_bound_with_a_device_trace(helpers):
    result = gpu_run(helpers, trace={"schema": 1, "device_busy_fraction": 0.03})
    assert result["device"] == "GPU:0"
    assert result["verdict"] == "latency_bound"
    found = result["findings"][0]
    assert found["id"] == "latency_bound"
    assert found["severity"] == "high"
    assert f"busy only {analysis.fmt_share(0.03)} of each traced step" in found["message"]
    assert "steps_per_execution" in found["fix"]
    assert "jit_compile=True" in found["fix"]


def test_latency_bound_from_trace_windows(helpers):
    trace = {"schema": 1, "windows": [
        {"device_busy_ms": 0.3, "step_ms": 1.0},
        {"device_busy_ms": 0.1, "step_ms": 1.0},
    ]}
    result = gpu_run(helpers, trace=trace)
    assert result["device_busy_fraction"] == pytest.approx(0.2)
    assert result["verdict"] == "latency_bound"
    assert finding(result, "latency_bound")["severity"] == "moderate"


def test_no_latency_verdict_without_evidence_or_when_busy(helpers):
    assert gpu_run(helpers)["verdict"] == "compute_bound"
    busy = gpu_run(helpers, trace={"schema": 1, "device_busy_fraction": 0.8})
    assert busy["verdict"] == "compute_bound"
    cpu = run_with(helpers, 0.0, 1.0, 0.0, trace={"schema": 1, "device_busy_fraction": 0.1},
                   batch_size=512)
    assert cpu["verdict"] == "compute_bound"


# Findings that are never the verdict.


def test_cpu_ops_on_accelerator_run(helpers):
    result = gpu_run(
        helpers,
        cpu_op_types=("IteratorGetNext", "StringToNumber", "PrefetchDataset", "Unique"),
    )
    placement = result["placement"]
    # Input-pipeline ops belong on the host; the others are culprits.
    assert placement["cpu_ops_on_accelerator_run"] == ["StringToNumber", "Unique"]
    found = finding(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "moderate"
    assert "StringToNumber, Unique" in found["message"]
    assert "40 of its 340 ops" in found["message"]
    assert "accelerator" in found["fix"]


def test_no_cpu_ops_finding_for_input_ops_only(helpers):
    result = gpu_run(helpers, cpu_op_types=("IteratorGetNext", "OptionalGetValue"))
    assert result["placement"]["cpu_ops_on_accelerator_run"] == []
    assert finding(result, "cpu_ops_on_accelerator_run") is None


def test_visible_accelerator_left_unused(helpers):
    placement = helpers.gpu_placement(gpu_ops=0, cpu_ops=500)
    record = helpers.make_record(
        "gpu/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=placement,
    )
    result = analysis.analyze_run(record)
    assert result["device"] == "CPU:0"
    found = finding(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "high"
    assert "GPU:0" in found["message"] and "500" in found["message"]


def test_cross_device_copies_severity(helpers):
    assert finding(gpu_run(helpers, copies=6), "cross_device_copies")["severity"] == "moderate"
    assert finding(gpu_run(helpers, copies=0), "cross_device_copies") is None
    record = helpers.make_record(
        "cpu/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=helpers.cpu_placement(copies=2, extra_devices={"CPU:1": 3}),
    )
    found = finding(analysis.analyze_run(record), "cross_device_copies")
    assert found["severity"] == "info"
    assert "2 edge(s)" in found["message"]
    assert "CPU:1 (3 ops)" in found["message"]


@pytest.mark.parametrize(
    "batch, step, expected",
    [(10, 1.0, True), (64, 9.0, True), (65, 1.0, False), (10, 10.0, False)],
)
def test_small_batch(helpers, batch, step, expected):
    result = run_with(helpers, 0.0, step, 0.0, batch_size=batch)
    found = finding(result, "small_batch")
    assert (found is not None) == expected
    if found:
        assert f"only {batch} samples in {analysis.fmt_ms(step)} ms" in found["message"]
        assert "larger batch" in found["fix"]
        assert "steps_per_execution" in found["fix"]


def test_small_batch_on_accelerator_is_moderate(helpers):
    assert finding(gpu_run(helpers, batch_size=10), "small_batch")["severity"] == "moderate"


def test_every_finding_has_numbers_and_a_fix(helpers, fit_records):
    results = [analysis.analyze_run(r) for r in fit_records.values()]
    results.append(gpu_run(helpers, batch_size=10, copies=3, cpu_op_types=("Unique",)))
    results.append(run_with(helpers, 3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0))
    for result in results:
        assert result["findings"], result["run"]
        for item in result["findings"]:
            assert set(item) == {"id", "severity", "message", "fix"}
            assert item["severity"] in analysis.SEVERITIES
            assert re.search(r"\d", item["message"]), item
            assert len(item["fix"]) > 20, item


# Device, numbers and bad values.


def test_device_choice(helpers):
    assert gpu_run(helpers)["device"] == "GPU:0"
    placement = helpers.cpu_placement()
    placement["ops"] = {}
    placement["variables"] = {"CPU:0": 1, "CPU:1": 5}
    record = helpers.make_record(
        "v/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0), placement=placement
    )
    assert analysis.analyze_run(record)["device"] == "CPU:1"
    bare = helpers.make_record("none/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0))
    bare.placement = None
    result = analysis.analyze_run(bare)
    assert result["device"] is None
    assert result["placement"]["ops"] == {}


def test_series_fallback_without_aggregate(helpers):
    rng = np.random.default_rng(3)
    steps = np.arange(0, 60)
    wait, compute, host = rng.random(60), 2 + rng.random(60), rng.random(60) / 10
    compute[0] = 300.0  # The warm-up step.
    series = {"step": steps, "data_wait_ms": wait, "compute_ms": compute,
              "host_overhead_ms": host, "batch_size": np.full(60, 32.0)}
    record = helpers.make_record("s/train", series=series, info={"batch_size": 32})
    result = analysis.analyze_run(record)
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


def test_nan_and_negative_values_are_ignored(helpers):
    aggregate = helpers.make_aggregate(1.0, 3.0, 0.2)
    aggregate["components"]["compute"]["sum_ms"] = float("nan")
    aggregate["components"]["host_overhead"]["p90_ms"] = -1.0
    series = {
        "step": np.arange(6),
        "data_wait_ms": np.array([1.0, 1.0, np.nan, 1.0, 1.0, 1.0]),
        "compute_ms": np.array([50.0, 3.0, 3.0, -2.0, 3.0, 3.0]),
        "host_overhead_ms": np.array([0.0, 0.2, 0.2, 0.2, np.inf, 0.2]),
        "batch_size": np.full(6, 32.0),
    }
    record = helpers.make_record("n/train", aggregate=aggregate, series=series)
    result = analysis.analyze_run(record)
    assert result["source"] == "series"
    # Steps 2, 3, 4 hold NaN, negative or infinite values; 0 is the warm-up.
    assert result["steady_steps"] == 2
    assert result["step_ms"]["mean"] == pytest.approx(4.2)
    assert any("NaN" in problem for problem in result["problems"])
    assert_json_clean(result)


def test_invalid_percentile_in_aggregate_becomes_none(helpers):
    aggregate = helpers.make_aggregate(1.0, 3.0, 0.2)
    aggregate["components"]["host_overhead"]["p90_ms"] = float("nan")
    aggregate["samples_per_s"] = -3.0
    result = analysis.analyze_run(helpers.make_record("p/train", aggregate=aggregate))
    assert result["source"] == "aggregate"
    assert result["host_overhead_ms"]["p90"] is None
    # Derived from the batch size and the mean step instead.
    assert result["samples_per_s"] == pytest.approx(32 / (4.2 / 1e3))
    assert_json_clean(result)


def test_steps_per_execution_gives_per_step_numbers(helpers):
    aggregate = helpers.make_aggregate(0.0, 40.0, 2.0, batch_size=None)
    record = helpers.make_record(
        "spe/train", aggregate=aggregate,
        info={"steps_per_record": 10, "fetch_in_graph": True, "batch_size": 32},
    )
    result = analysis.analyze_run(record)
    assert result["steps_per_record"] == 10
    assert result["step_ms"]["mean"] == pytest.approx(4.2)
    assert result["compute_ms"]["p50"] == pytest.approx(4.0)
    assert result["steps"] == aggregate["steps"] * 10
    assert result["samples_per_s"] == pytest.approx(32 / (4.2 / 1e3))
    assert result["verdict"] == "compute_bound"
    assert finding(result, "fetch_in_graph") is not None
    assert "steps_per_execution=10" in finding(result, "fetch_in_graph")["message"]


@pytest.mark.parametrize("status, words", [
    ("running", "still being written"), ("interrupted", "interrupted")])
def test_unfinished_run_says_so(helpers, status, words):
    result = run_with(helpers, 0.0, 2.0, 0.0, status=status)
    assert result["status"] == status
    found = finding(result, "incomplete_run")
    assert words in found["message"]
    assert f"the {result['steps']} step(s) recorded so far" in found["message"]
    assert finding(run_with(helpers, 0.0, 2.0, 0.0), "incomplete_run") is None


def test_run_object_has_the_documented_keys(fit_records):
    result = analysis.analyze_run(fit_records["input/train"])
    for key in ("run", "steps", "device", "backend", "batch_size", "step_ms",
                "data_wait_ms", "compute_ms", "host_overhead_ms", "shares",
                "warmup_ms", "warmup_share_of_wall", "spikes", "samples_per_s",
                "placement", "verdict", "findings", "status", "fetch_floor_ms",
                "starved_data_wait_ms", "steps_per_record", "problems"):
        assert key in result, key
    assert set(result["step_ms"]) >= {"p50", "p90", "p99", "mean"}
    assert set(result["shares"]) == {"data_wait", "compute", "host_overhead"}
    assert set(result["placement"]) >= {
        "devices", "variables", "ops", "cpu_ops_on_accelerator_run",
        "cross_device_copies", "input_bytes_per_step",
    }


def test_analyze_run_accepts_a_dict(helpers):
    record = helpers.make_record("d/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0))
    as_dict = {field: getattr(record, field) for field in
               ("run", "aggregate", "info", "placement", "trace", "series", "problems")}
    assert analysis.analyze_run(as_dict) == analysis.analyze_run(record)


# The comparison.


def test_compare_runs_needs_two(helpers):
    one = run_with(helpers, 0.0, 1.0, 0.0)
    assert analysis.compare_runs([]) is None
    assert analysis.compare_runs([one]) is None


def test_gpu_slower_than_cpu_at_a_small_batch(helpers):
    # The seeds' case: batch 10, the GPU's step is a fixed 1.9 ms of compute.
    cpu = run_with(helpers, 0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
    gpu_record = helpers.make_record(
        "gpu/train",
        aggregate=helpers.make_aggregate(0.1, 1.9, 0.05, batch_size=10),
        placement=helpers.gpu_placement(),
    )
    gpu = analysis.analyze_run(gpu_record)
    comparison = analysis.compare_runs([gpu, cpu])
    assert comparison["baseline"] == "cpu/train"  # The CPU run, though second.
    rows = {row["run"]: row for row in comparison["rows"]}
    assert rows["cpu/train"]["speedup"] == 1.0
    assert rows["cpu/train"]["explanation"] == "baseline"
    row = rows["gpu/train"]
    expected = (0.1 + 0.8 + 0.05) / (0.1 + 1.9 + 0.05)
    assert row["speedup"] == pytest.approx(expected)
    assert row["basis"] == "step_time"
    assert row["same_batch_size"] is True
    assert row["delta_ms"]["compute"] == pytest.approx(1.9 - 0.8)
    assert row["delta_ms"]["data_wait"] == pytest.approx(0.0)
    assert row["per_step_ms"]["compute"] == pytest.approx(1.9)
    assert row["per_1000_samples_ms"]["compute"] == pytest.approx(1.9 / 10 * 1000)
    explanation = row["explanation"]
    assert explanation.startswith(f"gpu/train is {expected:.2f}x as fast as cpu/train")
    assert "compute per step is 1.90 ms against 0.800 ms at batch 10" in explanation
    assert "fixed per-step cost" in explanation
    assert "the data wait and host overhead are the same" in explanation


def test_explicit_and_unknown_baseline(helpers):
    a = run_with(helpers, 0.0, 1.0, 0.0, name="a/train")
    b = run_with(helpers, 0.0, 2.0, 0.0, name="b/train")
    comparison = analysis.compare_runs([a, b], baseline="b/train")
    assert comparison["baseline"] == "b/train"
    rows = {row["run"]: row for row in comparison["rows"]}
    assert rows["a/train"]["speedup"] == pytest.approx(2.0)
    assert "as fast as b/train" in rows["a/train"]["explanation"]
    with pytest.raises(ValueError, match=r"Unknown baseline run 'c/train'.*a/train, b/train"):
        analysis.compare_runs([a, b], baseline="c/train")


def test_default_baseline_prefers_the_cpu_training_run(helpers):
    gpu = gpu_run(helpers)
    cpu_validation = run_with(helpers, 0.0, 1.0, 0.0, name="cpu/validation")
    cpu_train = run_with(helpers, 0.0, 1.0, 0.0, name="cpu/train")
    assert analysis.default_baseline([gpu, cpu_validation, cpu_train]) == "cpu/train"
    gpu_validation = gpu_run(helpers)
    gpu_validation["run"] = "gpu/validation"
    comparison = analysis.compare_runs([gpu, gpu_validation, cpu_validation, cpu_train])
    against = {row["run"]: row["against"] for row in comparison["rows"]}
    # Validation runs are compared with the baseline's validation run.
    assert against == {
        "gpu/train": "cpu/train",
        "gpu/validation": "cpu/validation",
        "cpu/validation": "cpu/validation",
        "cpu/train": "cpu/train",
    }


def test_different_batch_sizes_compare_samples_per_second(helpers):
    small = run_with(helpers, 0.0, 1.0, 0.0, name="b32/train", batch_size=32)
    large = run_with(helpers, 0.0, 2.0, 0.0, name="b256/train", batch_size=256)
    comparison = analysis.compare_runs([small, large], baseline="b32/train")
    row = {row["run"]: row for row in comparison["rows"]}["b256/train"]
    expected = (256 / 2.0) / (32 / 1.0)
    assert row["basis"] == "samples_per_s"
    assert row["speedup"] == pytest.approx(expected)
    assert row["speedup_step"] == pytest.approx(0.5)
    assert row["delta_per_1000_samples_ms"]["compute"] == pytest.approx(
        2.0 / 256 * 1000 - 1.0 / 32 * 1000
    )
    assert "compared per sample" in row["explanation"]
    assert "batch 256 against 32" in row["explanation"]


def test_same_speed_and_warmup_note(helpers):
    base = run_with(helpers, 0.1, 1.0, 0.0, name="a/train", warmup_ms=300.0)
    other = run_with(helpers, 0.1, 1.0, 0.0, name="b/train", warmup_ms=1800.0)
    row = analysis.compare_runs([base, other], baseline="a/train")["rows"][1]
    assert row["explanation"].startswith("b/train is as fast as a/train")
    assert "warm-up took 1,800 ms in total against 300 ms" in row["explanation"]


# The report.


def test_build_report_skips_what_it_cannot_read(helpers):
    good = helpers.make_record("good/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0))
    newer = helpers.make_record(
        "newer/train",
        problems=["devicecost/aggregate: Written with schema version 2, newer than "
                  "the version 1 that this tb-devicecost reads. Upgrade tb-devicecost "
                  "to read it."],
        newer_schema=True,
        series={"step": np.arange(5), "data_wait_ms": np.ones(5),
                "compute_ms": np.ones(5), "host_overhead_ms": np.ones(5),
                "batch_size": np.ones(5)},
    )
    empty = helpers.make_record("empty/train")
    report = analysis.build_report([good, newer, empty])
    assert report["schema"] == 1
    assert [run["run"] for run in report["runs"]] == ["good/train"]
    reasons = {item["run"]: item["reason"] for item in report["skipped"]}
    assert "newer" in reasons["newer/train"]
    assert "no recorded step" in reasons["empty/train"]
    assert report["comparison"] is None
    with pytest.raises(ValueError, match="It was skipped"):
        analysis.build_report([good, newer], baseline="newer/train")
    assert_json_clean(report)


def test_edge_logdir_through_the_reader(edge_logdir):
    records = reader.read_runs(reader.local_provider(edge_logdir))
    report = analysis.build_report(records)
    runs = {run["run"]: run for run in report["runs"]}
    skipped = {item["run"]: item["reason"] for item in report["skipped"]}
    assert set(runs) == {"good/train", "running/train", "nan/train", "truncated/train"}
    assert set(skipped) == {"newer/train", "info_only/train"}
    assert f"schema version {metadata.SCHEMA_VERSION + 1}" in skipped["newer/train"]
    assert runs["running/train"]["status"] == "running"
    assert finding(runs["running/train"], "incomplete_run") is not None
    # NaN and negative aggregate totals: the sampled steps, minus two bad ones.
    nan = runs["nan/train"]
    assert nan["source"] == "series"
    assert nan["steady_steps"] == 38
    assert nan["step_ms"]["mean"] == pytest.approx(1.0 + 3.0 + 0.2)
    # The truncated file lost its aggregate (the last record) but not its steps.
    truncated = runs["truncated/train"]
    assert truncated["source"] == "series"
    assert truncated["steady_steps"] == 30
    assert truncated["data_wait_ms"]["mean"] == pytest.approx(2.0)
    good = runs["good/train"]
    assert good["step_ms"]["mean"] == pytest.approx(5.5)
    assert good["shares"]["compute"] == pytest.approx(4.0 / 5.5)
    assert_json_clean(report)


def test_speedup_counts_rare_long_stalls(helpers):
    """Regression: a run whose median step is fast but which stalls for
    long now and then is slower overall; the speedup must say so, as its
    samples/s and per-step deltas do."""
    steady = helpers.make_record("steady/train", aggregate=helpers.make_aggregate(0.2, 3.0, 0.1))
    wait = np.full(100, 0.2)
    wait[::5] = 40.0  # one step in five waits 40 ms
    stalling = helpers.make_record("stalling/train", aggregate=helpers.make_aggregate(wait, 2.5, 0.1))
    rows = {
        row["run"]: row
        for row in analysis.compare_runs(
            [analysis.analyze_run(steady), analysis.analyze_run(stalling)], baseline="steady/train"
        )["rows"]
    }
    stalled = rows["stalling/train"]
    expected = (0.2 + 3.0 + 0.1) / (wait.mean() + 2.5 + 0.1)
    assert stalled["speedup"] == pytest.approx(expected, rel=0.02)
    assert stalled["speedup"] < 1
    assert stalled["speedup_samples_per_s"] < 1


def test_malformed_fields_skip_the_run_not_the_report(helpers):
    good = helpers.make_record("good/train", aggregate=helpers.make_aggregate(0.2, 3.0, 0.1))
    odd = helpers.make_record(
        "odd/train",
        aggregate=dict(helpers.make_aggregate(0.2, 3.0, 0.1), spikes={"count": 1, "steps": 7}),
        trace={"schema": 1, "windows": 5},
        placement={"schema": 1, "devices": {"logical": "CPU:0"}, "cpu_op_types": 3},
    )
    report = analysis.build_report([good, odd])
    runs = {run["run"]: run for run in report["runs"]}
    # Malformed lists read as empty: the run is still analysed.
    assert runs["odd/train"]["trace_windows"] == []
    assert runs["odd/train"]["spike_steps"] == []
    assert "good/train" in runs
    json.dumps(report, allow_nan=False)


@pytest.mark.parametrize(
    "share, shown",
    [(0.1496, "14%"), (0.1996, "19%"), (0.4997, "49%"), (0.2, "20%"), (0.29, "29%"), (0.042, "4.2%")],
)
def test_shares_never_round_up_across_a_threshold(share, shown):
    assert analysis.fmt_share(share) == shown


# Issue 10, item 2: each figure is one statistic, and says which.


def test_comparison_says_its_speedup_is_of_mean_steps(helpers):
    # The stalling run's p50 step is short, its mean long: the explanation
    # must quote the means it divides, and say they are means.
    wait = np.full(100, 0.2)
    wait[::4] = 30.0
    steady = run_with(helpers, 0.2, 3.0, 0.1, name="cpu/train")
    stalling = run_with(helpers, wait, 2.0, 0.1, name="gpu/train",
                        placement=helpers.gpu_placement())
    comparison = analysis.compare_runs([steady, stalling])
    assert comparison["statistic"] == "mean"
    row = {row["run"]: row for row in comparison["rows"]}["gpu/train"]
    mean_step = float(np.mean(wait + 2.0 + 0.1))
    median_step = float(np.median(wait + 2.0 + 0.1))
    assert analysis.fmt_ms(mean_step) != analysis.fmt_ms(median_step)
    assert (
        f"mean step {analysis.fmt_ms(mean_step)} ms against {analysis.fmt_ms(3.3)} ms"
        in row["explanation"]
    )
    assert "median" not in row["explanation"]
    assert row["speedup"] == pytest.approx(3.3 / mean_step)


STATISTICS = re.compile(r"\b(p50|p90|p99|mean|means|total|max|min)\b")


def sentences_with_figures(text):
    """Sentences of `text` that quote a time in ms."""
    return [
        sentence
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])", text)
        if re.search(r"\d ms\b", sentence)
    ]


def test_every_sentence_with_a_figure_names_its_statistic(helpers, fit_records):
    results = [analysis.analyze_run(r) for r in fit_records.values()]
    results += [
        run_with(helpers, 3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0),
        run_with(helpers, 0.5, 6.0, 0.1, name="cpu/validation"),
        run_with(helpers, [0.2] * 95 + [20.0] * 5, 4.0, 0.0, fetch_floor_ms=0.1),
        run_with(helpers, 0.3, 0.7, 0.0, fetch_floor_ms=0.1, batch_size=10),
        run_with(helpers, 0.0, 5.0, 0.0, warmup_ms=4000.0),
        gpu_run(helpers, trace={"schema": 1, "device_busy_fraction": 0.03}),
    ]
    cpu = run_with(helpers, 0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
    gpu = analysis.analyze_run(helpers.make_record(
        "gpu/train", aggregate=helpers.make_aggregate(0.1, 1.9, 0.05, batch_size=10,
                                                      warmup_ms=900.0),
        placement=helpers.gpu_placement()))
    texts = [f["message"] for result in results for f in result["findings"]]
    texts += [row["explanation"] for row in analysis.compare_runs([cpu, gpu])["rows"]]
    checked = 0
    for text in texts:
        for sentence in sentences_with_figures(text):
            checked += 1
            assert STATISTICS.search(sentence), sentence
            assert "median" not in sentence, sentence
    assert checked >= 10


# Item 3: a part is never larger than its whole.


def explained_parts(message):
    """(whole, part) of each 'of the mean data wait of X ms per step, Y ms'."""
    return [
        (float(whole.replace(",", "")), float(part.replace(",", "")))
        for whole, part in re.findall(
            r"of the mean data wait of ([\d.,]+) ms per step, ([\d.,]+) ms", message
        )
    ]


def test_fetch_floor_above_the_wait_is_never_printed_as_part_of_it(helpers):
    # The report's case: a 0.229 ms wait and a 0.593 ms floor.
    floor, wait = 0.593, 0.229
    result = run_with(helpers, wait, 5.0, 0.1, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(wait)
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    message = finding(result, "compute_bound")["message"]
    assert "of which" not in message
    # The floor is compared with the wait of the same statistic (p50)...
    assert (
        f"is {analysis.fmt_ms(floor)} ms, and the p50 data wait {analysis.fmt_ms(wait)} ms"
        in message
    )
    # ... and the part set apart is the wait itself, never the larger floor.
    parts = explained_parts(message)
    assert parts == [(wait, wait)]


def test_ready_batch_cost_is_clamped_to_the_mean_wait(helpers):
    # Most steps wait 0.4 ms, some almost nothing: the p50 (0.4 ms) is above
    # the mean; the cost taken from the p50 must not exceed the mean wait.
    waits = [0.4] * 60 + [0.05] * 40
    mean = float(np.mean(waits))
    result = run_with(helpers, waits, 5.0, 0.1, fetch_floor_ms=0.2, batch_size=512)
    assert result["data_wait_ms"]["p50"] > mean
    assert result["ready_fetch_ms"] == pytest.approx(mean)
    message = finding(result, "compute_bound")["message"]
    assert "clamped" in message
    for whole, part in explained_parts(message):
        assert part <= whole
    assert explained_parts(message)


# Item 4: false input_bound verdicts.


def test_moderate_input_share_is_a_finding_not_the_verdict(helpers):
    # 88% compute, 10% waiting beyond the floor: compute sets the pace.
    floor = 0.05
    result = run_with(helpers, 1.0 + floor, 8.8, 0.2 - floor, fetch_floor_ms=floor,
                      batch_size=512)
    assert result["input_share"] == pytest.approx(0.1)
    assert result["verdict"] == "compute_bound"
    assert result["findings"][0]["id"] == "compute_bound"
    found = finding(result, "input_bound")
    assert found["severity"] == "moderate"
    assert "not the run's bottleneck" in found["message"]
    assert "input pipeline keeps up" not in finding(result, "compute_bound")["message"]
    # Only a high share makes it the verdict.
    high = run_with(helpers, 2.5 + floor, 7.3, 0.2 - floor, fetch_floor_ms=floor,
                    batch_size=512)
    assert high["verdict"] == "input_bound"


def test_run_without_fetch_floor_is_judged_conservatively(helpers):
    # The validation run: from_tensor_slices(...).batch(64), 7% of
    # the step waiting 0.5 ms, no floor measured.
    result = run_with(helpers, 0.5, 6.4, 0.1, name="mine/validation", batch_size=64)
    assert result["fetch_floor_ms"] is None
    assert result["verdict"] == "compute_bound"
    assert finding(result, "input_bound") is None
    note = finding(result, "no_fetch_floor")
    assert note["severity"] == "info"
    assert "No fetch floor was measured" in note["message"]
    assert analysis.fmt_share(0.5 / 7.0) in note["message"]
    # A high share of short waits is no evidence either.
    short = run_with(helpers, 0.4, 0.6, 0.0, name="loop/train", batch_size=512)
    assert short["shares"]["data_wait"] >= analysis.INPUT_HIGH
    assert short["verdict"] == "compute_bound"
    assert finding(short, "no_fetch_floor") is not None
    # A high share of long waits is.
    slow = run_with(helpers, 3.0, 2.0, 0.0, name="loop/train", batch_size=512)
    assert slow["verdict"] == "input_bound"
    assert "no fetch floor was measured" in finding(slow, "input_bound")["message"]


def test_augmentation_advice_only_for_training_runs(helpers):
    train = run_with(helpers, 3.0, 2.0, 0.0, name="mine/train", fetch_floor_ms=0.1)
    validation = run_with(helpers, 3.0, 2.0, 0.0, name="mine/validation")
    assert validation["verdict"] == train["verdict"] == "input_bound"
    assert "augment" in finding(train, "input_bound")["fix"]
    for item in validation["findings"]:
        assert "augment" not in (item["message"] + item["fix"]).lower(), item


# Item 5: the fit's whole wall time.


def test_wall_time_breakdown_accounts_for_the_whole_fit(helpers):
    parts = {"steps": 5000.0, "warmup": 2500.0, "between_steps": 2300.0,
             "measurement": 200.0}
    total = sum(parts.values())
    aggregate = helpers.make_aggregate(0.5, 4.5, 0.0, warmup_ms=2500.0)
    aggregate["wall_ms"] = dict(parts, total=total)
    result = analysis.analyze_run(helpers.make_record("w/train", aggregate=aggregate))
    assert result["wall_ms"] == dict(parts, total=total)
    assert result["wall_shares"] == {key: pytest.approx(value / total)
                                     for key, value in parts.items()}
    # Warm-up over the fit's wall time (25%), not over warm-up plus steps
    # (33%).
    assert result["warmup_share_of_wall"] == pytest.approx(2500.0 / total)
    assert result["verdict"] == "compute_bound"
    found = finding(result, "warmup")
    assert analysis.fmt_share(2500.0 / total) in found["message"]
    assert f"{analysis.fmt_ms(total)} ms total wall time" in found["message"]
    assert f"{analysis.fmt_ms(2300.0)} ms" in found["message"]
    assert_json_clean(result)


def test_wall_time_unknown_in_older_data_is_not_guessed(helpers):
    aggregate = helpers.make_aggregate(0.0, 5.0, 0.0, warmup_ms=200.0)
    assert "wall_ms" not in aggregate
    result = analysis.analyze_run(helpers.make_record("old/train", aggregate=aggregate))
    assert result["wall_ms"] == dict.fromkeys(
        ("total", "steps", "warmup", "between_steps", "measurement"))
    assert result["wall_shares"] == dict.fromkeys(
        ("steps", "warmup", "between_steps", "measurement"))
    # The share falls back to warm-up plus steady steps, and says so.
    assert result["warmup_share_of_wall"] == pytest.approx(200.0 / (200.0 + 500.0))
    assert "total wall time is unknown" in finding(result, "warmup")["message"]


# Item 6: retracing only with evidence.


@pytest.mark.parametrize("retraces", [None, {"count": 0, "steps": [],
                                              "source": "tf.function tracing count"}])
def test_spikes_without_retrace_evidence_are_stalls_not_retracing(helpers, retraces):
    aggregate = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=7)
    if retraces is not None:
        aggregate["retraces"] = retraces
    result = analysis.analyze_run(helpers.make_record("s/train", aggregate=aggregate))
    assert finding(result, "retracing") is None
    stalls = finding(result, "stalls")
    assert stalls["severity"] == "info"
    assert "7 step(s)" in stalls["message"]
    assert "10x the p50 compute" in stalls["message"]
    assert "garbage collection" in stalls["message"]
    assert result["retraces"]["count"] == (None if retraces is None else 0)


def test_many_stalls_are_moderate(helpers):
    result = run_with(helpers, 0.0, 5.0, 0.0, batch_size=512, spikes=12)
    assert finding(result, "stalls")["severity"] == "moderate"
    assert finding(run_with(helpers, 0.0, 5.0, 0.0, batch_size=512), "stalls") is None


def test_recorded_retraces_are_retracing(helpers):
    aggregate = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=4)
    # Spikes at steps 10-13; the train function was traced again at 11 and 13.
    aggregate["retraces"] = {"count": 2, "steps": [11, 13],
                             "source": "tf.function tracing count"}
    result = analysis.analyze_run(helpers.make_record("r/train", aggregate=aggregate))
    assert result["retraces"] == aggregate["retraces"]
    found = finding(result, "retracing")
    assert found["severity"] == "info"
    assert "traced again 2 time(s)" in found["message"]
    assert "steps 11, 13" in found["message"]
    assert "tf.function tracing count" in found["message"]
    # The two other spikes have no retrace to explain them.
    stalls = finding(result, "stalls")
    assert "2 step(s)" in stalls["message"]
    assert "steps 10, 12" in stalls["message"]
    many = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512)
    many["retraces"] = {"count": 3, "steps": [], "source": "tf.function tracing count"}
    result = analysis.analyze_run(helpers.make_record("m/train", aggregate=many))
    assert finding(result, "retracing")["severity"] == "moderate"
    assert finding(result, "stalls") is None


# Item 7: one formatting rule.


@pytest.mark.parametrize("value, shown", [
    (0.0625, "0.063"), (2.125, "2.13"), (12.25, "12.3"), (1234.5, "1,235"),
    (1.005, "1.00"), (0.1884, "0.188"), (41.24, "41.2"), (1823.2, "1,823"),
    (0.0, "0.000"), (None, "\u2014"), (float("nan"), "\u2014"),
])
def test_milliseconds_round_half_away_from_zero_like_the_tab(value, shown):
    # JavaScript's toFixed rounds the exact binary value, ties away from
    # zero; Python's format would give 0.062, 2.12, 12.2 and 1,234.
    assert formatting.fmt_ms(value) == shown
    assert analysis.fmt_ms(value) == shown


def test_one_symbol_for_a_missing_value():
    assert formatting.MISSING == "\u2014"
    for function in (formatting.fmt_ms, formatting.fmt_share, formatting.fmt_count,
                     formatting.fmt_speedup, formatting.fmt_signed_ms,
                     formatting.fmt_ms_unit):
        assert function(None) == "\u2014", function
    # The analysis writes its findings with the same functions.
    assert analysis.fmt_share(None) == analysis.fmt_ms(None) == "\u2014"
    assert formatting.fmt_signed_ms(-0.0001) == "+0.000"
    assert formatting.fmt_signed_ms(-1.25) == "-1.25"
    assert formatting.fmt_speedup(0.455) == "0.46x"
    assert formatting.fmt_count(9470.5) == "9,471"


def test_findings_quote_shares_as_the_table_does(helpers):
    # A data-wait share of 79.96%: the table (fmt_share) shows 79%, and the
    # finding must too, never a rounded 80%.
    result = run_with(helpers, 7.996, 2.004, 0.0, fetch_floor_ms=0.05, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(0.7996)
    message = finding(result, "input_bound")["message"]
    assert "the data wait is 79% of the total steady-state time" in message
    assert "80%" not in message


# Item 9: like with like, never a run with itself.


def test_default_comparison_is_none_between_unrelated_runs(helpers):
    pinned = run_with(helpers, 0.1, 1.0, 0.0, name="placement/pinned_layer/train")
    augment = run_with(helpers, 2.0, 1.0, 0.0, name="input_pipeline/augment_in_model/train")
    assert analysis.default_baseline([pinned, augment]) is None
    assert analysis.compare_runs([pinned, augment]) is None


def test_one_model_train_and_validation_has_no_comparison(helpers):
    train = run_with(helpers, 0.1, 1.0, 0.0, name="mine/train")
    validation = run_with(helpers, 0.1, 0.5, 0.0, name="mine/validation")
    assert analysis.compare_runs([train, validation]) is None
    assert analysis.compare_runs([train, validation], baseline="mine/validation") is None
    assert analysis.build_report([
        helpers.make_record(name, aggregate=helpers.make_aggregate(0.1, 1.0, 0.0))
        for name in ("mine/train", "mine/validation")
    ], baseline="mine/validation")["comparison"] is None


def test_baseline_of_another_role_never_compares_a_run_with_itself(helpers):
    runs = [
        run_with(helpers, 0.1, 1.0, 0.0, name="mine/train"),
        run_with(helpers, 0.1, 0.5, 0.0, name="mine/validation"),
        run_with(helpers, 0.1, 2.0, 0.0, name="other/train"),
        run_with(helpers, 0.1, 3.0, 0.0, name="solo/evaluation"),
    ]
    comparison = analysis.compare_runs(runs, baseline="mine/validation")
    rows = {row["run"]: row for row in comparison["rows"]}
    for row in rows.values():
        assert _role_of(row["run"]) == _role_of(row["against"]), row
        if row["run"] == row["against"]:
            assert row["is_baseline"] and row["explanation"] == "baseline"
        else:
            assert not row["is_baseline"]
    # other/train is compared with the baseline's training sibling.
    assert rows["other/train"]["against"] == "mine/train"
    assert rows["other/train"]["speedup"] == pytest.approx(1.1 / 2.1)
    # Nothing to compare the evaluation or the validation run with.
    assert "solo/evaluation" not in rows
    assert "mine/validation" not in rows
    assert "solo/evaluation" in comparison["baseline_reason"]


def _role_of(name):
    return name.rsplit("/", 1)[-1]


def test_comparison_says_why_its_baseline_was_chosen(helpers):
    cpu = run_with(helpers, 0.1, 0.8, 0.05, name="cpu/train")
    gpu = analysis.analyze_run(helpers.make_record(
        "gpu/train", aggregate=helpers.make_aggregate(0.1, 1.9, 0.05),
        placement=helpers.gpu_placement()))
    comparison = analysis.compare_runs([gpu, cpu])
    assert comparison["baseline"] == "cpu/train"
    assert "same model trained on the CPU" in comparison["baseline_reason"]
    assert "gpu/train with cpu/train" in comparison["baseline_reason"]
    named = analysis.compare_runs([gpu, cpu], baseline="gpu/train")
    assert named["baseline_reason"].startswith("gpu/train was chosen as the baseline")


def test_evaluation_runs_compare_with_evaluation_runs(helpers):
    names = ("cpu/train", "cpu/evaluation", "gpu/train", "gpu/evaluation")
    runs = []
    for name in names:
        placement = helpers.gpu_placement() if name.startswith("gpu") else None
        runs.append(analysis.analyze_run(helpers.make_record(
            name, aggregate=helpers.make_aggregate(0.1, 1.0, 0.0), placement=placement)))
    against = {row["run"]: row["against"] for row in analysis.compare_runs(runs)["rows"]}
    assert against == {"cpu/train": "cpu/train", "cpu/evaluation": "cpu/evaluation",
                       "gpu/train": "cpu/train", "gpu/evaluation": "cpu/evaluation"}


def test_each_model_is_compared_with_its_own_cpu_run(helpers):
    # The demo's layout: <scenario>/<variant>-<device>/train.
    names = ["small_work/batch10-cpu0/train", "small_work/batch10-gpu0/train",
             "small_work/batch512-cpu0/train", "small_work/batch512-gpu0/train",
             "tfrecord/parallel_prefetch-cpu0/train"]
    runs = []
    for name in names:
        placement = helpers.gpu_placement() if "gpu" in name else None
        runs.append(analysis.analyze_run(helpers.make_record(
            name, aggregate=helpers.make_aggregate(0.1, 1.0, 0.0), placement=placement)))
    comparison = analysis.compare_runs(runs)
    against = {row["run"]: row["against"] for row in comparison["rows"]}
    assert against["small_work/batch10-gpu0/train"] == "small_work/batch10-cpu0/train"
    assert against["small_work/batch512-gpu0/train"] == "small_work/batch512-cpu0/train"
    assert "tfrecord/parallel_prefetch-cpu0/train" not in against
    # Two training baselines: no single one to name.
    assert comparison["baseline"] is None
    assert comparison["baselines"] == ["small_work/batch10-cpu0/train",
                                       "small_work/batch512-cpu0/train"]


# Item 10: where the step ran.


def test_device_is_where_the_step_ran_not_the_visible_devices(helpers):
    def device_of(placement):
        record = helpers.make_record(
            "d/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0),
            placement=placement)
        return analysis.analyze_run(record)

    # Two logical CPUs visible, every op on the first.
    plain = helpers.cpu_placement(ops=400)
    plain["devices"]["logical"].append({"name": "CPU:1", "kind": "CPU"})
    result = device_of(plain)
    assert result["device"] == "CPU:0"
    assert result["devices_used"] == ["CPU:0"]
    assert result["device_source"] == "ops"
    # A pinned layer: both devices ran ops, the busier first.
    result = device_of(helpers.cpu_placement(ops=400, extra_devices={"CPU:1": 10}))
    assert result["devices_used"] == ["CPU:0", "CPU:1"]
    # Nothing but the visible devices: said so, not taken as fact.
    bare = helpers.gpu_placement()
    bare["ops"], bare["variables"] = {}, {}
    result = device_of(bare)
    assert result["device"] == "GPU:0"
    assert result["device_source"] == "visible_devices"
    assert result["devices_used"] == []
    assert any("only a visible one" in problem for problem in result["problems"])
