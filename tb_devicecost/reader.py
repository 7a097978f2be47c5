"""Reads recorded runs back through TensorBoard's own data provider.

The plugin passes the provider TensorBoard gives it; the CLI builds one over
a log directory with `local_provider`. Both get the same `RunRecord`s, and
both decide what was read and what was skipped here (`read_logdir`), so
the tab and `tb-devicecost report` can never disagree.

Whatever is on disk, reading finishes and nothing here raises for damaged
data: the log directory is scanned without following links into itself
and opening only regular files (`scan_logdir`); each run's documents and
series are read on their own, so one that TensorBoard cannot convert costs
only itself; what could not be read is said, per run (docs/FORMAT.md,
"Damaged data").
"""

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import stat

import numpy as np

from tb_devicecost import captures
from tb_devicecost import collisions
from tb_devicecost.captures import find_profile_runs  # noqa: F401 (the plugin's)
from tb_devicecost.captures import list_profile_captures  # noqa: F401
from tb_devicecost import metadata
from tb_devicecost import records as tfrecords
from tb_devicecost import vocabulary
from tb_devicecost.analysis import record as record_module

# Points per per-step series handed to charts; totals come from aggregates.
DEFAULT_SERIES_POINTS = 1000

# Written since the warm-up flag is written per step; older runs lack it.
_OPTIONAL_SERIES = frozenset({metadata.TAG_WARMUP})

# The reason given for a run whose event files hold nothing of ours.
NO_DATA_REASON = (
    "Its event files hold no readable tb-devicecost summaries (only other "
    "summaries, or damaged files)."
)
# The longest run name that is listed and can be opened (Linux's PATH_MAX):
# longer ones are skipped with the reason, never listed unopenable.
MAX_RUN_NAME = 4096
# Directories a scan looks at before it stops (a link to `/` must not make
# the report walk the whole machine).
MAX_SCANNED_DIRECTORIES = 100_000


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
    """

    run: str
    aggregate: dict = None
    info: dict = dataclasses.field(default_factory=dict)
    placement: dict = None
    trace: dict = None
    series: dict = dataclasses.field(default_factory=dict)
    problems: list = dataclasses.field(default_factory=list)
    newer_schema: bool = False


# Scanning the log directory.


@dataclasses.dataclass
class LogdirScan:
    """What is in a log directory, found without opening anything but
    regular event files and without following a link into a loop.

    Attributes:
        root: The log directory.
        runs: `{run: [paths]}`: each run directory (named as TensorBoard
            names runs) with the readable regular event files directly in
            it, in name order.
        problems: `{directory: [reason, ...]}`: what was not read there (an
            unreadable directory, an event file that cannot be opened or is
            not a regular file, a link not followed), as sentences.
    """

    root: str
    runs: dict = dataclasses.field(default_factory=dict)
    problems: dict = dataclasses.field(default_factory=dict)

    def note(self, run, reason):
        self.problems.setdefault(run, []).append(reason)

    def unread(self, reported):
        """`[{"run", "reason"}]`: each directory with nothing reported.

        Args:
            reported: Run names that have a record (their problems go to
                the record instead, see `read_logdir`).
        """
        items = []
        for run in sorted(set(self.runs) | set(self.problems)):
            if run in reported:
                continue
            reasons = list(self.problems.get(run, ()))
            if self.runs.get(run):
                reasons.insert(0, NO_DATA_REASON)
            items.append({"run": run, "reason": " ".join(reasons)})
        return items


def _run_name(root, directory):
    prefix = root.rstrip(os.sep) + os.sep
    if directory.startswith(prefix) and os.sep + os.pardir not in directory:
        # The common case (a directory under the root), without relpath's
        # normalisation: the scan names every directory it walks.
        relative = directory[len(prefix):].rstrip(os.sep) or os.curdir
    else:
        relative = os.path.relpath(directory, root)
    return "." if relative == os.curdir else relative.replace(os.sep, "/")


def _os_error(error):
    return f"{type(error).__name__}: {error.strerror or error}"


def _is_event_file(name):
    """TensorBoard's rule (`io_wrapper.IsSummaryEventsFile`)."""
    return "tfevents" in name and not name.endswith(".profile-empty")


def _check_event_file(path):
    """Why an event file cannot be read, or `None` when it is a readable
    regular file. Opening never blocks (a FIFO opens at once this way)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        return f"could not be opened ({_os_error(error)})"
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError as error:
        return f"could not be read ({_os_error(error)})"
    finally:
        os.close(descriptor)
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        return f"is {kind}, not a regular file: not read"
    return None


# Per event file: (identity, bytes checked, damage found). A file that
# grows is checked from where the last check stopped.
_CHECKED = {}


def _first_damage(path):
    """Where an event file's framing first fails, in words, or `None`.

    Walks the file's TFRecords, checking both checksums of each (C CRC-32C:
    gigabytes a second). A record cut short at the end is not damage (a
    file being written ends so); a checksum that fails is. TensorBoard's
    Python loader, and so `tb-devicecost report`, reads a file up to such a
    record; its default loader skips the record and reads on.
    """
    try:
        status = os.stat(path)
    except OSError:
        return None
    identity = (status.st_dev, status.st_ino)
    checked, damage = 0, None
    cached = _CHECKED.get(path)
    if cached and cached[0] == identity and cached[1] <= status.st_size:
        checked, damage = cached[1], cached[2]
    if damage is None and checked < status.st_size:
        try:
            with open(path, "rb") as handle:
                handle.seek(checked)
                for offset, payload in tfrecords.read_framed(handle, checked, status.st_size):
                    if payload is None:
                        damage = offset
                        break
                    checked = offset + 16 + len(payload)
        except OSError:
            return None
        _CHECKED[path] = (identity, checked, damage)
    if damage is None:
        return None
    return (
        f"it holds a damaged record at byte {damage:,} (a checksum fails): "
        "what follows in the file is not read (TensorBoard's default loader "
        "skips the record and reads on)"
    )


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def scan_logdir(logdir):
    """Finds every run under `logdir` and what cannot be read there.

    Walks the tree itself: only regular files named like event files are
    kept (a FIFO or a device is never opened for reading), and a link to a
    directory is followed only out of the log directory, to a directory
    not seen yet: a link back into the tree (`loop -> .`, `up -> ..`, or to
    a sibling run) is listed, not followed, since its runs are read where
    they are. Each run is named as TensorBoard names it.

    Raises:
        OSError: when `logdir` itself cannot be listed.
    """
    root = os.path.abspath(logdir)
    scan = LogdirScan(root=root)
    real_root = os.path.realpath(root)
    os.listdir(root)  # Raises when the log directory itself is unreadable.
    seen = set()
    pending = [root]
    visited = 0
    while pending:
        top = pending.pop(0)

        def unreadable(error, top=top):
            where = error.filename or top
            scan.note(
                _run_name(root, where),
                f"The directory could not be read ({_os_error(error)}).",
            )

        for directory, subdirectories, files in os.walk(top, onerror=unreadable):
            visited += 1
            if visited > MAX_SCANNED_DIRECTORIES:
                scan.note(
                    _run_name(root, directory),
                    f"Not read: the scan stops after {MAX_SCANNED_DIRECTORIES:,} "
                    "directories.",
                )
                return scan
            run = _run_name(root, directory)
            try:
                real = os.stat(directory)
                seen.add((real.st_dev, real.st_ino))
            except OSError:
                pass
            kept = []
            for name in sorted(subdirectories):
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    kept.append(name)
                    continue
                target = os.path.realpath(path)
                try:
                    status = os.stat(path)
                except OSError as error:
                    scan.note(_run_name(root, path), f"A broken link ({_os_error(error)}).")
                    continue
                if _inside(target, real_root):
                    scan.note(
                        _run_name(root, path),
                        "A symbolic link to a directory inside the log directory "
                        f"({_run_name(real_root, target)}): not followed, since its runs "
                        "are read where they are (and a link back up would loop).",
                    )
                elif _inside(real_root, target):
                    scan.note(
                        _run_name(root, path),
                        f"A symbolic link to {target}, which holds the log directory: "
                        "not followed (it would loop).",
                    )
                elif (status.st_dev, status.st_ino) in seen:
                    scan.note(
                        _run_name(root, path),
                        "A symbolic link to a directory already read: not followed.",
                    )
                else:
                    seen.add((status.st_dev, status.st_ino))
                    pending.append(path)
            subdirectories[:] = kept
            readable = []
            for name in sorted(files):
                if not _is_event_file(name):
                    continue
                path = os.path.join(directory, name)
                reason = _check_event_file(path)
                if reason:
                    scan.note(run, f"Skipped the event file {name}: it {reason}.")
                    continue
                readable.append(path)
                damage = _first_damage(path)
                if damage:
                    scan.note(run, f"The event file {name}: {damage}.")
            if readable:
                scan.runs[run] = readable
                for reason in collisions.collided(readable):
                    scan.note(run, reason)
    return scan


@contextlib.contextmanager
def _quiet_tensorboard():
    """TensorBoard's loader logs what it skips; the report says it instead."""
    logger = logging.getLogger("tensorboard")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def local_provider(logdir, scan=None):
    """A data provider over `logdir`, loaded once (for the CLI).

    Reads only what `scan_logdir` vetted (so never follows a link loop nor
    opens a FIFO), with C checksums and only tb-devicecost's values kept
    (`local_data.LocalDataProvider`): a million steps in half a second,
    where TensorBoard's Python loader takes most of a minute. It reads
    damaged files as TensorBoard's Python loader does.

    Args:
        logdir: The log directory.
        scan: Its `scan_logdir`, when already made.

    Raises:
        ValueError: when `logdir` is not an existing, readable directory.
    """
    if not os.path.isdir(logdir):
        raise ValueError(
            f"Log directory {logdir!r} does not exist or is not a directory. "
            "Pass the directory given to DeviceCostCallback's parent, e.g. 'logs'."
        )
    if scan is None:
        try:
            scan = scan_logdir(logdir)
        except OSError as error:
            raise ValueError(
                f"Log directory {logdir!r} could not be read ({_os_error(error)})."
            ) from None
    from tb_devicecost import local_data

    return local_data.LocalDataProvider(logdir, scan.runs)


def reload_runs(multiplexer):
    """`multiplexer.Reload()`, one run at a time: a run whose file holds a
    record TensorBoard cannot parse keeps what came before it, and the
    other runs load in full."""
    with _quiet_tensorboard():
        for run in sorted(multiplexer.Runs()):
            try:
                multiplexer.GetAccumulator(run).Reload()
            except Exception:  # pylint: disable=broad-except
                continue


# Reading runs.


def _request_context(ctx):
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


def _robust_read(read, listing, runs, problems, what, tags=None):
    """`read(run_tag_filter)` for all `runs` at once; where that raises, run
    by run, then tag by tag, so a value TensorBoard cannot convert costs
    only its own tag. Failures are added to `problems[run]`. Only `tags`
    are read, when given."""
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
    ctx = _request_context(ctx)
    runs = None if runs is None else list(runs)
    plugin = dict(experiment_id=experiment_id, plugin_name=metadata.PLUGIN_NAME)
    run_filter = _run_tag_filter(runs=runs)
    records = {}
    problems = {}

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
            tags=metadata.JSON_TAGS,
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
        # The numbers of these runs come from their series (`analysis.record`).
        wanted = sorted(
            run for run in set(scalar_listing) | set(tensor_listing) | set(records)
            if (runs is None or run in runs)
            and not (run in records and record_module.aggregate_usable(records[run].aggregate))
        )
        if wanted:
            points = DEFAULT_SERIES_POINTS
            read_blocks, read_scalars = series_reads(points)
            blocks = scalars = None
    if blocks is None:
        blocks = _robust_read(
            read_blocks, tensor_listing, wanted, problems, "blocks of steps",
            tags=[metadata.TAG_STEPS],
        )
    if scalars is None:
        scalars = _robust_read(
            read_scalars, scalar_listing, wanted, problems, "per-step series")
    for run in sorted(set(blocks or {}) | set(scalars or {})):
        block_data = [] if (run, metadata.TAG_STEPS) in refused else (
            (blocks or {}).get(run, {}).get(metadata.TAG_STEPS) or [])
        by_tag = {
            tag: data for tag, data in (scalars or {}).get(run, {}).items()
            if (run, tag) not in refused
        }
        if block_data or by_tag:
            _fill_series(record(run), block_data, by_tag, points, problems)
    for run, messages in problems.items():
        record(run).problems.extend(messages)
    return [records[run] for run in sorted(records)]


def _result_or_none(future):
    try:
        return future.result()
    except Exception:  # pylint: disable=broad-except
        return None


def read_logdir(provider, scan=None, ctx=None, experiment_id="", runs=None, **options):
    """The runs to report and what was not read: `(records, unread)`.

    The one place that decides, for the tab and the report alike. With a
    `scan` (`scan_logdir` of the log directory, when it is a local one)
    only runs the scan found are kept: a run TensorBoard reached through a
    link into the tree is left out (the scan names the link instead), and
    each kept run's problems gain what the scan could not read in its
    directory. `unread` lists every other directory with event files or
    with something unreadable, with the reason; without a scan, the runs
    the provider lists that hold nothing of ours.

    Args:
        provider, ctx, experiment_id, runs: As for `read_runs`.
        scan: A `LogdirScan`, or `None`.
        **options: `series_points`, `series_fallback` of `read_runs`.
    """
    records = read_runs(provider, ctx, experiment_id=experiment_id, runs=runs, **options)
    # One rule for what is listed and what can be opened (`MAX_RUN_NAME`).
    too_long = [record.run for record in records if len(record.run) > MAX_RUN_NAME]
    records = [record for record in records if len(record.run) <= MAX_RUN_NAME]
    if scan is not None:
        records = [record for record in records if record.run in scan.runs]
        for record in records:
            record.problems.extend(scan.problems.get(record.run, ()))
        unread = scan.unread({record.run for record in records})
    else:
        try:
            listed = [run.run_name for run in provider.list_runs(
                _request_context(ctx), experiment_id=experiment_id)]
        except Exception:  # pylint: disable=broad-except
            listed = []
        known = {record.run for record in records}
        unread = [
            {"run": run, "reason": NO_DATA_REASON}
            for run in sorted(set(listed) - known)
        ]
    unread = sorted([item for item in unread if item["run"] not in too_long] + [
        {"run": run, "reason": f"Its name is {len(run):,} characters, more than the "
         f"{MAX_RUN_NAME:,} a run name may have (Linux's PATH_MAX)."} for run in too_long],
        key=lambda item: item["run"])
    if runs is not None:
        unread = [item for item in unread if item["run"] in runs]
    return records, unread


def fingerprint(provider, scan=None, ctx=None, experiment_id="", also=None):
    """What `read_logdir` reads, in brief: equal fingerprints, equal records.

    Each of our tags' newest step and wall time and summary metadata, as
    the provider lists them (a document written again, or a block of steps
    added, moves them), and with a `scan` its runs, each event file's size
    and modification time, and what it could not read. `None` when the
    provider cannot list (nothing can then be known unchanged).

    Args:
        scan: A `LogdirScan`, or a function returning one (or `None`),
            called while the provider lists (its calls wait on the network).
        also: A function whose result joins the fingerprint, called then too.
    """
    ctx = _request_context(ctx)
    plugin = dict(experiment_id=experiment_id, plugin_name=metadata.PLUGIN_NAME)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        listings = [
            pool.submit(provider.list_tensors, ctx, **plugin),
            pool.submit(provider.list_scalars, ctx, **plugin),
        ]
        if callable(scan):
            scan = scan()
        extra = also() if also is not None else None
        try:
            listings = [future.result() for future in listings]
        except Exception:  # pylint: disable=broad-except
            return None
    parts = [extra]
    for listing in listings:
        parts.append(tuple(sorted(
            (run, tag, series.max_step, series.max_wall_time,
             getattr(series, "plugin_content", b""))
            for run, by_tag in listing.items()
            for tag, series in by_tag.items()
        )))
    if scan is not None:
        files = []
        for run, paths in sorted(scan.runs.items()):
            for path in paths:
                try:
                    status = os.stat(path)
                except OSError:
                    files.append((run, path, None))
                    continue
                files.append((run, path, status.st_size, status.st_mtime_ns))
        parts.append(tuple(files))
        parts.append(tuple(sorted((run, tuple(reasons)) for run, reasons in scan.problems.items())))
    return tuple(parts)


def scan_if_local(logdir):
    """`scan_logdir(logdir)` for a local directory, else `None` (a bucket,
    no logdir, or one that cannot be read)."""
    if not logdir or "://" in str(logdir) or not os.path.isdir(logdir):
        return None
    try:
        return scan_logdir(logdir)
    except OSError:
        return None


def _as_float(value):
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


_SERIES_KEYS = (vocabulary.STEP,) + metadata.BLOCK_COLUMNS


def _rows_from_blocks(run, data, problems):
    """The rows of blocks of steps (schema 2) as a float64 array of
    `_SERIES_KEYS` columns, wall times absolute. A block of another shape
    or type is left out, and said."""
    parts = []
    bad = 0
    width = len(metadata.BLOCK_COLUMNS)
    for datum in data:
        values = getattr(datum, "numpy", None)
        if (
            not isinstance(values, np.ndarray)
            or values.ndim != 2
            or values.shape[1] != width
            or values.dtype.kind != "f"
        ):
            bad += 1
            continue
        block = np.empty((len(values), width + 1), dtype=np.float64)
        block[:, 0] = int(datum.step) + np.arange(len(values))
        block[:, 1:] = values
        block[:, 1] += float(datum.wall_time)
        parts.append(block)
    if bad:
        problems.setdefault(run, []).append(
            f"{metadata.TAG_STEPS}: {bad} block(s) of steps are not "
            f"[steps, {width}] float tensors and were left out."
        )
    if not parts:
        return np.empty((0, width + 1), dtype=np.float64)
    return np.concatenate(parts)


def _rows_from_scalars(by_tag):
    """The rows of per-step scalars (schema 1): steps that have every
    column (the warm-up flag may be missing: runs written before it)."""
    steps = None
    columns = {}
    wall_times = {}
    for tag, key in metadata.SERIES_KEY.items():
        data = by_tag.get(tag) or []
        if not data and tag in _OPTIONAL_SERIES:
            continue
        by_step = {}
        for datum in data:
            try:
                step = int(datum.step)
            except (TypeError, ValueError, OverflowError):
                continue
            by_step[step] = _as_float(datum.value)
            wall_times.setdefault(step, _as_float(datum.wall_time))
        columns[key] = by_step
        steps = set(by_step) if steps is None else steps & set(by_step)
    steps = sorted(steps or ())
    rows = np.full((len(steps), len(_SERIES_KEYS)), np.nan, dtype=np.float64)
    rows[:, 0] = steps
    rows[:, 1] = [wall_times[step] for step in steps]
    for index, key in enumerate(_SERIES_KEYS[2:], start=2):
        if key in columns:
            rows[:, index] = [columns[key][step] for step in steps]
    return rows, set(columns)


def _fill_series(run_record, block_data, by_tag, points, problems):
    """`run_record.series`: per-step arrays by column name (`step`,
    `wall_time` in seconds since the epoch, `data_wait_ms`, `compute_ms`,
    `host_overhead_ms`, `batch_size`, `warmup`), in step order, one row per
    step (blocks win over scalars of the same step), at most `points`
    rows, evenly spread over the rows read, the last one kept."""
    block_rows = _rows_from_blocks(run_record.run, block_data, problems)
    scalar_rows, present = _rows_from_scalars(by_tag) if by_tag else (None, set())
    parts = [rows for rows in (scalar_rows, block_rows) if rows is not None and len(rows)]
    if not parts:
        rows = block_rows
    else:
        rows = np.concatenate(parts)
        # Sorted by step, stable, then the last row of each step: a block's.
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        last = np.ones(len(rows), dtype=bool)
        last[:-1] = rows[1:, 0] != rows[:-1, 0]
        rows = rows[last]
    if points and len(rows) > points:
        keep = np.unique(np.round(np.linspace(0, len(rows) - 1, points)).astype(np.int64))
        rows = rows[keep]
    series = {vocabulary.STEP: rows[:, 0].astype(np.int64)}
    for index, key in enumerate(_SERIES_KEYS[1:], start=1):
        if key == vocabulary.WARMUP and not len(block_rows) and key not in present:
            continue  # Runs written before the flag existed.
        series[key] = rows[:, index]
    run_record.series = series
