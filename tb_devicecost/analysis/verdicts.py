"""The verdict and findings of a run: the rules `docs/VERDICTS.md` documents.

`judge` applies the thresholds of `thresholds.py` to a `RunData` and its
figures (`run_figures.py`) and returns a `Verdict`: the verdict, the
bottleneck that sets the pace, and the findings (`Finding`), each with an
id, a severity and the numbers its rule decided on. This module decides
which findings a run gets and how severe they are; it writes no sentence:
each finding's words are `tb_devicecost.words.findings`'s
(`findings.words`), what its fix would buy `estimates.py`'s
(`estimates.expected`), and the report (`words/report.py`) sets them
beside it.
"""

import dataclasses

from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.analysis.names import role
from tb_devicecost.analysis.run_figures import run_figures
from tb_devicecost.analysis.thresholds import BORDERLINE
from tb_devicecost.analysis.thresholds import EPSILON
from tb_devicecost.analysis.thresholds import FEW_STEPS_MEAN_FACTOR
from tb_devicecost.analysis.thresholds import FEW_STEPS_TO_JUDGE
from tb_devicecost.analysis.thresholds import HOST_HIGH
from tb_devicecost.analysis.thresholds import HOST_MODERATE
from tb_devicecost.analysis.thresholds import INPUT_FREE_MIN_GAIN
from tb_devicecost.analysis.thresholds import INPUT_HIGH
from tb_devicecost.analysis.thresholds import INPUT_MODERATE
from tb_devicecost.analysis.thresholds import LATENCY_DEVICE_BUSY
from tb_devicecost.analysis.thresholds import LATENCY_HIGH_BUSY
from tb_devicecost.analysis.thresholds import MEASURING_SHARE_MAX
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


@dataclasses.dataclass(frozen=True)
class Finding:
    """One finding of a run, as the rules decided it (docs/VERDICTS.md).

    `share` is the figure the rule judged, where one did (the input share
    of `input_bound`, `input_stalls` and `no_fetch_floor`, the host share,
    the device's busy share of `latency_bound`, the compute share, the
    warm-up's share of the fit); `count` the events it counts (retraces,
    spikes, copies, ops off the accelerator) and `steps` at which steps,
    when known. The rest is what the rules decided beside it: a moderate
    input share (`input_severity`) or one left unjudged without a fetch
    floor (`unjudged`) next to the verdict's finding, and the steady-state
    verdict under `warmup_dominated`. `limits` are the thresholds the rule
    judged against, `((name, value), ...)`, so that its words quote them
    (`tb_devicecost.words` imports no threshold).
    """

    id: str
    severity: str
    share: float = None
    count: int = None
    steps: tuple = ()
    input_severity: str = None
    unjudged: str = None
    steady_verdict: str = None
    # What `input_free` measured when it kept the input from the verdict.
    input_free_gain: float = None
    limits: tuple = ()

    def limit(self, name):
        """The threshold `name` of `limits`."""
        return dict(self.limits)[name]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A run's verdict (`VERDICTS`, `None` with nothing recorded), its
    steady-state verdict (`None` without steady steps), its findings (the
    verdict's own first, the others by severity) and the ids of those of
    its input and host findings whose share is within `BORDERLINE` of
    their high threshold (`borderline`)."""

    verdict: str
    steady_verdict: str
    findings: tuple
    borderline: tuple = ()

    def finding(self, finding_id):
        """The finding `finding_id`, or `None`."""
        return next((item for item in self.findings if item.id == finding_id), None)

    @property
    def uncertain(self):
        """Whether our own measuring took so much of a step
        (`measuring_cost`) that the verdict is uncertain."""
        return self.finding("measuring_cost") is not None


def judge(run, figures=None, input_free_gain=None):
    """A run's `Verdict`: its verdict, steady-state verdict and findings.

    The verdict names the dominant bottleneck: only a HIGH input or host
    share makes it `input_bound` or `host_overhead_bound` (the larger share
    when both are high); a moderate one is a finding beside the verdict.
    `warmup_dominated` replaces the steady-state verdict only in the
    verdict. The verdict's own finding comes first, the others by severity.

    Args:
        run: A `RunData` (`record.read_run`).
        figures: Its `RunFigures`. Defaults to `run_figures(run)`.
        input_free_gain: What `try_fixes`'s `input_free` replay measured
            (the same model on batches already cached), or `None`: under
            `INPUT_FREE_MIN_GAIN` the input is never the verdict.
    """
    figures = figures if figures is not None else run_figures(run)
    numbers = run.numbers
    step_ms = figures.step.mean
    if step_ms is None or not figures.steady_steps:
        findings = []
        if numbers.warmup_ms is not None:
            findings.append(_warmup_finding(figures, "warmup_dominated", "high"))
        else:
            findings.append(Finding("no_steps", "info"))
        findings.extend(_run_findings(run, figures))
        verdict = "warmup_dominated" if numbers.warmup_ms is not None else None
        return Verdict(verdict, None, tuple(findings), _borderline(findings, figures))

    input_share = figures.input_share
    host_share = figures.shares["host_overhead"]
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
    host_p50_ms, step_p50_ms = figures.host_overhead.p50, figures.step.p50
    if (
        host_severity == "high"
        and host_p50_ms is not None
        and step_p50_ms
        and host_p50_ms < HOST_MODERATE * step_p50_ms
    ):
        # The typical step spends next to nothing outside its fetch and
        # compute: the share rests on a few long pauses (a collection, the
        # machine busy elsewhere), which is a finding, not the verdict.
        host_severity = "moderate"
    wait = figures.data_wait
    ready_ms = figures.ready_fetch_ms
    unjudged = None
    if input_severity and ready_ms is None and not run.fetch_in_graph:
        # No fetch floor: only a high share of long waits is evidence.
        long_waits = wait.p50 is not None and wait.p50 >= NO_FLOOR_MIN_P50_MS - EPSILON
        if input_severity != "high" or not long_waits:
            unjudged, input_severity = input_severity, None
    ceiling = None
    if (input_severity == "high" and input_free_gain is not None
            and input_free_gain < INPUT_FREE_MIN_GAIN):
        # Measured: removing the input entirely buys under 10%.
        input_severity, ceiling = "moderate", input_free_gain
    stalls = None
    without_longest = figures.input_share_without_longest_wait
    if (
        input_severity
        and ready_ms
        and wait.p90 is not None
        and (
            wait.p90 <= STALL_P90_FACTOR * ready_ms
            or (without_longest is not None and without_longest < INPUT_MODERATE)
        )
    ):
        # Nine steps in ten got a ready batch, or the share rests on one
        # wait: a few long waits, not a slow pipeline.
        stalls, input_severity = input_severity, None
    if (short_evaluation(run, figures) and figures.step.p50 and figures.step.mean
            and figures.step.mean > FEW_STEPS_MEAN_FACTOR * figures.step.p50):
        # A short validation's mean rests on a few long steps (each pass's
        # first): the typical step decides, so identical fits agree.
        typical_wait = max(0.0, (wait.p50 or 0.0) - (ready_ms or 0.0))
        if input_severity and typical_wait < INPUT_MODERATE * figures.step.p50:
            stalls, input_severity = stalls or input_severity, None
        if host_severity and (host_p50_ms or 0.0) < HOST_MODERATE * figures.step.p50:
            host_severity = None
    busy = run.device_busy_fraction
    on_accelerator = is_accelerator(run.placement.device)

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
        findings["input_bound"] = Finding(
            "input_bound", input_severity, share=input_share, input_free_gain=ceiling,
            limits=(("high", INPUT_HIGH), ("moderate", INPUT_MODERATE)))
    if unjudged:
        # Why the wait is not called slow: each that holds.
        under_high = input_share is None or input_share < INPUT_HIGH - EPSILON
        under_floor = wait.p50 is None or wait.p50 < NO_FLOOR_MIN_P50_MS - EPSILON
        findings["no_fetch_floor"] = Finding(
            "no_fetch_floor", "info", share=input_share, unjudged=unjudged,
            limits=(("high", INPUT_HIGH), ("min_p50_ms", NO_FLOOR_MIN_P50_MS),
                    ("under_high", under_high), ("under_min_p50", under_floor)))
    if stalls:
        findings["input_stalls"] = Finding("input_stalls", "info", share=input_share)
    if host_severity:
        findings["host_overhead_bound"] = Finding(
            "host_overhead_bound", host_severity, share=host_share,
            limits=(("high", HOST_HIGH), ("moderate", HOST_MODERATE)))
    if steady_verdict == "latency_bound":
        findings["latency_bound"] = Finding(
            "latency_bound",
            "high" if busy < LATENCY_HIGH_BUSY else "moderate",
            share=busy,
            input_severity=input_severity,
            limits=(("device_busy", LATENCY_DEVICE_BUSY),),
        )
    if steady_verdict == "compute_bound":
        findings["compute_bound"] = Finding(
            "compute_bound", "info", share=figures.shares["compute"],
            input_severity=input_severity, unjudged=unjudged,
        )

    warmup_share = figures.warmup_share
    verdict = steady_verdict
    if warmup_share is not None and warmup_share >= WARMUP_DOMINATED - EPSILON:
        verdict = "warmup_dominated"
        findings["warmup_dominated"] = _warmup_finding(
            figures, verdict, "high", steady_verdict
        )
    elif warmup_share is not None and warmup_share >= WARMUP_FINDING - EPSILON:
        findings["warmup"] = _warmup_finding(figures, "warmup", "moderate")

    ordered = [findings.pop(verdict)] if verdict in findings else []
    rest = list(findings.values()) + _run_findings(run, figures)
    rest.sort(key=lambda finding: SEVERITIES.index(finding.severity))
    ordered += rest
    return Verdict(verdict, steady_verdict, tuple(ordered), _borderline(ordered, figures))


def short_evaluation(run, figures):
    """Whether a run is a validation or evaluation run of fewer steady steps
    than `FEW_STEPS_TO_JUDGE`: judged by its typical step, never one to
    point at first."""
    return (role(run.run)[1] in ("validation", "evaluation")
            and (figures.steady_steps or 0) < FEW_STEPS_TO_JUDGE)


def _borderline(findings, figures):
    """The ids of the input and host findings whose share is within
    `BORDERLINE` of its high threshold: findings, never the verdict, since
    the same fit lands on either side from run to run."""
    ids = {finding.id for finding in findings}
    near = (
        ("input_bound", figures.input_share, INPUT_HIGH),
        ("host_overhead_bound", figures.shares["host_overhead"], HOST_HIGH),
    )
    return tuple(
        finding_id
        for finding_id, share, high in near
        if finding_id in ids and borderline(share, high)
    )


def _warmup_finding(figures, finding_id, severity, steady_verdict=None):
    return Finding(finding_id, severity, share=figures.warmup_share,
                   steady_verdict=steady_verdict)


def _retrace_findings(run, figures):
    """`retracing` only with a recorded retrace count; other spikes are `stalls`."""
    findings = []
    numbers = run.numbers
    retraces = numbers.retraces
    count = retraces.count
    spikes = numbers.spikes or 0
    spike_steps = numbers.spike_steps
    if count:
        findings.append(Finding(
            "retracing",
            "moderate" if count >= RETRACING_MODERATE else "info",
            count=count,
            steps=tuple(retraces.steps),
        ))
    unexplained, unexplained_steps = spikes, spike_steps
    if count:
        retraced = set(retraces.steps)
        if retraced and spike_steps:
            unexplained_steps = [step for step in spike_steps if step not in retraced]
            unexplained = max(0, spikes - (len(spike_steps) - len(unexplained_steps)))
        else:
            unexplained = max(0, spikes - count)
            unexplained_steps = []
    if unexplained:
        findings.append(Finding(
            "stalls",
            "moderate" if unexplained >= STALLS_MODERATE else "info",
            count=unexplained,
            steps=tuple(unexplained_steps),
        ))
    return findings


def retraced_spikes(run):
    """How many spikes the recorded retraces explain (`_retrace_findings`'
    rule: by step when both lists are known, else by count)."""
    numbers = run.numbers
    retraced, spike_steps = set(numbers.retraces.steps), numbers.spike_steps
    if retraced and spike_steps:
        return len([step for step in spike_steps if step in retraced])
    return min(numbers.spikes or 0, numbers.retraces.count or 0)


def _run_findings(run, figures):
    """Findings that are never the verdict."""
    findings = []
    if run.numbers.status in ("running", "interrupted"):
        findings.append(Finding("incomplete_run", "info", count=figures.steps))
    if run.fetch_in_graph:
        findings.append(Finding("fetch_in_graph", "info"))
    if figures.self_share is not None and figures.self_share > MEASURING_SHARE_MAX:
        # Our own time inside the steps: the verdict is uncertain by it.
        findings.append(Finding("measuring_cost", "moderate", share=figures.self_share,
                                limits=(("share_max", MEASURING_SHARE_MAX),)))
    findings.extend(_retrace_findings(run, figures))
    placement = run.placement
    ops = placement.ops
    device = placement.device
    if placement.accelerator_visible and ops and not is_accelerator(device):
        findings.append(Finding(
            "cpu_ops_on_accelerator_run", "high", count=sum(ops.values())))
    elif placement.cpu_ops_on_accelerator_run:
        findings.append(Finding(
            "cpu_ops_on_accelerator_run", "moderate",
            count=sum(n for name, n in ops.items() if not is_accelerator(name)),
        ))
    if placement.cross_device_copies:
        findings.append(Finding(
            "cross_device_copies",
            "moderate" if is_accelerator(device) else "info",
            count=placement.cross_device_copies,
        ))
    batch = run.batch_size
    median_ms = figures.step.p50
    if (batch and median_ms is not None and batch <= SMALL_BATCH_SIZE
            and median_ms < SMALL_BATCH_STEP_MS):
        findings.append(Finding(
            "small_batch", "moderate" if is_accelerator(device) else "info", count=batch))
    return findings
