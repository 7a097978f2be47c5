"""Device time split into compute, communication and memory copies.

The traces here are built in the test, as the profilers write them: an
XSpace with a host plane holding the step markers and GPU planes whose
streams hold the kernels (JAX, TensorFlow), and a PyTorch Chrome trace.
In each, a process computes for a little while, then sits in an NCCL
all-reduce that spins until a late peer arrives.
"""

import pytest

from tb_devicecost.traces import kernels
from tb_devicecost.traces import torch_trace
from tb_devicecost.traces import trace
from tb_devicecost.traces import xspace_schema

from tests.support import paths


MS = 10**9  # picoseconds


def test_kernels_are_grouped_by_category_then_name():
    assert kernels.group_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == kernels.COMMUNICATION
    assert kernels.group_of("ncclKernel_AllGather_RING_LL_Sum_int8_t") == kernels.COMMUNICATION
    assert kernels.group_of("fusion_3", op="all-reduce-start.1") == kernels.COMMUNICATION
    assert kernels.group_of("fusion_3", op="reduce-scatter") == kernels.COMMUNICATION
    assert kernels.group_of("collective-permute-done") == kernels.COMMUNICATION
    assert kernels.group_of("MemcpyH2D") == kernels.MEMORY
    assert kernels.group_of("Memset (Device)") == kernels.MEMORY
    assert kernels.group_of("copy", stats=("memcpy_details",)) == kernels.MEMORY
    assert kernels.group_of("anything", category="gpu_memset") == kernels.MEMORY
    assert kernels.group_of("gemm_fusion_dot_general_5", op="dot.3") == kernels.COMPUTE
    assert kernels.group_of("input_reduce_fusion_1") == kernels.COMPUTE
    assert kernels.device_kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "collective"
    assert kernels.device_kind("MemcpyD2H") == "d2h"


def _xspace(devices):
    """An XSpace: steps 5 and 6 marked on the host (10 ms each), and per
    device `(name, start_ms, end_ms, hlo_op)` kernels on a stream."""
    space = xspace_schema.xspace_class()()
    host = space.planes.add(id=1, name="/host:CPU")
    host.event_metadata[1].id = 1
    host.event_metadata[1].name = trace.MARKER_NAME
    host.stat_metadata[1].id = 1
    host.stat_metadata[1].name = "step_num"
    line = host.lines.add(id=1, name="main", timestamp_ns=0)
    for step, start in ((5, 0), (6, 10)):
        event = line.events.add(metadata_id=1, offset_ps=start * MS, duration_ps=10 * MS)
        event.stats.add(metadata_id=1, int64_value=step)
    for plane_id, (plane_name, events) in enumerate(sorted(devices.items()), start=2):
        plane = space.planes.add(id=plane_id, name=plane_name)
        plane.stat_metadata[1].id = 1
        plane.stat_metadata[1].name = "hlo_op"
        stream = plane.lines.add(id=1, name="Stream #14(Compute)", timestamp_ns=0)
        for number, (name, start, end, op) in enumerate(events, start=1):
            plane.event_metadata[number].id = number
            plane.event_metadata[number].name = name
            event = stream.events.add(
                metadata_id=number, offset_ps=int(start * MS), duration_ps=int((end - start) * MS)
            )
            if op:
                event.stats.add(metadata_id=1, str_value=op)
    return space


def _waiting_steps(start):
    """Per 10 ms step from `start`: 1 ms of compute, then an all-reduce that
    spins 8.5 ms for the late peer, then 0.5 ms idle."""
    return [
        ("gemm_fusion_dot_general_5", start, start + 1, "dot.3"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", start + 1, start + 9.5, "all-reduce-start"),
    ]


def test_a_collective_that_waits_for_a_late_peer_is_not_busy():
    digest = trace.digest_xspace(_xspace({"/device:GPU:0": _waiting_steps(0) + _waiting_steps(10)}))
    for step in digest["steps"]:
        assert step["device_busy_ms"] == pytest.approx(1)
        assert step["device_communication_ms"] == pytest.approx(8.5)
        assert step["device_memory_ms"] == 0
        assert step["device_idle_ms"] == pytest.approx(0.5)
        assert step["collectives"] == 1 and step["kernels"] == 2
    summary = digest["summary"]
    assert summary["device_busy_fraction"] == pytest.approx(0.1)
    assert summary["device_communication_fraction"] == pytest.approx(0.85)


def test_a_process_holding_two_gpus_gets_one_figure_per_device():
    # GPU:0 waits in the all-reduce; GPU:1 computes most of the step.
    busy = [("gemm_fusion", start, start + 9, None) for start in (0, 10)]
    digest = trace.digest_xspace(_xspace({
        "/device:GPU:0": _waiting_steps(0) + _waiting_steps(10),
        "/device:GPU:1": busy,
    }))
    by_device = {entry["device"]: entry for entry in digest["devices"]}
    assert sorted(by_device) == ["/device:GPU:0", "/device:GPU:1"]
    assert by_device["/device:GPU:0"]["compute_fraction"] == pytest.approx(0.1)
    assert by_device["/device:GPU:0"]["communication_fraction"] == pytest.approx(0.85)
    assert by_device["/device:GPU:1"]["compute_fraction"] == pytest.approx(0.9)
    assert by_device["/device:GPU:1"]["communication_fraction"] == 0
    # The process's figure is the mean device, never more than one device's time.
    assert digest["summary"]["device_busy_fraction"] == pytest.approx(0.5)
    for step in digest["steps"]:
        assert step["devices"]["/device:GPU:1"]["compute_ms"] == pytest.approx(9)


def _torch_events():
    """A PyTorch step (dispatch 0-2 ms, done at 10 ms): a kernel, an input
    copy, and an NCCL all-reduce that spins until 9.5 ms."""
    def host(name, ts, dur, tid=1, **args):
        return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": tid,
                "ts": ts, "dur": dur, "args": args}

    def launch(ts, correlation):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                "ts": ts, "dur": 5, "args": {"correlation": correlation}}

    def device(category, name, ts, dur, correlation, **args):
        return {"ph": "X", "cat": category, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                "args": dict(device=0, stream=7, correlation=correlation, **args)}

    return [
        host("ProfilerStep#3", 0, 2000),
        launch(100, 1), launch(200, 2), launch(300, 3),
        device("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 150, 500, 1, bytes=4096),
        device("kernel", "ampere_sgemm_32x32_sliced1x4_tn", 700, 800, 2),
        device("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1500, 8000, 3),
        host("devicecost_done#3", 9999, 1, tid=2),
    ]


def test_a_pytorch_nccl_kernel_is_communication():
    [step] = torch_trace.digest(_torch_events())["steps"]
    assert step["step_ms"] == pytest.approx(10)
    assert step["device_busy_ms"] == pytest.approx(0.8)
    assert step["device_communication_ms"] == pytest.approx(8)
    assert step["device_memory_ms"] == pytest.approx(0.5)
    assert step["collectives"] == 1
    assert step["devices"]["/device:GPU:0"]["communication_ms"] == pytest.approx(8)


# The traces recorded on an H100 (tests/data/h100_traced), digested again.


def _recorded_traces():
    import glob
    import os

    data = os.path.join(paths.DATA, "h100_traced")
    found = []
    for path in sorted(glob.glob(os.path.join(data, "*", "gpu", "train", "plugins", "*", "*", "*"))):
        if path.endswith(".xplane.pb"):
            found.append((path, trace.digest_xspace(trace.load_xspace(path), asynchronous=True)))
        elif path.endswith(".pt.trace.json.gz"):
            found.append((path, torch_trace.digest(torch_trace.load(path))))
    return found


def test_recorded_single_gpu_traces_split_without_communication():
    found = _recorded_traces()
    assert len(found) == 4
    for path, digest in found:
        summary = digest["summary"]
        assert summary["device_communication_fraction"] == 0, path
        parts = ("device_busy_fraction", "device_memory_fraction", "device_idle_fraction")
        assert sum(summary[key] for key in parts) == pytest.approx(1.0), path
        [device] = digest["devices"]
        assert device["compute_fraction"] == pytest.approx(summary["device_busy_fraction"])
    # Batch 8192 copies 3.3 MB of input per step: memory time shows.
    large = [digest for path, digest in found if "b8192" in path]
    assert all(digest["summary"]["device_memory_fraction"] > 0 for digest in large)


def test_the_run_object_carries_the_split_per_device():
    from tb_devicecost.analysis import record as record_module

    window = {
        "summary": {"device_busy_fraction": 0.1, "device_communication_fraction": 0.85,
                    "device_memory_fraction": 0.0, "device_idle_fraction": 0.05},
        "devices": [{"device": "/device:GPU:0", "compute_fraction": 0.1,
                     "communication_fraction": 0.85, "memory_fraction": 0.0, "idle_fraction": 0.05}],
        "device_busy_fraction": 0.1, "has_device_plane": True,
    }
    old = {"summary": {"device_busy_fraction": 0.9}, "has_device_plane": True}
    run = record_module.read_run({"run": "r", "trace": {"windows": [window]}})
    assert run.device_split == pytest.approx(
        {"compute": 0.1, "communication": 0.85, "memory": 0.0, "idle": 0.05})
    assert run.device_figures[0]["device"] == "/device:GPU:0"
    assert run.device_busy_fraction == pytest.approx(0.1)
    # A window digested before the split has none to give.
    assert record_module.read_run({"run": "r", "trace": {"windows": [old]}}).device_split is None
