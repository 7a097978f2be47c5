"""Hand-made documents and records: aggregates, placements, traces and
`RunRecord`s as the recorder writes and the reader returns them."""

import numpy as np

from tb_devicecost.reading import reader


def stats_of(values):
    """The aggregate digest of one component, computed with numpy."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return {
            "count": 0, "sum_ms": 0.0, "mean_ms": None, "min_ms": None,
            "max_ms": None, "p50_ms": None, "p90_ms": None, "p99_ms": None,
        }
    return {
        "count": int(values.size),
        "sum_ms": float(values.sum()),
        "mean_ms": float(values.mean()),
        "min_ms": float(values.min()),
        "max_ms": float(values.max()),
        "p50_ms": float(np.percentile(values, 50)),
        "p90_ms": float(np.percentile(values, 90)),
        "p99_ms": float(np.percentile(values, 99)),
    }


def make_aggregate(
    data_wait,
    compute,
    host_overhead,
    warmup_ms=10.0,
    batch_size=32,
    spikes=0,
    fetch_floor_ms=None,
    status="complete",
    schema=1,
    sessions=1,
):
    """An aggregate document for steady steps with the given per-step times.

    Each of `data_wait`, `compute`, `host_overhead` is a number (the same
    for `len` of the others, or 100 steps) or a sequence of per-step ms.
    """
    lengths = [len(v) for v in (data_wait, compute, host_overhead) if np.ndim(v)]
    steps = lengths[0] if lengths else 100
    columns = [
        np.full(steps, float(v)) if np.ndim(v) == 0 else np.asarray(v, dtype=np.float64)
        for v in (data_wait, compute, host_overhead)
    ]
    step = columns[0] + columns[1] + columns[2]
    samples = steps * batch_size if batch_size else 0
    wall_ms = float(step.sum())
    return {
        "schema": schema,
        "status": status,
        "steps": steps + (1 if warmup_ms is not None else 0),
        "steady_steps": steps,
        "sessions": sessions,
        "components": {
            "data_wait": stats_of(columns[0]),
            "compute": stats_of(columns[1]),
            "host_overhead": stats_of(columns[2]),
            "step": stats_of(step),
        },
        "warmup": {
            "count": 0 if warmup_ms is None else 1,
            "sum_ms": 0.0 if warmup_ms is None else warmup_ms,
            "max_ms": warmup_ms,
            "steps": [] if warmup_ms is None else [0],
        },
        "spikes": {"count": spikes, "ratio": 10.0, "steps": list(range(10, 10 + spikes))},
        "samples": samples,
        "samples_per_s": samples / (wall_ms / 1e3) if samples and wall_ms else None,
        "batch_size": {
            "min": batch_size,
            "max": batch_size,
            "distinct": 1 if batch_size else 0,
        },
        "fetch_floor_ms": fetch_floor_ms,
        "updated": 0.0,
    }


def cpu_placement(ops=400, copies=0, extra_devices=None):
    ops_by_device = {"CPU:0": ops}
    ops_by_device.update(extra_devices or {})
    return {
        "schema": 1,
        "devices": {
            "physical": [{"name": "CPU:0", "kind": "CPU"}],
            "logical": [{"name": name, "kind": "CPU"} for name in sorted(ops_by_device)],
        },
        "accelerator_visible": False,
        "variables": {"CPU:0": 4},
        "optimizer_variables": {"CPU:0": 10},
        "input_bytes_per_step": 2176,
        "input_devices": ["CPU:0"],
        "step_ops_captured": True,
        "ops": ops_by_device,
        "cpu_op_types": ["MatMul", "AddV2", "IteratorGetNext"],
        "cross_device_copies": copies,
    }


def gpu_placement(gpu_ops=300, cpu_ops=40, cpu_op_types=("IteratorGetNext",), copies=2):
    return {
        "schema": 1,
        "devices": {
            "physical": [
                {"name": "CPU:0", "kind": "CPU"},
                {"name": "GPU:0", "kind": "GPU", "model": "NVIDIA H100"},
            ],
            "logical": [
                {"name": "CPU:0", "kind": "CPU"},
                {"name": "GPU:0", "kind": "GPU"},
            ],
        },
        "accelerator_visible": True,
        "variables": {"GPU:0": 4},
        "optimizer_variables": {"GPU:0": 10},
        "input_bytes_per_step": 2176,
        "input_devices": ["CPU:0"],
        "step_ops_captured": True,
        "ops": {"CPU:0": cpu_ops, "GPU:0": gpu_ops},
        "cpu_op_types": list(cpu_op_types),
        "cross_device_copies": copies,
    }


def make_trace(*device_busy_fractions, step_ms=2.0):
    """A `devicecost/trace` document as the recorder writes it (docs/FORMAT.md).

    One window of three traced steps per entry of `device_busy_fractions`:
    a trace with a device plane whose device was busy that share of each
    step, or, for `None`, a trace without one (a CPU-only run).
    """
    windows = []
    for index, busy in enumerate(device_busy_fractions):
        start = 10 * (index + 1)
        steps = []
        for step in range(start, start + 3):
            entry = {"step": step, "step_ms": step_ms, "input_wait_ms": 0.05 * step_ms,
                     "compute_ms": 0.9 * step_ms, "other_ms": 0.05 * step_ms,
                     "pipeline_busy_ms": 0.1 * step_ms}
            if busy is not None:
                entry.update(device_busy_ms=busy * step_ms,
                             device_idle_ms=(1 - busy) * step_ms, kernels=40)
            steps.append(entry)
        summary = {f"mean_{key}": value for key, value in steps[0].items() if key != "step"}
        summary["input_wait_fraction"] = 0.05
        window = {
            "start_step": start, "stop_step": start + 3, "source": "tb_devicecost",
            "profile_run_dir": "/logs/run/train", "capture": "2026_01_02_03_04_05",
            "host": "host", "trace_bytes": 4096, "steps": steps, "summary": summary,
            "has_device_plane": busy is not None,
            "device_planes": ["/device:GPU:0"] if busy is not None else [],
            "recorded_steps": [
                {"step": entry["step"], "data_wait_ms": 0.05 * step_ms,
                 "compute_ms": 0.9 * step_ms, "host_overhead_ms": 0.05 * step_ms}
                for entry in steps
            ],
        }
        if busy is not None:
            summary["device_busy_fraction"] = busy
            window["device_busy_fraction"] = busy
        windows.append(window)
    return {"schema": 1, "windows": windows, "updated": 0.0}


def make_record(run, aggregate=None, info=None, placement=None, trace=None,
                series=None, problems=None, newer_schema=False):
    """A `RunRecord` as the reader would return it."""
    default_info = {"schema": 1, "backend": "tensorflow", "steps_per_record": 1,
                    "fetch_in_graph": False}
    if aggregate is not None and aggregate.get("batch_size", {}).get("max"):
        default_info["batch_size"] = aggregate["batch_size"]["max"]
    default_info.update(info or {})
    return reader.RunRecord(
        run=run,
        aggregate=aggregate,
        info=default_info,
        placement=placement if placement is not None else cpu_placement(),
        trace=trace,
        series=series or {},
        problems=list(problems or []),
        newer_schema=newer_schema,
    )


def job_record(name, index, count, data_wait, compute, host, start=None,
               host_name="node-a", steps=None, batch=32):
    """A process's run as the reader hands it over: a warm-up step, then one
    steady step per element of the per-step lists (ms)."""
    length = len(data_wait)
    steps = np.arange(length + 1) if steps is None else np.asarray(steps)
    if start is None:
        start = 1_700_000_000.0 + np.arange(length + 1) * 0.1
    return {
        "run": name,
        "info": {"process_index": index, "process_count": count, "hostname": host_name},
        "series": {
            "step": steps,
            "wall_time": np.asarray(start, dtype=np.float64),
            "data_wait_ms": np.asarray([0.0] + list(data_wait)),
            "compute_ms": np.asarray([500.0] + list(compute)),
            "host_overhead_ms": np.asarray([0.0] + list(host)),
            "batch_size": np.full(length + 1, float(batch)),
            "warmup": np.asarray([1.0] + [0.0] * length),
        },
    }
