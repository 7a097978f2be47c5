"""The trace digest on real traces: CPU ones made here, GPU ones recorded.

No GPU exists on the machines that run these tests, so the device-plane
tests read two traces recorded on an NVIDIA H100 by
`benchmarks/gpu_trace_jax.py` (the seeds' MLP in JAX at batch 32 and 8192,
steps 20-29 marked with `jax.profiler.StepTraceAnnotation("train", ...)`):
real profiler output, not a mock, kept in `tests/data/`.
"""

import os

import pytest

from tb_devicecost import analysis
from tb_devicecost import trace

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def recorded(batch_size):
    return trace.load_xspace(os.path.join(DATA, f"h100_jax_mlp_batch{batch_size}.xplane.pb"))


def test_gpu_trace_is_cut_into_the_marked_steps():
    digest = trace.digest_xspace(recorded(32))
    assert [entry["step"] for entry in digest["steps"]] == list(range(20, 30))
    assert digest["has_device_plane"] is True
    assert digest["device_planes"] == ["/device:GPU:0"]
    for entry in digest["steps"]:
        assert entry["device_busy_ms"] + entry["device_idle_ms"] == pytest.approx(entry["step_ms"])
        assert entry["kernels"] > 0


def test_small_batch_keeps_the_gpu_mostly_idle():
    """The seeds' MLP at batch 32: a step of about a millisecond in which
    the GPU computes for a few percent (DESIGN.md measured 3%)."""
    summary = trace.digest_xspace(recorded(32))["summary"]
    assert summary["device_busy_fraction"] < 0.1
    assert summary["mean_kernel_mean_us"] < 10


def test_large_batch_copies_its_inputs_to_the_device():
    steps = trace.digest_xspace(recorded(8192))["steps"]
    # 8192 x 100 float32 features and 8192 int32 labels per step.
    assert all(entry["h2d_bytes"] >= 8192 * 100 * 4 for entry in steps)
    assert all(entry["h2d_ms"] > 0 for entry in steps)
    small = trace.digest_xspace(recorded(32))["summary"]
    large = trace.digest_xspace(recorded(8192))["summary"]
    assert large["device_busy_fraction"] > small["device_busy_fraction"]


def test_selected_steps_only():
    digest = trace.digest_xspace(recorded(32), steps=range(22, 25))
    assert [entry["step"] for entry in digest["steps"]] == [22, 23, 24]


def test_a_gpu_run_with_an_idle_device_is_latency_bound():
    """Analysis of a GPU run whose trace shows the device mostly idle while
    the input keeps up: the recorded H100 digest, with our per-step numbers
    for a GPU run (no TensorFlow GPU run can be made here)."""
    digest = trace.digest_xspace(recorded(32))
    window = dict(digest, start_step=20, stop_step=30, source="tb_devicecost")
    window["device_busy_fraction"] = digest["summary"]["device_busy_fraction"]
    steady = 400
    step_ms = digest["summary"]["mean_step_ms"]
    components = {
        "data_wait": {"count": steady, "sum_ms": 0.02 * step_ms * steady, "mean_ms": 0.02 * step_ms,
                      "p50_ms": 0.02 * step_ms, "p90_ms": 0.02 * step_ms, "p99_ms": 0.02 * step_ms},
        "compute": {"count": steady, "sum_ms": 0.96 * step_ms * steady, "mean_ms": 0.96 * step_ms,
                    "p50_ms": 0.96 * step_ms, "p90_ms": 0.96 * step_ms, "p99_ms": 0.96 * step_ms},
        "host_overhead": {"count": steady, "sum_ms": 0.02 * step_ms * steady, "mean_ms": 0.02 * step_ms,
                          "p50_ms": 0.02 * step_ms, "p90_ms": 0.02 * step_ms, "p99_ms": 0.02 * step_ms},
        "step": {"count": steady, "sum_ms": step_ms * steady, "mean_ms": step_ms,
                 "p50_ms": step_ms, "p90_ms": step_ms, "p99_ms": step_ms},
    }
    record = {
        "run": "gpu/train",
        "aggregate": {
            "schema": 1, "status": "complete", "steps": steady + 1, "steady_steps": steady,
            "sessions": 1, "components": components,
            "warmup": {"count": 1, "sum_ms": 1.0, "max_ms": 1.0, "steps": [0]},
            "spikes": {"count": 0, "ratio": 10.0, "steps": []},
            "samples": 32 * steady, "samples_per_s": 32 / (step_ms / 1e3),
            "batch_size": {"min": 32, "max": 32, "distinct": 1}, "fetch_floor_ms": None,
        },
        "info": {"backend": "tensorflow"},
        "placement": {
            "devices": {"physical": [{"name": "CPU:0", "kind": "CPU"}, {"name": "GPU:0", "kind": "GPU"}],
                        "logical": [{"name": "CPU:0", "kind": "CPU"}, {"name": "GPU:0", "kind": "GPU"}]},
            "accelerator_visible": True, "ops": {"GPU:0": 200, "CPU:0": 10},
            "variables": {"GPU:0": 4}, "step_ops_captured": True, "cross_device_copies": 0,
        },
        "trace": {"windows": [window]},
    }
    result = analysis.analyze_run(record)
    assert result["device"] == "GPU:0"
    assert result["device_busy_fraction"] == pytest.approx(digest["summary"]["device_busy_fraction"])
    assert result["steady_verdict"] == "latency_bound"
    [finding] = [f for f in result["findings"] if f["id"] == "latency_bound"]
    assert "GPU:0" in finding["message"]


def test_unreadable_traces_say_why(tmp_path):
    garbage = tmp_path / "host.xplane.pb"
    garbage.write_bytes(b"\x00\xff not a protobuf \xff" * 10)
    with pytest.raises(trace.TraceError, match="not a valid XSpace|holds no planes"):
        trace.load_xspace(str(garbage))
    with pytest.raises(trace.TraceError, match="Cannot read trace"):
        trace.load_xspace(str(tmp_path / "missing.xplane.pb"))
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(trace.TraceError, match="holds no planes"):
        trace.load_xspace(str(empty))


def test_newest_capture_finds_the_latest_trace(tmp_path):
    for capture in ("2026_01_01_00_00_00", "2026_01_02_00_00_00"):
        directory = tmp_path / "plugins" / "profile" / capture
        directory.mkdir(parents=True)
        (directory / "myhost.xplane.pb").write_bytes(b"x")
    path, capture, host = trace.newest_capture(str(tmp_path))
    assert (capture, host) == ("2026_01_02_00_00_00", "myhost")
    assert path.endswith(os.path.join("2026_01_02_00_00_00", "myhost.xplane.pb"))
    assert trace.newest_capture(str(tmp_path / "nothing")) is None
