"""Shared fixtures: log directories made by real fits and by hand.

TensorFlow is configured here, at import time, with two logical CPU devices
(so a layer can be pinned to `/CPU:1`). That must happen before TensorFlow
initialises its devices, and it holds for the whole test process.
"""

import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np
import pytest
import tensorflow as tf

from tb_devicecost import analysis
from tb_devicecost.format import metadata
from tb_devicecost.format import writer as writer_module
from tb_devicecost.reading import reader


def _two_logical_cpus():
    try:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:
        pass  # Devices are initialised already (the same configuration).


_two_logical_cpus()


# Real fits.

# Seconds slept by the Python input pipeline of the input-bound run, per batch.
INPUT_SLEEP_S = 0.003


def _fit_runs(logdir):
    """Three short real fits into `logdir`: compute/, pinned/, input/."""
    import keras

    import tb_devicecost

    rng = np.random.default_rng(0)

    def dense_model(inputs, hidden, layers=1, extra=None):
        stack = [keras.Input((inputs,))]
        for _ in range(layers):
            stack.append(keras.layers.Dense(hidden, activation="relu"))
        if extra is not None:
            stack.append(extra)
        stack.append(keras.layers.Dense(1))
        model = keras.Sequential(stack)
        model.compile("sgd", "mse")
        return model

    # Compute-bound: cached and prefetched data, a model big enough that the
    # step, not the pipeline, sets the pace.
    x = rng.random((4096, 256), dtype=np.float32)
    y = rng.random((4096, 1), dtype=np.float32)
    cached = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(256, drop_remainder=True)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    # Steps of about 10 ms: the cost of handing over a ready batch (0.1 to
    # 0.3 ms, more on a busy machine) stays well under 5% of the step.
    dense_model(256, 1024, layers=2).fit(
        cached,
        epochs=4,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "compute"))],
    )

    # A layer whose variable and ops are pinned to the second logical CPU.
    class PinnedScale(keras.layers.Layer):
        def build(self, input_shape):
            with tf.device("/CPU:1"):
                self.scale = self.add_weight(
                    shape=(input_shape[-1],), initializer="ones"
                )

        def call(self, inputs):
            with tf.device("/CPU:1"):
                return tf.math.tanh(inputs) * self.scale

    small_x = rng.random((1024, 16), dtype=np.float32)
    small_y = rng.random((1024, 1), dtype=np.float32)
    small = (
        tf.data.Dataset.from_tensor_slices((small_x, small_y))
        .batch(32)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    dense_model(16, 32, extra=PinnedScale()).fit(
        small,
        epochs=2,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "pinned"))],
    )

    # Input-bound: a Python function that sleeps per batch, no prefetch.
    def slow(features, targets):
        time.sleep(INPUT_SLEEP_S)
        return features, targets

    slow_data = (
        tf.data.Dataset.from_tensor_slices((small_x[:32 * 150], small_y[:32 * 150]))
        .batch(32)
        .map(lambda a, b: tf.py_function(slow, [a, b], [tf.float32, tf.float32]))
        .map(lambda a, b: (tf.ensure_shape(a, (None, 16)), tf.ensure_shape(b, (None, 1))))
    )
    dense_model(16, 32).fit(
        slow_data.repeat(),
        steps_per_epoch=150,
        epochs=2,
        verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "input"))],
    )


@pytest.fixture(scope="session")
def fit_logdir(tmp_path_factory):
    """A log directory with three runs of real fits (TensorFlow, CPU).

    `compute/train`: cached and prefetched data, two Dense(1024) layers,
    batch 256. `pinned/train`: a layer with its variable and ops on `/CPU:1`.
    `input/train`: a `tf.py_function` sleeping INPUT_SLEEP_S per batch of 32,
    no prefetch.
    """
    logdir = str(tmp_path_factory.mktemp("fits") / "logs")
    _fit_runs(logdir)
    return logdir


@pytest.fixture(scope="session")
def fit_records(fit_logdir):
    """`RunRecord`s of `fit_logdir`, by run name."""
    records = reader.read_runs(reader.local_provider(fit_logdir))
    return {record.run: record for record in records}


# Hand-made data.


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


class Helpers:
    """Builders for hand-made records and event files (see the functions),
    and the analysis of hand-made runs."""

    INPUT_SLEEP_S = INPUT_SLEEP_S
    stats_of = staticmethod(stats_of)
    make_aggregate = staticmethod(make_aggregate)
    make_record = staticmethod(make_record)
    make_trace = staticmethod(make_trace)
    cpu_placement = staticmethod(cpu_placement)
    gpu_placement = staticmethod(gpu_placement)

    @staticmethod
    def run(data_wait, compute, host, name="cpu/train", **options):
        """`analyze_run` of a run whose steady steps took these times (ms).

        `warmup_ms`, `batch_size`, `spikes`, `fetch_floor_ms` and `status`
        go to `make_aggregate`, other options to `make_record`.
        """
        aggregate_options = {
            key: options.pop(key)
            for key in ("warmup_ms", "batch_size", "spikes", "fetch_floor_ms", "status")
            if key in options
        }
        aggregate = make_aggregate(data_wait, compute, host, **aggregate_options)
        return analysis.analyze_run(make_record(name, aggregate=aggregate, **options))

    @staticmethod
    def gpu_run(trace=None, batch_size=512, **placement):
        """`analyze_run` of `gpu/train`: short steps on GPU:0 (`gpu_placement`)."""
        aggregate = make_aggregate(0.02, 1.0, 0.01, batch_size=batch_size)
        record = make_record(
            "gpu/train", aggregate=aggregate, placement=gpu_placement(**placement),
            trace=trace,
        )
        return analysis.analyze_run(record)

    @staticmethod
    def finding(result, finding_id):
        """The run object's finding `finding_id`, or `None`; never two."""
        matches = [f for f in result["findings"] if f["id"] == finding_id]
        assert len(matches) <= 1, result["findings"]
        return matches[0] if matches else None

    @staticmethod
    def assert_json_clean(value):
        """Fails unless `value` is JSON without NaN or infinities."""
        json.dumps(value, allow_nan=False)

    @staticmethod
    def write_run(run_dir, aggregate=None, info=None, placement=None, rows=None,
                  raw_documents=None):
        """Writes one run's event file with tb-devicecost's own writer.

        `rows`: per-step rows `(step, data_wait, compute, host, batch)`,
        optionally with a sixth column, the warm-up flag; without it, step 0
        is the warm-up, as the recorder writes a single fit.
        `raw_documents`: `{tag: text}` written as-is (NaN, newer schemas).
        """
        writer = writer_module.SummaryWriter(run_dir)
        if rows is not None:
            rows = np.asarray(rows, dtype=np.float64)
            if rows.shape[1] == 5:
                rows = np.hstack([rows, (rows[:, :1] == 0).astype(np.float64)])
            wall = np.full((len(rows), 1), time.time())
            writer.write_steps(np.hstack([rows[:, :1], wall, rows[:, 1:]]))
        step = int(rows[-1, 0]) if rows is not None and len(rows) else 0
        if info is not None:
            writer.write_json(metadata.TAG_RUN_INFO, step, time.time(), info)
        if placement is not None:
            writer.write_json(metadata.TAG_PLACEMENT, step, time.time(), placement)
        if aggregate is not None:
            writer.write_json(metadata.TAG_AGGREGATE, step, time.time(), aggregate)
        for tag, text in (raw_documents or {}).items():
            _write_raw_document(writer, tag, step, text)
        writer.close()
        return run_dir


def _write_raw_document(writer, tag, step, text):
    """A string tensor holding `text` verbatim (json that ours would refuse)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.proto import tensor_pb2
    from tensorboard.compat.proto import tensor_shape_pb2
    from tensorboard.compat.proto import types_pb2

    event = event_pb2.Event(step=step, wall_time=time.time())
    value = event.summary.value.add(tag=tag)
    value.tensor.CopyFrom(
        tensor_pb2.TensorProto(
            dtype=types_pb2.DT_STRING,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(),
            string_val=[text.encode("utf-8")],
        )
    )
    value.metadata.CopyFrom(metadata.create_summary_metadata("tensor"))
    writer.write_event(event)


@pytest.fixture(scope="session")
def helpers():
    """Builders for synthetic aggregates, records and event files."""
    return Helpers


def _event_file(run_dir):
    names = [name for name in os.listdir(run_dir) if "tfevents" in name]
    assert len(names) == 1, names
    return os.path.join(run_dir, names[0])


def steady_rows(count, data_wait, compute, host, batch=32, first_step=0):
    """Per-step rows `(step, data_wait, compute, host, batch)`."""
    return [
        (first_step + index, data_wait, compute, host, batch) for index in range(count)
    ]


@pytest.fixture(scope="session")
def edge_logdir(tmp_path_factory):
    """Hand-made runs for bad input, each named after its defect.

    good/train: complete, 50 steady steps of 1 + 4 + 0.5 ms.
    running/train: an aggregate whose status is "running".
    nan/train: an aggregate with NaN and negative totals, and per-step
        rows of which two hold NaN or a negative value.
    newer/train: documents of a schema newer than this code.
    truncated/train: a valid file cut in the middle of its last record.
    garbage/train: a file of random bytes.
    info_only/train: run info only, no step yet.
    """
    logdir = str(tmp_path_factory.mktemp("edge") / "logs")
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 32,
            "steps_per_record": 1, "fetch_in_graph": False}
    Helpers.write_run(
        os.path.join(logdir, "good", "train"),
        aggregate=make_aggregate(1.0, 4.0, 0.5, warmup_ms=20.0),
        info=info,
        placement=cpu_placement(),
        rows=[(0, 2.0, 18.0, 0.0, 32)] + steady_rows(50, 1.0, 4.0, 0.5, first_step=1),
    )
    Helpers.write_run(
        os.path.join(logdir, "running", "train"),
        aggregate=make_aggregate(0.5, 2.0, 0.1, status="running"),
        info=info,
        rows=steady_rows(30, 0.5, 2.0, 0.1),
    )
    broken = make_aggregate(1.0, 3.0, 0.2)
    broken["components"]["compute"]["sum_ms"] = float("nan")
    broken["components"]["step"]["sum_ms"] = -5.0
    rows = [(0, 1.0, 30.0, 0.1, 32)] + steady_rows(40, 1.0, 3.0, 0.2, first_step=1)
    rows[5] = (5, float("nan"), 3.0, 0.2, 32)
    rows[9] = (9, 1.0, -3.0, 0.2, 32)
    Helpers.write_run(
        os.path.join(logdir, "nan", "train"),
        info=info,
        rows=rows,
        raw_documents={metadata.TAG_AGGREGATE: json.dumps(broken)},
    )
    newer = make_aggregate(1.0, 3.0, 0.2, schema=metadata.SCHEMA_VERSION + 1)
    Helpers.write_run(
        os.path.join(logdir, "newer", "train"),
        rows=steady_rows(20, 1.0, 3.0, 0.2),
        raw_documents={
            metadata.TAG_AGGREGATE: json.dumps(newer),
            metadata.TAG_RUN_INFO: json.dumps(
                dict(info, schema=metadata.SCHEMA_VERSION + 1)
            ),
        },
    )
    truncated_dir = os.path.join(logdir, "truncated", "train")
    Helpers.write_run(
        truncated_dir,
        info=info,
        rows=[(0, 2.0, 18.0, 0.0, 32)] + steady_rows(30, 2.0, 1.0, 0.1, first_step=1),
        aggregate=make_aggregate(2.0, 1.0, 0.1),
    )
    path = _event_file(truncated_dir)
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.truncate(size - 40)  # Inside the aggregate, the last record.
    garbage_dir = os.path.join(logdir, "garbage", "train")
    os.makedirs(garbage_dir)
    with open(
        os.path.join(garbage_dir, "events.out.tfevents.1.garbage.devicecost"), "wb"
    ) as handle:
        handle.write(np.random.default_rng(1).bytes(4096))
    Helpers.write_run(os.path.join(logdir, "info_only", "train"), info=info)
    return logdir
