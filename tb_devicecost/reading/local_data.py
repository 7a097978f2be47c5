"""A TensorBoard data provider over local event files, for the report.

`tb-devicecost report` reads the same way the tab does, through a
`tensorboard.data.provider.DataProvider` and `reader.read_logdir`; this is
the provider it reads through. TensorBoard's own Python loader checksums
every byte in Python (a few MB a second: 45 s for a run of a million steps)
and keeps every plugin's data; this one reads each vetted event file whole
(`reader.scan_logdir`), checks its records with C CRC-32C
(`records.masked_crc32c`) and keeps only tb-devicecost's values, sampled
per tag in constant memory.

What it reads where data is damaged follows TensorBoard's Python loader
(docs/FORMAT.md, "Damaged data"): a file is read up to its first record
whose checksum fails, or up to a record cut short, and the next file is
read on; a record whose checksums are right but which is no `Event` stops
the run there (TensorBoard's reload of the run raises there and keeps what
came before). A tag's summary metadata is the first one seen in the run.
One thing it reads better: a block of steps whose bytes disagree with its
shape is left out alone, where TensorBoard's conversion loses the tag.
"""

import io
import os

from google.protobuf import message as protobuf_message
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto import summary_pb2
from tensorboard.data import provider
from tensorboard.util import tensor_util

from tb_devicecost.format import metadata
from tb_devicecost.format import records

# Values kept per tag: the per-step series of schema 1 (scalars, what the
# chart shows), the blocks of steps of schema 2, the documents (only the
# newest is read). The newest value of a tag is always kept.
SCALARS_KEPT = 1000
BLOCKS_KEPT = 1000
DOCUMENTS_KEPT = 10

_DATA_CLASSES = (summary_pb2.DATA_CLASS_SCALAR, summary_pb2.DATA_CLASS_TENSOR)


class _Sample:
    """Every `stride`-th value offered, at most `capacity` of them, plus the
    newest: a systematic sample of the whole series in constant memory (the
    stride doubles whenever the sample fills up)."""

    __slots__ = ("capacity", "stride", "offered", "kept", "newest")

    def __init__(self, capacity):
        self.capacity = capacity
        self.stride = 1
        self.offered = 0
        self.kept = []
        self.newest = None

    def offer(self, item):
        if self.offered % self.stride == 0:
            self.kept.append(item)
            if len(self.kept) > self.capacity:
                self.kept = self.kept[::2]
                self.stride *= 2
        self.offered += 1
        self.newest = item

    def items(self):
        if self.kept and self.kept[-1] is self.newest:
            return list(self.kept)
        return self.kept + ([self.newest] if self.newest is not None else [])


class _TimeSeries:
    __slots__ = ("summary_metadata", "sample", "max_step", "max_wall_time")

    def __init__(self, summary_metadata, capacity):
        self.summary_metadata = summary_metadata
        self.sample = _Sample(capacity)
        self.max_step = None
        self.max_wall_time = None

    def offer(self, step, wall_time, tensor):
        self.sample.offer((step, wall_time, tensor))
        self.max_step = step if self.max_step is None else max(self.max_step, step)
        self.max_wall_time = (
            wall_time if self.max_wall_time is None else max(self.max_wall_time, wall_time)
        )


def _capacity(tag, data_class):
    if data_class == summary_pb2.DATA_CLASS_SCALAR:
        return SCALARS_KEPT
    return BLOCKS_KEPT if tag == metadata.TAG_STEPS else DOCUMENTS_KEPT


def iter_records(handle):
    """`(offset, payload)` of each whole record of an event file, read from
    the binary file `handle` one record at a time (memory stays that of one
    record), up to the first record whose checksum fails or that is cut
    short (`records.read_framed`)."""
    try:
        size = os.fstat(handle.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        size = None
    for offset, payload in records.read_framed(handle, size=size):
        if payload is None:
            return
        yield offset, payload


def _records_or_none(handle):
    """`iter_records(handle)`, then `(None, None)` if reading failed."""
    try:
        yield from iter_records(handle)
    except OSError:
        yield None, None


def load_run(paths):
    """`{tag: _TimeSeries}` of our values in one run's event files (in order)
    and the run's start time (the earliest event's wall time), or `None`."""
    series = {}
    foreign = set()
    start_time = None
    for path in paths:
        try:
            handle = open(path, "rb")  # pylint: disable=consider-using-with
        except OSError:
            continue
        with handle:
            for _, payload in _records_or_none(handle):
                if payload is None:
                    break  # The file could not be read on: as at a damaged record.
                try:
                    event = event_pb2.Event.FromString(payload)
                except protobuf_message.DecodeError:
                    return series, start_time
                if start_time is None or event.wall_time < start_time:
                    start_time = event.wall_time
                if not event.HasField("summary"):
                    continue
                for value in event.summary.value:
                    tag = value.tag
                    if tag in foreign:
                        continue
                    time_series = series.get(tag)
                    if time_series is None:
                        if not value.HasField("metadata"):
                            continue
                        summary_metadata = value.metadata
                        if (
                            summary_metadata.plugin_data.plugin_name != metadata.PLUGIN_NAME
                            or summary_metadata.data_class not in _DATA_CLASSES
                        ):
                            foreign.add(tag)
                            continue
                        time_series = series[tag] = _TimeSeries(
                            summary_metadata, _capacity(tag, summary_metadata.data_class)
                        )
                    if value.HasField("tensor"):
                        time_series.offer(event.step, event.wall_time, value.tensor)
    return series, start_time


def _downsample(items, count):
    """At most `count` of `items`, evenly spread, the last always kept."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    if count == 1:
        return [items[-1]]
    last = len(items) - 1
    indices = sorted({round(index * last / (count - 1)) for index in range(count)})
    return [items[index] for index in indices]


class LocalDataProvider(provider.DataProvider):
    """Our runs of a scanned log directory, loaded once.

    Args:
        logdir: The log directory (for `data_location`).
        runs: `{run: [event file paths]}`, as `reader.LogdirScan.runs`.
    """

    def __init__(self, logdir, runs):
        self._logdir = logdir
        self._runs = {}
        self._start_times = {}
        for run, paths in runs.items():
            series, start_time = load_run(paths)
            self._runs[run] = series
            self._start_times[run] = start_time

    def experiment_metadata(self, ctx=None, *, experiment_id):
        return provider.ExperimentMetadata(data_location=self._logdir)

    def list_plugins(self, ctx=None, *, experiment_id):
        return [metadata.PLUGIN_NAME] if any(self._runs.values()) else []

    def list_runs(self, ctx=None, *, experiment_id):
        return [
            provider.Run(run_id=run, run_name=run, start_time=self._start_times[run])
            for run in sorted(self._runs)
        ]

    def _select(self, plugin_name, run_tag_filter, data_class):
        if plugin_name != metadata.PLUGIN_NAME:
            return {}
        run_filter = run_tag_filter.runs if run_tag_filter else None
        tag_filter = run_tag_filter.tags if run_tag_filter else None
        selected = {}
        for run in sorted(self._runs):
            if run_filter is not None and run not in run_filter:
                continue
            for tag, time_series in self._runs[run].items():
                if tag_filter is not None and tag not in tag_filter:
                    continue
                if time_series.summary_metadata.data_class != data_class:
                    continue
                selected.setdefault(run, {})[tag] = time_series
        return selected

    def _list(self, kind, plugin_name, run_tag_filter, data_class):
        return {
            run: {
                tag: kind(
                    max_step=time_series.max_step,
                    max_wall_time=time_series.max_wall_time,
                    plugin_content=time_series.summary_metadata.plugin_data.content,
                    description=time_series.summary_metadata.summary_description,
                    display_name=time_series.summary_metadata.display_name,
                )
                for tag, time_series in by_tag.items()
            }
            for run, by_tag in self._select(plugin_name, run_tag_filter, data_class).items()
        }

    def _read(self, convert, plugin_name, run_tag_filter, data_class, downsample):
        return {
            run: {
                tag: [
                    convert(tag, step, wall_time, tensor)
                    for step, wall_time, tensor in _downsample(
                        time_series.sample.items(), downsample
                    )
                ]
                for tag, time_series in by_tag.items()
            }
            for run, by_tag in self._select(plugin_name, run_tag_filter, data_class).items()
        }

    def list_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._list(
            provider.ScalarTimeSeries, plugin_name, run_tag_filter,
            summary_pb2.DATA_CLASS_SCALAR,
        )

    def read_scalars(
        self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None
    ):
        # As TensorBoard's own provider converts them (raises for a value
        # that is no scalar).
        return self._read(
            lambda tag, step, wall_time, tensor: provider.ScalarDatum(
                step=step, wall_time=wall_time,
                value=tensor_util.make_ndarray(tensor).item(),
            ),
            plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_SCALAR, downsample,
        )

    def read_last_scalars(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return {
            run: {tag: data[-1] for tag, data in by_tag.items() if data}
            for run, by_tag in self.read_scalars(
                ctx, experiment_id=experiment_id, plugin_name=plugin_name,
                downsample=1, run_tag_filter=run_tag_filter,
            ).items()
        }

    def list_tensors(self, ctx=None, *, experiment_id, plugin_name, run_tag_filter=None):
        return self._list(
            provider.TensorTimeSeries, plugin_name, run_tag_filter,
            summary_pb2.DATA_CLASS_TENSOR,
        )

    def read_tensors(
        self, ctx=None, *, experiment_id, plugin_name, downsample=None, run_tag_filter=None
    ):
        return self._read(
            _tensor_datum, plugin_name, run_tag_filter, summary_pb2.DATA_CLASS_TENSOR, downsample,
        )


def _tensor_datum(tag, step, wall_time, tensor):
    """A `TensorDatum`, as TensorBoard's provider converts it, but for a
    block of steps whose bytes disagree with its shape (its checksum right,
    its shape saying 1,000 rows where it holds 10): that one is `None`, left
    out alone (`step_series`), where converting would raise and lose the
    run's every block (docs/FORMAT.md, "Damaged data")."""
    try:
        array = tensor_util.make_ndarray(tensor)
    except Exception:  # pylint: disable=broad-except
        if tag != metadata.TAG_STEPS:
            raise
        array = None
    return provider.TensorDatum(step=step, wall_time=wall_time, numpy=array)
