"""The trace digest on real traces: CPU ones made here, GPU ones recorded.

No GPU exists on the machines that run these tests, so the device-plane
tests read two traces recorded on an NVIDIA H100 by
`benchmarks/gpu_trace_jax.py` at commit a39a1f6 (the seeds' MLP in JAX at batch 32 and 8192,
steps 20-29 marked with `jax.profiler.StepTraceAnnotation("train", ...)`):
real profiler output, not a mock, kept in `tests/data/`.
"""

import json
import os
import sys

import pytest

from tb_devicecost import words
from tb_devicecost.traces import trace
from tb_devicecost.traces import xspace_schema

from tests.support import paths


DATA = paths.DATA


def recorded(batch_size):
    return trace.load_xspace(os.path.join(DATA, f"h100_jax_mlp_batch{batch_size}.xplane.pb"))


def test_gpu_trace_is_cut_into_the_marked_steps():
    digest = trace.digest_xspace(recorded(32))
    assert [entry["step"] for entry in digest["steps"]] == list(range(20, 30))
    assert digest["has_device_plane"] is True
    assert digest["device_planes"] == ["/device:GPU:0"]
    for entry in digest["steps"]:
        # Compute, collectives, copies and idle time split the step.
        parts = ("device_busy_ms", "device_communication_ms", "device_memory_ms", "device_idle_ms")
        assert sum(entry[key] for key in parts) == pytest.approx(entry["step_ms"])
        assert entry["kernels"] > 0
        # One process on one GPU runs no collective.
        assert entry["device_communication_ms"] == 0 and entry["collectives"] == 0
    [device] = digest["devices"]
    assert device["device"] == "/device:GPU:0"
    assert device["compute_fraction"] == pytest.approx(digest["summary"]["device_busy_fraction"])


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
    result = words.analyze_run(record)
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


# Reading traces without TensorFlow: our copy of the XSpace schema.


def _fields(descriptor):
    return {
        field.name: (
            field.number,
            field.type,
            field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED,
            field.message_type.name if field.message_type else None,
        )
        for field in descriptor.fields
    }


def test_our_generated_xspace_schema_is_tensorflows():
    # `make test` installs TensorFlow, whose schema ours copies.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    from tb_devicecost.traces.protos import xplane_pb2 as generated

    assert xspace_schema.xspace_class() is generated.XSpace
    ours = generated.DESCRIPTOR
    theirs = xplane_pb2.DESCRIPTOR
    assert sorted(ours.message_types_by_name) == sorted(theirs.message_types_by_name)
    for name, message in theirs.message_types_by_name.items():
        assert _fields(ours.message_types_by_name[name]) == _fields(message), name
        for nested in message.nested_types:
            [counterpart] = [n for n in ours.message_types_by_name[name].nested_types if n.name == nested.name]
            assert _fields(counterpart) == _fields(nested)


def test_a_trace_is_digested_without_tensorflow(tmp_path):
    """A JAX or PyTorch process never imports TensorFlow to read a trace."""
    path = os.path.join(DATA, "h100_jax_mlp_batch8192.xplane.pb")
    script = (
        "import json, sys\n"
        "sys.modules['tensorflow'] = None  # import tensorflow fails\n"
        "from tb_devicecost.traces import trace\n"
        f"digest = trace.digest_xspace(trace.load_xspace({path!r}))\n"
        "print(json.dumps(digest['summary'], sort_keys=True))\n"
    )
    import subprocess
    import sys

    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    summary = json.loads(completed.stdout.strip().splitlines()[-1])
    assert summary == pytest.approx(trace.digest_xspace(recorded(8192))["summary"])


def test_without_a_schema_the_entry_says_so_and_keeps_the_trace(tmp_path, monkeypatch):
    from tb_devicecost.recording import profiling

    def no_tensorflow():
        raise ImportError("No module named 'tensorflow'")

    monkeypatch.setattr(xspace_schema, "_tensorflow_xspace", no_tensorflow)
    # As where protobuf is older than our generated code: its import fails.
    from tb_devicecost.traces import protos

    monkeypatch.setitem(sys.modules, "tb_devicecost.traces.protos.xplane_pb2", None)
    monkeypatch.delattr(protos, "xplane_pb2", raising=False)
    run_dir = tmp_path / "run"
    capture = run_dir / "plugins" / "profile" / "2026_01_01_00_00_00"
    capture.mkdir(parents=True)
    kept = capture / "host.xplane.pb"
    kept.write_bytes(open(os.path.join(DATA, "h100_jax_mlp_batch32.xplane.pb"), "rb").read())
    window = profiling.ProfilerWindow(20, 30, str(run_dir), backend="jax")
    entry = window.document()
    assert "needs the XSpace protobuf schema" in entry["error"]
    assert "kept for TensorBoard's Profile tab" in entry["error"]
    assert entry["trace_file"] == str(kept)
    assert kept.exists()


# Traces of asynchronous dispatch (JAX, PyTorch): cut from dispatch to completion.


def test_the_gpu_trace_cut_by_dispatch_and_completion_counts_the_same_work():
    """The recorded H100 trace has no completion markers (its script waited
    inside each marker): each step then ends with the device work it
    launched, matched by correlation id, and counts the same kernels and
    copies as the cut by markers alone."""
    by_marker = trace.digest_xspace(recorded(8192))["steps"]
    by_dispatch = trace.digest_xspace(recorded(8192), asynchronous=True)
    assert by_dispatch["step_cut"] == trace.CUT_DISPATCH_TO_COMPLETION
    assert by_dispatch["completion_markers"] == 0
    for ours, theirs in zip(by_dispatch["steps"], by_marker):
        assert ours["step"] == theirs["step"]
        assert ours["kernels"] == theirs["kernels"] > 0
        assert ours["h2d_bytes"] == theirs["h2d_bytes"] >= 8192 * 100 * 4
        assert ours["device_busy_ms"] + ours["device_memory_ms"] + ours["device_idle_ms"] == (
            pytest.approx(ours["step_ms"])
        )


def pipelined_timeline():
    """Two steps dispatched ahead of the device (times in picoseconds).

    Step 0 is dispatched in [0, 10] (fetch [0, 4]), its kernel (launched at
    5) runs in [8, 28], a copy of its results (launched at 29, outside any
    marker) in [28.5, 29.5]; it completes at 30. Step 1 is dispatched in
    [12, 20] (fetch [12, 15]) while step 0 runs; its kernel (launched at 16)
    runs in [31, 48], its input copy (queued at 21 by a runtime thread,
    after its marker) in [22, 23]; it completes at 50. A kernel without a
    launch record starts at 49.
    """
    timeline = trace.Timeline()
    timeline.markers = {0: (0, 10, "main"), 1: (12, 20, "main")}
    timeline.completions = {0: 30, 1: 50}
    timeline.fetches = {"main": [(0, 4), (12, 15)]}
    timeline.launches = {1: 5, 2: 16, 3: 29, 4: 21}
    timeline.device = [
        ("kernel", 8, 28, 0, 1),
        ("d2h", 28.5, 29.5, 64, 3),
        ("h2d", 22, 23, 4096, 4),
        ("kernel", 31, 48, 0, 2),
        ("kernel", 49, 49.5, 0, None),
    ]
    timeline.device_planes = ["/device:GPU:0"]
    return timeline


def test_a_step_runs_from_its_dispatch_or_the_previous_completion_to_its_own():
    ps = 1e9  # per millisecond
    steps = {entry["step"]: entry for entry in trace.digest_timeline(pipelined_timeline())["steps"]}
    first, second = steps[0], steps[1]
    assert first["step_ms"] * ps == pytest.approx(30)
    assert first["input_wait_ms"] * ps == pytest.approx(4)
    assert first["compute_ms"] * ps == pytest.approx(26)
    assert first["dispatch_ms"] * ps == pytest.approx(6)
    # Step 1 was fetched and dispatched while step 0 ran: its time starts
    # at step 0's completion, and its fetch cost nothing.
    assert second["step_ms"] * ps == pytest.approx(20)
    assert second["input_wait_ms"] == 0
    assert second["compute_ms"] * ps == pytest.approx(20)
    assert second["other_ms"] == 0


def test_device_time_by_span_and_kernels_by_the_step_that_launched_them():
    ps = 1e9
    steps = {entry["step"]: entry for entry in trace.digest_timeline(pipelined_timeline())["steps"]}
    first, second = steps[0], steps[1]
    # By time within the step's span: compute, then the copies that ran
    # while no kernel did (step 0's input copy ran under its kernel).
    assert first["device_busy_ms"] * ps == pytest.approx(20)
    assert first["device_memory_ms"] * ps == pytest.approx(1)
    assert first["device_idle_ms"] * ps == pytest.approx(9)
    assert second["device_busy_ms"] * ps == pytest.approx(17.5)
    assert second["device_busy_ms"] + second["device_idle_ms"] == pytest.approx(second["step_ms"])
    # Kernels: step 1's kernel ran after step 0's completion but was
    # launched in step 1's dispatch; the one without a launch record
    # counts where it started.
    assert first["kernels"] == 1 and second["kernels"] == 2
    assert first["kernel_mean_us"] == pytest.approx(20 / 1e6)
    # The copy of step 0's results, queued as they were read; step 1's
    # input, queued after its dispatch while step 0 ran.
    assert (first["d2h_bytes"], second["d2h_bytes"]) == (64, 0)
    assert (first["h2d_bytes"], second["h2d_bytes"]) == (0, 4096)
    assert second["h2d_ms"] * ps == pytest.approx(1)


def test_a_step_without_a_completion_marker_ends_with_its_device_work():
    timeline = pipelined_timeline()
    timeline.completions = {}
    steps = {entry["step"]: entry for entry in trace.digest_timeline(timeline)["steps"]}
    assert steps[0]["step_ms"] * 1e9 == pytest.approx(28)
    assert steps[1]["step_ms"] * 1e9 == pytest.approx(48 - 28)


# PyTorch's Chrome traces.

# Events as Kineto exports them (`torch.profiler`, CPU and CUDA): host
# annotations and ops with `ts`/`dur` in microseconds, CUDA runtime calls
# and device events joined by `args.correlation`, copies with
# `args.bytes`, and Kineto's own copies of user annotations on the GPU
# timeline (`gpu_user_annotation`), which are not markers.
TORCH_EVENTS = [
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
     "pid": 7, "tid": 7, "ts": 1000.0, "dur": 300.0},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#12", "pid": 7, "tid": 7, "ts": 1310.0, "dur": 200.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 7, "tid": 7, "ts": 1320.0, "dur": 30.0},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 7, "tid": 7, "ts": 1330.0, "dur": 10.0,
     "args": {"correlation": 101, "External id": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1400.0, "dur": 5.0,
     "args": {"correlation": 102, "External id": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1450.0, "dur": 5.0,
     "args": {"correlation": 103, "External id": 5}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
     "ts": 1335.0, "dur": 20.0, "args": {"device": 0, "stream": 7, "correlation": 101, "bytes": 409600}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32_sliced1x4_tn", "pid": 0, "tid": 7,
     "ts": 1405.0, "dur": 40.0, "args": {"device": 0, "stream": 7, "correlation": 102}},
    {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel", "pid": 0, "tid": 7,
     "ts": 1455.0, "dur": 10.0, "args": {"device": 0, "stream": 7, "correlation": 103}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#12", "pid": 0, "tid": 7, "ts": 1335.0, "dur": 130.0},
    {"ph": "X", "cat": "user_annotation", "name": "devicecost_done#12", "pid": 7, "tid": 9, "ts": 1600.0, "dur": 1.0},
    {"ph": "s", "id": 102, "pid": 7, "tid": 7, "ts": 1400.0, "cat": "ac2g", "name": "ac2g"},
]


def test_a_pytorch_trace_gives_the_same_fields_as_an_xplane():
    from tb_devicecost.traces import torch_trace

    digest = torch_trace.digest(TORCH_EVENTS)
    [step] = digest["steps"]
    assert step["step"] == 12
    assert digest["device_planes"] == ["/device:GPU:0"]
    assert digest["has_device_plane"] is True
    assert digest["completion_markers"] == 1
    # From the DataLoader's fetch to the completion marker: 1000 to 1601 us.
    assert step["step_ms"] == pytest.approx(0.601)
    assert step["input_wait_ms"] == pytest.approx(0.3)
    assert step["dispatch_ms"] == pytest.approx(0.2)
    assert step["kernels"] == 2
    assert step["kernel_mean_us"] == pytest.approx(25.0)
    assert (step["h2d_bytes"], step["h2d_ms"]) == (409600, pytest.approx(0.02))
    # Busy is compute: the two kernels; the input copy is memory.
    assert step["device_busy_ms"] == pytest.approx(0.05)
    assert step["device_memory_ms"] == pytest.approx(0.02)
    assert set(digest["steps"][0]) >= {
        "step_ms", "input_wait_ms", "compute_ms", "other_ms", "device_busy_ms", "device_idle_ms",
        "kernels", "kernel_mean_us", "h2d_ms", "h2d_bytes", "d2h_ms", "d2h_bytes",
    }


def test_a_cpu_only_pytorch_trace_gives_host_numbers_only():
    from tb_devicecost.traces import torch_trace

    host_only = [e for e in TORCH_EVENTS if e.get("cat") in ("user_annotation", "cpu_op")]
    digest = torch_trace.digest(host_only)
    [step] = digest["steps"]
    assert digest["has_device_plane"] is False
    assert "device_busy_ms" not in step and "kernels" not in step
    assert step["step_ms"] == pytest.approx(0.601)


def test_unreadable_pytorch_traces_say_why(tmp_path):
    from tb_devicecost.traces import torch_trace

    garbage = tmp_path / "garbage.pt.trace.json.gz"
    garbage.write_bytes(b"\x1f\x8b not gzip at all")
    with pytest.raises(trace.TraceError, match="not Chrome trace JSON"):
        torch_trace.load(str(garbage))
    empty = tmp_path / "empty.pt.trace.json"
    empty.write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(trace.TraceError, match="holds no events"):
        torch_trace.load(str(empty))
    with pytest.raises(trace.TraceError, match="Cannot read trace"):
        torch_trace.load(str(tmp_path / "missing.pt.trace.json.gz"))


def test_pytorch_traces_are_laid_out_like_captures(tmp_path):
    from tb_devicecost.traces import torch_trace

    path = torch_trace.new_trace_path(str(tmp_path), 0)
    capture = os.path.basename(os.path.dirname(path))
    assert os.path.dirname(os.path.dirname(path)) == os.path.join(str(tmp_path), "plugins", "devicecost_torch")
    assert path.endswith(".pt.trace.json.gz")
    os.makedirs(os.path.dirname(path))
    open(path, "w").close()
    newer = os.path.join(torch_trace.trace_dir(str(tmp_path)), "2999_01_01_00_00_00", "other.pt.trace.json.gz")
    os.makedirs(os.path.dirname(newer))
    open(newer, "w").close()
    host = os.path.basename(path)[: -len(".pt.trace.json.gz")]
    assert torch_trace.list_traces(str(tmp_path)) == [
        (newer, "2999_01_01_00_00_00", "other"),
        (path, capture, host),
    ]


def test_steps_reported_out_of_order_complete_in_order():
    """Keras's worker threads may report step 1 before step 0: step 1 is
    complete once step 0 is, as in our records."""
    timeline = pipelined_timeline()
    timeline.completions = {0: 30, 1: 25}
    steps = {entry["step"]: entry for entry in trace.digest_timeline(timeline)["steps"]}
    assert steps[0]["step_ms"] * 1e9 == pytest.approx(30)
    assert steps[1]["step_ms"] == 0
