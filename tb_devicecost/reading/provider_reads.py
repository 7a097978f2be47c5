"""Reading runs through a TensorBoard data provider into `RunRecord`s.

`read_runs` asks the provider (the tab's, or the report's
`local_data.LocalDataProvider`) for our tags' listings, documents and
per-step series in parallel calls, since each call to TensorBoard's data
server is a round trip. Nothing here raises for damaged data: where a
call fails, it is made again run by run, then tag by tag (`_robust_read`),
so a value TensorBoard cannot convert costs only its own tag, and is said
in the run's `problems`.
"""

import concurrent.futures
import dataclasses

from tb_devicecost.format import metadata
from tb_devicecost.format.readable import aggregate_usable
from tb_devicecost.reading import step_series

# Points per per-step series handed to charts; totals come from aggregates.
DEFAULT_SERIES_POINTS = 1000


@dataclasses.dataclass
class RunRecord:
    """What one run recorded, as read back.

    Attributes:
        run: TensorBoard run name, e.g. `"gpu/train"`.
        aggregate: The newest cumulative aggregate (exact totals), or `None`.
        info: The newest run-info document (empty when missing).
        placement: The placement document, or `None`.
        trace: The trace-window document, or `None`.
        series: Per-step arrays by column name (`step`, `wall_time`
            (seconds since the epoch), `data_wait_ms`, `compute_ms`,
            `host_overhead_ms`, `batch_size`, `warmup`), in step order,
            possibly a sample of the steps.
        problems: What was skipped while reading, in words.
        newer_schema: Whether a document was written by a newer
            tb-devicecost than this one (and so could not be read).
        unconverted: Tags with a value the provider could not convert
            (the tag was left out whole: `reader.read_logdir` reads such a
            run again from its files, where only the bad value is lost).
    """

    run: str
    aggregate: dict = None
    info: dict = dataclasses.field(default_factory=dict)
    placement: dict = None
    trace: dict = None
    series: dict = dataclasses.field(default_factory=dict)
    problems: list = dataclasses.field(default_factory=list)
    newer_schema: bool = False
    unconverted: list = dataclasses.field(default_factory=list)


def request_context(ctx):
    """`ctx`, or a new `RequestContext` outside a request."""
    if ctx is None:
        from tensorboard import context as context_module

        ctx = context_module.RequestContext()
    return ctx


def _run_tag_filter(runs=None, tags=None):
    from tensorboard.data import provider as provider_module

    return provider_module.RunTagFilter(
        runs=None if runs is None else list(runs),
        tags=None if tags is None else list(tags),
    )


def _short_error(error):
    return f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"


def _robust_read(read, listing, runs, problems, what, tags=None, failed=None):
    """`read(run_tag_filter)` for all `runs` at once; where that raises, run
    by run, then tag by tag, so a value TensorBoard cannot convert costs
    only its own tag. Failures are added to `problems[run]`, and the tag to
    `failed[run]`. Only `tags` are read, when given."""
    try:
        return read(_run_tag_filter(runs=runs, tags=tags))
    except Exception:  # pylint: disable=broad-except
        pass
    result = {}
    for run in sorted(listing):
        if runs is not None and run not in runs:
            continue
        try:
            result.update(read(_run_tag_filter(runs=[run], tags=tags)))
            continue
        except Exception:  # pylint: disable=broad-except
            pass
        for tag in sorted(listing[run]):
            if tags is not None and tag not in tags:
                continue
            try:
                data = read(_run_tag_filter(runs=[run], tags=[tag]))
            except Exception as error:  # pylint: disable=broad-except
                problems.setdefault(run, []).append(
                    f"{tag}: its {what} could not be read ({_short_error(error)})."
                )
                if failed is not None:
                    failed.setdefault(run, []).append(tag)
                continue
            result.setdefault(run, {}).update(data.get(run, {}))
    return result


def read_runs(
    provider,
    ctx=None,
    experiment_id="",
    runs=None,
    series_points=DEFAULT_SERIES_POINTS,
    series_fallback=True,
):
    """Reads every run holding our summaries (or only `runs`).

    Args:
        provider: A `tensorboard.data.provider.DataProvider`.
        ctx: The request context (`None` outside a request).
        experiment_id: Experiment to read; `""` for a single logdir.
        runs: Optional iterable of run names to read.
        series_points: Points per per-step series at most; 0 reads no
            series (but see `series_fallback`).
        series_fallback: With `series_points=0`, whether the runs whose
            aggregate cannot give the numbers still get their series
            (`DEFAULT_SERIES_POINTS`), which the numbers then come from:
            what the run object says does not depend on whether series
            were asked for.

    Returns:
        A list of `RunRecord`, sorted by run name. What could not be read
        (a document, a tag of a newer schema, a value TensorBoard could not
        convert, a block of steps of the wrong shape) is in the run's
        `problems`.
    """
    ctx = request_context(ctx)
    runs = None if runs is None else list(runs)
    plugin = dict(experiment_id=experiment_id, plugin_name=metadata.PLUGIN_NAME)
    run_filter = _run_tag_filter(runs=runs)
    records = {}
    problems = {}
    failed = {}

    def record(run):
        if run not in records:
            records[run] = RunRecord(run=run)
        return records[run]

    def read_documents(run_tag_filter):
        # The newest point is always kept: one is all a document needs.
        return provider.read_tensors(ctx, downsample=1, run_tag_filter=run_tag_filter, **plugin)

    def series_reads(points):
        # Schema 2 (blocks of steps, each holding at least one step: as
        # many blocks as points is enough) and schema 1 (a scalar per step).
        return (
            lambda f: provider.read_tensors(ctx, downsample=points, run_tag_filter=f, **plugin),
            lambda f: provider.read_scalars(ctx, downsample=points, run_tag_filter=f, **plugin),
        )

    # Each call costs TensorBoard's data server a fixed round trip (about
    # 44 ms measured, see docs/PERFORMANCE.md): the listings, the documents
    # and the series go at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        tensor_listing_future = pool.submit(
            lambda: provider.list_tensors(ctx, run_tag_filter=run_filter, **plugin))
        scalar_listing_future = pool.submit(
            lambda: provider.list_scalars(ctx, run_tag_filter=run_filter, **plugin))
        tensors_future = pool.submit(
            read_documents, _run_tag_filter(runs=runs, tags=metadata.JSON_TAGS))
        blocks_future = scalars_future = None
        if series_points:
            read_blocks, read_scalars = series_reads(series_points)
            blocks_future = pool.submit(
                read_blocks, _run_tag_filter(runs=runs, tags=[metadata.TAG_STEPS]))
            scalars_future = pool.submit(read_scalars, run_filter)
        tensor_listing = _result_or_none(tensor_listing_future) or {}
        scalar_listing = _result_or_none(scalar_listing_future) or {}
        tensors = _result_or_none(tensors_future)
        blocks = _result_or_none(blocks_future) if blocks_future else {}
        scalars = _result_or_none(scalars_future) if scalars_future else {}

    # Tags whose summary metadata this code cannot read are refused.
    refused = set()
    for listing in (tensor_listing, scalar_listing):
        for run, by_tag in listing.items():
            for tag, series in by_tag.items():
                try:
                    metadata.check_plugin_content(getattr(series, "plugin_content", b""))
                except metadata.FormatError as error:
                    refused.add((run, tag))
                    record(run).problems.append(f"{tag}: {error}")
                    if isinstance(error, metadata.NewerSchemaError):
                        record(run).newer_schema = True

    if tensors is None:
        tensors = _robust_read(
            read_documents, tensor_listing, runs, problems, "documents",
            tags=metadata.JSON_TAGS, failed=failed,
        )
    fields = {
        metadata.TAG_AGGREGATE: "aggregate",
        metadata.TAG_RUN_INFO: "info",
        metadata.TAG_PLACEMENT: "placement",
        metadata.TAG_TRACE: "trace",
    }
    for run, by_tag in tensors.items():
        for tag, data in by_tag.items():
            if tag not in fields or not data or (run, tag) in refused:
                continue
            try:
                document = metadata.decode_json(data[-1].numpy)
            except metadata.FormatError as error:
                record(run).problems.append(f"{tag}: {error}")
                if isinstance(error, metadata.NewerSchemaError):
                    record(run).newer_schema = True
                continue
            setattr(record(run), fields[tag], document)

    points = series_points
    wanted = runs
    if series_points:
        read_blocks, read_scalars = series_reads(series_points)
    elif series_fallback:
        # The numbers of these runs come from their series (`readable.py`).
        wanted = sorted(
            run for run in set(scalar_listing) | set(tensor_listing) | set(records)
            if (runs is None or run in runs)
            and not (run in records and aggregate_usable(
                records[run].aggregate, records[run].info))
        )
        if wanted:
            points = DEFAULT_SERIES_POINTS
            read_blocks, read_scalars = series_reads(points)
            blocks = scalars = None
    if blocks is None:
        blocks = _robust_read(
            read_blocks, tensor_listing, wanted, problems, "blocks of steps",
            tags=[metadata.TAG_STEPS], failed=failed,
        )
    if scalars is None:
        scalars = _robust_read(
            read_scalars, scalar_listing, wanted, problems, "per-step series",
            failed=failed)
    for run in sorted(set(blocks or {}) | set(scalars or {})):
        block_data = [] if (run, metadata.TAG_STEPS) in refused else (
            (blocks or {}).get(run, {}).get(metadata.TAG_STEPS) or [])
        by_tag = {
            tag: data for tag, data in (scalars or {}).get(run, {}).items()
            if (run, tag) not in refused
        }
        if block_data or by_tag:
            step_series.fill_series(record(run), block_data, by_tag, points, problems)
    for run, messages in problems.items():
        record(run).problems.extend(messages)
    for run, tags in failed.items():
        record(run).unconverted.extend(tags)
    return [records[run] for run in sorted(records)]


def _result_or_none(future):
    try:
        return future.result()
    except Exception:  # pylint: disable=broad-except
        return None
