"""Reads recorded runs back through TensorBoard's own data provider.

The plugin passes the provider TensorBoard gives it; the CLI builds one over
a log directory with `local_provider`. Both get the same `RunRecord`s, so
the tab and `tb-devicecost report` can never disagree.
"""

import concurrent.futures
import dataclasses
import functools
import os

import numpy as np

from tb_devicecost import captures
from tb_devicecost import metadata

# Points per per-step series handed to charts; totals come from aggregates.
DEFAULT_SERIES_POINTS = 1000

# Written since the warm-up flag is written per step; older runs lack it.
_OPTIONAL_SERIES = frozenset({metadata.TAG_WARMUP})



@dataclasses.dataclass
class RunRecord:
    """What one run recorded, as read back.

    Attributes:
        run: TensorBoard run name, e.g. `"gpu/train"`.
        aggregate: The newest cumulative aggregate (exact totals), or `None`.
        info: The newest run-info document (empty when missing).
        placement: The placement document, or `None`.
        trace: The trace-window document, or `None`.
        series: Per-step arrays (`step`, `data_wait_ms`, `compute_ms`,
            `host_overhead_ms`, `batch_size`), possibly downsampled.
        problems: What was skipped while reading, in words.
        newer_schema: Whether a document was written by a newer
            tb-devicecost than this one (and so could not be read).
    """

    run: str
    aggregate: dict = None
    info: dict = dataclasses.field(default_factory=dict)
    placement: dict = None
    trace: dict = None
    series: dict = dataclasses.field(default_factory=dict)
    problems: list = dataclasses.field(default_factory=list)
    newer_schema: bool = False


def local_provider(logdir):
    """A TensorBoard data provider over `logdir`, loaded once (for the CLI).

    Raises:
        ValueError: when `logdir` is not an existing directory.
    """
    if not os.path.isdir(logdir):
        raise ValueError(
            f"Log directory {logdir!r} does not exist or is not a directory. "
            "Pass the directory given to DeviceCostCallback's parent, e.g. 'logs'."
        )
    # Imported here: loading event files pulls in much of TensorBoard.
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance={event_accumulator.TENSORS: DEFAULT_SERIES_POINTS},
        tensor_size_guidance={metadata.PLUGIN_NAME: DEFAULT_SERIES_POINTS},
    )
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    return data_provider.MultiplexerDataProvider(multiplexer, logdir)


def read_runs(
    provider,
    ctx=None,
    experiment_id="",
    runs=None,
    series_points=DEFAULT_SERIES_POINTS,
):
    """Reads every run holding our summaries (or only `runs`).

    Args:
        provider: A `tensorboard.data.provider.DataProvider`.
        ctx: The request context (`None` outside a request).
        experiment_id: Experiment to read; `""` for a single logdir.
        runs: Optional iterable of run names to read.
        series_points: Points per per-step series; 0 reads no series.

    Returns:
        A list of `RunRecord`, sorted by run name. Runs whose JSON documents
        could not be read carry the reason in `problems`.
    """
    if ctx is None:
        from tensorboard import context as context_module

        ctx = context_module.RequestContext()
    run_filter = None
    if runs is not None:
        from tensorboard.data import provider as provider_module

        run_filter = provider_module.RunTagFilter(runs=list(runs))
    records = {}

    def record(run):
        if run not in records:
            records[run] = RunRecord(run=run)
        return records[run]

    read_documents = functools.partial(
        provider.read_tensors,
        ctx,
        experiment_id=experiment_id,
        plugin_name=metadata.PLUGIN_NAME,
        # The newest point is always kept: one is all a document needs.
        downsample=1,
        run_tag_filter=run_filter,
    )
    read_series = functools.partial(
        provider.read_scalars,
        ctx,
        experiment_id=experiment_id,
        plugin_name=metadata.PLUGIN_NAME,
        downsample=series_points,
        run_tag_filter=run_filter,
    )
    if series_points:
        # Two calls at once: each costs TensorBoard's data server a fixed
        # round trip (about 44 ms measured, see docs/PERFORMANCE.md).
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            series_future = pool.submit(read_series)
            tensors = read_documents()
            scalars = series_future.result()
    else:
        tensors, scalars = read_documents(), {}
    fields = {
        metadata.TAG_AGGREGATE: "aggregate",
        metadata.TAG_RUN_INFO: "info",
        metadata.TAG_PLACEMENT: "placement",
        metadata.TAG_TRACE: "trace",
    }
    for run, by_tag in tensors.items():
        for tag, data in by_tag.items():
            if tag not in fields or not data:
                continue
            try:
                document = metadata.decode_json(data[-1].numpy)
            except metadata.FormatError as error:
                record(run).problems.append(f"{tag}: {error}")
                if isinstance(error, metadata.NewerSchemaError):
                    record(run).newer_schema = True
                continue
            setattr(record(run), fields[tag], document)

    for run, by_tag in scalars.items():
        _fill_series(record(run), by_tag)
    return [records[run] for run in sorted(records)]


def _fill_series(run_record, by_tag):
    steps = None
    columns = {}
    for tag, key in metadata.SERIES_KEY.items():
        data = by_tag.get(tag) or []
        if not data and tag in _OPTIONAL_SERIES:
            continue
        by_step = {datum.step: datum.value for datum in data}
        columns[key] = by_step
        steps = set(by_step) if steps is None else steps & set(by_step)
    steps = sorted(steps or ())
    run_record.series = {"step": np.asarray(steps, dtype=np.int64)}
    for key, by_step in columns.items():
        run_record.series[key] = np.asarray(
            [by_step[step] for step in steps], dtype=np.float64
        )


def list_profile_captures(logdir, run):
    """Profiler captures of `run`: `[{"capture": ts, "host": host}]`.

    Looks in `<logdir>/<run>/plugins/profile/<timestamp>/<host>.xplane.pb`,
    where the Profile tab finds them. Paths are confined to `logdir`.
    """
    if not logdir or run is None:
        return []
    root = os.path.realpath(logdir)
    run_dir = os.path.realpath(os.path.join(root, run))
    if os.path.commonpath([root, run_dir]) != root:
        return []
    return [
        {"capture": capture, "host": host}
        for _, capture, host in captures.list_captures(run_dir)
    ]


def find_profile_runs(logdir, max_depth=6):
    """Runs under `logdir` that hold profiler captures, as run names.

    A run holds captures when `<run>/plugins/profile/<timestamp>/` exists
    with a trace in it; the search stops `max_depth` levels down.
    """
    if not logdir or not os.path.isdir(logdir):
        return []
    root = os.path.realpath(logdir)
    runs = []
    for directory, subdirectories, _ in os.walk(root):
        relative = os.path.relpath(directory, root)
        depth = 0 if relative == "." else relative.count(os.sep) + 1
        if "plugins" in subdirectories:
            run = "." if relative == "." else relative.replace(os.sep, "/")
            if list_profile_captures(logdir, run):
                runs.append(run)
        # Never descend into a run's plugin data, nor too deep.
        subdirectories[:] = [] if depth >= max_depth else sorted(
            name for name in subdirectories if name != "plugins"
        )
    return sorted(runs)
