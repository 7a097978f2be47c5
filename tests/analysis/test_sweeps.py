"""`tb_devicecost.analysis.sweeps`: a sweep's runs, each device's fixed and
per-sample cost, the crossover and the user's batch size.

Runs are written with `StepRecorder` on a fake clock, so every step takes a
known time; the expected costs and crossovers are worked out by hand below.
The last tests read the dense sweep recorded on an NVIDIA H100 (JAX
backend, the seeds' MLP) in `tests/data/h100/sweep_jax`.
"""

import dataclasses
import os

import numpy as np
import pytest

import tb_devicecost
from tb_devicecost import analysis
from tb_devicecost import words
from tb_devicecost.analysis import sweeps
from tb_devicecost.analysis.formatting import fmt_ms_unit
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.reading import reader

from tests.support import paths
from tests.support.clock import FakeClock


H100_SWEEP = os.path.join(paths.DATA, "h100", "sweep_jax")

# Two made-up devices, step = fixed + per sample * batch (ms):
# CPU:0 0.1 ms + 0.5 us per sample, GPU:0 1.0 ms + 0.01 us per sample.
CPU = (0.1, 0.5e-3)
GPU = (1.0, 0.01e-3)
BATCHES = (16, 64, 256, 1024, 4096)
# Equal steps where 0.1 + 0.0005 b = 1.0 + 0.00001 b: b = 0.9 / 0.00049.
CROSSOVER = 1837  # 1836.73 rounded


def record_run(logdir, name, step_ms, batch_size, steps=6):
    """A run `name` whose steady steps each take `step_ms` of compute."""
    clock = FakeClock()
    recorder = tb_devicecost.StepRecorder(os.path.join(logdir, name), clock=clock)
    batches = [np.zeros((batch_size, 1), np.float32)] * steps
    for index, _ in enumerate(recorder.timed(batches)):
        with recorder.compute():
            clock.advance(50.0 if index == 0 else step_ms)
    recorder.close()


def record_sweep(logdir, devices, batches=BATCHES, prefix="sweep"):
    """Runs `<prefix>/<cpu|gpu>_b<batch>/train`, the names `sweep()` gives."""
    for kind, (fixed, per_sample) in devices.items():
        for batch in batches:
            record_run(logdir, f"{prefix}/{kind}_b{batch}/train", fixed + per_sample * batch, batch)


def report_of(logdir, mark=None):
    """The report of `logdir`; `mark(run name)` gives a run info `sweep` entry."""
    records = reader.read_runs(reader.local_provider(str(logdir)))
    if mark is not None:
        records = [
            dataclasses.replace(record, info=dict(record.info, sweep=mark(record.run)))
            for record in records
        ]
    return words.build_report(records)


def test_costs_and_crossover_of_two_devices(tmp_path):
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU})
    report = report_of(tmp_path)
    [sweep] = report["sweeps"]
    assert sweep["name"] == "sweep"
    assert sweep["source"] == "run_name"
    assert sweep["step_statistic"] == "mean"
    assert set(sweep["devices"]) == {"CPU:0", "GPU:0"}
    cpu, gpu = sweep["devices"]["CPU:0"], sweep["devices"]["GPU:0"]
    assert cpu["fixed_ms"] == pytest.approx(0.1, rel=1e-6)
    assert cpu["per_sample_us"] == pytest.approx(0.5, rel=1e-6)
    assert gpu["fixed_ms"] == pytest.approx(1.0, rel=1e-6)
    assert gpu["per_sample_us"] == pytest.approx(0.01, rel=1e-5)
    assert [point["batch_size"] for point in cpu["points"]] == list(BATCHES)
    # A point's figures are its run's figures.
    runs = {run["run"]: run for run in report["runs"]}
    for point in cpu["points"] + gpu["points"]:
        assert point["step_ms"] == runs[point["run"]]["step_ms"]["mean"]
        assert point["samples_per_s"] == runs[point["run"]]["samples_per_s"]
    assert cpu["points"][0]["step_ms"] == pytest.approx(0.108)
    assert cpu["points"][0]["samples_per_s"] == pytest.approx(16 / 0.108e-3)
    assert sweep["compared"] == ["CPU:0", "GPU:0"]
    assert sweep["crossover_batch"] == CROSSOVER
    assert sweep["crossover_extrapolated"] is False
    assert (sweep["faster_above"], sweep["faster_below"]) == ("GPU:0", "CPU:0")
    # Between 1024 (CPU 0.612 ms, GPU 1.01024 ms) and 4096 (2.148, 1.04096),
    # the steps' difference crosses zero at the same batch size: both lines.
    assert sweep["measured_crossover"] == {
        "between": [1024, 4096], "batch": CROSSOVER, "faster_above": "GPU:0"
    }
    assert sweep["faster_at"] is None
    assert sweep["message"] == (
        "GPU:0 overtakes CPU:0 above about 1,837 samples per step "
        "(measured: between 1,024 and 4,096)."
    )


def test_your_batch_size_from_the_run_info(tmp_path):
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU}, prefix="day1")

    def mark(your_batch_size):
        def entry(run):
            device, batch = run.split("/")[1].split("_b")
            return {"name": "mine", "device": device, "batch_size": int(batch),
                    "your_batch_size": your_batch_size}
        return entry

    # Measured: both devices ran batch 64 (CPU 0.132 ms, GPU 1.00064 ms).
    [sweep] = report_of(tmp_path, mark(64))["sweeps"]
    assert sweep["source"] == "run_info"
    assert sweep["name"] == "day1"  # the runs' prefix, as TensorBoard lists them
    assert sweep["your_batch_size"] == 64
    assert sweep["faster_at"]["device"] == "CPU:0"
    assert sweep["faster_at"]["other"] == "GPU:0"
    assert sweep["faster_at"]["source"] == "measured"
    assert sweep["faster_at"]["times"] == pytest.approx(1.00064 / 0.132, rel=1e-6)
    assert sweep["message"].endswith(
        "; at your batch of 64 CPU:0 is 7.58x as fast as GPU:0 (measured)."
    )
    # From the fit: nobody ran batch 32 (CPU 0.116 ms, GPU 1.00032 ms).
    [sweep] = report_of(tmp_path, mark(32))["sweeps"]
    assert sweep["faster_at"]["source"] == "fit"
    assert sweep["faster_at"]["times"] == pytest.approx(1.00032 / 0.116, rel=1e-5)
    assert sweep["message"].endswith("at your batch of 32 CPU:0 is 8.62x as fast as GPU:0 (by the fit).")
    # Large batches: the GPU.
    [sweep] = report_of(tmp_path, mark(8192))["sweeps"]
    assert sweep["faster_at"]["device"] == "GPU:0"
    assert sweep["faster_at"]["times"] == pytest.approx((0.1 + 0.0005 * 8192) / (1.0 + 0.00001 * 8192), rel=1e-5)


def test_a_flat_or_falling_step_has_no_per_sample_cost(tmp_path):
    # The GPU's step falls from 1.0 ms at 16 to 0.8 ms at 1024: its best
    # line has a negative slope, so the fit holds it at zero and the fixed
    # cost is the weighted mean, (1/1.0 + 1/0.8) / (1/1.0^2 + 1/0.8^2) =
    # 2.25 / 2.5625.
    record_run(tmp_path, "s/gpu_b16/train", 1.0, 16)
    record_run(tmp_path, "s/gpu_b1024/train", 0.8, 1024)
    record_sweep(tmp_path, {"cpu": CPU}, batches=(16, 1024), prefix="s")
    [sweep] = report_of(tmp_path)["sweeps"]
    gpu = sweep["devices"]["GPU:0"]
    assert gpu["per_sample_us"] == 0.0
    assert gpu["fixed_ms"] == pytest.approx(2.25 / 2.5625, rel=1e-6)
    # 0.1 + 0.0005 b = 0.878...: b = 1556.1.
    assert sweep["crossover_batch"] == round((2.25 / 2.5625 - 0.1) / 0.0005)
    assert sweep["crossover_extrapolated"] is True
    assert "(beyond the batch sizes measured, so an extrapolation)" in sweep["message"]


def test_fit_without_crossing_and_with_negative_fixed_cost():
    # Points on step = 0.002 * b: a line through the origin.
    assert sweeps.fit_step_time([(100, 0.2), (1000, 2.0)]) == pytest.approx((0.0, 0.002))
    # The best line, 0.5 - 0.0001 b + ..., would cross zero: held at the origin.
    fixed, per_sample = sweeps.fit_step_time([(10, 0.01), (1000, 5.0)])
    assert fixed == 0.0
    # sum(b/t) / sum(b^2/t^2) over the two points: (1000 + 200) / (1e6 + 40000).
    assert per_sample == pytest.approx(1200 / 1.04e6)
    assert sweeps.fit_step_time([(64, 1.0), (64, 2.0)]) == (None, None)


def test_one_device_faster_everywhere(tmp_path):
    record_sweep(tmp_path, {"cpu": (1.0, 1e-3), "gpu": (0.5, 1e-4)}, batches=(16, 256))
    [sweep] = report_of(tmp_path)["sweeps"]
    assert sweep["crossover_batch"] is None
    assert sweep["faster_above"] == sweep["faster_below"] == "GPU:0"
    assert sweep["measured_crossover"] is None
    assert sweep["message"] == "GPU:0 is faster than CPU:0 at every batch size, by the fit."


def test_noisy_points_give_no_measured_crossover(tmp_path):
    # The faster device changes three times: no crossover read from points.
    for batch, (cpu, gpu) in {16: (1.0, 2.0), 64: (2.0, 1.0), 256: (1.0, 2.0), 1024: (3.0, 1.0)}.items():
        record_run(tmp_path, f"n/cpu_b{batch}/train", cpu, batch)
        record_run(tmp_path, f"n/gpu_b{batch}/train", gpu, batch)
    [sweep] = report_of(tmp_path)["sweeps"]
    assert sweep["measured_crossover"] is None
    assert any("changes 3 times" in problem for problem in sweep["problems"])


def test_runs_that_are_not_a_sweep(tmp_path):
    # Ordinary names, a validation run, a lone run of a sweep's shape.
    record_run(tmp_path, "cpu/train", 1.0, 32)
    record_run(tmp_path, "gpu/train", 1.0, 32)
    record_run(tmp_path, "s/cpu_b16/validation", 1.0, 16)
    record_run(tmp_path, "s/cpu_b64/validation", 1.0, 64)
    record_run(tmp_path, "t/gpu_b16/train", 1.0, 16)
    report = report_of(tmp_path)
    assert report["sweeps"] == []
    assert {run["run"]: run["sweep"] for run in report["runs"]}["t/gpu_b16/train"] == {
        "name": "t", "prefix": "t", "device": "GPU:0", "batch_size": 16,
        "your_batch_size": None, "source": "run_name",
    }


def test_a_malformed_sweep_entry_falls_back_to_the_name(tmp_path):
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU}, batches=(16, 64))
    entries = [None, "sweep", {"name": "x", "device": "tpu", "batch_size": 16},
               {"name": "x", "device": "gpu", "batch_size": -4}, {"name": 3}]
    for entry in entries:
        [sweep] = report_of(tmp_path, lambda run: entry)["sweeps"]
        assert sweep["source"] == "run_name"
        assert set(sweep["devices"]) == {"CPU:0", "GPU:0"}


def h100_runs():
    return words.build_report(reader.read_runs(reader.local_provider(H100_SWEEP)))["runs"]


def test_h100_sweep_is_recognised_by_its_run_names():
    """The dense sweep recorded on an NVIDIA H100 (JAX backend, the seeds'
    MLP, 11 batch sizes from 16 to 16384 per device), recorded before
    sweeps were marked in the run info."""
    [sweep] = words.render(analysis.find_sweeps(h100_runs()))
    assert sweep["source"] == "run_name"
    assert {device: len(fit["points"]) for device, fit in sweep["devices"].items()} == {
        "CPU:0": 11, "GPU:0": 11,
    }
    # The GPU step hardly grows with the batch, the CPU step does.
    assert sweep["devices"]["GPU:0"]["per_sample_us"] < sweep["devices"]["CPU:0"]["per_sample_us"] / 10
    assert sweep["devices"]["GPU:0"]["fixed_ms"] > sweep["devices"]["CPU:0"]["fixed_ms"]
    assert sweep["faster_above"] == "GPU:0"


def test_h100_five_batch_sizes_predict_the_dense_crossover_within_2x():
    """On the H100 sweep (recorded on an NVIDIA H100, JAX backend): the
    crossover the fit predicts from 5 batch sizes (16, 64, 256, 1024, 4096)
    lies within 2x of the crossover measured from all 11 points, which the
    data places between 1024 and 2048 samples per step."""
    runs = h100_runs()
    [dense] = words.render(analysis.find_sweeps(runs))
    measured = dense["measured_crossover"]
    assert measured["between"] == [1024, 2048]
    assert measured["faster_above"] == "GPU:0"
    subset = [run for run in runs if run["sweep"]["batch_size"] in (16, 64, 256, 1024, 4096)]
    [sparse] = words.render(analysis.find_sweeps(subset))
    assert len(sparse["devices"]["GPU:0"]["points"]) == 5
    assert sparse["faster_above"] == "GPU:0"
    ratio = sparse["crossover_batch"] / measured["batch"]
    assert 0.5 <= ratio <= 2.0, (sparse["crossover_batch"], measured)


def test_a_sweep_name_is_shown_never_acted_on(tmp_path):
    # The sweep's name is its runs' prefix: a directory name, user data.
    name = "e\x1b[2J<b>*x*"
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU}, batches=(16, 4096), prefix=name)
    report = report_of(tmp_path)
    [sweep] = report["sweeps"]
    assert sweep["name"] == name
    for text in (console.render(report), console.render_sweeps(report["sweeps"], str(tmp_path))):
        assert "\x1b" not in text
        assert "SWEEP e\\x1b[2J<b>*x*: step = fixed + per sample × batch" in text
    text = markdown.render(report)
    assert "### Sweep `e\\x1b[2J<b>*x*`" in text
    assert "\x1b" not in text
    # The table's figures are the report's, by the one formatting rule.
    assert f"| `CPU:0` | {fmt_ms_unit(sweep['devices']['CPU:0']['fixed_ms'])} | 0.500 µs |" in text


@pytest.mark.parametrize("how", ["run_name", "run_info"])
def test_a_sweep_that_cannot_be_fitted_is_a_sweep_problem(tmp_path, how):
    # Issue 25, item 2: batch sizes one apart near 1e9 (by name) or 1e15
    # (in the run info), equal steps: the sums of the least-squares fit
    # cancel. The sweep says it could not fit the device; every run is
    # still reported, and a healthy sweep beside it is fitted as before.
    huge = (999_999_999, 999_999_998) if how == "run_name" else (10**15, 10**15 - 1)
    for batch in huge:
        record_run(tmp_path, f"bad/cpu_b{batch}/train" if how == "run_name"
                   else f"bad/cpu_{batch % 7}/train", 2.0, 4)
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU}, batches=(16, 4096), prefix="good")
    mark = None
    if how == "run_info":
        def mark(run):
            if not run.startswith("bad/"):
                return None
            batch = next(batch for batch in huge if f"cpu_{batch % 7}/" in run)
            return {"name": "bad", "device": "cpu", "batch_size": batch}
    report = report_of(tmp_path, mark)
    assert len(report["runs"]) == 6
    sweeps = {sweep["name"]: sweep for sweep in report["sweeps"]}
    assert set(sweeps) == {"bad", "good"}
    bad = sweeps["bad"]["devices"]["CPU:0"]
    if bad["fixed_ms"] is None:
        assert sweeps["bad"]["problems"]
    else:
        # Fitted after all: a step that does not grow with the batch.
        assert bad["fixed_ms"] == pytest.approx(2.0, rel=1e-3)
        assert bad["per_sample_us"] == pytest.approx(0.0, abs=1e-9)
    assert sweeps["good"]["crossover_batch"] is not None
    for render in (console.render, markdown.render):
        render(report)


def test_points_that_cannot_be_fitted_give_no_costs():
    # Issue 25, item 2: the fit itself never divides by zero.
    assert sweeps.fit_step_time([(10**15, 2.0), (10**15 - 1, 2.0)]) == (2.0, 0.0)
    assert sweeps.fit_step_time([(999_999_999, 3.0), (999_999_998, 3.0)]) == (3.0, 0.0)
    # Batch sizes equal as floats: no fit, not an exception.
    assert sweeps.fit_step_time([(2**60, 1.0), (2**60 + 1, 1.0)]) == (None, None)
    fixed, per_sample = sweeps.fit_step_time([(16, 1e-300), (64, 4e-300)])
    assert fixed is None or (fixed >= 0 and per_sample >= 0)


def test_a_sweep_whose_fit_raises_is_a_sweep_problem(tmp_path, monkeypatch):
    # Issue 25, item 2: whatever the arithmetic raises stays in the sweep.
    record_sweep(tmp_path, {"cpu": CPU, "gpu": GPU}, batches=(16, 4096))

    def broken(points):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(sweeps, "fit_step_time", broken)
    report = report_of(tmp_path)
    assert len(report["runs"]) == 4
    [sweep] = report["sweeps"]
    assert sweep["problems"] and "could not be fitted" in sweep["message"]
    assert sorted(sweep["runs"]) == sorted(run["run"] for run in report["runs"])
    console.render(report)
    markdown.render(report)
