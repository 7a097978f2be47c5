"""Reads recorded runs back through TensorBoard's own data provider.

The plugin passes the provider TensorBoard gives it; the CLI builds one over
a log directory with `local_provider`. Both get the same `RunRecord`s, and
both decide what was read and what was skipped here (`read_logdir`), so
the tab and `tb-devicecost report` can never disagree.

Whatever is on disk, reading finishes and nothing here raises for damaged
data: the log directory is scanned without following links into itself
and opening only regular files (`logdir_scan.scan_logdir`); each run's
documents and series are read on their own (`provider_reads.read_runs`),
so one that TensorBoard cannot convert costs only itself; what could not
be read is said, per run (docs/FORMAT.md, "Damaged data").

This module is the reading's entry point: the plugin, the CLI, the tests
and the benchmarks import only it. The jobs live apart: the scan in
`logdir_scan`, framing and damage checks in `records`, the provider's
reads in `provider_reads`, decoding per-step series in `step_series`,
where profiler captures are in `captures`.
"""

import concurrent.futures
import contextlib
import logging
import os

# Re-exported (`__all__`): importers need only this module, whichever
# module does the job.
from tb_devicecost.format import metadata
from tb_devicecost.format.captures import find_profile_runs
from tb_devicecost.format.captures import list_profile_captures
from tb_devicecost.reading import logdir_scan
from tb_devicecost.reading import provider_reads
from tb_devicecost.reading.logdir_scan import LogdirScan
from tb_devicecost.reading.logdir_scan import NO_DATA_REASON
from tb_devicecost.reading.logdir_scan import path_text
from tb_devicecost.reading.logdir_scan import scan_if_local
from tb_devicecost.reading.logdir_scan import scan_logdir
from tb_devicecost.reading.provider_reads import DEFAULT_SERIES_POINTS
from tb_devicecost.reading.provider_reads import RunRecord
from tb_devicecost.reading.provider_reads import read_runs

__all__ = [
    "DEFAULT_SERIES_POINTS",
    "LogdirScan",
    "MAX_RUN_NAME",
    "NO_DATA_REASON",
    "RunRecord",
    "find_profile_runs",
    "fingerprint",
    "list_profile_captures",
    "local_provider",
    "path_text",
    "read_logdir",
    "read_runs",
    "reload_runs",
    "scan_if_local",
    "scan_logdir",
]

# The longest run name that is listed and can be opened (Linux's PATH_MAX):
# longer ones are skipped with the reason, never listed unopenable.
MAX_RUN_NAME = 4096


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
            reason = logdir_scan.os_error(error)
            raise ValueError(f"Log directory {logdir!r} could not be read ({reason}).") from None
    from tb_devicecost.reading import local_data

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


def read_logdir(provider, scan=None, ctx=None, experiment_id="", runs=None, **options):
    """The runs to report and what was not read: `(records, unread)`.

    The one place that decides, for the tab and the report alike. With a
    `scan` (`scan_logdir` of the log directory, when it is a local one)
    only runs the scan found are kept: a run TensorBoard reached through a
    link into the tree is left out (the scan names the link instead), and
    each kept run's problems gain what the scan could not read in its
    directory. A run the scan found that the provider does not serve
    (TensorBoard's loader still walking a link it followed, a name that is
    not UTF-8, a block of steps it could not convert) is read from its
    files, as the report reads it (`_read_rest_from_files`). `unread` lists
    every other directory with event files or with something unreadable,
    with the reason; without a scan, the runs the provider lists that hold
    nothing of ours.

    Args:
        provider, ctx, experiment_id, runs: As for `read_runs`.
        scan: A `LogdirScan`, or `None`.
        **options: `series_points`, `series_fallback` of `read_runs`.
    """
    records = read_runs(provider, ctx, experiment_id=experiment_id, runs=runs, **options)
    if scan is not None:
        records = _read_rest_from_files(provider, scan, records, ctx, experiment_id, runs, options)
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
                provider_reads.request_context(ctx), experiment_id=experiment_id)]
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


def _read_rest_from_files(provider, scan, records, ctx, experiment_id, runs, options):
    """`records`, with the scanned runs `provider` does not serve read from
    their files (`local_data.LocalDataProvider`, the report's provider):
    those it does not list at all, and those with a value it could not
    convert (`RunRecord.unconverted`: TensorBoard's provider then loses the
    whole tag, where the files lose one block). The tab and the report so
    list the same runs with the same numbers whatever TensorBoard's loader
    makes of the directory."""
    from tb_devicecost.reading import local_data

    if isinstance(provider, local_data.LocalDataProvider):
        return records
    served = {record.run: record for record in records if record.run in scan.runs}
    missing = [run for run in scan.runs
               if run not in served and (runs is None or run in runs)]
    if missing:
        try:
            listed = {run.run_name for run in provider.list_runs(
                provider_reads.request_context(ctx), experiment_id=experiment_id)}
        except Exception:  # pylint: disable=broad-except
            listed = set()
        # A run TensorBoard lists holds only other summaries: not ours to read.
        missing = [run for run in missing if run not in listed]
    again = missing + sorted(run for run, record in served.items() if record.unconverted)
    if not again:
        return records
    files = local_data.LocalDataProvider(scan.root, {run: scan.runs[run] for run in again})
    fresh = read_runs(files, ctx, runs=again, **options)
    kept = [record for record in records if record.run not in set(again)]
    return sorted(kept + fresh, key=lambda record: record.run)


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
    ctx = provider_reads.request_context(ctx)
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
