"""`tb_devicecost.sweep` and `tb-devicecost sweep`: real fits on the CPU.

No GPU here: the sweeps run on two CPU devices, TensorFlow's two logical
CPUs in this process (set up in `conftest.py`) and, in a process of its
own, JAX with two host devices, so the whole path (device scopes, marked
runs, the report's sweep) runs as it would on a CPU and a GPU.
"""

import json
import os

import pytest

import tb_devicecost
from tb_devicecost import cli
from tb_devicecost import words
from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms_unit
from tb_devicecost.reading import reader

from tests.support.scripts import run_backend_script
from tests.support.sweep_models import build, build_uncompiled, data


PLAN = [("cpu:0", 8), ("cpu:0", 128), ("cpu:1", 8), ("cpu:1", 128)]
RUNS = {
    "sweep/cpu_b8/train": ("CPU:0", 8),
    "sweep/cpu_b128/train": ("CPU:0", 128),
    "sweep/cpu1_b8/train": ("CPU:1", 8),
    "sweep/cpu1_b128/train": ("CPU:1", 128),
}


def read(logdir):
    return reader.read_runs(reader.local_provider(str(logdir)))


def check_marked_sweep(records, steps):
    """The runs of a sweep over PLAN exist, are marked, and make one sweep."""
    assert {record.run for record in records} == set(RUNS)
    for record in records:
        device, batch_size = RUNS[record.run]
        assert record.info["sweep"] == {
            "name": "sweep",
            "device": device.lower(),
            "batch_size": batch_size,
            "your_batch_size": 8,
            "batch_sizes": [8, 128],
            "devices": ["cpu:0", "cpu:1"],
        }
    report = words.build_report(records)
    for run in report["runs"]:
        device, batch_size = RUNS[run["run"]]
        # Each fit ran where its scope put it, with the batch size asked for.
        assert run["device"] == device, run["placement"]
        assert run["batch_size"] == batch_size
        # Warm-up is the first step (two on TensorFlow, docs/FORMAT.md).
        assert run["steps"] == steps
        assert run["steady_steps"] == steps - len(run["warmup_steps"])
    [sweep] = report["sweeps"]
    assert sweep["name"] == "sweep"
    assert sweep["source"] == "run_info"
    assert set(sweep["devices"]) == {"CPU:0", "CPU:1"}
    for device, fit in sweep["devices"].items():
        assert [point["batch_size"] for point in fit["points"]] == [8, 128]
        assert all(point["step_ms"] > 0 and point["samples_per_s"] > 0 for point in fit["points"])
        assert fit["fixed_ms"] is not None and fit["per_sample_us"] is not None
    assert sweep["compared"] == ["CPU:0", "CPU:1"]
    assert sweep["faster_at"]["batch_size"] == 8
    assert sweep["faster_at"]["source"] == "measured"
    assert "at your batch of 8 " in sweep["message"]
    return report


@pytest.mark.slow
def test_sweep_on_two_tensorflow_cpus(tmp_path):
    x, y = data()
    ran = tb_devicecost.sweep(
        build, x, y, batch_sizes=(128, 8), devices=("cpu:0", "CPU:1"),
        log_dir=tmp_path / "sweep", steps=6, your_batch_size=8,
    )
    assert [(item["device"], item["batch_size"]) for item in ran] == PLAN
    assert [item["run_dir"] for item in ran] == [
        os.path.join(str(tmp_path / "sweep"), name) for name in ("cpu_b8", "cpu_b128", "cpu1_b8", "cpu1_b128")
    ]
    check_marked_sweep(read(tmp_path), steps=6)


@pytest.mark.slow
def test_sweep_on_two_jax_host_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    facts, records = run_backend_script("sweep_fits.py", "jax", tmp_path)
    assert [(item["device"], item["batch_size"]) for item in facts["ran"]] == PLAN
    report = check_marked_sweep(list(records.values()), steps=6)
    assert {run["backend"] for run in report["runs"]} == {"jax"}


@pytest.mark.slow
def test_sweep_on_the_pytorch_cpu(tmp_path):
    facts, records = run_backend_script("sweep_fits.py", "torch", tmp_path)
    assert [(item["device"], item["batch_size"]) for item in facts["ran"]] == PLAN[:2]
    report = words.build_report(list(records.values()))
    assert {run["run"]: run["sweep"]["device"] for run in report["runs"]} == {
        "sweep/cpu_b8/train": "CPU:0", "sweep/cpu_b128/train": "CPU:0",
    }
    # Both fits trained: every step recorded, each run a point of the sweep.
    assert {run["steps"] for run in report["runs"]} == {6}
    [sweep] = report["sweeps"]
    assert list(sweep["devices"]) == ["CPU:0"]
    assert [p["batch_size"] for p in sweep["devices"]["CPU:0"]["points"]] == [8, 128]
    assert sweep["compared"] is None
    assert sweep["message"].startswith("Only CPU:0 has a fit (")


def test_default_devices_without_a_gpu(tmp_path):
    x, y = data()
    ran = tb_devicecost.sweep(build, x, y, batch_sizes=(8, 16), log_dir=tmp_path / "s", steps=4)
    assert [item["device"] for item in ran] == ["cpu:0", "cpu:0"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"batch_sizes": (16,)}, "two or more distinct positive integers"),
        ({"batch_sizes": (16, 16)}, "two or more distinct"),
        ({"batch_sizes": (0, 16)}, "Received: batch_sizes=(0, 16)"),
        ({"batch_sizes": "16,64"}, "`batch_sizes` must be a list or tuple"),
        ({"devices": ("tpu",)}, "`devices` must be a list of device names"),
        ({"devices": ("gpu",)}, "names 'gpu', which the tensorflow backend does not have"),
        ({"devices": ("cpu:7",)}, "(it has: cpu:0, cpu:1)"),
        ({"devices": ("cpu", "cpu:0")}, "different devices"),
        ({"steps": 3}, "`steps` must be an integer of at least 4"),
        ({"your_batch_size": 0}, "`your_batch_size` must be None or a positive integer"),
        ({"x": [[1.0, 2.0]]}, "`x` must be a NumPy array"),
        ({"y": data()[1][:5]}, "the same number of samples"),
        ({"build_model": "model"}, "`build_model` must be a function"),
        ({"log_dir": ""}, "`log_dir` must be a non-empty path"),
        ({"batch_sizes": (16, 1 << 20), "steps": 1000}, "GiB of inputs in memory"),
    ],
)
def test_invalid_arguments(tmp_path, arguments, message):
    x, y = data()
    call = dict(build_model=build, x=x, y=y, batch_sizes=(8, 16), log_dir=str(tmp_path / "s"), steps=4)
    call.update(arguments)
    with pytest.raises(ValueError, match=None) as raised:
        tb_devicecost.sweep(**call)
    assert message in str(raised.value)
    assert "Received" in str(raised.value)
    # Nothing was recorded.
    assert not os.path.exists(tmp_path / "s")


def test_uncompiled_model_and_taken_log_dir(tmp_path):
    x, y = data()
    with pytest.raises(ValueError, match="must return a compiled keras.Model"):
        tb_devicecost.sweep(build_uncompiled, x, y, batch_sizes=(8, 16), log_dir=tmp_path / "a", steps=4)
    tb_devicecost.sweep(build, x, y, batch_sizes=(8, 16), devices="cpu", log_dir=tmp_path / "b", steps=4)
    with pytest.raises(ValueError, match=r"already holds runs of a sweep .*cpu_b8.* and 1 more"):
        tb_devicecost.sweep(build, x, y, batch_sizes=(8, 16), devices="cpu", log_dir=tmp_path / "b", steps=4)


# The module of the builders, as the command names it (MODULE:NAME).
MODELS = "tests.support.sweep_models"


def run_main(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_sweep(tmp_path, capsys, monkeypatch):
    # A short relative log_dir: the title fits its line whatever the
    # temporary directory's length (a worker of `make test` adds to it).
    monkeypatch.chdir(tmp_path)
    logdir = "cli"
    code, out, err = run_main(
        capsys, "sweep", f"{MODELS}:build", "--data", f"{MODELS}:data",
        "--batch-sizes", "8,64", "--devices", "cpu:0,cpu:1", "--log-dir", str(logdir),
        "--steps", "4", "--your-batch-size", "8",
    )
    assert code == 0, err
    assert sorted(os.listdir(logdir)) == ["cpu1_b64", "cpu1_b8", "cpu_b64", "cpu_b8"]
    [sweep] = words.build_report(read(logdir))["sweeps"]
    assert out.startswith(f"tb-devicecost sweep under {logdir}\n")
    assert "SWEEP cli: step = fixed + per sample × batch" in out
    # The same sentence as the report's (the terminal wraps it).
    assert " ".join(sweep["message"].split()) in " ".join(out.split())
    for device, fit in sweep["devices"].items():
        assert f"  {device:<10} {fmt_ms_unit(fit['fixed_ms']):>10} " in out
        for point in fit["points"]:
            assert f" {fmt_count(point['samples_per_s']):>16}" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        ([MODELS, "--data", f"{MODELS}:data"], "MODULE:BUILDER must name a function as MODULE:NAME"),
        (["no_such_module_here:build", "--data", f"{MODELS}:data"], "no module 'no_such_module_here'"),
        ([f"{MODELS}:nothing", "--data", f"{MODELS}:data"], "has no function 'nothing'"),
        ([f"{MODELS}:build", "--data", f"{MODELS}:"], "--data must name a function"),
        ([f"{MODELS}:build"], "the following arguments are required: --data"),
        ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--batch-sizes", "16,x"],
         "--batch-sizes must be a comma-separated list"),
        ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--batch-sizes", "16"],
         "`batch_sizes` must be a list or tuple of two or more"),
        ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--devices", "tpu"],
         "`devices` must be a list of device names"),
        ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--steps", "x"], "invalid int value: 'x'"),
        ([f"{MODELS}:build_uncompiled", "--data", f"{MODELS}:data", "--batch-sizes", "8,16",
          "--steps", "4"], "must return a compiled keras.Model"),
    ],
)
def test_cli_sweep_bad_input(tmp_path, capsys, argv, message):
    code, out, err = run_main(capsys, "sweep", *argv, "--log-dir", str(tmp_path / "s"))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tb-devicecost: error: ")
    assert message in err
    assert "Traceback" not in err


def test_cli_sweep_failing_user_code(tmp_path, capsys):
    code, out, err = run_main(
        capsys, "sweep", f"{MODELS}:build", "--data", f"{MODELS}:broken_data",
        "--log-dir", str(tmp_path / "s"),
    )
    assert code == 1
    assert out == ""
    assert err == f"tb-devicecost: error: {MODELS}:broken_data() raised RuntimeError: no data today\n"


SWEEP_KEYS = {
    "name", "source", "step_statistic", "runs", "devices", "compared", "crossover_batch",
    "crossover_extrapolated", "faster_above", "faster_below", "measured_crossover",
    "your_batch_size", "faster_at", "message", "problems",
}


@pytest.mark.slow
def test_report_json_holds_the_sweep(tmp_path, capsys):
    x, y = data()
    tb_devicecost.sweep(build, x, y, batch_sizes=(8, 64), devices=("cpu:0", "cpu:1"),
                        log_dir=tmp_path / "sweep", steps=4, your_batch_size=16)
    code, out, err = run_main(capsys, "report", str(tmp_path), "--json")
    assert code == 0, err
    [sweep] = json.loads(out)["sweeps"]
    assert set(sweep) == SWEEP_KEYS
    assert sweep["runs"] == ["sweep/cpu_b8/train", "sweep/cpu_b64/train",
                             "sweep/cpu1_b8/train", "sweep/cpu1_b64/train"]
    for fit in sweep["devices"].values():
        assert set(fit) == {"fixed_ms", "per_sample_us", "points"}
        for point in fit["points"]:
            assert set(point) == {"run", "batch_size", "step_ms", "samples_per_s"}
    # Batch 16 was not run: the fits say which device is faster there.
    assert sweep["faster_at"]["source"] == "fit"
    assert set(sweep["faster_at"]) == {"batch_size", "device", "other", "times", "step_ms", "source"}
    code, out, err = run_main(capsys, "report", str(tmp_path), "--markdown")
    assert "### Sweep `sweep`" in out
    assert sweep["message"] in out


# Issue 25, item 8: `sweep --log-dir` that cannot hold the runs, and Ctrl-C.


@pytest.mark.parametrize("where", ["file", "under_file", "proc"])
def test_sweep_refuses_a_log_dir_it_cannot_write_before_any_fit(tmp_path, capsys, where):
    a_file = tmp_path / "plain.txt"
    a_file.write_text("not a directory")
    log_dir = {"file": str(a_file), "under_file": str(a_file / "sweep"),
               "proc": "/proc/nope"}[where]
    # The data function raises: were it called (the fits started), the
    # exit would be 1 with its error.
    code, out, err = run_main(capsys, "sweep", f"{MODELS}:build", "--data",
                              f"{MODELS}:broken_data", "--log-dir", log_dir)
    assert code == 2, err
    assert out == "" and err.count("\n") == 1
    assert err.startswith("tb-devicecost: error: --log-dir ") and "broken" not in err


def test_ctrl_c_during_a_sweep_stops_with_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "interrupted_data.py").write_text(
        "def data():\n    raise KeyboardInterrupt\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run_main(capsys, "sweep", f"{MODELS}:build", "--data",
                              "interrupted_data:data", "--log-dir", str(tmp_path / "s"))
    assert code == 130
    assert out == "" and err == "tb-devicecost: interrupted\n"
