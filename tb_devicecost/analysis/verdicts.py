"""The verdict and findings of a run: the rules `docs/VERDICTS.md` documents.

`judge` applies the thresholds of `thresholds.py` to a run object (the
JSON-ready dict that `analyze_run` builds): one verdict, the bottleneck that
sets the pace, and findings, each with an id, a severity, its words
(`finding_text.py`: a headline, the message quoting the run's own numbers,
a fix) and what the fix would buy (`estimates.py`). This module decides
which findings a run gets and how severe they are; it writes no sentence.
"""

from tb_devicecost.analysis import estimates
from tb_devicecost.analysis import finding_text
from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.thresholds import BORDERLINE
from tb_devicecost.analysis.thresholds import EPSILON
from tb_devicecost.analysis.thresholds import HOST_HIGH
from tb_devicecost.analysis.thresholds import HOST_MODERATE
from tb_devicecost.analysis.thresholds import INPUT_HIGH
from tb_devicecost.analysis.thresholds import INPUT_MODERATE
from tb_devicecost.analysis.thresholds import LATENCY_DEVICE_BUSY
from tb_devicecost.analysis.thresholds import LATENCY_HIGH_BUSY
from tb_devicecost.analysis.thresholds import NO_FLOOR_MIN_P50_MS
from tb_devicecost.analysis.thresholds import RETRACING_MODERATE
from tb_devicecost.analysis.thresholds import SMALL_BATCH_SIZE
from tb_devicecost.analysis.thresholds import SMALL_BATCH_STEP_MS
from tb_devicecost.analysis.thresholds import STALLS_MODERATE
from tb_devicecost.analysis.thresholds import STALL_P90_FACTOR
from tb_devicecost.analysis.thresholds import WARMUP_DOMINATED
from tb_devicecost.analysis.thresholds import WARMUP_FINDING

SEVERITIES = ("high", "moderate", "info")
# In the order they are chosen (docs/VERDICTS.md, "Verdicts"); a process of a
# distributed job mostly waiting for another is `waiting_for_others`, which
# the job's analysis sets (`waiting`).
VERDICTS = (
    "waiting_for_others",
    "warmup_dominated",
    "input_bound",
    "host_overhead_bound",
    "latency_bound",
    "compute_bound",
)


def _severity(share, high, moderate):
    if share is None:
        return None
    if share >= high - EPSILON:
        return "high"
    if share >= moderate - EPSILON:
        return "moderate"
    return None


def borderline(share, high):
    """Whether `share` is within `BORDERLINE` (relative) of `high`."""
    return share is not None and abs(share - high) < BORDERLINE * high


def _finding(finding_id, severity, words, expected=None):
    """A finding: its id and severity, its words (`(headline, message,
    fix)` from `finding_text`) and what the fix buys (`expected`)."""
    headline, message, fix = words
    if expected is None:
        expected = estimates.not_estimated(finding_id)
    return {
        "id": finding_id,
        "severity": severity,
        "headline": headline,
        "message": message,
        "fix": fix,
        "expected": expected,
    }


def judge(run):
    """Returns (verdict, steady-state verdict, findings).

    The verdict names the dominant bottleneck: only a HIGH input or host
    share makes it `input_bound` or `host_overhead_bound` (the larger share
    when both are high); a moderate one is a finding beside the verdict.
    `warmup_dominated` replaces the steady-state verdict only in the
    verdict. The verdict's own finding comes first, the others by severity.

    Args:
        run: A run object of `analyze_run` before its `verdict`,
            `steady_verdict` and `findings` are set.
    """
    step = run["step_ms"]["mean"]
    if step is None or not run["steady_steps"]:
        findings = []
        if run["warmup_ms"] is not None:
            findings.append(_warmup_finding(run, "warmup_dominated", "high"))
        else:
            findings.append(_finding("no_steps", "info", finding_text.no_steps()))
        findings.extend(_run_findings(run))
        verdict = "warmup_dominated" if run["warmup_ms"] is not None else None
        return verdict, None, findings

    input_share = run["input_share"]
    host_share = run["shares"]["host_overhead"]
    input_severity = _severity(input_share, INPUT_HIGH, INPUT_MODERATE)
    host_severity = _severity(host_share, HOST_HIGH, HOST_MODERATE)
    # Near its threshold a share is a finding, never the verdict: the same
    # fit lands on either side from run to run.
    near = {
        "input_bound": borderline(input_share, INPUT_HIGH),
        "host_overhead_bound": borderline(host_share, HOST_HIGH),
    }
    if near["input_bound"] and input_severity == "high":
        input_severity = "moderate"
    if near["host_overhead_bound"] and host_severity == "high":
        host_severity = "moderate"
    host_p50, step_p50 = run["host_overhead_ms"]["p50"], run["step_ms"]["p50"]
    if (
        host_severity == "high"
        and host_p50 is not None
        and step_p50
        and host_p50 < HOST_MODERATE * step_p50
    ):
        # The typical step spends next to nothing outside its fetch and
        # compute: the share rests on a few long pauses (a collection, the
        # machine busy elsewhere), which is a finding, not the verdict.
        host_severity = "moderate"
    wait = run["data_wait_ms"]
    unjudged = None
    if input_severity and run["ready_fetch_ms"] is None and not run["fetch_in_graph"]:
        # No fetch floor: only a high share of long waits is evidence.
        long_waits = wait["p50"] is not None and wait["p50"] >= NO_FLOOR_MIN_P50_MS - EPSILON
        if input_severity != "high" or not long_waits:
            unjudged, input_severity = input_severity, None
    stalls = None
    if (
        input_severity
        and run["ready_fetch_ms"]
        and wait["p90"] is not None
        and (
            wait["p90"] <= STALL_P90_FACTOR * run["ready_fetch_ms"]
            or (
                run["input_share_without_longest_wait"] is not None
                and run["input_share_without_longest_wait"] < INPUT_MODERATE
            )
        )
    ):
        # Nine steps in ten got a ready batch, or the share rests on one
        # wait: a few long waits, not a slow pipeline.
        stalls, input_severity = input_severity, None
    busy = run["device_busy_fraction"]
    on_accelerator = is_accelerator(run["device"])

    candidates = []
    if input_severity == "high":
        candidates.append((input_share, "input_bound"))
    if host_severity == "high":
        candidates.append((host_share, "host_overhead_bound"))
    if candidates:
        steady_verdict = max(candidates)[1]
    elif on_accelerator and busy is not None and busy < LATENCY_DEVICE_BUSY:
        steady_verdict = "latency_bound"
    else:
        steady_verdict = "compute_bound"

    findings = {}
    if input_severity:
        findings["input_bound"] = _finding(
            "input_bound",
            input_severity,
            finding_text.input_bound(run, input_severity),
            estimates.input_estimate(run),
        )
    if unjudged:
        findings["no_fetch_floor"] = _finding(
            "no_fetch_floor", "info", finding_text.no_fetch_floor(run)
        )
    if stalls:
        findings["input_stalls"] = _finding(
            "input_stalls", "info", finding_text.input_stalls(run), estimates.input_estimate(run)
        )
    if host_severity:
        findings["host_overhead_bound"] = _finding(
            "host_overhead_bound",
            host_severity,
            finding_text.host_overhead_bound(run, host_severity),
            estimates.host_estimate(run),
        )
    if steady_verdict == "latency_bound":
        findings["latency_bound"] = _finding(
            "latency_bound",
            "high" if busy < LATENCY_HIGH_BUSY else "moderate",
            finding_text.latency_bound(run, input_severity),
            estimates.batch_estimate(run),
        )
    if steady_verdict == "compute_bound":
        findings["compute_bound"] = _finding(
            "compute_bound", "info", finding_text.compute_bound(run, input_severity, unjudged)
        )

    warmup_share = run["warmup_share_of_wall"]
    verdict = steady_verdict
    if warmup_share is not None and warmup_share >= WARMUP_DOMINATED - EPSILON:
        verdict = "warmup_dominated"
        findings["warmup_dominated"] = _warmup_finding(
            run, verdict, "high", steady_verdict
        )
    elif warmup_share is not None and warmup_share >= WARMUP_FINDING - EPSILON:
        findings["warmup"] = _warmup_finding(run, "warmup", "moderate")

    ordered = [findings.pop(verdict)] if verdict in findings else []
    rest = list(findings.values()) + _run_findings(run)
    rest.sort(key=lambda finding: SEVERITIES.index(finding["severity"]))
    return verdict, steady_verdict, ordered + rest


def _warmup_finding(run, finding_id, severity, steady_verdict=None):
    return _finding(
        finding_id,
        severity,
        finding_text.warmup(run, finding_id, steady_verdict),
        estimates.warmup_estimate(run),
    )


def _retrace_findings(run):
    """`retracing` only with a recorded retrace count; other spikes are `stalls`."""
    findings = []
    retraces = run["retraces"]
    count = retraces["count"]
    spikes = run["spikes"] or 0
    spike_steps = run["spike_steps"]
    if count:
        findings.append(
            _finding(
                "retracing",
                "moderate" if count >= RETRACING_MODERATE else "info",
                finding_text.retracing(run),
                estimates.spike_estimate(run, _retraced_spikes(run), "retraced steps"),
            )
        )
    unexplained, unexplained_steps = spikes, spike_steps
    if count:
        retraced = set(retraces["steps"])
        if retraced and spike_steps:
            unexplained_steps = [step for step in spike_steps if step not in retraced]
            unexplained = max(0, spikes - (len(spike_steps) - len(unexplained_steps)))
        else:
            unexplained = max(0, spikes - count)
            unexplained_steps = []
    if unexplained:
        findings.append(
            _finding(
                "stalls",
                "moderate" if unexplained >= STALLS_MODERATE else "info",
                finding_text.stalls(run, unexplained, unexplained_steps),
                estimates.spike_estimate(run, unexplained, "stalls"),
            )
        )
    return findings


def _retraced_spikes(run):
    """How many spikes the recorded retraces explain (`_retrace_findings`'
    rule: by step when both lists are known, else by count)."""
    retraced, spike_steps = set(run["retraces"]["steps"]), run["spike_steps"]
    if retraced and spike_steps:
        return len([step for step in spike_steps if step in retraced])
    return min(run["spikes"] or 0, run["retraces"]["count"] or 0)


def _run_findings(run):
    """Findings that are never the verdict."""
    findings = []
    if run["status"] in ("running", "interrupted"):
        findings.append(_finding("incomplete_run", "info", finding_text.incomplete_run(run)))
    if run["fetch_in_graph"]:
        findings.append(_finding("fetch_in_graph", "info", finding_text.fetch_in_graph(run)))
    findings.extend(_retrace_findings(run))
    placement = run["placement"]
    ops = placement["ops"]
    device = run["device"]
    if placement["accelerator_visible"] and ops and not is_accelerator(device):
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "high",
                finding_text.cpu_ops_off_accelerator(run),
            )
        )
    elif placement["cpu_ops_on_accelerator_run"]:
        findings.append(
            _finding(
                "cpu_ops_on_accelerator_run",
                "moderate",
                finding_text.cpu_ops_on_accelerator_run(run),
            )
        )
    if placement["cross_device_copies"]:
        findings.append(
            _finding(
                "cross_device_copies",
                "moderate" if is_accelerator(device) else "info",
                finding_text.cross_device_copies(run),
            )
        )
    batch = run["batch_size"]
    median = run["step_ms"]["p50"]
    if batch and median is not None and batch <= SMALL_BATCH_SIZE and median < SMALL_BATCH_STEP_MS:
        findings.append(
            _finding(
                "small_batch",
                "moderate" if is_accelerator(device) else "info",
                finding_text.small_batch(run),
                estimates.batch_estimate(run),
            )
        )
    return findings

