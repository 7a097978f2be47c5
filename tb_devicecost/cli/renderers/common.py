"""What the console and Markdown renderers share: the words around figures,
and the neutralising of strings that came from the recorded data."""

import re

from tb_devicecost.analysis import formatting
from tb_devicecost.analysis.formatting import fmt_speedup

# Characters a terminal acts on rather than shows, or that show as nothing:
# C0 and C1 controls, DEL, Unicode's format characters (category Cf: the
# bidirectional embeddings, overrides, isolates and marks, which reorder
# what is shown; zero-width spaces and joiners, the soft hyphen, the word
# joiner, invisible operators, the byte-order mark, tags), the line and
# paragraph separators (U+2028, U+2029: a line break in some viewers),
# the Hangul fillers and the combining grapheme joiner (blank), and lone
# surrogates (a name's bytes that are not UTF-8).
_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u034f\u0600-\u0605\u061c\u06dd\u070f"
    "\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff"
    "\uffa0\ufff9-\ufffb\ud800-\udfff\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]"
)
_WHITESPACE_CONTROLS = {"\t": " ", "\n": " ", "\r": " "}


def _escape_control(match):
    character = match.group()
    if character in _WHITESPACE_CONTROLS:
        return _WHITESPACE_CONTROLS[character]
    code = ord(character)
    if 0xDC80 <= code <= 0xDCFF:
        # A byte that is not UTF-8 (PEP 383), escaped as the scan names it
        # (`reader.path_text`): `\xe9`.
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def neutral(text):
    """`text` with every control or invisible character shown as an escape
    (`\\x1b`, `\\u2028`, `\\u200b`; a byte that is not UTF-8 as `\\xe9`),
    tabs and line breaks as spaces: a run name, op name or message from the
    recorded data can neither move the cursor, set the title, colour the
    terminal nor reorder the line."""
    return _CONTROL.sub(_escape_control, str(text))


def neutralised(value):
    """A copy of a report (or any JSON value) with `neutral` strings, keys too."""
    if isinstance(value, dict):
        return {neutral(key): neutralised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [neutralised(item) for item in value]
    if isinstance(value, str):
        return neutral(value)
    return value


# What warm-up is, in the same words in every output (and in
# frontend/views/common.js): the steps the JSON lists in `warmup_steps`.
WARMUP_TEXT = (
    "warm-up is the first step of each fit, and the second too in a fit "
    "where TensorFlow builds its step function (the JSON's warmup_steps)"
)


# What the lighter part of a data-wait bar is, in the same words in every
# output (the tab's legend says it too: frontend/views/charts.js).
HANDOVER_TEXT = (
    "handover: the part of the data wait spent handing over batches that "
    "were ready, not waiting for them"
)


def handover_text(run):
    """`4.2%`: the part of a run's data-wait share spent handing over ready
    batches (its `handover_share`), or `None` when it is unknown or rounds
    to nothing."""
    share = run.get("handover_share")
    if share is None or formatting.fmt_share(share) == formatting.fmt_share(0.0):
        return None
    return formatting.fmt_share(share)


def one_line(text):
    """`text` with every run of whitespace (newlines too) as one space."""
    return " ".join(str(text).split())


def self_cost_text(run):
    """`Measuring took 3.10 µs a step, 0.4% of the step.`, or `None` where
    it was not recorded (older data: its reports stay as they were)."""
    if run.get("self_us_per_step") is None:
        return None
    return run.get("self_cost_text")


def verdict_text(run):
    """`input_bound`, or `warmup_dominated (steady state: compute_bound)`."""
    text = run["verdict"] or "no verdict"
    if run["steady_verdict"] and run["steady_verdict"] != run["verdict"]:
        text += f" (steady state: {run['steady_verdict']})"
    return text


def headline(finding):
    """A finding's headline: one plain sentence (`analysis/phrases.py`); its
    message for a report of an older version, which had none."""
    return finding.get("headline") or finding.get("message") or ""


def details(finding):
    """The arithmetic behind a finding's headline (its `message`), or `None`
    when the headline already is the message."""
    message = finding.get("message")
    if not message or message == finding.get("headline"):
        return None
    return message


def expected_text(finding):
    """`about 3.1x the samples/s (...). How: ...`: what a finding's fix would
    buy and how that was estimated, or why there is no estimate; `None` for
    a finding without `expected` (a report of an older version)."""
    expected = finding.get("expected")
    if not isinstance(expected, dict):
        return None
    tried = (finding.get("tried") or {}).get("text")
    tried = f" ({tried})" if tried else ""
    if expected.get("speedup") is None:
        return f"no estimate{tried}: {expected.get('basis')}."
    return f"{expected.get('text')}{tried}. How: {expected.get('basis')}."


FIXES_TRIED_TEXT = (
    "measured: a change's median samples/s over the baseline's, its fits "
    "interleaved with the baseline's; noise: the largest deviation of a "
    "baseline fit from their median; kept: above 1 + noise. input_free and "
    "empty_step are ceilings, not fixes"
)


def fix_gain_text(value):
    """`1.3x`, or `-` for none."""
    return fmt_speedup(value) if isinstance(value, (int, float)) else "-"


def fix_verdict_text(entry):
    """`advised`, `kept`, `slower`, `noise`, `ceiling`: what came of a change."""
    if entry.get("ceiling"):
        return "ceiling"
    if entry.get("advised"):
        return "ADVISED"
    if entry.get("slower"):
        return "slower"
    if entry.get("kept"):
        return "kept" if entry.get("keeps_arithmetic") else "kept (new arithmetic)"
    return "in noise" if entry.get("measured") is not None else "no measure"


def no_comparison_text(report):
    """Why the report compares nothing, and how to ask for a comparison;
    `None` when it compares runs."""
    if report.get("comparison"):
        return None
    runs = report.get("runs") or []
    # Like is compared with like: training runs with training runs, ...
    kinds = {}
    for run in runs:
        head, _, tail = run["run"].rpartition("/")
        kind = tail if head and tail in ("train", "validation", "evaluation") else ""
        kinds[kind] = kinds.get(kind, 0) + 1
    if len(runs) < 2 or max(kinds.values()) < 2:
        return (
            "No comparison: no two runs of the same kind (training, validation, "
            "evaluation) were reported. Record the same model on another device "
            "(a run named like it but for the device) to compare them."
        )
    return (
        "No comparison: no run has a like-for-like baseline (the same model "
        "trained on the CPU, in a run named like it but for the device). To "
        "compare against a run of your choice, pass --baseline RUN, e.g. "
        f"--baseline {neutral(runs[0]['run'])}."
    )


# Predictions checked (`analysis/predictions.py`): a pair's change in words.
_CHANGES = {
    "input_pipeline": "faster input pipeline",
    "batch_size": "larger batch",
    "device": "other device",
}
_BOUND_SIGNS = {"at_most": "≤ ", "at_least": "≥ "}
PREDICTIONS_TEXT = (
    "predicted: the gain a finding's estimate (or a sweep's fits, for the "
    "other device) gives at the counterpart's batch size; achieved: the "
    "counterpart's samples/s over the run's; * where a batch is beyond "
    "those the estimate was made from; none where no honest figure exists, "
    "with the reason"
)


def change_text(pair):
    """`larger batch (10 → 1,024)`: what differs between a run and its
    counterpart in a prediction checked."""
    text = _CHANGES.get(pair.get("change"), str(pair.get("change")))
    if pair.get("change") == "batch_size":
        sizes = pair.get("batch_size") or {}
        text += (
            f" ({formatting.fmt_count(sizes.get('run'))} → "
            f"{formatting.fmt_count(sizes.get('counterpart'))})"
        )
    elif pair.get("change") == "device":
        devices = pair.get("device") or {}
        text += f" ({neutral(devices.get('run'))} → {neutral(devices.get('counterpart'))})"
    return text


def predicted_text(pair):
    """`≤ 3.10x`, `34.89x*`, `none`: a pair's predicted speedup, its bound,
    and a star where the counterpart's batch is beyond the estimate's."""
    if pair.get("predicted_speedup") is None:
        return "none"
    bound = (pair.get("predicted") or {}).get("bound")
    return (
        _BOUND_SIGNS.get(bound, "")
        + formatting.fmt_speedup(pair.get("predicted_speedup"))
        + ("*" if pair.get("extrapolated") else "")
    )


def ratio_text(pair):
    """`1.18x`, `held`, `broken` (a bound), or `—` (no prediction)."""
    if pair.get("within_bound") is not None:
        return "held" if pair["within_bound"] else "broken"
    if pair.get("achieved_over_predicted") is None:
        return "—"
    return formatting.fmt_speedup(pair["achieved_over_predicted"])


def predicted_by_text(pair, quote='"'):
    """`input_bound`, or `sweep "<name>"`: what made a pair's prediction.
    The name is quoted (`quote` on each side) so that a sweep named `sweep`
    does not read "sweep sweep"."""
    if pair.get("predicted_by") == "sweep":
        return f"sweep {quote}{neutral(pair.get('sweep'))}{quote}"
    return neutral(pair.get("predicted_by"))


def is_baseline(row):
    """Whether a comparison row is a baseline (a run compared with itself)."""
    return row.get("is_baseline", row["run"] == row.get("against"))


def speedup_text(row):
    """`0.46x`, or `baseline`."""
    return "baseline" if is_baseline(row) else formatting.fmt_speedup(row["speedup"])


def row_deltas(row):
    """Whether a comparison row is per 1000 samples, and its deltas so."""
    per_sample = row["basis"] == "samples_per_s"
    return per_sample, row["delta_per_1000_samples_ms" if per_sample else "delta_ms"]


def device_split_lines(entry):
    """`device: compute 4%, collectives 93%, copies 1%` for a process of a
    job (its entry in the report's `workers`), one line per device when it
    holds several; `[]` without a trace window that split the device's time."""
    split = entry.get("device_split")
    if not isinstance(split, dict):
        return []

    def words(figures):
        return (
            f"compute {formatting.fmt_share(figures.get('compute'))}, collectives "
            f"{formatting.fmt_share(figures.get('communication'))}, copies "
            f"{formatting.fmt_share(figures.get('memory'))}"
        )

    devices = [item for item in entry.get("device_figures") or () if isinstance(item, dict)]
    if len(devices) > 1:
        return [f"{neutral(item.get('device'))}: {words(item)}" for item in devices]
    return [f"device: {words(split)}"]


def missing_text(group):
    """`Not recorded: processes 2–999,999.` for a workers group, from its
    ranges (bounded, whatever its process count), or `None`."""
    ranges = group.get("missing_processes") or []
    if not ranges:
        return None
    parts = [
        formatting.fmt_count(first) if first == last
        else f"{formatting.fmt_count(first)}\u2013{formatting.fmt_count(last)}"
        for first, last in ranges[:20]
    ]
    if len(ranges) > 20:
        parts.append(f"and {len(ranges) - 20:,} more ranges")
    count = group.get("missing_count") or 0
    word = "process" if count == 1 else "processes"
    return f"Not recorded: {word} {', '.join(parts)}."


def balance_text(group):
    """What a workers group without a straggler says: that its processes
    keep pace, only when some steps were lined up; else why none were."""
    if group.get("aligned_steps"):
        return "No straggler: the processes keep pace."
    return "No straggler can be named: no steps were lined up (see the notes)."
