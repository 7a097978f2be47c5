"""The words a user reads first: each finding's headline.

A headline is one plain sentence of at most `MAX_HEADLINE_WORDS` words that
says what is slow and by how much, with the number that matters. The
arithmetic behind it (floors, thresholds, statistics) stays in the finding's
`message`, which the tab shows under "details" and the CLI under
`--verbose`. `verdicts.py` (and `workers.py`, `waiting.py`) choose the
facts; this module only words them, so every headline is written here and
tested in one place (tests/test_wording.py).

Headlines avoid the internal names (`JARGON`): the glossary,
docs/READING.md, explains the few terms they use.
"""

from tb_devicecost.formatting import fmt_count
from tb_devicecost.formatting import fmt_ms
from tb_devicecost.formatting import fmt_share

MAX_HEADLINE_WORDS = 25
# Words that must not reach a headline: internal names and statistics talk.
JARGON = (
    "fetch floor",
    "cost of a ready batch",
    "steady-state",
    "steady state",
    "latency_bound",
    "role",
    "device-busy window",
    "skew",
)


def _plural(count, word):
    return f"{fmt_count(count)} {word}{'' if count == 1 else 's'}"


def no_steps():
    return "No training step was recorded yet (0 steps), so there is nothing to judge."


def input_bound(severity, waiting_ms, step_ms):
    lead = "Input-bound" if severity == "high" else "Partly input-bound"
    return (
        f"{lead}: on average each step waits {fmt_ms(waiting_ms)} ms of its "
        f"{fmt_ms(step_ms)} ms for data."
    )


def no_fetch_floor(wait_ms, share):
    return (
        f"Data wait of {fmt_ms(wait_ms)} ms per step ({fmt_share(share)} of the "
        "time) is too short to call the input slow."
    )


def input_stalls(max_wait_ms):
    return (
        "The input keeps up, but a few steps waited up to "
        f"{fmt_ms(max_wait_ms)} ms for data."
    )


def host_overhead_bound(severity, host_ms, step_ms):
    lead = "Host-bound" if severity == "high" else "Some host overhead"
    return (
        f"{lead}: {fmt_ms(host_ms)} ms of each {fmt_ms(step_ms)} ms step is "
        "Python work outside the model (loop, callbacks, progress bar)."
    )


def latency_bound(device, busy, step_ms):
    return (
        f"{device or 'The accelerator'} is busy only {fmt_share(busy)} of each "
        f"{fmt_ms(step_ms)} ms step; the rest is per-step launch and dispatch cost."
    )


def compute_bound(compute_ms, step_ms, fetch_in_graph=False):
    if fetch_in_graph:
        return (
            f"Compute takes {fmt_ms(compute_ms)} ms of each {fmt_ms(step_ms)} ms "
            "step, data loading included (fetched inside the compiled step)."
        )
    return (
        f"Compute sets the pace: {fmt_ms(compute_ms)} ms of each "
        f"{fmt_ms(step_ms)} ms step is the model's own work."
    )


def warmup(steps, warmup_ms, share, wall_known):
    of = "the fit's wall time" if wall_known else "the recorded time"
    first = "the first step" if steps == 1 else f"the first {fmt_count(steps)} steps"
    return (
        f"Warm-up ({first}, compiling) took "
        f"{fmt_ms(warmup_ms)} ms, {fmt_share(share)} of {of}."
    )


def incomplete_run(status, steps):
    what = "still being written" if status == "running" else "interrupted"
    return f"This run is {what}: the numbers cover its first {_plural(steps, 'step')}."


def fetch_in_graph(steps_per_execution):
    return (
        f"With steps_per_execution={steps_per_execution} data loading is timed "
        "as compute, so input speed cannot be judged."
    )


def retracing(count):
    return (
        f"The step function was rebuilt {_plural(count, 'time')} after warm-up; "
        "each rebuild slows a step."
    )


def stalls(count, ratio):
    return (
        f"{_plural(count, 'step')} took over {ratio:g}x the typical compute time, "
        "with no rebuild of the step to explain them."
    )


def cpu_ops_off_accelerator(ops):
    return f"An accelerator is visible, but all {_plural(ops, 'op')} of the step ran on the CPU."


def cpu_ops_on_accelerator_run(cpu_ops, ops, device):
    return (
        f"{fmt_count(cpu_ops)} of the step's {_plural(ops, 'op')} run on the CPU, "
        f"copying data to and from {device} every step."
    )


def cross_device_copies(copies):
    return f"Data crosses between devices at {_plural(copies, 'point')} in every step."


def small_batch(batch, step_ms):
    return (
        f"Batches of {fmt_count(batch)} samples take only {fmt_ms(step_ms)} ms a "
        "step, so fixed per-step costs dominate."
    )


def straggler(process, share):
    return (
        f"Process {process} holds the others back: {fmt_share(share)} of all "
        "processes' step time is spent waiting for it."
    )


def waiting_for_others(process, share, straggler_process):
    return (
        f"Process {process} spends {fmt_share(share)} of its step waiting for "
        f"the slower process {straggler_process}."
    )


def words(text):
    """How many words a headline has."""
    return len(str(text).split())
