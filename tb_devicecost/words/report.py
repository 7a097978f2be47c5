"""The run object and the report: what `tb-devicecost report --json` prints.

`analyze_run` turns one run's `RunData` into the run object (docs/CLI.md,
"Run object"): per-step numbers, shares, the fit's wall time, the trace
windows beside our own numbers, and the verdict with its findings.
`worker_groups` writes each distributed job (`workers.Job`) as the
report's group object, with its `straggler` finding; `attach_findings` and
`mark_waiting` set the job's findings on its runs' objects.
`build_report` analyses every run, compares them and says what was skipped.
The analysis decides (`tb_devicecost.analysis`: typed results, and a
`reasons.Reason` where a sentence goes); this module writes its results as
the report's documents with their words (`words.render`). Everything
returned is plain JSON-ready data: no NaN, `None` where a number is
unknown.
"""

from tb_devicecost.analysis import compare
from tb_devicecost.analysis import estimates
from tb_devicecost.analysis import interventions
from tb_devicecost.analysis import names
from tb_devicecost.analysis import predictions as predictions_module
from tb_devicecost.analysis import process_steps
from tb_devicecost.analysis import record as record_module
from tb_devicecost.analysis import sweeps as sweeps_module
from tb_devicecost.analysis import trace_windows
from tb_devicecost.analysis import tried
from tb_devicecost.analysis import verdicts
from tb_devicecost.analysis import waiting
from tb_devicecost.analysis import workers
from tb_devicecost.analysis.guards import record_field
from tb_devicecost.analysis.run_figures import run_figures
from tb_devicecost.words import findings
from tb_devicecost.words import jobs
from tb_devicecost.words import measuring
from tb_devicecost.words.render import render
from tb_devicecost.words.render import say

# The schema of the report JSON (`build_report`'s `"schema"`), bumped when a
# reader of the report would misread it. Not the event files' format
# version, which is `metadata.SCHEMA_VERSION`.
REPORT_SCHEMA = 1

def analyze_run(record):
    """Numbers, verdict and findings of one run.

    Args:
        record: A `reader.RunRecord`, or a dict with the same fields (`run`,
            `aggregate`, `info`, `placement`, `trace`, `series`,
            `problems`).

    Returns:
        The run object of `tb-devicecost report --json` (`docs/CLI.md`):
        JSON-ready, `None` where a number is unknown. Times are per training
        step in milliseconds, steady state (the warm-up step of each fit
        excluded) unless named `warmup`.
    """
    return run_object(record_module.read_run(record))


def run_object(run, input_free_gain=None):
    """The run object of one `RunData` (`analyze_run`): its figures
    (`run_figures`), its verdict (`verdicts.judge`) and each finding's
    words (`findings.words`) and estimate (`estimates.expected`);
    `input_free_gain`: what `try_fixes`'s replay measured (`verdicts.judge`)."""
    figures = run_figures(run)
    numbers = run.numbers
    wall = numbers.wall
    wait = figures.data_wait
    placement = run.placement
    # What makes two runs the same model (`RunData.model`), so a comparison
    # finds the same model's sweep among other runs.
    model = run.model
    result = {
        "run": run.run,
        "status": numbers.status,
        # A short validation or evaluation run: judged by its typical step,
        # never the overview's run to look at (docs/CLI.md).
        "few_steps": verdicts.short_evaluation(run, figures),
        # How the newest fit ended: `null` for data recorded before fits
        # had an identity (docs/CLI.md).
        "fit_end": run.fit_end.as_dict() if run.fit_end is not None else None,
        "source": numbers.source,
        "steps": figures.steps,
        "steady_steps": figures.steady_steps,
        "sessions": numbers.sessions,
        "steps_per_record": run.steps_per_record,
        "device": placement.device,
        "device_source": placement.device_source,
        "devices_used": placement.devices_used,
        "backend": run.backend,
        "parameters": model.parameters if model else None,
        "dtype_policy": model.dtype_policy if model else None,
        "batch_size": run.batch_size,
        "batch_sizes": {
            "min": numbers.batch_min,
            "max": numbers.batch_max,
            "distinct": numbers.batch_distinct,
        },
        "samples_per_step": figures.samples_per_step,
        "step_ms": figures.step.percentiles(),
        "data_wait_ms": wait.percentiles(),
        "fetch_ms": figures.fetch.percentiles() if figures.fetch is not None else None,
        "compute_ms": figures.compute.percentiles(),
        "host_overhead_ms": figures.host_overhead.percentiles(),
        "shares": figures.shares,
        "fetch_floor_ms": run.fetch_floor_ms,
        "ready_fetch_ms": figures.ready_fetch_ms,
        "starved_data_wait_ms": figures.starved_data_wait_ms,
        # The part of the data wait's share that is handing over ready
        # batches: a bar shades it apart from waiting (docs/READING.md).
        "handover_share": figures.handover_share,
        "input_share": figures.input_share,
        "input_share_without_longest_wait": figures.input_share_without_longest_wait,
        "fetch_in_graph": run.fetch_in_graph,
        "pace": figures.pace.as_dict() if figures.pace is not None else None,
        "warmup_ms": numbers.warmup_ms,
        "warmups": numbers.warmup_count,
        "warmup_steps": numbers.warmup_steps,
        "warmup_share_of_wall": figures.warmup_share,
        "wall_ms": wall.as_dict(),
        "wall_shares": figures.wall_shares,
        "spikes": numbers.spikes,
        "spike_steps": numbers.spike_steps,
        "retraces": numbers.retraces.as_dict(),
        "samples_per_s": figures.samples_per_s,
        "device_busy_fraction": run.device_busy_fraction,
        "device_compute_ms": figures.device_compute_ms,
        # What our own measuring took of a step (docs/CLI.md), in words too.
        "self_us_per_step": figures.self_us_per_step,
        "self_share": figures.self_share,
        "worker_self_us_per_step": figures.worker_self_us_per_step,
        "between_steps_self_share": figures.between_steps_self_share,
        "self_cost_text": measuring.self_cost_line(
            figures.self_us_per_step, figures.self_share,
            fetches_each_batch=figures.fetched_each_batch,
            between_steps_share=figures.between_steps_self_share),
        # Compute, communication (collectives), memory copies and idle, as
        # shares of the traced steps, and per device (docs/CLI.md).
        "device_split": run.device_split,
        "device_figures": run.device_figures,
        # Why the default device-busy window was not traced (too short a run).
        "device_busy_window": run.device_busy_window,
        "trace_windows": [_trace_window(window) for window in run.trace_windows],
        "placement": placement.as_dict(),
        "jit_compile": run.jit_compile,
        "input_pipeline": run.input_pipeline,
        "distribution": run.distribution.as_dict() if run.distribution else None,
        # The distributed job it is one process of (`attach_findings`).
        "job": None,
        "problems": run.problems,
        "sweep": run.sweep.as_dict() if run.sweep is not None else None,
    }
    verdict = verdicts.judge(run, figures, input_free_gain)
    result["verdict"] = verdict.verdict
    result["steady_verdict"] = verdict.steady_verdict
    # Set by the job's analysis on a process `waiting_for_others` (`waiting`).
    result["own_verdict"] = None
    retraced = verdicts.retraced_spikes(run)
    result["findings"] = [
        finding_object(finding, run, figures, retraced) for finding in verdict.findings
    ]
    result["borderline"] = list(verdict.borderline)
    result["verdict_uncertain"] = verdict.uncertain
    return render(result)


def with_fixes_tried(result, record, records):
    """The run object `result` of `record` as the report has it where it is
    a `try_fixes` baseline: judged with its `input_free` replay and its
    findings annotated with what their changes measured (`tried`), from
    its session's runs among `records`; any other run unchanged (the
    plugin's `run` route)."""
    data = record_module.read_run(record)
    if data.tried is None or data.tried.change != "baseline":
        return result
    key = tried.session_key(data.run)
    prefix = (key + "/" if key else "") + "tried/"
    run_data = [data] + [
        record_module.read_run(other) for other in records
        if names.run_name(other) != data.run and names.run_name(other).startswith(prefix)
    ]
    session = tried.find_sessions(run_data).get(key)
    if session is None or session["baseline"] is not data:
        return result
    gain = tried.input_free_gain(session)
    if gain is not None:
        result = dict(result, **run_object(data, input_free_gain=gain))
    tried.fixes_tried(run_data, [result])
    return render(result)


def finding_object(finding, run, figures, retraced_spikes=0):
    """A finding of the run object (docs/CLI.md): a `verdicts.Finding`'s id
    and severity, its words (`findings.words`: headline, message, fix)
    and what its fix would buy (`estimates.expected`)."""
    headline, message, fix = findings.words(finding, run, figures)
    if finding.input_free_gain is not None:
        message += " " + say(tried.ceiling_evidence(finding.input_free_gain))
    return {
        "id": finding.id,
        "severity": finding.severity,
        "headline": headline,
        "message": message,
        "fix": fix,
        # What the fix changes, one word (`interventions.change_of`).
        "change": interventions.change_of(finding.id, run),
        "expected": estimates.expected(finding, run, figures, retraced_spikes),
    }


def _trace_window(window):
    """A trace window of the run object, our data wait set beside the trace's
    (`trace_windows.data_wait_agreement`) in words."""
    agreement = trace_windows.data_wait_agreement(window)
    if agreement is not None:
        agreement["message"] = measuring.data_wait_agreement(**agreement)
    return {
        "start_step": window.start_step,
        "stop_step": window.stop_step,
        "source": window.source,
        "purpose": window.purpose,
        "trace_deleted": window.trace_deleted,
        "capture": window.capture,
        "host": window.host,
        "profile_run_dir": window.profile_run_dir,
        "trace_bytes": window.trace_bytes,
        "error": window.error,
        "has_device_plane": window.has_device_plane,
        "split": window.split,
        "devices": window.devices,
        "summary": window.summary,
        "ours": window.ours,
        "steps": window.steps,
        "data_wait_agreement": agreement,
    }


def _spread(spread):
    """A `workers.Spread` as the group object's `{p50, p90, mean}`."""
    return {"p50": spread.p50, "p90": spread.p90, "mean": spread.mean}


def _process_object(entry, run):
    """A process's entry in its group's `runs`: a `workers.ProcessEntry`
    beside its run object's verdict and figures."""
    return {
        "run": entry.run,
        "process_index": entry.process_index,
        "verdict": run.get("verdict"),
        "steady_verdict": run.get("steady_verdict"),
        "step_ms": run.get("step_ms"),
        "shares": run.get("shares"),
        "device": run.get("device"),
        "device_busy_fraction": run.get("device_busy_fraction"),
        "distribution": run.get("distribution"),
        "samples_per_s": run.get("samples_per_s"),
        "wait_ms": _spread(entry.wait_ms),
        "wait_share": entry.wait_share,
        "late_steps": entry.late_steps,
        "lost_share": entry.lost_share,
    }


def straggler_finding(job, straggler_run):
    """The `straggler` finding (docs/VERDICTS.md) of a `workers.Job` with a
    straggler: who, how much, why (`jobs.straggler`), the fix and what
    it would buy (`estimates.straggler_estimate`). `straggler_run` is the
    straggler's run object."""
    late = job.straggler
    own_fix = next(
        (finding.get("fix") for finding in straggler_run.get("findings") or ()
         if finding.get("id") == late.cause),
        None,
    )
    headline, message, fix = jobs.straggler(
        job, straggler_run.get("shares"),
        straggler_run.get("steady_verdict") or straggler_run.get("verdict"), own_fix)
    return {
        "id": "straggler",
        "severity": late.severity,
        "headline": headline,
        "message": message,
        "fix": fix,
        "expected": estimates.straggler_estimate(late),
        "process_index": late.process_index,
        "run": late.run,
        "share": late.share,
        "cause": late.cause,
        "skew_ms": {"p50": job.skew_ms.p50, "p90": job.skew_ms.p90},
    }


def group_object(job, runs):
    """The report's `"workers"` entry of a `workers.Job` (docs/CLI.md).

    Args:
        job: The `workers.Job`.
        runs: `{run name: run object}` of the analysed runs.
    """
    late = job.straggler
    return {
        "group": job.group,
        "process_count": job.process_count,
        "missing_processes": [list(item) for item in job.missing_processes],
        "missing_count": job.missing_count,
        "unaligned": [
            {"run": item.run, "process_index": item.process_index,
             "claimed_index": item.claimed_index, "reason": item.reason}
            for item in job.unaligned
        ],
        "problems": list(job.problems),
        "aligned_steps": job.aligned_steps,
        "runs": [_process_object(entry, runs.get(entry.run) or {}) for entry in job.processes],
        "straggler": late.run if late else None,
        "straggler_index": late.process_index if late else None,
        "straggler_share": late.share if late else None,
        "cause": late.cause if late else None,
        "skew_ms": _spread(job.skew_ms),
        "start_spread_ms": _spread(job.start_spread_ms),
        "end_spread_ms": _spread(job.end_spread_ms),
        "same_host": job.same_host,
        "device_busy_spread": job.device_busy_spread,
        "series": {
            "step": list(job.series.step),
            "skew_ms": list(job.series.skew_ms),
            "late": list(job.series.late),
        },
        "finding": straggler_finding(job, runs.get(late.run) or {}) if late else None,
    }


def worker_groups(run_data, runs, skipped=()):
    """Every distributed job among `run_data` (`workers.build_workers`) as
    the report's `"workers"`: a group object each (`group_object`), by
    group name.

    Args:
        run_data: `RunData`s of the runs (`record.read_run`).
        runs: Their run objects (`run_object`).
        skipped: `[(run name, run info, reason)]` of runs not analysed: a
            job's process among them is named with the reason, never "not
            recorded".
    """
    by_name = {run["run"]: run for run in runs}
    claims = [(name, process_steps.read_claim(name, info), reason)
              for name, info, reason in skipped]
    return render([group_object(job, by_name)
                   for job in workers.build_workers(run_data, runs, claims)])


def attach_findings(groups, runs):
    """Adds each group's `straggler` finding to the findings of the
    straggler's run only: said once per job (a job of 200 processes would
    otherwise repeat it 200 times); every other process's run names its
    job in `job` (the group shows who holds it back)."""
    by_name = {run["run"]: run for run in runs}
    for group in groups:
        for entry in group["runs"]:
            run = by_name.get(entry["run"])
            if run is not None:
                run["job"] = group["group"]
        finding = group["finding"]
        run = by_name.get(group["straggler"]) if finding is not None else None
        if run is not None:
            run["findings"] = list(run.get("findings") or []) + [finding]


def waiting_finding(found, group):
    """The `waiting_for_others` finding of a `waiting.Waiting` in `group`
    (a group object): its words (`jobs.waiting_for_others`) and what
    the straggler's fix would buy it."""
    headline, message, fix = jobs.waiting_for_others(found)
    return {
        "id": waiting.VERDICT,
        "severity": waiting.SEVERITY,
        "headline": headline,
        "message": message,
        "fix": fix,
        "expected": estimates.waiting_estimate((group.get("finding") or {}).get("expected")),
        "process_index": found.process_index,
        "waits_for": found.waits_for,
        "straggler_run": found.straggler_run,
        "wait_share": found.wait_share,
        "wait_ms": {"p50": found.wait_p50_ms, "p90": found.wait_p90_ms},
        "communication_fraction": found.communication_fraction,
    }


def _set_waiting(run, finding):
    """Makes `finding` the run's verdict: its own verdict is kept as
    `own_verdict`, and the findings that advise a cheaper step go."""
    run["own_verdict"] = run.get("steady_verdict")
    if run.get("verdict") == run.get("steady_verdict"):
        run["verdict"] = waiting.VERDICT
    run["steady_verdict"] = waiting.VERDICT
    kept = [
        item for item in run.get("findings") or ()
        if isinstance(item, dict)
        and item.get("id") not in waiting.COMPUTE_ADVICE + (waiting.VERDICT,)
    ]
    run["findings"] = [finding] + kept


def mark_waiting(groups, runs):
    """Each process's device split beside its waits, and the
    `waiting_for_others` verdict of a process mostly waiting for the
    straggler (`waiting.find_waiting`), set on its run object and its
    entry in the group object."""
    by_name = {run["run"]: run for run in runs}
    for group in groups:
        for entry in group["runs"]:
            run = by_name.get(entry["run"]) or {}
            entry["device_split"] = run.get("device_split")
            entry["device_figures"] = run.get("device_figures") or []
            found = waiting.find_waiting(entry, group, run)
            if found is None:
                continue
            finding = waiting_finding(found, group)
            entry["waiting"] = finding
            entry["own_verdict"] = entry["steady_verdict"]
            entry["steady_verdict"] = waiting.VERDICT
            if run:
                _set_waiting(run, finding)
                entry["verdict"] = run["verdict"]


# What a malformed document can make the analysis raise: it is caught per
# run, so one bad run never takes the report (or a route) down.
ANALYSIS_ERRORS = (
    TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError,
    RecursionError,
)


def analyze_record(record):
    """One run as the report takes it: `(run object, None)` or `(None, reason)`.

    The one rule, used by `build_report` and by the plugin's `run` and
    `compare` routes, for which runs are reported and why the others are
    skipped: a document of a newer schema with no readable aggregate, data
    the analysis cannot take, or no recorded step.
    """
    _, result, reason = _analyzed(record)
    return result, reason


def _analyzed(record):
    """`(RunData, run object, None)`, or `(None, None, reason)` (`analyze_record`)."""
    reason = record_module.skip_reason(record)
    if reason:
        return None, None, render(reason)
    try:
        run = record_module.read_run(record)
        result = run_object(run)
    except ANALYSIS_ERRORS as error:
        # One malformed run must not take the whole report down.
        detail = " ".join(str(error).split())[:200]
        return None, None, (
            f"Its data could not be analysed ({type(error).__name__}: {detail})."
        )
    if result["source"] is None or (
        not result["steady_steps"] and result["warmup_ms"] is None
    ):
        problems = result["problems"]
        if problems:
            return None, None, "; ".join(problems)
        if result["fit_end"] is not None:
            # Data with a fit identity: the fit began, no step reached disk.
            return None, None, (
                "It holds a fit's run info but no recorded step: the fit is in "
                "its first second, or its process ended (killed, a full disk) "
                "before writing one."
            )
        return None, None, (
            "It holds tb-devicecost documents but no recorded step yet "
            "(the fit may still be in its first epoch)."
        )
    return run, result, None


def build_report(records, baseline=None, unread=None):
    """The whole report: every run analysed, compared, and what was skipped.

    Args:
        records: `reader.RunRecord`s (or dicts with the same fields).
        baseline: Run name for the comparison (see `compare_runs`).
        unread: What the reader could not read at all, as `{"run",
            "reason"}` items (`reader.LogdirScan.unread`): listed as
            skipped too.

    Returns:
        `{"schema": REPORT_SCHEMA, "runs": [...], "comparison": {...} or
        None, "skipped": [{"run": name, "reason": text}]}`. Runs with
        nothing to analyse (no steps, a newer schema, unreadable documents)
        are skipped with the reason.

    Raises:
        ValueError: when `baseline` names no analysed run.
    """
    runs, run_data, skipped, not_analysed = [], [], [], []
    for record in records:
        data, result, reason = _analyzed(record)
        if reason:
            skipped.append({"run": names.run_name(record), "reason": reason})
            not_analysed.append((names.run_name(record),
                                 record_field(record, "info", {}), reason))
        else:
            runs.append(result)
            run_data.append(data)
    # A baseline of `try_fixes` whose `input_free` replay gained under 10%
    # is judged again with that evidence (`verdicts.judge`).
    for key, session in tried.find_sessions(run_data).items():
        gain = tried.input_free_gain(session)
        index = next((i for i, data in enumerate(run_data) if data is session["baseline"]), None)
        if gain is not None and index is not None:
            runs[index] = run_object(session["baseline"], input_free_gain=gain)
    fixes = tried.fixes_tried(run_data, runs)
    # The processes of a distributed fit side by side; the straggler's
    # finding joins each of its processes' findings, and a process mostly
    # waiting for it is `waiting_for_others`.
    groups = worker_groups(run_data, runs, not_analysed)
    attach_findings(groups, runs)
    mark_waiting(groups, runs)
    skipped.extend(
        {"run": str(item["run"]), "reason": str(item["reason"])} for item in unread or ()
    )
    skipped.sort(key=lambda item: item["run"])
    if baseline is not None and baseline not in {run["run"] for run in runs}:
        known = ", ".join(run["run"] for run in runs) or "none"
        skipped_names = {item["run"]: item["reason"] for item in skipped}
        why = (
            f" It was skipped: {skipped_names[baseline]}"
            if baseline in skipped_names
            else ""
        )
        raise ValueError(
            f"Unknown baseline run {baseline!r}; the runs are: {known}.{why}"
        )
    sweeps = render(sweeps_module.find_sweeps(runs))
    return render({
        "schema": REPORT_SCHEMA,
        "runs": runs,
        "comparison": render(compare.compare_runs(runs, baseline)),
        "sweeps": sweeps,
        "workers": render(groups),
        # Each finding's predicted gain beside what a fixed counterpart of
        # its run achieved (`predictions`).
        "predictions": render(predictions_module.check_predictions(runs, run_data, sweeps)),
        # What `try_fixes` measured of each change (`tried`).
        "fixes_tried": render(fixes),
        "skipped": skipped,
    })


def compare_runs(results, baseline=None, context=None):
    """`compare.compare_runs` with its explanations said (the plugin's
    `compare` route; the report compares in `build_report`)."""
    return render(compare.compare_runs(results, baseline=baseline, context=context))
