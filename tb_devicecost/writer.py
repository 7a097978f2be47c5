"""Writes tb-devicecost summaries into TensorBoard event files.

Uses TensorBoard's own `EventFileWriter` and protos; nothing here imports
TensorFlow or Keras, so any Keras backend (and a custom loop) can use it.
"""

import os

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto import summary_pb2
from tensorboard.compat.proto import tensor_pb2
from tensorboard.compat.proto import tensor_shape_pb2
from tensorboard.compat.proto import types_pb2

from tb_devicecost import metadata

# Column layout of the per-step rows handed to `write_steps`.
ROW_STEP, ROW_WALL_TIME = 0, 1
ROW_VALUES = slice(2, 2 + len(metadata.STEP_TAGS))
ROW_WIDTH = 2 + len(metadata.STEP_TAGS)


class SummaryWriter:
    """Appends per-step scalars and JSON documents to one run directory.

    The event file is created on the first write, so a writer that never
    writes leaves no file behind. Not thread-safe: one owner calls it.

    Args:
        run_dir: Directory of the TensorBoard run (created when needed).
        flush_secs: How often TensorBoard's writer thread flushes to disk.
            Defaults to `10`.
    """

    def __init__(self, run_dir, flush_secs=10):
        self.run_dir = str(run_dir)
        self._flush_secs = flush_secs
        self._writer = None
        self._tags_with_metadata = set()
        self._step_event = None

    def _event_writer(self):
        if self._writer is None:
            # Imported here: the writer module pulls in TensorBoard's file
            # system layer, which is not needed until something is written.
            from tensorboard.summary.writer.event_file_writer import (
                EventFileWriter,
            )

            os.makedirs(self.run_dir, exist_ok=True)
            self._writer = EventFileWriter(
                self.run_dir,
                max_queue_size=1024,
                flush_secs=self._flush_secs,
                filename_suffix=".devicecost",
            )
        return self._writer

    def _value_metadata(self, tag, data_class):
        # TensorBoard keeps the metadata of a tag's first value; later values
        # need none, and leaving it out keeps per-step events small.
        if tag in self._tags_with_metadata:
            return None
        self._tags_with_metadata.add(tag)
        return metadata.create_summary_metadata(data_class)

    def _new_step_event(self):
        event = event_pb2.Event()
        for tag in metadata.STEP_TAGS:
            value = event.summary.value.add(tag=tag)
            value.tensor.dtype = types_pb2.DT_FLOAT
            value.tensor.tensor_shape.SetInParent()
            value.tensor.float_val.append(0.0)
        return event

    def write_steps(self, rows):
        """Writes one event per row of per-step values.

        Args:
            rows: 2-D numpy array with `ROW_WIDTH` columns: global step,
                wall time (seconds since the epoch), then one column per tag
                of `metadata.STEP_TAGS`.
        """
        if len(rows) == 0:
            return
        writer = self._event_writer()
        if self._step_event is None:
            first = self._new_step_event()
            for value in first.summary.value:
                value.metadata.CopyFrom(self._value_metadata(value.tag, "scalar"))
            self._write_rows(writer, first, rows[:1])
            rows = rows[1:]
            self._step_event = self._new_step_event()
        # One template event is refilled per row: allocation dominates the
        # cost of building protos, and this path runs once per step.
        self._write_rows(writer, self._step_event, rows)

    @staticmethod
    def _write_rows(writer, event, rows):
        tensors = [value.tensor for value in event.summary.value]
        for row in rows.tolist():
            event.step = int(row[ROW_STEP])
            event.wall_time = row[ROW_WALL_TIME]
            for tensor, number in zip(tensors, row[ROW_VALUES]):
                tensor.float_val[0] = number
            writer.add_event(event)

    def write_json(self, tag, step, wall_time, document):
        """Writes a JSON document as a rank-0 string tensor at `step`."""
        event = event_pb2.Event(step=int(step), wall_time=float(wall_time))
        value = event.summary.value.add(tag=tag)
        value.tensor.CopyFrom(
            tensor_pb2.TensorProto(
                dtype=types_pb2.DT_STRING,
                tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                string_val=[metadata.encode_json(document)],
            )
        )
        value_metadata = self._value_metadata(tag, "tensor")
        if value_metadata is not None:
            value.metadata.CopyFrom(value_metadata)
        self._event_writer().add_event(event)

    def flush(self):
        if self._writer is not None:
            self._writer.flush()

    def close(self):
        """Flushes and closes the file; a later write opens a new one."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            self._tags_with_metadata.clear()
            self._step_event = None
            writer.close()
