"""`tb_devicecost.analysis.verdicts`: the verdict and findings of a run.

Real fits (the `fit_logdir` fixture) check the verdicts end to end; hand-made
runs just under and at each threshold of docs/VERDICTS.md check the rules,
with the expected figures computed here from the inputs.
"""

import re

import numpy as np
import pytest

import tb_devicecost
from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.analysis import thresholds
from tb_devicecost.analysis import verdicts
from tb_devicecost.format import metadata
from tb_devicecost.format import vocabulary
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting

from tests.support.analyzed import analyzed_gpu_run, analyzed_run, finding_of
from tests.support.clock import FakeClock
from tests.support.documents import (
    cpu_placement,
    gpu_placement,
    make_aggregate,
    make_record,
    make_trace,
)
from tests.support.fits import INPUT_SLEEP_S


def test_input_bound_fit_is_input_bound(fit_records):
    record = fit_records["input/train"]
    result = words.analyze_run(record)
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
    assert expected_share >= thresholds.INPUT_HIGH
    message = result["findings"][0]["message"]
    assert formatting.fmt_share(expected_share) in message
    assert formatting.fmt_ms(components["step"]["mean_ms"]) + " ms" in message
    assert "num_parallel_calls=tf.data.AUTOTUNE" in result["findings"][0]["fix"]
    assert ".prefetch(tf.data.AUTOTUNE)" in result["findings"][0]["fix"]


def test_compute_bound_fit_is_not_input_bound(fit_records):
    record = fit_records["compute/train"]
    result = words.analyze_run(record)
    numbers = {key: result[key] for key in (
        "data_wait_ms", "step_ms", "fetch_floor_ms", "ready_fetch_ms", "input_share")}
    assert result["verdict"] != "input_bound", numbers
    assert result["steady_verdict"] == "compute_bound", numbers
    # Its share sits near nothing that matters: at most a moderate finding
    # (this fit read 2% to 10.9% from run to run on this machine).
    found = finding_of(result, "input_bound")
    assert found is None or found["severity"] == "moderate"
    assert finding_of(result, "compute_bound")["severity"] == "info"
    # Cached and prefetched: its wait is about the cost of a ready batch.
    assert result["starved_data_wait_ms"] < result["data_wait_ms"]["mean"]
    assert result["input_share"] < thresholds.INPUT_HIGH
    message = finding_of(result, "compute_bound")["message"]
    if found is None:
        # The wait is the cost of ready batches: the message says so.
        assert formatting.fmt_ms(result["fetch_floor_ms"]) + " ms" in message
        assert formatting.fmt_ms(result["data_wait_ms"]["mean"]) + " ms" in message
    else:
        # A moderate share: the message names the finding beside the verdict.
        assert "(input_bound)" in message


def test_pinned_layer_shows_second_device_and_copies(fit_records):
    result = words.analyze_run(fit_records["pinned/train"])
    placement = result["placement"]
    assert placement["ops"].get("CPU:1", 0) > 0
    assert placement["variables"].get("CPU:1", 0) >= 1
    assert placement["cross_device_copies"] > 0
    assert "CPU:1" in placement["devices"]
    assert result["device"] == "CPU:0"  # Most of the step's ops.
    copies = finding_of(result, "cross_device_copies")
    assert copies is not None
    assert f"{placement['cross_device_copies']:,} edge" in copies["message"]
    assert "CPU:1" in copies["message"]
    assert "tf.device" in copies["fix"]


@pytest.mark.parametrize(
    "input_share, verdict, severity, near",
    [
        (0.25, "input_bound", "high", False),
        # Within 15% of the 20% threshold: a finding that says it is
        # borderline, never the verdict (noise moves it across).
        (0.22, "compute_bound", "moderate", True),
        (0.20, "compute_bound", "moderate", True),
        (0.18, "compute_bound", "moderate", True),
        # A moderate share is a finding; the verdict names the dominant part.
        (0.16, "compute_bound", "moderate", False),
        (0.05, "compute_bound", "moderate", False),
        (0.049, "compute_bound", None, False),
    ],
)
def test_input_thresholds(input_share, verdict, severity, near):
    # Every step waits `floor` for a ready batch plus the starved part.
    step, floor = 10.0, 0.1
    starved = input_share * step
    wait = starved + floor
    result = analyzed_run(wait, step - wait, 0.0, batch_size=512,
                         fetch_floor_ms=floor)
    assert result["input_share"] == pytest.approx(input_share)
    assert result["verdict"] == verdict
    found = finding_of(result, "input_bound")
    assert (found and found["severity"]) == severity
    assert ("input_bound" in result["borderline"]) == near
    if found:
        assert formatting.fmt_share(input_share) in found["message"]
        assert (
            f"{formatting.fmt_ms(starved)} ms of the {formatting.fmt_ms(step)} ms mean step"
            in found["message"]
        )


def test_a_floor_below_50_microseconds_is_raised_to_it():
    """A wait of 0.05 ms with a measured floor of 0 (a Python handover of
    arrays in memory) is the cost of a ready batch, not starvation."""
    step, wait = 0.5, 0.05
    result = analyzed_run(wait, step - wait, 0.0, batch_size=32, fetch_floor_ms=0.0)
    assert result["ready_fetch_ms"] == pytest.approx(thresholds.MIN_READY_FETCH_MS)
    assert result["input_share"] == pytest.approx(0.0, abs=1e-9)
    assert finding_of(result, "input_bound") is None


@pytest.mark.parametrize(
    "host_share, verdict, severity, near",
    [
        (0.20, "host_overhead_bound", "high", False),
        (0.16, "compute_bound", "moderate", True),
        (0.14, "compute_bound", "moderate", True),
        (0.12, "compute_bound", "moderate", False),
        (0.03, "compute_bound", "moderate", False),
        (0.029, "compute_bound", None, False),
    ],
)
def test_host_thresholds(host_share, verdict, severity, near):
    step = 10.0
    host = host_share * step
    result = analyzed_run(0.0, step - host, host, batch_size=512)
    assert result["shares"]["host_overhead"] == pytest.approx(host_share)
    assert result["verdict"] == verdict
    found = finding_of(result, "host_overhead_bound")
    assert (found and found["severity"]) == severity
    assert ("host_overhead_bound" in result["borderline"]) == near
    if found:
        assert (
            f"{formatting.fmt_ms(host)} ms of the {formatting.fmt_ms(step)} ms mean step"
            in found["message"]
        )


def test_high_host_beats_moderate_input():
    # 10% input (moderate) and 30% host (high): the host is the bottleneck.
    result = analyzed_run(1.0, 6.0, 3.0, batch_size=512, fetch_floor_ms=0.01)
    assert result["verdict"] == "host_overhead_bound"
    assert result["findings"][0]["id"] == "host_overhead_bound"
    assert finding_of(result, "input_bound")["severity"] == "moderate"


def test_both_high_takes_the_larger_share():
    result = analyzed_run(3.0, 2.0, 5.0, batch_size=512)
    assert result["verdict"] == "host_overhead_bound"
    result = analyzed_run(5.0, 2.0, 3.0, batch_size=512)
    assert result["verdict"] == "input_bound"


@pytest.mark.parametrize(
    "warmup_share, verdict, finding_id",
    [(0.5, "warmup_dominated", "warmup_dominated"), (0.49, "compute_bound", "warmup"),
     (0.2, "compute_bound", "warmup"), (0.19, "compute_bound", None)],
)
def test_warmup_thresholds(warmup_share, verdict, finding_id):
    steps, step = 100, 5.0
    steady_wall = steps * step
    warmup = warmup_share / (1 - warmup_share) * steady_wall
    result = analyzed_run(0.0, step, 0.0, warmup_ms=warmup, batch_size=512)
    assert result["warmup_share_of_wall"] == pytest.approx(warmup_share)
    assert result["verdict"] == verdict
    assert result["steady_verdict"] == "compute_bound"
    found_ids = {f["id"] for f in result["findings"]} & {"warmup", "warmup_dominated"}
    assert found_ids == ({finding_id} if finding_id else set())
    if finding_id:
        found = finding_of(result, finding_id)
        assert formatting.fmt_ms(warmup) + " ms" in found["message"]
        assert formatting.fmt_share(warmup_share) in found["message"]
        assert "Exclude warm-up when comparing devices" in found["fix"]
    if verdict == "warmup_dominated":
        assert result["findings"][0]["id"] == "warmup_dominated"
        assert "In steady state the run is compute_bound" in result["findings"][0]["message"]


def test_wait_at_the_fetch_floor_is_not_input_bound():
    # Every step waits 0.3 ms for a ready batch; the floor measured on a
    # synthetic iterator is 0.1 ms; steps are short (1 ms).
    floor, wait, compute = 0.1, 0.3, 0.7
    result = analyzed_run(wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(wait / (wait + compute))
    assert result["ready_fetch_ms"] == pytest.approx(wait)  # median within 4x floor
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    assert result["verdict"] == "compute_bound"
    message = finding_of(result, "compute_bound")["message"]
    assert f"the p50 data wait {formatting.fmt_ms(wait)} ms" in message
    assert f"is {formatting.fmt_ms(floor)} ms" in message


def test_wait_far_above_the_floor_is_starvation():
    floor, wait, compute = 0.1, 3.0, 1.0
    result = analyzed_run(wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(floor)
    assert result["starved_data_wait_ms"] == pytest.approx(wait - floor)
    assert result["input_share"] == pytest.approx((wait - floor) / (wait + compute))
    assert result["verdict"] == "input_bound"
    message = finding_of(result, "input_bound")["message"]
    assert (
        f"{formatting.fmt_ms(wait - floor)} ms of the "
        f"{formatting.fmt_ms(wait + compute)} ms mean step"
        in message
    )
    assert f"of the mean data wait of {formatting.fmt_ms(wait)} ms per step" in message


def test_rare_stalls_are_not_input_bound():
    # 95 steps get a ready batch in 0.2 ms; 5 wait 20 ms (shuffle refills).
    floor = 0.1
    waits = [0.2] * 95 + [20.0] * 5
    result = analyzed_run(waits, 4.0, 0.0, fetch_floor_ms=floor, batch_size=512)
    mean_wait = float(np.mean(waits))
    assert result["input_share"] == pytest.approx((mean_wait - 0.2) / (mean_wait + 4.0))
    assert result["input_share"] >= thresholds.INPUT_MODERATE
    assert result["verdict"] == "compute_bound"
    stalls = finding_of(result, "input_stalls")
    assert stalls is not None
    assert "20.0 ms" in stalls["message"]


def test_latency_bound_with_a_device_trace():
    result = analyzed_gpu_run(trace=make_trace(0.03))
    assert result["device"] == "GPU:0"
    assert result["verdict"] == "latency_bound"
    found = result["findings"][0]
    assert found["id"] == "latency_bound"
    assert found["severity"] == "high"
    assert f"busy only {formatting.fmt_share(0.03)} of each traced step" in found["message"]
    assert "steps_per_execution" in found["fix"]
    assert "jit_compile=True" in found["fix"]


@pytest.mark.parametrize(
    "busy, verdict, severity",
    [
        (0.199, "latency_bound", "high"),
        (0.2, "latency_bound", "moderate"),
        (0.499, "latency_bound", "moderate"),
        # Busy half of each step or more: the device sets the pace.
        (0.5, "compute_bound", None),
    ],
)
def test_latency_thresholds(busy, verdict, severity):
    result = analyzed_gpu_run(trace=make_trace(busy))
    assert result["device_busy_fraction"] == pytest.approx(busy)
    assert result["verdict"] == verdict
    found = finding_of(result, "latency_bound")
    assert (found and found["severity"]) == severity


def test_latency_bound_over_several_trace_windows():
    result = analyzed_gpu_run(trace=make_trace(0.3, 0.1))
    assert result["device_busy_fraction"] == pytest.approx(0.2)
    assert result["verdict"] == "latency_bound"
    assert finding_of(result, "latency_bound")["severity"] == "moderate"


def test_no_latency_verdict_without_evidence_or_when_busy():
    assert analyzed_gpu_run()["verdict"] == "compute_bound"
    # A trace without a device plane says nothing of the device.
    no_plane = analyzed_gpu_run(trace=make_trace(None))
    assert no_plane["device_busy_fraction"] is None
    assert no_plane["verdict"] == "compute_bound"
    busy = analyzed_gpu_run(trace=make_trace(0.8))
    assert busy["verdict"] == "compute_bound"
    cpu = analyzed_run(0.0, 1.0, 0.0, trace=make_trace(0.1), batch_size=512)
    assert cpu["verdict"] == "compute_bound"


def test_cpu_ops_on_accelerator_run():
    result = analyzed_gpu_run(
        cpu_op_types=("IteratorGetNext", "StringToNumber", "PrefetchDataset", "Unique"),
    )
    placement = result["placement"]
    # Input-pipeline ops belong on the host; the others are culprits.
    assert placement["cpu_ops_on_accelerator_run"] == ["StringToNumber", "Unique"]
    found = finding_of(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "moderate"
    assert "StringToNumber, Unique" in found["message"]
    assert "40 of its 340 ops" in found["message"]
    assert "accelerator" in found["fix"]


def test_no_cpu_ops_finding_for_input_ops_only():
    result = analyzed_gpu_run(cpu_op_types=("IteratorGetNext", "OptionalGetValue"))
    assert result["placement"]["cpu_ops_on_accelerator_run"] == []
    assert finding_of(result, "cpu_ops_on_accelerator_run") is None


def test_visible_accelerator_left_unused():
    placement = gpu_placement(gpu_ops=0, cpu_ops=500)
    record = make_record(
        "gpu/train", aggregate=make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=placement,
    )
    result = words.analyze_run(record)
    assert result["device"] == "CPU:0"
    found = finding_of(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "high"
    assert "GPU:0" in found["message"] and "500" in found["message"]


def test_cross_device_copies_severity():
    found = finding_of(analyzed_gpu_run(copies=6), "cross_device_copies")
    assert found["severity"] == "moderate"
    assert finding_of(analyzed_gpu_run(copies=0), "cross_device_copies") is None
    record = make_record(
        "cpu/train", aggregate=make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=cpu_placement(copies=2, extra_devices={"CPU:1": 3}),
    )
    found = finding_of(words.analyze_run(record), "cross_device_copies")
    assert found["severity"] == "info"
    assert "2 edge(s)" in found["message"]
    assert "CPU:1 (3 ops)" in found["message"]


@pytest.mark.parametrize(
    "batch, step, expected",
    [(10, 1.0, True), (64, 9.0, True), (65, 1.0, False), (10, 10.0, False)],
)
def test_small_batch(batch, step, expected):
    result = analyzed_run(0.0, step, 0.0, batch_size=batch)
    found = finding_of(result, "small_batch")
    assert (found is not None) == expected
    if found:
        assert f"only {batch} samples in {formatting.fmt_ms(step)} ms" in found["message"]
        assert "larger batch" in found["fix"]
        assert "steps_per_execution" in found["fix"]


def test_small_batch_on_accelerator_is_moderate():
    assert finding_of(analyzed_gpu_run(batch_size=10), "small_batch")["severity"] == "moderate"


def test_every_finding_has_numbers_and_a_fix(fit_records):
    results = [words.analyze_run(r) for r in fit_records.values()]
    results.append(analyzed_gpu_run(batch_size=10, copies=3, cpu_op_types=("Unique",)))
    results.append(analyzed_run(3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0))
    for result in results:
        assert result["findings"], result["run"]
        for item in result["findings"]:
            assert set(item) == {"id", "severity", "headline", "message", "fix", "change", "expected"}
            assert item["change"] in vocabulary.CHANGES
            assert item["severity"] in verdicts.SEVERITIES
            assert re.search(r"\d", item["headline"]), item
            assert re.search(r"\d", item["message"]), item
            assert len(item["fix"]) > 20, item
            # An estimate, or a reason why there is none: never silence.
            expected = item["expected"]
            assert len(expected["basis"]) > 20, item
            if expected["speedup"] is None:
                assert expected["text"] == "no estimate", item
            else:
                assert expected["bound"] in ("about", "at_most", "at_least"), item
                assert expected["speedup"] > 0, item


@pytest.mark.parametrize("status, said", [
    ("running", "still being written"), ("interrupted", "interrupted")])
def test_unfinished_run_says_so(status, said):
    result = analyzed_run(0.0, 2.0, 0.0, status=status)
    assert result["status"] == status
    found = finding_of(result, "incomplete_run")
    assert said in found["message"]
    assert f"the {result['steps']} step(s) recorded so far" in found["message"]
    assert finding_of(analyzed_run(0.0, 2.0, 0.0), "incomplete_run") is None


STATISTICS = re.compile(r"\b(p50|p90|p99|mean|means|total|max|min)\b")


def sentences_with_figures(text):
    """Sentences of `text` that quote a time in ms."""
    return [
        sentence
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])", text)
        if re.search(r"\d ms\b", sentence)
    ]


def test_every_sentence_with_a_figure_names_its_statistic(fit_records):
    results = [words.analyze_run(r) for r in fit_records.values()]
    results += [
        analyzed_run(3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0),
        analyzed_run(0.5, 6.0, 0.1, name="cpu/validation"),
        analyzed_run([0.2] * 95 + [20.0] * 5, 4.0, 0.0, fetch_floor_ms=0.1),
        analyzed_run(0.3, 0.7, 0.0, fetch_floor_ms=0.1, batch_size=10),
        analyzed_run(0.0, 5.0, 0.0, warmup_ms=4000.0),
        analyzed_gpu_run(trace=make_trace(0.03)),
    ]
    cpu = analyzed_run(0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
    gpu = words.analyze_run(make_record(
        "gpu/train", aggregate=make_aggregate(0.1, 1.9, 0.05, batch_size=10,
                                                      warmup_ms=900.0),
        placement=gpu_placement()))
    texts = [f["message"] for result in results for f in result["findings"]]
    texts += [row["explanation"] for row in words.compare_runs([cpu, gpu])["rows"]]
    checked = 0
    for text in texts:
        for sentence in sentences_with_figures(text):
            checked += 1
            assert STATISTICS.search(sentence), sentence
            assert "median" not in sentence, sentence
    assert checked >= 10


def explained_parts(message):
    """(whole, part) of each 'of the mean data wait of X ms per step, Y ms'."""
    return [
        (float(whole.replace(",", "")), float(part.replace(",", "")))
        for whole, part in re.findall(
            r"of the mean data wait of ([\d.,]+) ms per step, ([\d.,]+) ms", message
        )
    ]


def test_fetch_floor_above_the_wait_is_never_printed_as_part_of_it():
    # The report's case: a 0.229 ms wait and a 0.593 ms floor.
    floor, wait = 0.593, 0.229
    result = analyzed_run(wait, 5.0, 0.1, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(wait)
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    message = finding_of(result, "compute_bound")["message"]
    assert "of which" not in message
    # The floor is compared with the wait of the same statistic (p50)...
    assert (
        f"is {formatting.fmt_ms(floor)} ms, and the p50 data wait {formatting.fmt_ms(wait)} ms"
        in message
    )
    # ... and the part set apart is the wait itself, never the larger floor.
    parts = explained_parts(message)
    assert parts == [(wait, wait)]


def test_ready_batch_cost_is_clamped_to_the_mean_wait():
    # Most steps wait 0.4 ms, some almost nothing: the p50 (0.4 ms) is above
    # the mean; the cost taken from the p50 must not exceed the mean wait.
    waits = [0.4] * 60 + [0.05] * 40
    mean = float(np.mean(waits))
    result = analyzed_run(waits, 5.0, 0.1, fetch_floor_ms=0.2, batch_size=512)
    assert result["data_wait_ms"]["p50"] > mean
    assert result["ready_fetch_ms"] == pytest.approx(mean)
    message = finding_of(result, "compute_bound")["message"]
    assert "clamped" in message
    for whole, part in explained_parts(message):
        assert part <= whole
    assert explained_parts(message)


def test_moderate_input_share_is_a_finding_not_the_verdict():
    # 88% compute, 10% waiting beyond the floor: compute sets the pace.
    floor = 0.05
    result = analyzed_run(1.0 + floor, 8.8, 0.2 - floor, fetch_floor_ms=floor,
                         batch_size=512)
    assert result["input_share"] == pytest.approx(0.1)
    assert result["verdict"] == "compute_bound"
    assert result["findings"][0]["id"] == "compute_bound"
    found = finding_of(result, "input_bound")
    assert found["severity"] == "moderate"
    assert "not the run's bottleneck" in found["message"]
    assert "input pipeline keeps up" not in finding_of(result, "compute_bound")["message"]
    # Only a high share makes it the verdict.
    high = analyzed_run(2.5 + floor, 7.3, 0.2 - floor, fetch_floor_ms=floor,
                       batch_size=512)
    assert high["verdict"] == "input_bound"


def test_run_without_fetch_floor_is_judged_conservatively():
    # The validation run: from_tensor_slices(...).batch(64), 7% of
    # the step waiting 0.5 ms, no floor measured.
    result = analyzed_run(0.5, 6.4, 0.1, name="mine/validation", batch_size=64)
    assert result["fetch_floor_ms"] is None
    assert result["verdict"] == "compute_bound"
    assert finding_of(result, "input_bound") is None
    note = finding_of(result, "no_fetch_floor")
    assert note["severity"] == "info"
    assert "No fetch floor was measured" in note["message"]
    assert formatting.fmt_share(0.5 / 7.0) in note["message"]
    # A high share of short waits is no evidence either.
    short = analyzed_run(0.4, 0.6, 0.0, name="loop/train", batch_size=512)
    assert short["shares"]["data_wait"] >= thresholds.INPUT_HIGH
    assert short["verdict"] == "compute_bound"
    assert finding_of(short, "no_fetch_floor") is not None
    # A high share of long waits is.
    slow = analyzed_run(3.0, 2.0, 0.0, name="loop/train", batch_size=512)
    assert slow["verdict"] == "input_bound"
    assert "no fetch floor was measured" in finding_of(slow, "input_bound")["message"]


def test_augmentation_advice_only_for_training_runs():
    train = analyzed_run(3.0, 2.0, 0.0, name="mine/train", fetch_floor_ms=0.1)
    validation = analyzed_run(3.0, 2.0, 0.0, name="mine/validation")
    assert validation["verdict"] == train["verdict"] == "input_bound"
    assert "augment" in finding_of(train, "input_bound")["fix"]
    for item in validation["findings"]:
        assert "augment" not in (item["message"] + item["fix"]).lower(), item


@pytest.mark.parametrize("retraces", [None, {"count": 0, "steps": [],
                                              "source": "tf.function tracing count"}])
def test_spikes_without_retrace_evidence_are_stalls_not_retracing(retraces):
    aggregate = make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=7)
    if retraces is not None:
        aggregate["retraces"] = retraces
    result = words.analyze_run(make_record("s/train", aggregate=aggregate))
    assert finding_of(result, "retracing") is None
    stalls = finding_of(result, "stalls")
    assert stalls["severity"] == "info"
    assert "7 step(s)" in stalls["message"]
    assert "10x the p50 compute" in stalls["message"]
    assert "garbage collection" in stalls["message"]
    assert result["retraces"]["count"] == (None if retraces is None else 0)


def test_many_stalls_are_moderate():
    result = analyzed_run(0.0, 5.0, 0.0, batch_size=512, spikes=12)
    assert finding_of(result, "stalls")["severity"] == "moderate"
    assert finding_of(analyzed_run(0.0, 5.0, 0.0, batch_size=512), "stalls") is None


def test_recorded_retraces_are_retracing():
    aggregate = make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=4)
    # Spikes at steps 10-13; the train function was traced again at 11 and 13.
    aggregate["retraces"] = {"count": 2, "steps": [11, 13],
                             "source": "tf.function tracing count"}
    result = words.analyze_run(make_record("r/train", aggregate=aggregate))
    assert result["retraces"] == aggregate["retraces"]
    found = finding_of(result, "retracing")
    assert found["severity"] == "info"
    assert "traced again 2 time(s)" in found["message"]
    assert "steps 11, 13" in found["message"]
    assert "tf.function tracing count" in found["message"]
    # The two other spikes have no retrace to explain them.
    stalls = finding_of(result, "stalls")
    assert "2 step(s)" in stalls["message"]
    assert "steps 10, 12" in stalls["message"]
    many = make_aggregate(0.0, 5.0, 0.0, batch_size=512)
    many["retraces"] = {"count": 3, "steps": [], "source": "tf.function tracing count"}
    result = words.analyze_run(make_record("m/train", aggregate=many))
    assert finding_of(result, "retracing")["severity"] == "moderate"
    assert finding_of(result, "stalls") is None


def test_findings_quote_shares_as_the_table_does():
    # A data-wait share of 79.96%: the table (fmt_share) shows 79%, and the
    # finding must too, never a rounded 80%.
    result = analyzed_run(7.996, 2.004, 0.0, fetch_floor_ms=0.05, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(0.7996)
    message = finding_of(result, "input_bound")["message"]
    assert "the data wait is 79% of the total steady-state time" in message
    assert "80%" not in message


def test_a_two_step_warmup_in_one_fit_is_not_called_two_fits():
    """A fit's warm-up can be two steps (Keras's trace, then instantiating
    the traced step); the finding counts steps and fits apart."""
    aggregate = make_aggregate(0.0, 1.0, 0.0, warmup_ms=400.0, sessions=1)
    aggregate["warmup"].update(count=2, steps=[0, 1])
    result = words.analyze_run(make_record("cpu/train", aggregate=aggregate))
    [finding] = [f for f in result["findings"] if f["id"] in ("warmup", "warmup_dominated")]
    assert "2 steps at the start of the fit" in finding["message"]
    assert "fits" not in finding["message"]


# What a fix would buy (`expected`): runs recorded under a fake clock, each
# expected figure worked out by hand from the times the clock was advanced.


def _recorded_loop(run_dir, steps, batch=32):
    """Records a custom loop with `StepRecorder` under a fake clock: each
    step waits, computes and spends host time as given (ms); returns the
    analysed run."""
    clock = FakeClock()
    recorder = tb_devicecost.StepRecorder(str(run_dir), clock=clock)

    def batches():
        for wait, _, _ in steps:
            clock.advance(wait)
            yield np.zeros((batch, 4), np.float32)

    for (_, compute, host), _ in zip(steps, recorder.timed(batches())):
        with recorder.compute():
            clock.advance(compute)
        clock.advance(host)
    recorder.close()
    [record] = reader.read_runs(reader.local_provider(str(run_dir)))
    return words.analyze_run(record)


def test_an_input_bound_loop_expects_the_step_without_its_wait(tmp_path):
    # 20 steady steps of 6 ms waiting, 3 ms computing, 1 ms on the host, 32
    # samples each; a 5 ms warm-up step. No fetch floor in a custom loop: all
    # of the 6 ms counts. Without it a step is 4 ms: 32 / 4 ms = 8,000
    # samples/s against 32 / 10 ms = 3,200, 2.5 times as many.
    result = _recorded_loop(tmp_path / "loop", [(0.0, 5.0, 0.0)] + [(6.0, 3.0, 1.0)] * 20)
    assert result["verdict"] == "input_bound"
    expected = finding_of(result, "input_bound")["expected"]
    assert expected["bound"] == "about"
    assert expected["of"] == "samples_per_s"
    assert expected["step_ms"] == pytest.approx(4.0)
    assert expected["samples_per_s"] == pytest.approx(8000.0)
    assert expected["speedup"] == pytest.approx(2.5)
    assert expected["text"] == "about 2.5x the samples/s (8,000 instead of 3,200)"
    assert (
        "the 10.0 ms mean step without its 6.00 ms mean data wait (no fetch "
        "floor was measured, so all of it): 4.00 ms"
    ) in expected["basis"]
    # The host's 1 ms of the 10 ms step (10%) is a moderate finding: at most
    # all of it goes, 32 / 9 ms = 3,556 samples/s, 10 / 9 = 1.11 times as
    # many, written rounded up since it is a bound from above.
    host = finding_of(result, "host_overhead_bound")["expected"]
    assert host["bound"] == "at_most"
    assert host["speedup"] == pytest.approx(10.0 / 9.0)
    assert host["text"] == "at most 1.2x the samples/s (3,600 instead of 3,200)"


def test_a_warmup_dominated_loop_expects_the_fit_at_the_steady_step(tmp_path):
    # A 500 ms first step, then 9 steps of 10 ms: 590 ms of wall time. Had
    # the first step taken 10 ms, the fit would take 100 ms: 5.9 times as
    # fast, at most (compilation is never free).
    result = _recorded_loop(tmp_path / "loop", [(0.0, 500.0, 0.0)] + [(0.0, 10.0, 0.0)] * 9)
    assert result["verdict"] == "warmup_dominated"
    expected = finding_of(result, "warmup_dominated")["expected"]
    assert expected["of"] == "fit_wall_time"
    assert expected["bound"] == "at_most"
    assert expected["wall_ms"] == pytest.approx(100.0)
    assert expected["speedup"] == pytest.approx(5.9)
    assert expected["samples_per_s"] is None
    assert expected["text"] == "at most 5.9x as fast a fit (100 ms of wall time instead of 590 ms)"


def _traced_gpu_run(run_dir, busy_ms, kernels=17, kernel_us=2.94):
    """A GPU run recorded through `StepAccounting` (the recorder of both
    `StepRecorder` and the callback) under a fake clock: 30 steady steps of
    1 ms compute, 32 samples each, and a trace window whose device was busy
    `busy_ms` of each 1 ms traced step."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(str(run_dir), clock=clock)
    recorder.begin_session({"backend": "jax", "batch_size": 32})
    for compute in [3.0] + [1.0] * 30:
        recorder.begin_step()
        recorder.end_fetch(batch_size=32)
        clock.advance(compute)
        recorder.end_compute()
    recorder.boundary()
    recorder.write_placement(gpu_placement(cpu_ops=0, copies=0))
    trace = make_trace(busy_ms / 1.0, step_ms=1.0)
    summary = trace["windows"][0]["summary"]
    summary.update(mean_kernels=kernels, mean_kernel_mean_us=kernel_us)
    recorder.write_document(metadata.TAG_TRACE, trace)
    recorder.end_session()
    [record] = reader.read_runs(reader.local_provider(str(run_dir)))
    return words.analyze_run(record)


def test_a_latency_bound_run_quotes_the_trace_and_expects_a_larger_batch(tmp_path):
    result = _traced_gpu_run(tmp_path / "gpu", busy_ms=0.05)
    assert result["steady_verdict"] == "latency_bound"
    found = finding_of(result, "latency_bound")
    assert (
        "GPU:0 was busy only 5% of each traced step (under 50%): 0.050 ms of "
        "kernels and copies in the 1.00 ms mean traced step (17 kernels per "
        "step, 2.94 µs each on average)"
    ) in found["message"]
    # 0.05 ms of device time for 32 samples: 1.5625 µs per sample; 0.95 ms
    # of the 1 ms step is fixed. Busy half the step at 32 x 0.95 / 0.05 =
    # 608 samples; the largest power of two up to it is 512, whose step is
    # 0.95 + 512 x 0.0015625 = 1.75 ms: 512 / 1.75 ms = 292,571 samples/s
    # against 32,000, 9.14 times as many.
    expected = found["expected"]
    assert expected["batch_size"] == 512
    assert expected["capped"] is False
    assert expected["step_ms"] == pytest.approx(1.75)
    assert expected["samples_per_s"] == pytest.approx(512 / 1.75e-3)
    assert expected["speedup"] == pytest.approx(512 / 1.75e-3 / 32000.0)
    # A bound from below: one traced batch counts the device's cost per step
    # as a cost per sample (issue 34).
    assert expected["bound"] == "at_least"
    assert expected["text"] == "at least 9.1x the samples/s at batch 512 (290,000 instead of 32,000)"
    assert "1.56 µs per sample" in expected["basis"]
    assert "up to 608" in expected["basis"]
    # The small_batch finding's fix is the same larger batch: the same figure.
    assert finding_of(result, "small_batch")["expected"] == expected


def test_a_larger_batch_is_capped_at_32_times_the_batch_that_ran(tmp_path):
    # 0.02 ms busy: half the step only at 32 x 0.98 / 0.02 = 1,568 samples,
    # beyond 32 x 32 = 1,024, so batch 1,024: 0.98 + 1024 x 0.000625 = 1.62
    # ms a step, 632,099 samples/s, 19.75 times as many. Never more than the
    # device busy all the time would give: 1 / 0.02 = 50 times.
    expected = finding_of(
        _traced_gpu_run(tmp_path / "gpu", busy_ms=0.02), "latency_bound"
    )["expected"]
    assert expected["batch_size"] == 1024
    assert expected["capped"] is True
    assert expected["speedup"] == pytest.approx(1024 / 1.62e-3 / 32000.0)
    assert expected["speedup"] < 1 / 0.02
    assert "capped" in expected["basis"]


def test_no_estimate_without_the_numbers_and_it_says_why():
    # A GPU run without a trace: what a larger batch buys is unknown.
    result = analyzed_gpu_run(batch_size=10, copies=3)
    for finding_id in ("small_batch", "cross_device_copies", "compute_bound"):
        expected = finding_of(result, finding_id)["expected"]
        assert expected["speedup"] is None
        assert expected["samples_per_s"] is None
        assert expected["text"] == "no estimate"
    assert "trace window" in finding_of(result, "small_batch")["expected"]["basis"]


def test_stalls_expect_at_least_what_the_spikes_cost():
    # 100 steady steps of 3 + 1 + 0.5 ms and a 300 ms warm-up (no recorded
    # wall time: 300 + 450 = 750 ms). Four spikes each took more than 10x
    # the 1 ms p50 compute, so at least 9 ms more than a typical step: 36 ms.
    # At least 750 / 714 = 1.050 times as fast, written rounded down.
    result = analyzed_run(3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0)
    expected = finding_of(result, "stalls")["expected"]
    assert expected["bound"] == "at_least"
    assert expected["wall_ms"] == pytest.approx(714.0)
    assert expected["speedup"] == pytest.approx(750.0 / 714.0)
    # "1.0x as fast" would say nothing: the words give the time saved.
    assert expected["text"] == "at least 36 ms less wall time, 4.8% of the fit's 750 ms"


def test_a_warmup_no_longer_than_a_steady_step_buys_nothing():
    # Two steady steps of 10 ms after a 5 ms warm-up: 5 / 25 = 20% of the
    # time, a finding; yet a 10 ms first step would have taken longer.
    result = analyzed_run(0.0, [10.0, 10.0], 0.0, warmup_ms=5.0, batch_size=512)
    expected = finding_of(result, "warmup")["expected"]
    assert expected["speedup"] is None
    assert expected["basis"] == "it took no longer than steady steps would have"


def test_host_time_in_a_few_long_pauses_is_a_finding_not_the_verdict():
    """95 steps spend 0.05 ms between steps, 5 spend 200 ms (the machine
    busy elsewhere, a collection): a fifth of the time, but not what the
    typical step is. The same share in every step is the verdict."""
    paused = analyzed_run(0.1, 8.0, [0.05] * 95 + [200.0] * 5)
    assert paused["shares"]["host_overhead"] > thresholds.HOST_HIGH * 1.5
    assert paused["steady_verdict"] == "compute_bound"
    assert finding_of(paused, "host_overhead_bound")["severity"] == "moderate"
    steady = analyzed_run(0.1, 8.0, 3.0)
    assert steady["steady_verdict"] == "host_overhead_bound"


def test_a_slow_loop_s_rate_keeps_its_significant_digits(tmp_path):
    # Issue 35, item 9: 1 sample a step of 3 s (1 s waiting): 0.33 samples/s,
    # and 0.5 without the wait. Printed as "0" before.
    result = _recorded_loop(tmp_path / "loop", [(0.0, 5.0, 0.0)] + [(1000.0, 2000.0, 0.0)] * 5,
                            batch=1)
    expected = finding_of(result, "input_bound")["expected"]
    assert expected["text"] == "about 1.5x the samples/s (0.50 instead of 0.333)"


def _short_validation(tmp_path, name):
    # 20 steady steps of 6 ms; the first of each of 3 passes waited 150 ms
    # for its iterator. Its mean says input-bound, its typical step not.
    from tb_devicecost.recording import accounting

    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "logs" / name / "validation", clock=clock)
    recorder.begin_session({"backend": "test"})
    recorder.set_fetch_floor(0.1)
    for step in range(21):
        recorder.begin_step()
        clock.advance(150.0 if step in (1, 8, 15) else 0.1)
        recorder.end_fetch(batch_size=32)
        clock.advance(6.0)
        recorder.end_compute()
    recorder.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path / "logs")))
    return words.analyze_run(record)


def test_a_short_validation_run_is_judged_by_its_typical_step(tmp_path):
    # Issue 35, item 10: identical fits' validation runs read input_bound
    # ("about 12x") or compute_bound by where their few long steps fell.
    result = _short_validation(tmp_path, "a")
    assert result["verdict"] == "compute_bound", result["verdict"]
    assert finding_of(result, "input_bound") is None
    assert finding_of(result, "input_stalls") is not None
    assert result["few_steps"] is True
