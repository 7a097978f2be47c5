"""Runs recorded on a real NVIDIA H100, read and analysed here without a GPU.

`tests/data/h100/` holds what `benchmarks/gpu_backends.py` recorded on an
H100 (Keras 3.15.1, JAX and PyTorch backends, each model on the GPU and on
the machine's 16-core CPU): `<backend>_<model>_b<batch>/{gpu,cpu}/train`, a
sweep of the MLP over batch sizes on JAX (`sweep_jax/{gpu,cpu}_b<N>/train`),
and `benchmark_results.json`: the same fits timed by a clock outside Keras
(the difference of two fits' times over the difference of their steps),
which the recorded numbers are checked against.
"""

import json
import math
import os

import pytest

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader

from tests.support import paths


DATA = os.path.join(paths.DATA, "h100")


@pytest.fixture(scope="module")
def report():
    records = reader.read_runs(reader.local_provider(DATA))
    return words.build_report(records)


@pytest.fixture(scope="module")
def runs(report):
    return {run["run"]: run for run in report["runs"]}


@pytest.fixture(scope="module")
def outside_clock():
    with open(os.path.join(DATA, "benchmark_results.json"), encoding="utf-8") as file:
        text = file.read()
    # One JSON list per backend and device, written one after another.
    results = json.loads("[" + text.replace("][", "],[") + "]")
    return {
        (r["backend"], r["device"], r["case"].replace(" ", "_")): r["outside_clock_step_ms"]
        for group in results
        for r in group
    }


def speedup(report, run):
    rows = [row for row in report["comparison"]["rows"] if row["run"] == run]
    assert len(rows) == 1
    return rows[0]["speedup"]


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_gpu_runs_name_the_backend_and_the_gpu(runs, backend):
    run = runs[f"{backend}_mlp_b32/gpu/train"]
    assert run["backend"] == backend
    assert run["device"] == "GPU:0"
    assert run["placement"]["device_models"]["GPU:0"] == "NVIDIA H100 80GB HBM3"
    # What the backend cannot tell is said, not written as 0.
    assert run["placement"]["cross_device_copies"] is None


@pytest.mark.parametrize(
    "backend, case",
    [(b, c) for b in ("jax", "torch") for c in ("mlp_b32", "mlp_b8192", "cnn_b128")],
)
@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_the_recorded_mean_step_is_the_outside_clocks(runs, outside_clock, backend, case, device):
    """Timed without a sync of our own (JAX dispatches asynchronously), the
    recorded steps still add up to what a clock outside Keras saw."""
    recorded = runs[f"{backend}_{case}/{device}/train"]["step_ms"]["mean"]
    assert recorded == pytest.approx(outside_clock[(backend, device, case)], rel=0.10)


def test_the_small_model_is_slower_on_the_gpu_at_batch_32_and_faster_at_8192(report, outside_clock):
    """JAX, the common MLP: the GPU's step is about 0.7 ms at any batch size
    (the fixed cost of a step), the CPU's grows with the batch."""
    small = speedup(report, "jax_mlp_b32/gpu/train")
    large = speedup(report, "jax_mlp_b8192/gpu/train")
    assert small < 0.5 < 1 < large
    expected_small = outside_clock[("jax", "cpu", "mlp_b32")] / outside_clock[("jax", "gpu", "mlp_b32")]
    assert small == pytest.approx(expected_small, rel=0.2)


def test_the_sweep_crosses_over_between_512_and_2048_samples_per_step(report):
    """The crossover measured on this machine kind before (DESIGN notes:
    about 512 to 2048 on JAX) is where the recorded sweep crosses too."""
    speedups = {
        batch: speedup(report, f"sweep_jax/gpu_b{batch}/train")
        for batch in (16, 32, 64, 128, 256, 512, 2048, 4096, 8192, 16384)
    }
    assert all(speedups[batch] < 1 for batch in (16, 32, 64, 128, 256, 512))
    assert all(speedups[batch] > 1 for batch in (2048, 4096, 8192, 16384))


def test_pytorchs_gpu_step_has_a_fixed_cost_of_milliseconds(runs):
    """About 3 ms per step whatever the batch (measured apart on the same
    kind of machine: 3.3 ms), against 0.7 ms on JAX."""
    torch_small = runs["torch_mlp_b32/gpu/train"]["step_ms"]["p50"]
    jax_small = runs["jax_mlp_b32/gpu/train"]["step_ms"]["p50"]
    assert 2.0 < torch_small < 5.0
    assert torch_small > 3 * jax_small


TRACED = os.path.join(paths.DATA, "h100_traced")


@pytest.fixture(scope="module")
def traced():
    """Fits of the MLP on the H100 with `profile_steps=(20, 25)`, JAX and
    PyTorch (`benchmarks/gpu_traces.py` at commit a39a1f6): the callback's own trace windows,
    xplane (JAX) and `torch.profiler` (PyTorch), digested on the machine."""
    records = reader.read_runs(reader.local_provider(TRACED))
    return {record.run: record for record in records}


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_gpu_trace_window_is_digested_into_device_busy_time(traced, backend):
    [window] = traced[f"{backend}_mlp_b32/gpu/train"].trace["windows"]
    assert window.get("error") is None
    assert [step["step"] for step in window["steps"]] == [20, 21, 22, 23, 24]
    summary = window["summary"]
    # The GPU is mostly idle in a small model's step (DESIGN notes, from a
    # separate trace on the same machine: 2-3% busy, 17-26 kernels a step).
    assert 0 < window["device_busy_fraction"] < 0.10
    assert summary["mean_kernels"] >= 10
    # Each batch's 32 x 100 float32 features cross to the device.
    assert summary["mean_h2d_bytes"] >= 32 * 100 * 4


def test_the_small_batch_gpu_run_is_latency_bound_in_steady_state(traced):
    run = words.analyze_run(traced["jax_mlp_b32/gpu/train"])
    assert run["steady_verdict"] == "latency_bound"
    assert run["device_busy_fraction"] < 0.10


@pytest.mark.parametrize(
    "backend, evidence",
    [
        # The digests written on the H100 (the window's `summary`): busy
        # 0.0292 ms of a 1.294 ms traced step (2.26%), 18 kernels of 1.396 µs
        # on JAX; 0.139 ms of 4.271 ms (3.26%), 69 kernels of 1.851 µs on
        # PyTorch.
        ("jax", "GPU:0 was busy only 2.2% of each traced step (under 50%): 0.029 ms "
                "of kernels and copies in the 1.29 ms mean traced step (18 kernels "
                "per step, 1.40 µs each on average)"),
        ("torch", "GPU:0 was busy only 3.2% of each traced step (under 50%): 0.139 ms "
                  "of kernels and copies in the 4.27 ms mean traced step (69 kernels "
                  "per step, 1.85 µs each on average)"),
    ],
)
def test_latency_bound_quotes_the_trace_of_the_h100(traced, backend, evidence):
    run = words.analyze_run(traced[f"{backend}_mlp_b32/gpu/train"])
    [finding] = [f for f in run["findings"] if f["id"] == "latency_bound"]
    assert evidence in finding["message"]
    assert "the rest is a fixed cost paid on every step" in finding["message"].lower()


def test_a_larger_batch_is_expected_to_help_and_the_h100_sweep_agrees(traced, runs):
    """The estimate for the JAX MLP at batch 32, from its own trace: the
    device time per sample times a larger batch, plus the step's fixed cost.
    The sweep recorded on the same kind of machine measured that batch: the
    estimate lies between the batch-32 rate and the rate measured there (the
    linear model charges each sample the small batch's device time, which
    overstates it: a small kernel costs its launch whatever the batch)."""
    record = traced["jax_mlp_b32/gpu/train"]
    step = record.aggregate["components"]["step"]["mean_ms"]
    busy = record.trace["windows"][0]["summary"]["mean_device_busy_ms"]
    fixed = step - busy
    half = 32 * fixed / busy
    batch = 2 ** int(math.log2(half))
    expected_step = fixed + busy / 32 * batch
    run = words.analyze_run(record)
    [finding] = [f for f in run["findings"] if f["id"] == "latency_bound"]
    expected = finding["expected"]
    assert expected["batch_size"] == batch == 512
    assert expected["step_ms"] == pytest.approx(expected_step)
    assert expected["samples_per_s"] == pytest.approx(batch / expected_step * 1e3)
    measured = runs[f"sweep_jax/gpu_b{batch}/train"]["samples_per_s"]
    assert run["samples_per_s"] < expected["samples_per_s"] < measured


def test_the_gpu_cpu_comparison_names_each_devices_fixed_cost(runs, report):
    """PyTorch, the MLP at batches 32 and 8,192 on the H100 and its CPU, with
    no sweep of that model: two batch sizes per device give each its fixed
    cost and cost per sample (the line through the two mean steps
    recorded), and where the GPU overtakes."""
    steps = {
        (device, batch): runs[f"torch_mlp_b{batch}/{device}/train"]["step_ms"]["mean"]
        for device in ("gpu", "cpu") for batch in (32, 8192)
    }
    per_sample = {d: (steps[d, 8192] - steps[d, 32]) / (8192 - 32) for d in ("gpu", "cpu")}
    fixed = {d: steps[d, 32] - 32 * per_sample[d] for d in ("gpu", "cpu")}
    crossover = (fixed["gpu"] - fixed["cpu"]) / (per_sample["cpu"] - per_sample["gpu"])
    [row] = [r for r in report["comparison"]["rows"] if r["run"] == "torch_mlp_b32/gpu/train"]
    scaling = row["scaling"]
    assert scaling["sweep"] is None
    assert scaling["devices"]["GPU:0"]["fixed_ms"] == pytest.approx(fixed["gpu"])
    assert scaling["devices"]["CPU:0"]["per_sample_us"] == pytest.approx(per_sample["cpu"] * 1e3)
    assert scaling["crossover_batch"] == round(crossover)
    assert scaling["faster_above"] == "GPU:0"
    text = row["explanation"]
    assert "Across batch sizes (this model's runs at 32 and 8,192 on GPU:0" in text
    assert f"from a fixed {formatting.fmt_ms(fixed['gpu'])} ms" in text
    assert f"from a fixed {formatting.fmt_ms(fixed['cpu'])} ms" in text
    assert f"GPU:0 wins above about {formatting.fmt_count(round(crossover))} samples per step" in text
    assert f"CPU:0 is {formatting.fmt_speedup(steps['gpu', 32] / steps['cpu', 32])} as fast as GPU:0" in text


def test_the_comparison_of_a_swept_model_gives_the_sweeps_crossover(runs, report):
    """JAX, the MLP at batches 32 and 8,192 on the H100 and its CPU, whose
    model (backend, parameter count, dtype policy) the sweep `sweep_jax`
    also trained: the comparison takes the sweep's fits and crossover, not
    a line through its own two batch sizes, so the model has one crossover
    (issue 23), and the explanation says which runs it comes from."""
    [sweep] = [s for s in report["sweeps"] if s["name"] == "sweep_jax"]
    for batch in (32, 8192):
        [row] = [r for r in report["comparison"]["rows"]
                 if r["run"] == f"jax_mlp_b{batch}/gpu/train"]
        scaling = row["scaling"]
        assert scaling["sweep"] == "sweep_jax"
        assert scaling["crossover_batch"] == sweep["crossover_batch"]
        assert scaling["faster_above"] == sweep["faster_above"] == "GPU:0"
        for device, fit in sweep["devices"].items():
            assert scaling["devices"][device]["fixed_ms"] == fit["fixed_ms"]
            assert scaling["devices"][device]["per_sample_us"] == fit["per_sample_us"]
        text = row["explanation"]
        assert 'Across batch sizes (the sweep "sweep_jax" of this model, its runs at 11 ' in text
        assert (f"GPU:0 wins above about {formatting.fmt_count(sweep['crossover_batch'])} "
                "samples per step") in text
    # The GPU's fixed cost is most of its step, the CPU's a fraction of its.
    fits = sweep["devices"]
    assert fits["GPU:0"]["fixed_ms"] > 2 * fits["CPU:0"]["fixed_ms"]
    # At batch 32 the measured ratio of the two runs' steps.
    steps = {device: runs[f"jax_mlp_b32/{device}/train"]["step_ms"]["mean"] for device in ("gpu", "cpu")}
    [row] = [r for r in report["comparison"]["rows"] if r["run"] == "jax_mlp_b32/gpu/train"]
    assert (f"at this batch of 32 CPU:0 is {formatting.fmt_speedup(steps['gpu'] / steps['cpu'])} "
            "as fast as GPU:0") in row["explanation"]


def test_the_sweeps_comparison_agrees_with_the_sweep(report):
    """The sweep recorded on the H100: the comparison of each pair of its
    runs fits the same points as the sweep analysis, so both name one
    crossover (about 2,000 samples per step here: the DESIGN notes measured
    512 to 2,048 on this kind of machine)."""
    [sweep] = [s for s in report["sweeps"] if s["name"] == "sweep_jax"]
    rows = [r for r in report["comparison"]["rows"]
            if r["run"].startswith("sweep_jax/gpu_") and not r["is_baseline"]]
    assert len(rows) == 11
    for row in rows:
        assert row["scaling"]["crossover_batch"] == sweep["crossover_batch"]
        for device, fit in sweep["devices"].items():
            assert row["scaling"]["devices"][device]["fixed_ms"] == pytest.approx(fit["fixed_ms"])
    assert 512 <= sweep["crossover_batch"] <= 4096
