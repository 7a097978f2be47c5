"""The Device Cost tab: TensorBoard routes serving the analysis as JSON.

Routes only parse and check their parameters, then call a `*_impl` method
that returns plain data built by `reader`, `analysis` and `words`: the same code the
`tb-devicecost report` command runs, so the tab and the report agree.
"""

import gzip
import json
import mimetypes
import os
import posixpath
import threading
import time
import urllib.parse

from tensorboard import errors
from tensorboard import plugin_util
from tensorboard.backend import http_util
from tensorboard.backend import json_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tb_devicecost import words
from tb_devicecost.analysis import record as run_records
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader

# Run names are paths: the reader's one rule for what is listed and opened.
_MAX_RUN_NAME = reader.MAX_RUN_NAME
_MAX_COMPARED_RUNS = 100
# How often `is_active` may walk the log directory for profiler captures.
_ACTIVE_RECHECK_S = 30.0
# Every route only reads.
_METHODS = ("GET", "HEAD")


def _static_root():
    """The folder whose files the tab is: `serving/static/`, which a wheel
    holds (setup.py's `build_py` copies `frontend/` there), else the
    repository's `frontend/` beside the package, which is where a checkout
    and an editable install (`pip install -e .`) have them."""
    serving = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(serving, "static")
    package = os.path.dirname(serving)
    checkout = os.path.join(os.path.dirname(package), "frontend")
    for root in (installed, checkout):
        if os.path.isfile(os.path.join(root, "index.js")):
            return os.path.realpath(root)
    return os.path.realpath(installed)


_STATIC_DIR = _static_root()


class DeviceCostPlugin(base_plugin.TBPlugin):
    """Serves per-run step breakdowns, verdicts and comparisons."""

    plugin_name = metadata.PLUGIN_NAME

    def __init__(self, context):
        self._data_provider = context.data_provider
        self._logdir = context.logdir
        # The last `_Snapshot` of the log directory, with its fingerprint.
        self._snapshot_cache = None
        self._lock = threading.Lock()
        # `is_active`'s last answer and when it was found (`time.monotonic`).
        self._active = (None, float("-inf"))

    def get_plugin_apps(self):
        return {
            "/runs": self._serve_runs,
            "/run": self._serve_run,
            "/compare": self._serve_compare,
            "/static/*": self._serve_static,
        }

    def is_active(self):
        # Runs with our summaries activate the tab through the data
        # provider's plugin listing; this covers runs holding only traces,
        # and our event files TensorBoard's loader does not serve (its Rust
        # loader never finishes walking a link to /sys; the tab reads them
        # from their files, `reader.read_logdir`). TensorBoard asks on every
        # reload: the disk is walked at most once every `_ACTIVE_RECHECK_S`,
        # and once the tab is active it stays so.
        active, checked_s = self._active
        now_s = time.monotonic()
        if active or now_s - checked_s < _ACTIVE_RECHECK_S:
            return bool(active)
        active = bool(reader.find_profile_runs(self._logdir)) or _holds_our_files(
            reader.scan_if_local(self._logdir))
        self._active = (active, now_s)
        return active

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(
            es_module_path="/static/index.js", tab_name="Device Cost"
        )

    # Routes: parse and check, then call the matching `*_impl`.

    @wrappers.Request.application
    def _serve_runs(self, request):
        _check_method(request)
        ctx = plugin_util.context(request.environ)
        experiment = plugin_util.experiment_id(request.environ)
        baseline = _optional_run_parameter(request, "baseline")
        body = self._runs_body(ctx, experiment, baseline)
        # TensorBoard unzips it for a client that does not take gzip.
        return http_util.Respond(request, body, "application/json", content_encoding="gzip")

    @wrappers.Request.application
    def _serve_run(self, request):
        _check_method(request)
        ctx = plugin_util.context(request.environ)
        experiment = plugin_util.experiment_id(request.environ)
        run = _optional_run_parameter(request, "run")
        if run is None:
            raise errors.InvalidArgumentError(
                "Missing query parameter `run`: the run to show, e.g. "
                "`run?run=gpu/train`."
            )
        body = self.run_impl(ctx, experiment, run)
        return http_util.Respond(request, body, "application/json")

    @wrappers.Request.application
    def _serve_compare(self, request):
        _check_method(request)
        ctx = plugin_util.context(request.environ)
        experiment = plugin_util.experiment_id(request.environ)
        # Repeated rather than comma-separated: run names are paths and may
        # hold commas.
        runs = list(dict.fromkeys(request.args.getlist("run")))
        if not runs:
            raise errors.InvalidArgumentError(
                "Missing query parameter `run`: name two or more runs, "
                "repeating the parameter, e.g. `compare?run=cpu/train&run=gpu/train`."
            )
        if not 2 <= len(runs) <= _MAX_COMPARED_RUNS:
            raise errors.InvalidArgumentError(
                f"Name 2 to {_MAX_COMPARED_RUNS} different runs to compare. "
                f"Received {len(runs)}: {runs[:5]!r}"
            )
        for run in runs:
            _check_run_name(run, "run")
        baseline = _optional_run_parameter(request, "baseline")
        body = self.compare_impl(ctx, experiment, runs, baseline)
        return http_util.Respond(request, body, "application/json")

    @wrappers.Request.application
    def _serve_static(self, request):
        _check_method(request)
        path = _static_file(request.path)
        if path is None:
            raise errors.NotFoundError(f"No static file {request.path!r}")
        content_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        if path.endswith(".js"):
            content_type = "text/javascript"
        with open(path, "rb") as static_file:
            contents = static_file.read()
        return http_util.Respond(request, contents, content_type)

    def _snapshot(self, ctx, experiment):
        """The log directory as read once (`_Snapshot`), read again only
        when what it is read from changed: the data TensorBoard serves, the
        scanned event files and the profiler captures (`reader.fingerprint`).
        Reading hundreds of runs takes longer than checking that."""
        scans, found = [], []

        def scan():
            scans.append(reader.scan_if_local(self._logdir))
            return scans[-1]

        def captures():
            # Listed once: the fingerprint's part, and the snapshot's links.
            found.append(_profile_captures(self._logdir))
            return tuple(
                (run, tuple(tuple(sorted(capture.items())) for capture in listed))
                for run, listed in found[-1].items()
            )

        data = reader.fingerprint(self._data_provider, scan, ctx, experiment, also=captures)
        key = None if data is None else (experiment, data)
        with self._lock:
            cached = self._snapshot_cache
            if key is not None and cached is not None and cached.key == key:
                return cached
        snapshot = _Snapshot(
            self, ctx, experiment, key,
            scans[-1] if scans else reader.scan_if_local(self._logdir),
            found[-1] if found else None,
        )
        if key is not None:
            with self._lock:
                self._snapshot_cache = snapshot
        return snapshot

    def _runs_body(self, ctx, experiment, baseline):
        """`runs_impl` as gzipped JSON, kept with the snapshot it was built
        from (one body per baseline)."""
        snapshot = self._snapshot(ctx, experiment)
        with self._lock:
            body = snapshot.bodies.get(baseline)
        if body is not None:
            return body
        report = self._runs_report(snapshot, baseline)
        try:
            # The analysis leaves no NaN, so TensorBoard's own cleansing
            # walk (`json_util.Cleanse`) is not needed.
            text = json.dumps(report, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(json_util.Cleanse(report), separators=(",", ":"))
        body = gzip.compress(text.encode("utf-8"), compresslevel=3, mtime=0)
        with self._lock:
            snapshot.bodies[baseline] = body
        return body

    # Implementations: plain data in, plain data out.

    def runs_impl(self, ctx, experiment, baseline=None):
        return self._runs_report(self._snapshot(ctx, experiment), baseline)

    def _runs_report(self, snapshot, baseline):
        known = set(snapshot.by_run)
        if baseline is not None and baseline not in known:
            raise errors.NotFoundError(
                f"No run {baseline!r} with tb-devicecost data to use as the "
                f"baseline. Runs with data: {sorted(known)[:20]}"
            )
        try:
            report = words.build_report(
                snapshot.records, baseline=baseline, unread=snapshot.unread
            )
        except ValueError as error:  # e.g. a baseline whose data was skipped
            raise errors.InvalidArgumentError(str(error))
        for run in report["runs"]:
            run["profile"] = self._profile_links(snapshot, run["run"])
        report["profile_only"] = [run for run in snapshot.profile_runs if run not in known]
        return report

    def _with_process_series(self, ctx, experiment, records, scan):
        """`records`, with the per-step series of the runs of multi-process
        jobs read (only theirs): the report's `workers` lines their steps up."""
        names = run_records.without_series(records)
        if not names:
            return records
        again, _ = reader.read_logdir(
            self._data_provider, scan, ctx, experiment_id=experiment, runs=names
        )
        by_name = {record.run: record for record in again}
        return [by_name.get(record.run, record) for record in records]

    def _job(self, snapshot, record):
        """`(group, job, finding)`: the workers group of the job `record`'s
        process belongs to, the job's name, and its `straggler` finding
        when `record` is the straggler (said once per job, as the report
        attaches it); `None` for each when there is no job."""
        group = snapshot.job_group(record)
        if not group:
            return None, None, None
        finding = group["finding"]
        straggler = finding is not None and group["straggler"] == record.run
        return group, group["group"], finding if straggler else None

    def run_impl(self, ctx, experiment, run):
        snapshot = self._snapshot(ctx, experiment)
        snapshot.require(run)
        # The one read a request makes: this run's per-step series.
        records, _ = reader.read_logdir(
            self._data_provider, snapshot.scan, ctx, experiment_id=experiment,
            runs=[run], series_points=reader.DEFAULT_SERIES_POINTS,
        )
        [record] = [record for record in records if record.run == run] or [snapshot.by_run[run]]
        result, reason = words.analyze_record(record)
        if reason:
            raise errors.NotFoundError(f"Run {run!r} is not reported: {reason}")
        # A `try_fixes` baseline: what its findings' changes measured.
        result = words.with_fixes_tried(result, record, snapshot.records)
        group, result["job"], finding = self._job(snapshot, record)
        if finding is not None:
            result["findings"] = list(result["findings"]) + [words.render(finding)]
        if group:
            # A process mostly waiting for the straggler, as the report says.
            words.mark_waiting([words.render(group)], [result])
        result["profile"] = self._profile_links(snapshot, run)
        for window in result["trace_windows"]:
            window["url"] = self._capture_link(window)
        result["series"] = {
            key: [None if value != value else value for value in values.tolist()]
            for key, values in record.series.items()
        }
        result["info"] = words.render(record.info)
        return words.render(result)

    def compare_impl(self, ctx, experiment, runs, baseline=None):
        if baseline is not None and baseline not in runs:
            raise errors.InvalidArgumentError(
                f"The baseline {baseline!r} must be one of the compared runs {runs}."
            )
        snapshot = self._snapshot(ctx, experiment)
        results = [snapshot.require(run) for run in sorted(runs)]
        # The same model's other runs (other batch sizes) explain the
        # comparison as they do in the report, so both say the same.
        context = [
            result
            for result, _ in (snapshot.analysed(name) for name in snapshot.by_run)
            if result is not None
        ]
        comparison = words.compare_runs(results, baseline=baseline, context=context) or {}
        return words.render({
            "baseline": comparison.get("baseline"),
            "baseline_reason": comparison.get("baseline_reason"),
            "runs": results,
            "rows": comparison.get("rows", []),
        })

    def _profile_links(self, snapshot, run):
        return [
            dict(capture, url=_profile_url(run, capture["capture"], capture["host"]))
            for capture in snapshot.captures(run)
        ]

    def _capture_link(self, window):
        """The Profile tab's URL for a trace window's capture, or `None`.

        The window names the directory its trace went to (ours, or the Keras
        TensorBoard callback's); only one inside the logdir has a run name.
        """
        directory = window.pop("profile_run_dir", None)
        if not (directory and window.get("capture") and window.get("host") and self._logdir):
            return None
        root = os.path.realpath(self._logdir)
        directory = os.path.realpath(directory)
        if os.path.commonpath([root, directory]) != root or directory == root:
            return None
        run = os.path.relpath(directory, root).replace(os.sep, "/")
        return _profile_url(run, window["capture"], window["host"])


class _Snapshot:
    """One read of the log directory, which every route serves from until
    something in it changes (TensorBoard's core plugins likewise make one
    provider read per request's `*_impl`).

    Attributes:
        key: Its fingerprint (`DeviceCostPlugin._snapshot`), or `None`.
        scan: The local scan it was read with (`reader.scan_if_local`).
        records: Every run's `RunRecord`, without per-step series except
            for the processes of multi-process jobs (`workers` aligns them).
        unread: What could not be read, with why (`reader.read_logdir`).
        by_run: `records` by run name.
        profile_runs: The runs with profiler captures.
        bodies: The `runs` route's gzipped JSON, by baseline.
    """

    def __init__(self, plugin, ctx, experiment, key, scan, captures=None):
        self.key = key
        self.scan = scan
        records, self.unread = reader.read_logdir(
            plugin._data_provider, scan, ctx, experiment_id=experiment, series_points=0
        )
        self.records = plugin._with_process_series(ctx, experiment, records, scan)
        self.by_run = {record.run: record for record in self.records}
        self._reasons = {item["run"]: item["reason"] for item in self.unread}
        if captures is None:
            captures = _profile_captures(plugin._logdir)
        self._captures = captures
        self.profile_runs = list(captures)
        self._analysed = {}
        self._jobs = {}
        self.bodies = {}

    def analysed(self, run):
        """`words.analyze_record` of the run's record, `(result, reason)`,
        computed once."""
        if run not in self._analysed:
            self._analysed[run] = words.analyze_record(self.by_run[run])
        return self._analysed[run]

    def require(self, run):
        """The run's analysed result; a 404 saying why where the report
        would skip it."""
        if run not in self.by_run:
            why = f": {self._reasons[run]}" if run in self._reasons else ""
            raise errors.NotFoundError(f"No tb-devicecost data for run {run!r}{why}")
        result, reason = self.analysed(run)
        if reason:
            raise errors.NotFoundError(f"Run {run!r} is not reported: {reason}")
        # Each caller adds its own keys: a copy, not the cached result.
        return dict(result)

    def captures(self, run):
        """The run's profiler captures, as listed when the snapshot was read."""
        return self._captures.get(run, [])

    def job_group(self, record):
        """The `words.worker_groups` group of the job `record`'s process
        belongs to, lined up once per job (a job's every process is asked
        for, one request each); `None` when there is none."""
        process = run_records.process_of(record)
        if process is None:
            return None
        if process[0] not in self._jobs:
            self._jobs[process[0]] = self._line_up(run_records.same_group(self.records, record))
        return self._jobs[process[0]]

    def _line_up(self, members):
        analysed = {member.run: self.analysed(member.run)[0] for member in members}
        # Only the analysed members are lined up (as in the report), so
        # reading them again cannot fail.
        groups = words.worker_groups(
            [run_records.read_run(member) for member in members if analysed[member.run]],
            [run for run in analysed.values() if run],
            # A process not reported is named with its reason, as in the report.
            [(member.run, member.info, self.analysed(member.run)[1])
             for member in members if not analysed[member.run]],
        )
        return groups[0] if groups else None


def _profile_captures(logdir):
    """`{run: [capture]}` of the runs holding profiler captures, names that
    are not UTF-8 escaped as the scan names runs (`reader.path_text`)."""
    return {
        reader.path_text(run): [
            {key: reader.path_text(value) for key, value in capture.items()}
            for capture in reader.list_profile_captures(logdir, run)
        ]
        for run in reader.find_profile_runs(logdir)
    }


def _holds_our_files(scan):
    """Whether a local scan found an event file tb-devicecost wrote."""
    return scan is not None and any(
        path.endswith(metadata.EVENT_FILE_SUFFIX) for paths in scan.runs.values() for path in paths
    )


def _profile_url(run, capture, host):
    """The Profile tab's Overview page on one capture of `run`.

    Relative to the plugin's base (`<root>/data/plugin/devicecost/`), so it
    also works when TensorBoard runs under a path prefix.
    """
    query = urllib.parse.urlencode(
        {"run": f"{run}/{capture}", "tool": "overview_page", "host": host}
    )
    return f"../../../?{query}#profile"


class _MethodNotAllowedError(errors.PublicError):
    """405, answered as TensorBoard answers its own errors: `text/plain`,
    one sentence, with the `Allow` header (werkzeug's own is HTML)."""

    http_code = 405

    def __init__(self, method):
        super().__init__(
            f"Method {method[:20]} is not allowed: the tab's routes only read "
            f"({', '.join(_METHODS)})."
        )
        self.headers.append(("Allow", ", ".join(_METHODS)))


def _check_method(request):
    """A method other than GET or HEAD: 405, with the methods allowed."""
    if request.method not in _METHODS:
        raise _MethodNotAllowedError(request.method)


def _optional_run_parameter(request, name):
    value = request.args.get(name)
    if value is None or value == "":
        return None
    _check_run_name(value, name)
    return value


def _check_run_name(value, name):
    if len(value) > _MAX_RUN_NAME or "\x00" in value:
        raise errors.InvalidArgumentError(
            f"`{name}` must be a run name of at most {_MAX_RUN_NAME} "
            f"characters without NUL bytes. Received {len(value)} characters."
        )


def _static_file(request_path):
    """The file of the tab (under `_STATIC_DIR`) for a request path, or `None`.

    Refuses anything that would leave that folder, encoded or not.
    """
    prefix = "/data/plugin/%s/static/" % metadata.PLUGIN_NAME
    index = request_path.find(prefix)
    if index < 0:
        return None
    relative = urllib.parse.unquote(request_path[index + len(prefix):])
    if not relative or "\\" in relative or "\x00" in relative:
        return None
    normalized = posixpath.normpath(relative)
    if normalized.startswith(("..", "/")) or normalized == ".":
        return None
    path = os.path.realpath(os.path.join(_STATIC_DIR, *normalized.split("/")))
    if os.path.commonpath([path, _STATIC_DIR]) != _STATIC_DIR:
        return None
    return path if os.path.isfile(path) else None
