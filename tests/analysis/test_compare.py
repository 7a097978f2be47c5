"""`tb_devicecost.analysis.compare` and `pairing`: which run is compared with which, and how.

Like with like (role by role), never a run with itself; speedups of mean
steps; explanations in words.
"""

import numpy as np
import pytest

from tb_devicecost import analysis
from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.analysis import pairing
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting

from tests.support.analyzed import analyzed_gpu_run, analyzed_run
from tests.support.clock import FakeClock
from tests.support.documents import (
    cpu_placement,
    gpu_placement,
    make_aggregate,
    make_record,
    make_trace,
)


def test_fit_comparison_names_the_slower_run_and_why(fit_records):
    results = [words.analyze_run(r) for r in fit_records.values()]
    comparison = words.compare_runs(results, baseline="compute/train")
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


def test_compare_runs_needs_two():
    one = analyzed_run(0.0, 1.0, 0.0)
    assert words.compare_runs([]) is None
    assert words.compare_runs([one]) is None


def test_gpu_slower_than_cpu_at_a_small_batch():
    # The seeds' case: batch 10, the GPU's step is a fixed 1.9 ms of compute.
    cpu = analyzed_run(0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
    gpu_record = make_record(
        "gpu/train",
        aggregate=make_aggregate(0.1, 1.9, 0.05, batch_size=10),
        placement=gpu_placement(),
    )
    gpu = words.analyze_run(gpu_record)
    comparison = words.compare_runs([gpu, cpu])
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


def test_close_components_are_never_called_the_same_when_they_print_apart():
    """0.040 against 0.024 ms of host overhead is too small to explain, but
    not "the same": the table beside the words prints both figures."""
    cpu = analyzed_run(0.4, 0.2, 0.024, name="cpu/train", batch_size=10)
    gpu = analyzed_run(0.57, 0.37, 0.040, name="gpu/train", batch_size=10)
    close = analyzed_run(0.41, 0.22, 0.024, name="close/train", batch_size=10)
    comparison = words.compare_runs([gpu, cpu, close], baseline="cpu/train")
    rows = {row["run"]: row for row in comparison["rows"]}
    explanation = rows["gpu/train"]["explanation"]
    assert "the host overhead differs by under 0.050 ms (0.040 ms against 0.024 ms per step)" in explanation
    assert "is the same" not in explanation and "are the same" not in explanation
    explanation = rows["close/train"]["explanation"]
    # 0.410 against 0.400 ms is within 10%: about the same, with its figures.
    assert "the host overhead is the same" in explanation
    assert "the data wait is about the same (0.410 ms against 0.400 ms per step)" in explanation
    # The figures the words quote are the ones the table prints.
    host = rows["gpu/train"]["per_step_ms"]["host_overhead"]
    assert f"{formatting.fmt_ms(host)} ms against" in rows["gpu/train"]["explanation"]


def test_explicit_and_unknown_baseline():
    a = analyzed_run(0.0, 1.0, 0.0, name="a/train")
    b = analyzed_run(0.0, 2.0, 0.0, name="b/train")
    comparison = words.compare_runs([a, b], baseline="b/train")
    assert comparison["baseline"] == "b/train"
    rows = {row["run"]: row for row in comparison["rows"]}
    assert rows["a/train"]["speedup"] == pytest.approx(2.0)
    assert "as fast as b/train" in rows["a/train"]["explanation"]
    with pytest.raises(ValueError, match=r"Unknown baseline run 'c/train'.*a/train, b/train"):
        words.compare_runs([a, b], baseline="c/train")


def test_default_baseline_prefers_the_cpu_training_run():
    gpu = analyzed_gpu_run()
    cpu_validation = analyzed_run(0.0, 1.0, 0.0, name="cpu/validation")
    cpu_train = analyzed_run(0.0, 1.0, 0.0, name="cpu/train")
    assert analysis.default_baseline([gpu, cpu_validation, cpu_train]) == "cpu/train"
    gpu_validation = analyzed_gpu_run()
    gpu_validation["run"] = "gpu/validation"
    comparison = words.compare_runs([gpu, gpu_validation, cpu_validation, cpu_train])
    against = {row["run"]: row["against"] for row in comparison["rows"]}
    # Validation runs are compared with the baseline's validation run.
    assert against == {
        "gpu/train": "cpu/train",
        "gpu/validation": "cpu/validation",
        "cpu/validation": "cpu/validation",
        "cpu/train": "cpu/train",
    }


def test_different_batch_sizes_compare_samples_per_second():
    small = analyzed_run(0.0, 1.0, 0.0, name="b32/train", batch_size=32)
    large = analyzed_run(0.0, 2.0, 0.0, name="b256/train", batch_size=256)
    comparison = words.compare_runs([small, large], baseline="b32/train")
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


def test_same_speed_and_warmup_note():
    base = analyzed_run(0.1, 1.0, 0.0, name="a/train", warmup_ms=300.0)
    other = analyzed_run(0.1, 1.0, 0.0, name="b/train", warmup_ms=1800.0)
    row = words.compare_runs([base, other], baseline="a/train")["rows"][1]
    assert row["explanation"].startswith("b/train is as fast as a/train")
    assert "warm-up took 1,800 ms in total against 300 ms" in row["explanation"]


def test_speedup_counts_rare_long_stalls():
    """Regression: a run whose median step is fast but which stalls for
    long now and then is slower overall; the speedup must say so, as its
    samples/s and per-step deltas do."""
    steady = make_record("steady/train", aggregate=make_aggregate(0.2, 3.0, 0.1))
    wait = np.full(100, 0.2)
    wait[::5] = 40.0  # one step in five waits 40 ms
    stalling = make_record("stalling/train",
                                   aggregate=make_aggregate(wait, 2.5, 0.1))
    rows = {
        row["run"]: row
        for row in words.compare_runs(
            [words.analyze_run(steady), words.analyze_run(stalling)], baseline="steady/train"
        )["rows"]
    }
    stalled = rows["stalling/train"]
    expected = (0.2 + 3.0 + 0.1) / (wait.mean() + 2.5 + 0.1)
    assert stalled["speedup"] == pytest.approx(expected, rel=0.02)
    assert stalled["speedup"] < 1
    assert stalled["speedup_samples_per_s"] < 1


def test_comparison_says_its_speedup_is_of_mean_steps():
    # The stalling run's p50 step is short, its mean long: the explanation
    # must quote the means it divides, and say they are means.
    wait = np.full(100, 0.2)
    wait[::4] = 30.0
    steady = analyzed_run(0.2, 3.0, 0.1, name="cpu/train")
    stalling = analyzed_run(wait, 2.0, 0.1, name="gpu/train",
                           placement=gpu_placement())
    comparison = words.compare_runs([steady, stalling])
    assert comparison["statistic"] == "mean"
    row = {row["run"]: row for row in comparison["rows"]}["gpu/train"]
    mean_step = float(np.mean(wait + 2.0 + 0.1))
    median_step = float(np.median(wait + 2.0 + 0.1))
    assert formatting.fmt_ms(mean_step) != formatting.fmt_ms(median_step)
    assert (
        f"mean step {formatting.fmt_ms(mean_step)} ms against {formatting.fmt_ms(3.3)} ms"
        in row["explanation"]
    )
    assert "median" not in row["explanation"]
    assert row["speedup"] == pytest.approx(3.3 / mean_step)


def test_default_comparison_is_none_between_unrelated_runs():
    pinned = analyzed_run(0.1, 1.0, 0.0, name="placement/pinned_layer/train")
    augment = analyzed_run(2.0, 1.0, 0.0, name="input_pipeline/augment_in_model/train")
    assert analysis.default_baseline([pinned, augment]) is None
    assert words.compare_runs([pinned, augment]) is None


def test_one_model_train_and_validation_has_no_comparison():
    train = analyzed_run(0.1, 1.0, 0.0, name="mine/train")
    validation = analyzed_run(0.1, 0.5, 0.0, name="mine/validation")
    assert words.compare_runs([train, validation]) is None
    assert words.compare_runs([train, validation], baseline="mine/validation") is None
    assert words.build_report([
        make_record(name, aggregate=make_aggregate(0.1, 1.0, 0.0))
        for name in ("mine/train", "mine/validation")
    ], baseline="mine/validation")["comparison"] is None


def test_baseline_of_another_role_never_compares_a_run_with_itself():
    runs = [
        analyzed_run(0.1, 1.0, 0.0, name="mine/train"),
        analyzed_run(0.1, 0.5, 0.0, name="mine/validation"),
        analyzed_run(0.1, 2.0, 0.0, name="other/train"),
        analyzed_run(0.1, 3.0, 0.0, name="solo/evaluation"),
    ]
    comparison = words.compare_runs(runs, baseline="mine/validation")
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


def test_comparison_says_why_its_baseline_was_chosen():
    cpu = analyzed_run(0.1, 0.8, 0.05, name="cpu/train")
    gpu = words.analyze_run(make_record(
        "gpu/train", aggregate=make_aggregate(0.1, 1.9, 0.05),
        placement=gpu_placement()))
    comparison = words.compare_runs([gpu, cpu])
    assert comparison["baseline"] == "cpu/train"
    assert "same model trained on the CPU" in comparison["baseline_reason"]
    assert "gpu/train with cpu/train" in comparison["baseline_reason"]
    named = words.compare_runs([gpu, cpu], baseline="gpu/train")
    assert named["baseline_reason"].startswith("gpu/train was chosen as the baseline")


def test_evaluation_runs_compare_with_evaluation_runs():
    names = ("cpu/train", "cpu/evaluation", "gpu/train", "gpu/evaluation")
    runs = []
    for name in names:
        placement = gpu_placement() if name.startswith("gpu") else None
        runs.append(words.analyze_run(make_record(
            name, aggregate=make_aggregate(0.1, 1.0, 0.0), placement=placement)))
    against = {row["run"]: row["against"] for row in words.compare_runs(runs)["rows"]}
    assert against == {"cpu/train": "cpu/train", "cpu/evaluation": "cpu/evaluation",
                       "gpu/train": "cpu/train", "gpu/evaluation": "cpu/evaluation"}


def test_each_model_is_compared_with_its_own_cpu_run():
    # The demo's layout: <scenario>/<variant>-<device>/train.
    names = ["small_work/batch10-cpu0/train", "small_work/batch10-gpu0/train",
             "small_work/batch512-cpu0/train", "small_work/batch512-gpu0/train",
             "tfrecord/parallel_prefetch-cpu0/train"]
    runs = []
    for name in names:
        placement = gpu_placement() if "gpu" in name else None
        runs.append(words.analyze_run(make_record(
            name, aggregate=make_aggregate(0.1, 1.0, 0.0), placement=placement)))
    comparison = words.compare_runs(runs)
    against = {row["run"]: row["against"] for row in comparison["rows"]}
    assert against["small_work/batch10-gpu0/train"] == "small_work/batch10-cpu0/train"
    assert against["small_work/batch512-gpu0/train"] == "small_work/batch512-cpu0/train"
    assert "tfrecord/parallel_prefetch-cpu0/train" not in against
    # Two training baselines: no single one to name.
    assert comparison["baseline"] is None
    assert comparison["baselines"] == ["small_work/batch10-cpu0/train",
                                       "small_work/batch512-cpu0/train"]


def test_an_unknown_batch_size_reads_as_the_missing_value():
    # Samples were counted but no batch size was recorded (e.g. ragged batches).
    aggregate = make_aggregate(0.0, 1.0, 0.0, batch_size=None)
    aggregate.update(samples=100 * 32, batch_size={})
    unknown = words.analyze_run(make_record("a/train", aggregate=aggregate))
    known = analyzed_run(0.0, 1.5, 0.0, name="b/train", batch_size=64)
    assert unknown["batch_size"] is None and unknown["samples_per_step"] == 32
    rows = words.compare_runs([unknown, known], baseline="b/train")["rows"]
    row = {row["run"]: row for row in rows}["a/train"]
    assert row["basis"] == "samples_per_s"
    assert f"batch {formatting.MISSING} against 64" in row["explanation"]
    assert "?" not in row["explanation"]


# Why, in the runs' numbers: runs recorded through `StepAccounting` (the
# recorder of `StepRecorder` and the callback) under a fake clock.


def _recorded(logdir, name, step_ms, batch, placement, trace=None, warmup_ms=10.0):
    clock = FakeClock()
    recorder = accounting.StepAccounting(str(logdir / name), clock=clock)
    recorder.begin_session({"backend": "jax", "batch_size": batch})
    for compute in [warmup_ms] + [step_ms] * 20:
        recorder.begin_step()
        recorder.end_fetch(batch_size=batch)
        clock.advance(compute)
        recorder.end_compute()
    recorder.boundary()
    recorder.write_placement(placement)
    if trace is not None:
        recorder.write_document(metadata.TAG_TRACE, trace)
    recorder.end_session()


@pytest.fixture
def two_devices_two_batches(tmp_path):
    """The same model on GPU:0 and CPU:0 at batches 32 and 512: the GPU's
    step takes 1 ms at both; the CPU's 0.1 ms plus 2 µs per sample (0.164
    ms at 32, 1.124 ms at 512). The GPU run at 32 has a trace in which the
    device was busy 0.05 ms of each 1 ms step; its warm-up took 300 ms."""
    gpu, cpu = gpu_placement(cpu_ops=0, copies=0), cpu_placement()
    _recorded(tmp_path, "mlp_b32/gpu/train", 1.0, 32, gpu,
              trace=make_trace(0.05, step_ms=1.0), warmup_ms=300.0)
    _recorded(tmp_path, "mlp_b512/gpu/train", 1.0, 512, gpu)
    _recorded(tmp_path, "mlp_b32/cpu/train", 0.1 + 0.002 * 32, 32, cpu)
    _recorded(tmp_path, "mlp_b512/cpu/train", 0.1 + 0.002 * 512, 512, cpu)
    records = reader.read_runs(reader.local_provider(str(tmp_path)))
    return words.build_report(records)


def test_the_comparison_fits_each_device_over_batch_sizes(two_devices_two_batches):
    rows = {row["run"]: row for row in two_devices_two_batches["comparison"]["rows"]}
    row = rows["mlp_b32/gpu/train"]
    assert row["against"] == "mlp_b32/cpu/train"
    scaling = row["scaling"]
    assert scaling["devices"]["GPU:0"]["fixed_ms"] == pytest.approx(1.0)
    assert scaling["devices"]["GPU:0"]["per_sample_us"] == pytest.approx(0.0, abs=1e-6)
    assert scaling["devices"]["CPU:0"]["fixed_ms"] == pytest.approx(0.1)
    assert scaling["devices"]["CPU:0"]["per_sample_us"] == pytest.approx(2.0)
    assert [p["run"] for p in scaling["devices"]["CPU:0"]["points"]] == [
        "mlp_b32/cpu/train", "mlp_b512/cpu/train"]
    # Equal steps where 1.0 = 0.1 + 0.002 x batch: 450 samples.
    assert scaling["crossover_batch"] == 450
    assert scaling["crossover_extrapolated"] is False
    assert (scaling["faster_above"], scaling["faster_below"]) == ("GPU:0", "CPU:0")
    # 1 ms against 0.164 ms at 32: the CPU is 6.10 times as fast.
    assert (
        "Across batch sizes (this model's runs at 32 and 512 on GPU:0; 32 and 512 "
        "on CPU:0, mean steps): GPU:0's step is about 1.00 ms whatever the batch; "
        "CPU:0's step grows 2.00 µs per sample from a fixed 0.100 ms; at this "
        "batch of 32 CPU:0 is 6.10x as fast as GPU:0; GPU:0 wins above about 450 "
        "samples per step."
    ) in row["explanation"]
    # At 512 the GPU (1 ms) is 1.124 times as fast as the CPU (1.124 ms).
    assert "at this batch of 512 GPU:0 is 1.12x as fast as CPU:0" in (
        rows["mlp_b512/gpu/train"]["explanation"])


def test_the_comparison_names_device_time_transfers_and_warmup(two_devices_two_batches):
    row = next(row for row in two_devices_two_batches["comparison"]["rows"]
               if row["run"] == "mlp_b32/gpu/train")
    text = row["explanation"]
    # 0.05 ms of the 1 ms step on the device: 0.95 ms is fixed cost.
    assert (
        "Its trace shows GPU:0 busy 0.050 ms of each step: the other 0.950 ms of "
        "its 1.00 ms mean step is fixed cost."
    ) in text
    # gpu_placement's batch of 2,176 bytes.
    assert "Each step copies its 2,176-byte batch from the host to GPU:0; CPU:0 reads it in place." in text
    assert "Its warm-up took 300 ms in total against 10.0 ms" in text
    parts = row["parts"]
    assert parts["device_busy_ms"] == {"run": pytest.approx(0.05), "baseline": None}
    assert parts["fixed_ms"]["run"] == pytest.approx(1.0)
    assert parts["fixed_ms"]["source"] == {"run": "batch_sizes", "baseline": "batch_sizes"}
    assert parts["input_bytes_per_step"] == {"run": 2176, "baseline": 2176}
    assert parts["warmup_ms"] == {"run": pytest.approx(300.0), "baseline": pytest.approx(10.0)}


def test_without_other_batch_sizes_the_trace_gives_the_fixed_cost():
    """One batch size per device: no fit and no crossover; the trace's
    device time still splits the GPU's step (2.05 ms, 0.06 ms busy)."""
    cpu = analyzed_run(0.1, 0.8, 0.05, name="cpu/train", batch_size=10)
    gpu = words.analyze_run(make_record(
        "gpu/train", aggregate=make_aggregate(0.1, 1.9, 0.05, batch_size=10),
        placement=gpu_placement(), trace=make_trace(0.03)))
    [row] = [r for r in words.compare_runs([gpu, cpu])["rows"] if r["run"] == "gpu/train"]
    assert row["scaling"] is None
    assert "Across batch sizes" not in row["explanation"]
    assert row["parts"]["fixed_ms"]["run"] == pytest.approx(2.05 - 0.06)
    assert row["parts"]["fixed_ms"]["source"] == {"run": "trace", "baseline": None}
    assert "the other 1.99 ms of its 2.05 ms mean step is fixed cost" in row["explanation"]


@pytest.mark.parametrize("gpu_per_sample, cpu_per_sample, large", [
    # Flat steps: no cost per sample on either (or float noise).
    (0.0, 0.0, 512),
    # 1e-15 and 1.5e-15 ms per sample: equal steps at 0.9 / 5e-16 = 1.8e15
    # samples, beyond any batch size (guards.MAX_VALUE, the sweep's rule).
    (1e-15, 1.5e-15, 999_999_999),
])
def test_devices_that_never_cross_have_no_crossover(gpu_per_sample, cpu_per_sample, large):
    """Steps of 1 ms on the GPU and 0.1 ms on the CPU, plus their cost per
    sample: the CPU is faster at every batch size."""
    results = []
    for device, fixed, per_sample in (("gpu", 1.0, gpu_per_sample), ("cpu", 0.1, cpu_per_sample)):
        for batch in (32, large):
            placement = gpu_placement() if device == "gpu" else cpu_placement()
            results.append(words.analyze_run(make_record(
                f"mlp_b{batch}/{device}/train", placement=placement,
                aggregate=make_aggregate(0.0, fixed + per_sample * batch, 0.0,
                                                 batch_size=batch))))
    row = next(r for r in words.compare_runs(results)["rows"]
               if r["run"] == "mlp_b32/gpu/train")
    assert row["scaling"]["crossover_batch"] is None
    assert row["scaling"]["faster_above"] == row["scaling"]["faster_below"] == "CPU:0"
    assert "CPU:0 is faster at every batch size, by the fit" in row["explanation"]
    assert "GPU:0's step is about 1.00 ms whatever the batch" in row["explanation"]


def test_a_baseline_of_another_model_is_said_so_in_each_row():
    """Issue 23: a chosen baseline that is another model (or another set-up
    of it) gives rows marked `same_model: false`, whose explanation says the
    ratio compares models, not devices; the same model at another device or
    batch size stays `same_model: true`."""
    names = ["small_work/batch10-cpu0/train", "small_work/batch512-gpu0/train",
             "input/naive-cpu0/train"]
    runs = []
    for name in names:
        placement = gpu_placement() if "gpu" in name else None
        runs.append(words.analyze_run(make_record(
            name, aggregate=make_aggregate(0.1, 1.0, 0.0), placement=placement)))
    rows = {row["run"]: row for row in
            words.compare_runs(runs, baseline="input/naive-cpu0/train")["rows"]}
    for name in names[:2]:
        assert rows[name]["same_model"] is False
        assert " Different models or set-ups: " in rows[name]["explanation"]
    assert rows["input/naive-cpu0/train"]["same_model"] is True
    rows = {row["run"]: row for row in
            words.compare_runs(runs, baseline="small_work/batch10-cpu0/train")["rows"]}
    assert rows["small_work/batch512-gpu0/train"]["same_model"] is True
    assert "Different models" not in rows["small_work/batch512-gpu0/train"]["explanation"]
    assert pairing.same_model("a/gpu/train", "a/cpu/train")
    assert not pairing.same_model("a/gpu/train", "a/cpu/validation")
