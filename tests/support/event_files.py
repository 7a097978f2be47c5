"""Event files written by hand with tb-devicecost's own writer, damaged
ones among them."""

import json
import os
import time

import numpy as np

from tb_devicecost.format import metadata
from tb_devicecost.format import writer as writer_module

from tests.support.documents import cpu_placement
from tests.support.documents import make_aggregate


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


def event_file(run_dir):
    names = [name for name in os.listdir(run_dir) if "tfevents" in name]
    assert len(names) == 1, names
    return os.path.join(run_dir, names[0])


def steady_rows(count, data_wait, compute, host, batch=32, first_step=0):
    """Per-step rows `(step, data_wait, compute, host, batch)`."""
    return [
        (first_step + index, data_wait, compute, host, batch) for index in range(count)
    ]


def write_edge_runs(logdir):
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
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 32,
            "steps_per_record": 1, "fetch_in_graph": False}
    write_run(
        os.path.join(logdir, "good", "train"),
        aggregate=make_aggregate(1.0, 4.0, 0.5, warmup_ms=20.0),
        info=info,
        placement=cpu_placement(),
        rows=[(0, 2.0, 18.0, 0.0, 32)] + steady_rows(50, 1.0, 4.0, 0.5, first_step=1),
    )
    write_run(
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
    write_run(
        os.path.join(logdir, "nan", "train"),
        info=info,
        rows=rows,
        raw_documents={metadata.TAG_AGGREGATE: json.dumps(broken)},
    )
    newer = make_aggregate(1.0, 3.0, 0.2, schema=metadata.SCHEMA_VERSION + 1)
    write_run(
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
    write_run(
        truncated_dir,
        info=info,
        rows=[(0, 2.0, 18.0, 0.0, 32)] + steady_rows(30, 2.0, 1.0, 0.1, first_step=1),
        aggregate=make_aggregate(2.0, 1.0, 0.1),
    )
    path = event_file(truncated_dir)
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.truncate(size - 40)  # Inside the aggregate, the last record.
    garbage_dir = os.path.join(logdir, "garbage", "train")
    os.makedirs(garbage_dir)
    with open(
        os.path.join(garbage_dir, "events.out.tfevents.1.garbage.devicecost"), "wb"
    ) as handle:
        handle.write(np.random.default_rng(1).bytes(4096))
    write_run(os.path.join(logdir, "info_only", "train"), info=info)
    return logdir
