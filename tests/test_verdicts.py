"""`tb_devicecost.analysis.verdicts`: the verdict and findings of a run.

Real fits (the `fit_logdir` fixture) check the verdicts end to end; hand-made
runs just under and at each threshold of docs/VERDICTS.md check the rules,
with the expected figures computed here from the inputs.
"""

import re

import numpy as np
import pytest

from tb_devicecost import analysis
from tb_devicecost import formatting
from tb_devicecost.analysis import verdicts


def test_input_bound_fit_is_input_bound(fit_records, helpers):
    record = fit_records["input/train"]
    result = analysis.analyze_run(record)
    assert result["verdict"] == "input_bound"
    assert result["steady_verdict"] == "input_bound"
    assert result["findings"][0]["id"] == "input_bound"
    assert result["findings"][0]["severity"] == "high"
    # The pipeline sleeps INPUT_SLEEP_S per batch, one batch at a time: no
    # step can be shorter. (The wait alone can be: tf.data may start the
    # next batch while the step runs.)
    assert result["step_ms"]["p50"] >= helpers.INPUT_SLEEP_S * 1e3 * 0.95
    components = record.aggregate["components"]
    expected_share = (
        components["data_wait"]["mean_ms"] - result["ready_fetch_ms"]
    ) / components["step"]["mean_ms"]
    assert result["input_share"] == pytest.approx(expected_share)
    assert expected_share >= verdicts.INPUT_HIGH
    message = result["findings"][0]["message"]
    assert formatting.fmt_share(expected_share) in message
    assert formatting.fmt_ms(components["step"]["mean_ms"]) + " ms" in message
    assert "num_parallel_calls=tf.data.AUTOTUNE" in result["findings"][0]["fix"]
    assert ".prefetch(tf.data.AUTOTUNE)" in result["findings"][0]["fix"]


def test_compute_bound_fit_is_not_input_bound(fit_records, helpers):
    record = fit_records["compute/train"]
    result = analysis.analyze_run(record)
    numbers = {key: result[key] for key in (
        "data_wait_ms", "step_ms", "fetch_floor_ms", "ready_fetch_ms", "input_share")}
    assert result["verdict"] != "input_bound", numbers
    assert result["steady_verdict"] == "compute_bound", numbers
    assert helpers.finding(result, "input_bound") is None
    assert helpers.finding(result, "compute_bound")["severity"] == "info"
    # Cached and prefetched: its wait is about the cost of a ready batch.
    assert result["starved_data_wait_ms"] < result["data_wait_ms"]["mean"]
    assert result["input_share"] < verdicts.INPUT_MODERATE
    message = helpers.finding(result, "compute_bound")["message"]
    assert formatting.fmt_ms(result["fetch_floor_ms"]) + " ms" in message
    assert formatting.fmt_ms(result["data_wait_ms"]["mean"]) + " ms" in message


def test_pinned_layer_shows_second_device_and_copies(fit_records, helpers):
    result = analysis.analyze_run(fit_records["pinned/train"])
    placement = result["placement"]
    assert placement["ops"].get("CPU:1", 0) > 0
    assert placement["variables"].get("CPU:1", 0) >= 1
    assert placement["cross_device_copies"] > 0
    assert "CPU:1" in placement["devices"]
    assert result["device"] == "CPU:0"  # Most of the step's ops.
    copies = helpers.finding(result, "cross_device_copies")
    assert copies is not None
    assert f"{placement['cross_device_copies']:,} edge" in copies["message"]
    assert "CPU:1" in copies["message"]
    assert "tf.device" in copies["fix"]


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
    result = helpers.run(wait, step - wait, 0.0, batch_size=512,
                         fetch_floor_ms=floor)
    assert result["input_share"] == pytest.approx(input_share)
    assert result["verdict"] == verdict
    found = helpers.finding(result, "input_bound")
    assert (found and found["severity"]) == severity
    if found:
        assert formatting.fmt_share(input_share) in found["message"]
        assert (
            f"{formatting.fmt_ms(starved)} ms of the {formatting.fmt_ms(step)} ms mean step"
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
    result = helpers.run(0.0, step - host, host, batch_size=512)
    assert result["shares"]["host_overhead"] == pytest.approx(host_share)
    assert result["verdict"] == verdict
    found = helpers.finding(result, "host_overhead_bound")
    assert (found and found["severity"]) == severity
    if found:
        assert (
            f"{formatting.fmt_ms(host)} ms of the {formatting.fmt_ms(step)} ms mean step"
            in found["message"]
        )
        assert "steps_per_execution" in found["fix"]


def test_high_host_beats_moderate_input(helpers):
    # 10% input (moderate) and 30% host (high): the host is the bottleneck.
    result = helpers.run(1.0, 6.0, 3.0, batch_size=512, fetch_floor_ms=0.01)
    assert result["verdict"] == "host_overhead_bound"
    assert result["findings"][0]["id"] == "host_overhead_bound"
    assert helpers.finding(result, "input_bound")["severity"] == "moderate"


def test_both_high_takes_the_larger_share(helpers):
    result = helpers.run(3.0, 2.0, 5.0, batch_size=512)
    assert result["verdict"] == "host_overhead_bound"
    result = helpers.run(5.0, 2.0, 3.0, batch_size=512)
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
    result = helpers.run(0.0, step, 0.0, warmup_ms=warmup, batch_size=512)
    assert result["warmup_share_of_wall"] == pytest.approx(warmup_share)
    assert result["verdict"] == verdict
    assert result["steady_verdict"] == "compute_bound"
    found_ids = {f["id"] for f in result["findings"]} & {"warmup", "warmup_dominated"}
    assert found_ids == ({finding_id} if finding_id else set())
    if finding_id:
        found = helpers.finding(result, finding_id)
        assert formatting.fmt_ms(warmup) + " ms" in found["message"]
        assert formatting.fmt_share(warmup_share) in found["message"]
        assert "Exclude warm-up when comparing devices" in found["fix"]
    if verdict == "warmup_dominated":
        assert result["findings"][0]["id"] == "warmup_dominated"
        assert "In steady state the run is compute_bound" in result["findings"][0]["message"]


def test_wait_at_the_fetch_floor_is_not_input_bound(helpers):
    # Every step waits 0.3 ms for a ready batch; the floor measured on a
    # synthetic iterator is 0.1 ms; steps are short (1 ms).
    floor, wait, compute = 0.1, 0.3, 0.7
    result = helpers.run(wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(wait / (wait + compute))
    assert result["ready_fetch_ms"] == pytest.approx(wait)  # median within 4x floor
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    assert result["verdict"] == "compute_bound"
    message = helpers.finding(result, "compute_bound")["message"]
    assert f"the p50 data wait {formatting.fmt_ms(wait)} ms" in message
    assert f"is {formatting.fmt_ms(floor)} ms" in message


def test_wait_far_above_the_floor_is_starvation(helpers):
    floor, wait, compute = 0.1, 3.0, 1.0
    result = helpers.run(wait, compute, 0.0, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(floor)
    assert result["starved_data_wait_ms"] == pytest.approx(wait - floor)
    assert result["input_share"] == pytest.approx((wait - floor) / (wait + compute))
    assert result["verdict"] == "input_bound"
    message = helpers.finding(result, "input_bound")["message"]
    assert (
        f"{formatting.fmt_ms(wait - floor)} ms of the "
        f"{formatting.fmt_ms(wait + compute)} ms mean step"
        in message
    )
    assert f"of the mean data wait of {formatting.fmt_ms(wait)} ms per step" in message


def test_rare_stalls_are_not_input_bound(helpers):
    # 95 steps get a ready batch in 0.2 ms; 5 wait 20 ms (shuffle refills).
    floor = 0.1
    waits = [0.2] * 95 + [20.0] * 5
    result = helpers.run(waits, 4.0, 0.0, fetch_floor_ms=floor, batch_size=512)
    mean_wait = float(np.mean(waits))
    assert result["input_share"] == pytest.approx((mean_wait - 0.2) / (mean_wait + 4.0))
    assert result["input_share"] >= verdicts.INPUT_MODERATE
    assert result["verdict"] == "compute_bound"
    stalls = helpers.finding(result, "input_stalls")
    assert stalls is not None
    assert "20.0 ms" in stalls["message"]


def test_latency_bound_with_a_device_trace(helpers):
    result = helpers.gpu_run(trace=helpers.make_trace(0.03))
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
def test_latency_thresholds(helpers, busy, verdict, severity):
    result = helpers.gpu_run(trace=helpers.make_trace(busy))
    assert result["device_busy_fraction"] == pytest.approx(busy)
    assert result["verdict"] == verdict
    found = helpers.finding(result, "latency_bound")
    assert (found and found["severity"]) == severity


def test_latency_bound_over_several_trace_windows(helpers):
    result = helpers.gpu_run(trace=helpers.make_trace(0.3, 0.1))
    assert result["device_busy_fraction"] == pytest.approx(0.2)
    assert result["verdict"] == "latency_bound"
    assert helpers.finding(result, "latency_bound")["severity"] == "moderate"


def test_no_latency_verdict_without_evidence_or_when_busy(helpers):
    assert helpers.gpu_run()["verdict"] == "compute_bound"
    # A trace without a device plane says nothing of the device.
    no_plane = helpers.gpu_run(trace=helpers.make_trace(None))
    assert no_plane["device_busy_fraction"] is None
    assert no_plane["verdict"] == "compute_bound"
    busy = helpers.gpu_run(trace=helpers.make_trace(0.8))
    assert busy["verdict"] == "compute_bound"
    cpu = helpers.run(0.0, 1.0, 0.0, trace=helpers.make_trace(0.1), batch_size=512)
    assert cpu["verdict"] == "compute_bound"


def test_cpu_ops_on_accelerator_run(helpers):
    result = helpers.gpu_run(
        cpu_op_types=("IteratorGetNext", "StringToNumber", "PrefetchDataset", "Unique"),
    )
    placement = result["placement"]
    # Input-pipeline ops belong on the host; the others are culprits.
    assert placement["cpu_ops_on_accelerator_run"] == ["StringToNumber", "Unique"]
    found = helpers.finding(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "moderate"
    assert "StringToNumber, Unique" in found["message"]
    assert "40 of its 340 ops" in found["message"]
    assert "accelerator" in found["fix"]


def test_no_cpu_ops_finding_for_input_ops_only(helpers):
    result = helpers.gpu_run(cpu_op_types=("IteratorGetNext", "OptionalGetValue"))
    assert result["placement"]["cpu_ops_on_accelerator_run"] == []
    assert helpers.finding(result, "cpu_ops_on_accelerator_run") is None


def test_visible_accelerator_left_unused(helpers):
    placement = helpers.gpu_placement(gpu_ops=0, cpu_ops=500)
    record = helpers.make_record(
        "gpu/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=placement,
    )
    result = analysis.analyze_run(record)
    assert result["device"] == "CPU:0"
    found = helpers.finding(result, "cpu_ops_on_accelerator_run")
    assert found["severity"] == "high"
    assert "GPU:0" in found["message"] and "500" in found["message"]


def test_cross_device_copies_severity(helpers):
    found = helpers.finding(helpers.gpu_run(copies=6), "cross_device_copies")
    assert found["severity"] == "moderate"
    assert helpers.finding(helpers.gpu_run(copies=0), "cross_device_copies") is None
    record = helpers.make_record(
        "cpu/train", aggregate=helpers.make_aggregate(0.0, 1.0, 0.0, batch_size=512),
        placement=helpers.cpu_placement(copies=2, extra_devices={"CPU:1": 3}),
    )
    found = helpers.finding(analysis.analyze_run(record), "cross_device_copies")
    assert found["severity"] == "info"
    assert "2 edge(s)" in found["message"]
    assert "CPU:1 (3 ops)" in found["message"]


@pytest.mark.parametrize(
    "batch, step, expected",
    [(10, 1.0, True), (64, 9.0, True), (65, 1.0, False), (10, 10.0, False)],
)
def test_small_batch(helpers, batch, step, expected):
    result = helpers.run(0.0, step, 0.0, batch_size=batch)
    found = helpers.finding(result, "small_batch")
    assert (found is not None) == expected
    if found:
        assert f"only {batch} samples in {formatting.fmt_ms(step)} ms" in found["message"]
        assert "larger batch" in found["fix"]
        assert "steps_per_execution" in found["fix"]


def test_small_batch_on_accelerator_is_moderate(helpers):
    assert helpers.finding(helpers.gpu_run(batch_size=10), "small_batch")["severity"] == "moderate"


def test_every_finding_has_numbers_and_a_fix(helpers, fit_records):
    results = [analysis.analyze_run(r) for r in fit_records.values()]
    results.append(helpers.gpu_run(batch_size=10, copies=3, cpu_op_types=("Unique",)))
    results.append(helpers.run(3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0))
    for result in results:
        assert result["findings"], result["run"]
        for item in result["findings"]:
            assert set(item) == {"id", "severity", "message", "fix"}
            assert item["severity"] in verdicts.SEVERITIES
            assert re.search(r"\d", item["message"]), item
            assert len(item["fix"]) > 20, item


@pytest.mark.parametrize("status, words", [
    ("running", "still being written"), ("interrupted", "interrupted")])
def test_unfinished_run_says_so(helpers, status, words):
    result = helpers.run(0.0, 2.0, 0.0, status=status)
    assert result["status"] == status
    found = helpers.finding(result, "incomplete_run")
    assert words in found["message"]
    assert f"the {result['steps']} step(s) recorded so far" in found["message"]
    assert helpers.finding(helpers.run(0.0, 2.0, 0.0), "incomplete_run") is None


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
        helpers.run(3.0, 1.0, 0.5, spikes=4, warmup_ms=300.0),
        helpers.run(0.5, 6.0, 0.1, name="cpu/validation"),
        helpers.run([0.2] * 95 + [20.0] * 5, 4.0, 0.0, fetch_floor_ms=0.1),
        helpers.run(0.3, 0.7, 0.0, fetch_floor_ms=0.1, batch_size=10),
        helpers.run(0.0, 5.0, 0.0, warmup_ms=4000.0),
        helpers.gpu_run(trace=helpers.make_trace(0.03)),
    ]
    cpu = helpers.run(0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
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
    result = helpers.run(wait, 5.0, 0.1, fetch_floor_ms=floor, batch_size=512)
    assert result["ready_fetch_ms"] == pytest.approx(wait)
    assert result["starved_data_wait_ms"] == pytest.approx(0.0)
    message = helpers.finding(result, "compute_bound")["message"]
    assert "of which" not in message
    # The floor is compared with the wait of the same statistic (p50)...
    assert (
        f"is {formatting.fmt_ms(floor)} ms, and the p50 data wait {formatting.fmt_ms(wait)} ms"
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
    result = helpers.run(waits, 5.0, 0.1, fetch_floor_ms=0.2, batch_size=512)
    assert result["data_wait_ms"]["p50"] > mean
    assert result["ready_fetch_ms"] == pytest.approx(mean)
    message = helpers.finding(result, "compute_bound")["message"]
    assert "clamped" in message
    for whole, part in explained_parts(message):
        assert part <= whole
    assert explained_parts(message)


def test_moderate_input_share_is_a_finding_not_the_verdict(helpers):
    # 88% compute, 10% waiting beyond the floor: compute sets the pace.
    floor = 0.05
    result = helpers.run(1.0 + floor, 8.8, 0.2 - floor, fetch_floor_ms=floor,
                         batch_size=512)
    assert result["input_share"] == pytest.approx(0.1)
    assert result["verdict"] == "compute_bound"
    assert result["findings"][0]["id"] == "compute_bound"
    found = helpers.finding(result, "input_bound")
    assert found["severity"] == "moderate"
    assert "not the run's bottleneck" in found["message"]
    assert "input pipeline keeps up" not in helpers.finding(result, "compute_bound")["message"]
    # Only a high share makes it the verdict.
    high = helpers.run(2.5 + floor, 7.3, 0.2 - floor, fetch_floor_ms=floor,
                       batch_size=512)
    assert high["verdict"] == "input_bound"


def test_run_without_fetch_floor_is_judged_conservatively(helpers):
    # The validation run: from_tensor_slices(...).batch(64), 7% of
    # the step waiting 0.5 ms, no floor measured.
    result = helpers.run(0.5, 6.4, 0.1, name="mine/validation", batch_size=64)
    assert result["fetch_floor_ms"] is None
    assert result["verdict"] == "compute_bound"
    assert helpers.finding(result, "input_bound") is None
    note = helpers.finding(result, "no_fetch_floor")
    assert note["severity"] == "info"
    assert "No fetch floor was measured" in note["message"]
    assert formatting.fmt_share(0.5 / 7.0) in note["message"]
    # A high share of short waits is no evidence either.
    short = helpers.run(0.4, 0.6, 0.0, name="loop/train", batch_size=512)
    assert short["shares"]["data_wait"] >= verdicts.INPUT_HIGH
    assert short["verdict"] == "compute_bound"
    assert helpers.finding(short, "no_fetch_floor") is not None
    # A high share of long waits is.
    slow = helpers.run(3.0, 2.0, 0.0, name="loop/train", batch_size=512)
    assert slow["verdict"] == "input_bound"
    assert "no fetch floor was measured" in helpers.finding(slow, "input_bound")["message"]


def test_augmentation_advice_only_for_training_runs(helpers):
    train = helpers.run(3.0, 2.0, 0.0, name="mine/train", fetch_floor_ms=0.1)
    validation = helpers.run(3.0, 2.0, 0.0, name="mine/validation")
    assert validation["verdict"] == train["verdict"] == "input_bound"
    assert "augment" in helpers.finding(train, "input_bound")["fix"]
    for item in validation["findings"]:
        assert "augment" not in (item["message"] + item["fix"]).lower(), item


@pytest.mark.parametrize("retraces", [None, {"count": 0, "steps": [],
                                              "source": "tf.function tracing count"}])
def test_spikes_without_retrace_evidence_are_stalls_not_retracing(helpers, retraces):
    aggregate = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=7)
    if retraces is not None:
        aggregate["retraces"] = retraces
    result = analysis.analyze_run(helpers.make_record("s/train", aggregate=aggregate))
    assert helpers.finding(result, "retracing") is None
    stalls = helpers.finding(result, "stalls")
    assert stalls["severity"] == "info"
    assert "7 step(s)" in stalls["message"]
    assert "10x the p50 compute" in stalls["message"]
    assert "garbage collection" in stalls["message"]
    assert result["retraces"]["count"] == (None if retraces is None else 0)


def test_many_stalls_are_moderate(helpers):
    result = helpers.run(0.0, 5.0, 0.0, batch_size=512, spikes=12)
    assert helpers.finding(result, "stalls")["severity"] == "moderate"
    assert helpers.finding(helpers.run(0.0, 5.0, 0.0, batch_size=512), "stalls") is None


def test_recorded_retraces_are_retracing(helpers):
    aggregate = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512, spikes=4)
    # Spikes at steps 10-13; the train function was traced again at 11 and 13.
    aggregate["retraces"] = {"count": 2, "steps": [11, 13],
                             "source": "tf.function tracing count"}
    result = analysis.analyze_run(helpers.make_record("r/train", aggregate=aggregate))
    assert result["retraces"] == aggregate["retraces"]
    found = helpers.finding(result, "retracing")
    assert found["severity"] == "info"
    assert "traced again 2 time(s)" in found["message"]
    assert "steps 11, 13" in found["message"]
    assert "tf.function tracing count" in found["message"]
    # The two other spikes have no retrace to explain them.
    stalls = helpers.finding(result, "stalls")
    assert "2 step(s)" in stalls["message"]
    assert "steps 10, 12" in stalls["message"]
    many = helpers.make_aggregate(0.0, 5.0, 0.0, batch_size=512)
    many["retraces"] = {"count": 3, "steps": [], "source": "tf.function tracing count"}
    result = analysis.analyze_run(helpers.make_record("m/train", aggregate=many))
    assert helpers.finding(result, "retracing")["severity"] == "moderate"
    assert helpers.finding(result, "stalls") is None


def test_findings_quote_shares_as_the_table_does(helpers):
    # A data-wait share of 79.96%: the table (fmt_share) shows 79%, and the
    # finding must too, never a rounded 80%.
    result = helpers.run(7.996, 2.004, 0.0, fetch_floor_ms=0.05, batch_size=512)
    assert result["shares"]["data_wait"] == pytest.approx(0.7996)
    message = helpers.finding(result, "input_bound")["message"]
    assert "the data wait is 79% of the total steady-state time" in message
    assert "80%" not in message


def test_a_two_step_warmup_in_one_fit_is_not_called_two_fits(helpers):
    """A fit's warm-up can be two steps (Keras's trace, then instantiating
    the traced step); the finding counts steps and fits apart."""
    aggregate = helpers.make_aggregate(0.0, 1.0, 0.0, warmup_ms=400.0, sessions=1)
    aggregate["warmup"].update(count=2, steps=[0, 1])
    result = analysis.analyze_run(helpers.make_record("cpu/train", aggregate=aggregate))
    [finding] = [f for f in result["findings"] if f["id"] in ("warmup", "warmup_dominated")]
    assert "2 steps at the start of the fit" in finding["message"]
    assert "fits" not in finding["message"]
