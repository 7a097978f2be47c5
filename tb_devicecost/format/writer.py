"""Writes tb-devicecost summaries into TensorBoard event files.

Builds TensorBoard's own protos and writes them in its event-file format
(the file name, the `brain.Event:2` header and TFRecord framing that
`EventFileWriter` uses) through TensorBoard's file-system layer. Records are
framed and checksummed a batch at a time (`records.py`), which keeps the
per-step cost to a few microseconds. Nothing here imports TensorFlow or
Keras, so any Keras backend (and a custom loop) can use it.
"""

import itertools
import os
import socket
import sys
import time

import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto import tensor_pb2
from tensorboard.compat.proto import tensor_shape_pb2
from tensorboard.compat.proto import types_pb2

from tb_devicecost.format import metadata
from tb_devicecost.format import records
from tb_devicecost.format import vocabulary

# Column layout of the per-step rows handed to `write_steps`.
ROW_STEP = vocabulary.COLUMN[vocabulary.STEP]
ROW_WALL_TIME = vocabulary.COLUMN[vocabulary.WALL_TIME]
ROW_VALUES = slice(2, len(vocabulary.ROW_COLUMNS))

# Distinguishes files opened by one process in the same second.
_file_counter = itertools.count()


def _gfile():
    """TensorBoard's file-system layer, for remote paths (gs://, s3://...).

    TensorFlow's own when a TensorFlow program already loaded it, else
    TensorBoard's stub of it: importing TensorFlow into a JAX or PyTorch
    program would cost seconds and memory for nothing.
    """
    if "tensorflow" in sys.modules:
        from tensorboard.compat import tf

        return tf.io.gfile
    from tensorboard.compat.tensorflow_stub.io import gfile

    return gfile


def _open(run_dir, path):
    """The event file at `path`, created with its directory. Local paths
    need no file-system layer: importing TensorBoard's costs tens of
    milliseconds, paid inside the first fit of every process."""
    if "://" in run_dir:
        gfile = _gfile()
        gfile.makedirs(run_dir)
        return gfile.GFile(path, "wb")
    os.makedirs(run_dir, exist_ok=True)
    return open(path, "wb")  # pylint: disable=consider-using-with


class SummaryWriter:
    """Appends per-step scalars and JSON documents to one run directory.

    The event file is created on the first write, so a writer that never
    writes leaves no file behind. Each call writes straight to the file; it
    is flushed after every batch of steps and every document. Not
    thread-safe: one owner calls it.

    Args:
        run_dir: Directory of the TensorBoard run (created when needed).
    """

    def __init__(self, run_dir):
        self.run_dir = str(run_dir)
        self._file = None
        self._path = None
        # Bytes of the open file known to be written in whole records.
        self._good_bytes = 0
        self._tags_with_metadata = set()

    def _event_file(self):
        if self._file is None:
            # TensorBoard reads a run's files in name order, so the counter
            # is zero-padded: files opened in the same second (repeated fits)
            # must sort in the order they were written. The header's time is
            # the name's, read once: opening the file can take long enough
            # to cross into the next second, and a header of another second
            # than its name is not read as exact (`reading/collisions.py`).
            opened = time.time()
            name = "events.out.tfevents.%010d.%s.%s.%06d%s" % (
                opened,
                socket.gethostname(),
                os.getpid(),
                next(_file_counter),
                metadata.EVENT_FILE_SUFFIX,
            )
            self._path = os.path.join(self.run_dir, name)
            self._good_bytes = 0
            self._file = _open(self.run_dir, self._path)
            header = event_pb2.Event(
                wall_time=opened,
                file_version="brain.Event:2",
                source_metadata=event_pb2.SourceMetadata(writer="tb_devicecost"),
            )
            data = records.frame_records([header.SerializeToString()])
            self._file.write(data)
            self._good_bytes = len(data)
        return self._file

    def _write(self, payloads):
        event_file = self._event_file()
        data = records.frame_records(payloads)
        event_file.write(data)
        event_file.flush()
        self._good_bytes += len(data)

    def discard_partial(self):
        """After a failed write: closes the file, cut back to its last whole
        record where it is a local file.

        A write that failed half way (a full disk) leaves part of a record;
        cutting it off frees that space and leaves a file every reader
        reads to its end. The next write opens a new file.
        """
        event_file, path, good = self._file, self._path, self._good_bytes
        self._file = None
        self._tags_with_metadata.clear()
        if event_file is not None:
            try:
                event_file.close()
            except Exception:  # pylint: disable=broad-except
                pass  # Closing flushes what could not be written: it fails again.
        if path is not None and "://" not in path:
            try:
                if os.path.getsize(path) > good:
                    os.truncate(path, good)
            except OSError:
                pass

    def _value_metadata(self, tag, data_class):
        # TensorBoard keeps the metadata of a tag's first value; later values
        # need none, and leaving it out keeps per-step events small.
        if tag in self._tags_with_metadata:
            return None
        self._tags_with_metadata.add(tag)
        return metadata.create_summary_metadata(data_class)

    def write_steps(self, rows):
        """Writes per-step rows as blocks of consecutive steps.

        One event per block (`metadata.TAG_STEPS`, docs/FORMAT.md): a
        `DT_FLOAT` tensor of the rows' columns after the step, packed as
        little-endian bytes. A block ends where the steps stop being
        consecutive and after `metadata.MAX_BLOCK_ROWS` rows.

        Args:
            rows: 2-D numpy array whose columns are
                `vocabulary.ROW_COLUMNS`: global step, wall time (seconds
                since the epoch), then `data_wait_ms`, `compute_ms`,
                `host_overhead_ms`, `batch_size`, `warmup`.
        """
        if len(rows) == 0:
            return
        rows = np.asarray(rows, dtype=np.float64)
        steps = rows[:, ROW_STEP].astype(np.int64)
        # Block boundaries: a gap in the steps, then every MAX_BLOCK_ROWS
        # rows of each run of consecutive steps.
        gaps = [0, *(np.flatnonzero(np.diff(steps) != 1) + 1).tolist(), len(rows)]
        blocks = [
            (begin, min(begin + metadata.MAX_BLOCK_ROWS, end))
            for start, end in zip(gaps[:-1], gaps[1:])
            for begin in range(start, end, metadata.MAX_BLOCK_ROWS)
        ]
        payloads = []
        for begin, end in blocks:
            block = rows[begin:end]
            values = np.empty((end - begin, len(metadata.BLOCK_COLUMNS)), dtype="<f4")
            # Seconds after the block's first step: float32 keeps them to
            # 1e-7 of the block's span (15 µs over 256 s).
            with np.errstate(over="ignore", invalid="ignore"):
                # Beyond float32's range becomes infinite: not a number to readers.
                values[:, 0] = block[:, ROW_WALL_TIME] - block[0, ROW_WALL_TIME]
                values[:, 1:] = block[:, ROW_VALUES]
            event = event_pb2.Event(step=int(steps[begin]), wall_time=float(block[0, ROW_WALL_TIME]))
            value = event.summary.value.add(tag=metadata.TAG_STEPS)
            tensor = value.tensor
            tensor.dtype = types_pb2.DT_FLOAT
            tensor.tensor_shape.dim.add(size=end - begin)
            tensor.tensor_shape.dim.add(size=len(metadata.BLOCK_COLUMNS))
            tensor.tensor_content = values.tobytes()
            value_metadata = self._value_metadata(metadata.TAG_STEPS, "tensor")
            if value_metadata is not None:
                value.metadata.CopyFrom(value_metadata)
            payloads.append(event.SerializeToString())
        self._write(payloads)

    def write_json(self, tag, step, wall_time, document):
        """Writes a JSON document as a rank-0 string tensor at `step`."""
        self.write_encoded_json(tag, step, wall_time, metadata.encode_json(document))

    def write_encoded_json(self, tag, step, wall_time, encoded):
        """`write_json` of a document already encoded (`metadata.encode_json`)."""
        event = event_pb2.Event(step=int(step), wall_time=float(wall_time))
        value = event.summary.value.add(tag=tag)
        value.tensor.CopyFrom(
            tensor_pb2.TensorProto(
                dtype=types_pb2.DT_STRING,
                tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                string_val=[encoded],
            )
        )
        value_metadata = self._value_metadata(tag, "tensor")
        if value_metadata is not None:
            value.metadata.CopyFrom(value_metadata)
        self.write_event(event)

    def write_event(self, event):
        """Writes one `event_pb2.Event` as it is."""
        self._write([event.SerializeToString()])

    def forget_in_child(self):
        """In a forked child: lets go of the parent's file without writing
        to it (every write is flushed whole, so nothing is left to write)."""
        self._file = None

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        """Flushes and closes the file; a later write opens a new one."""
        if self._file is not None:
            event_file, self._file = self._file, None
            self._tags_with_metadata.clear()
            event_file.close()
