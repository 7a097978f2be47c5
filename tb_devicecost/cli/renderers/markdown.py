"""The report as GitHub-flavoured Markdown, for pull requests and CI summaries.

Strings from the recorded data (run names, devices, op names, messages
quoting them) are shown, never interpreted: names as code spans, text with
Markdown punctuation escaped and HTML as entities, control characters as
escapes (`common.neutral`).
"""

import re

from tb_devicecost import analysis
from tb_devicecost.analysis.formatting import MISSING
from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_rate
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_ms_unit
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.formatting import fmt_signed_ms
from tb_devicecost.analysis.formatting import fmt_speedup
from tb_devicecost.cli.renderers import common
from tb_devicecost.format import vocabulary


# Characters that Markdown or HTML would act on in running text: HTML
# (tags, entities) is written as entities, Markdown punctuation (links,
# emphasis, code, tables, strikethrough) backslash-escaped.
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKDOWN = frozenset("\\`*_[]|~")


def _md_cell(text):
    """Text from the report, shown as text in a table cell or a paragraph."""
    return "".join(
        _HTML.get(character)
        or ("\\" + character if character in _MARKDOWN else character)
        for character in common.one_line(text)
    )


def _md_code(text):
    """A name as a code span: shown literally, never as Markdown or HTML.

    The fence is one backtick longer than any run of backticks in the name;
    `|` is escaped for GitHub's tables.
    """
    text = common.one_line(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def render(report, verbose=False):
    """The report as Markdown: a table of runs, findings, the comparison.

    Args:
        report: A report of `tb_devicecost.words.build_report`.
        verbose: Whether to show each finding's details (the arithmetic
            behind its headline). Defaults to `False`.
    """
    report = common.neutralised(report)
    lines = ["## tb-devicecost report", ""]
    lines.append(
        "| Run | Device | Batch | p50 step | Samples/s (mean step) | Data wait (share) "
        "| Compute (share) | Host overhead (share) | Warm-up (total, share of wall) | Verdict |"
    )
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for run in report["runs"]:
        shares = run["shares"]
        warmup = MISSING
        if run["warmup_ms"] is not None:
            warmup = f"{fmt_ms_unit(run['warmup_ms'])} ({fmt_share(run['warmup_share_of_wall'])})"
        lines.append(
            "| "
            + " | ".join(
                [
                    _md_code(run["run"]),
                    _md_cell(run["device"] or MISSING),
                    fmt_count(run["batch_size"]),
                    fmt_ms_unit(run["step_ms"]["p50"]),
                    fmt_rate(run["samples_per_s"]),
                    _wait_cell(run),
                    fmt_share(shares["compute"]),
                    fmt_share(shares["host_overhead"]),
                    warmup,
                    f"**{run['verdict'] or MISSING}**",
                ]
            )
            + " |"
        )
    lines.append("")
    lines.append(
        "Shares are of the total time of the steps after warm-up; "
        + common.WARMUP_TEXT
        + ", and is shown as its total and its share of the fit's wall time. "
        + common.HANDOVER_TEXT[0].upper() + common.HANDOVER_TEXT[1:] + "."
    )
    lines.extend(_wall_table(report["runs"]))
    lines.append("")
    lines.append("### Findings")
    for run in report["runs"]:
        lines.append("")
        lines.append(f"#### {_md_code(run['run'])}: {common.verdict_text(run)}")
        lines.append("")
        if common.self_cost_text(run):
            lines += [_md_cell(common.self_cost_text(run)), ""]
        for finding in run["findings"]:
            lines.append(
                f"- **{finding['severity']}** `{finding['id']}`: "
                f"{_md_cell(common.headline(finding))}  "
            )
            lines.append(f"  *Fix:* {_md_cell(finding['fix'])}")
            expected = common.expected_text(finding)
            if expected:
                lines[-1] += "  "
                lines.append(f"  *Expected:* {_md_cell(expected)}")
            details = common.details(finding)
            if verbose and details:
                lines[-1] += "  "
                lines.append(f"  *Details:* {_md_cell(details)}")
        for problem in run["problems"]:
            lines.append(f"- *Note:* {_md_cell(problem)}")
    comparison = report["comparison"]
    if not comparison:
        lines += ["", "### Comparison", "", _md_cell(common.no_comparison_text(report))]
    if comparison:
        lines.append("")
        title = "### Comparison"
        if comparison.get("baseline"):
            title += f" against {_md_code(comparison['baseline'])}"
        lines.append(title)
        lines.append("")
        if comparison.get("baseline_reason"):
            lines.append(_md_cell(comparison["baseline_reason"]))
            lines.append("")
        lines.append(
            "| Run | Against | Speedup (mean step) | Basis | Δ data wait | "
            "Δ compute | Δ host overhead |"
        )
        lines.append("|---|---|---:|---|---:|---:|---:|")
        for row in comparison["rows"]:
            per_sample, deltas = common.row_deltas(row)
            baseline = common.is_baseline(row)
            lines.append(
                "| "
                + " | ".join(
                    [
                        _md_code(row["run"]),
                        _md_code(row.get("against") or row["run"]),
                        common.speedup_text(row),
                        ""
                        if baseline
                        else "ms per 1000 samples" if per_sample else "ms per step",
                    ]
                    + [
                        "" if baseline else fmt_signed_ms(deltas[name])
                        for name in vocabulary.COMPONENTS
                    ]
                )
                + " |"
            )
        lines.append("")
        for row in comparison["rows"]:
            if not common.is_baseline(row):
                lines.append(f"- {_md_cell(row['explanation'])}")
    lines.extend(_workers_table(report.get("workers") or []))
    lines.extend(_sweep_tables(report.get("sweeps") or []))
    lines.extend(_fixes_tried_table(report.get("fixes_tried") or []))
    lines.extend(_predictions_table(report.get("predictions") or []))
    if report["skipped"]:
        lines.append("")
        lines.append("### Skipped")
        lines.append("")
        for item in report["skipped"]:
            lines.append(f"- {_md_code(item['run'])}: {_md_cell(item['reason'])}")
    return "\n".join(lines) + "\n"


def _wait_cell(run):
    """`54% (handover 4.2%)`: the data wait's share and the part of it that
    is handing over ready batches, when that shows."""
    text = fmt_share(run["shares"]["data_wait"])
    handover = common.handover_text(run)
    return text + f" (handover {handover})" if handover else text


def _workers_table(groups):
    """The processes of each distributed job side by side (Markdown lines)."""
    lines = []
    for group in groups:
        skew = group["skew_ms"]
        lines += [
            "",
            f"### Processes of {_md_code(group['group'])}",
            "",
            f"{group['process_count']} processes, {group['aligned_steps']} steps "
            f"aligned; skew p50 {fmt_ms_unit(skew['p50'])}, p90 "
            f"{fmt_ms_unit(skew['p90'])}.",
            "",
            "| Process | Run | Step p50 | Waits p50 | Wait share | Lost to it | Steady-state verdict "
            "| Device: compute, collectives, copies |",
            "|---:|---|---:|---:|---:|---:|---|---|",
        ]
        for entry in group["runs"]:
            straggler = " (straggler)" if entry["run"] == group["straggler"] else ""
            lines.append(
                f"| {entry['process_index']}{straggler} | {_md_code(entry['run'])} "
                f"| {fmt_ms_unit((entry['step_ms'] or {}).get('p50'))} "
                f"| {fmt_ms_unit(entry['wait_ms']['p50'])} "
                f"| {fmt_share(entry['wait_share'])} | {fmt_share(entry['lost_share'])} "
                f"| {_md_cell(entry['steady_verdict'] or entry['verdict'] or MISSING)} "
                f"| {_md_cell('; '.join(common.device_split_lines(entry)) or MISSING)} |"
            )
        lines.append("")
        missing = common.missing_text(group)
        lines += [_md_cell(text) + "  " for text in [missing] if text]
        lines += [f"- *Note:* {_md_cell(problem)}" for problem in group.get("problems") or ()] + [""] * bool(group.get("problems"))
        lines.append(
            f"Straggler: process {group['straggler_index']}, "
            f"{fmt_share(group['straggler_share'])} of all the processes' step time lost "
            f"to it, cause `{_md_cell(group['cause'] or MISSING)}`."
            if group["straggler"]
            else common.balance_text(group)
        )
    return lines


def _fixes_tried_table(entries):
    """What `try_fixes` measured of each change (Markdown lines)."""
    if not entries:
        return []
    lines = [
        "",
        "### Fixes tried",
        "",
        "| Baseline | Change | Predicted | Measured | Noise | Result |",
        "|---|---|---:|---:|---:|---|",
    ]
    for entry in entries:
        noise = entry.get("noise")
        lines.append(
            f"| {_md_code(entry.get('baseline'))} | {_md_cell(entry['change'])} "
            f"| {common.fix_gain_text(entry.get('predicted'))} "
            f"| {common.fix_gain_text(entry.get('measured'))} "
            f"| {('±' + fmt_share(noise)) if isinstance(noise, (int, float)) else '-'} "
            f"| {_md_cell(common.fix_verdict_text(entry))} |"
        )
    lines += ["", _md_cell(common.FIXES_TRIED_TEXT[0].upper() + common.FIXES_TRIED_TEXT[1:] + ".")]
    return lines


def _predictions_table(pairs):
    """Each run with a fixed counterpart: the gain predicted and achieved
    (Markdown lines)."""
    if not pairs:
        return []
    lines = [
        "",
        "### Predictions checked",
        "",
        "| Run | With the fix | Change | Predicted by | Predicted | Achieved "
        "| Achieved ÷ predicted |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    unpredicted = []
    for pair in pairs:
        lines.append(
            f"| {_md_code(pair['run'])} | {_md_code(pair['counterpart'])} "
            f"| {_md_cell(common.change_text(pair))} | {_predicted_by(pair)} "
            f"| {_md_cell(common.predicted_text(pair))} "
            f"| {fmt_speedup(pair['achieved_speedup'])} "
            f"| {_md_cell(common.ratio_text(pair))} |"
        )
        if pair.get("unpredicted"):
            unpredicted.append(f"{pair['run']} → {pair['counterpart']}: {pair['unpredicted']}")
    lines += ["", _md_cell(common.PREDICTIONS_TEXT[0].upper() + common.PREDICTIONS_TEXT[1:] + ".")]
    if unpredicted:
        lines += ["", "No prediction:", ""] + [f"- {_md_cell(line)}" for line in unpredicted]
    return lines


def _predicted_by(pair):
    """`` `input_bound` `` or ``sweep `name` ``, as the README writes them."""
    if pair.get("predicted_by") == "sweep":
        return "sweep " + _md_code(pair.get("sweep"))
    return _md_code(pair.get("predicted_by"))


def _sweep_tables(sweeps):
    """Each sweep: its devices' costs and samples/s per batch size (Markdown lines)."""
    lines = []
    for sweep in sweeps:
        devices = list(sweep["devices"])
        lines += [
            "",
            f"### Sweep {_md_code(sweep['name'])}",
            "",
            "Step time = fixed cost + cost per sample × batch size, fitted on "
            f"each run's {_md_cell(sweep['step_statistic'])} steady-state step.",
            "",
            "| Device | Fixed per step | Per sample |",
            "|---|---:|---:|",
        ]
        for device in devices:
            fit = sweep["devices"][device]
            per_sample = fit["per_sample_us"]
            lines.append(
                f"| {_md_code(device)} | {fmt_ms_unit(fit['fixed_ms'])} "
                f"| {MISSING if per_sample is None else fmt_ms(per_sample) + ' µs'} |"
            )
        by_batch = {}
        for device in devices:
            for point in sweep["devices"][device]["points"]:
                by_batch.setdefault(point["batch_size"], {})[device] = point["samples_per_s"]
        lines += [
            "",
            "| Batch | " + " | ".join(f"{_md_cell(d)} samples/s" for d in devices) + " |",
            "|---:|" + "---:|" * len(devices),
        ]
        for batch in sorted(by_batch):
            lines.append(
                f"| {fmt_count(batch)} | "
                + " | ".join(fmt_count(by_batch[batch].get(d)) for d in devices)
                + " |"
            )
        if sweep["message"]:
            lines += ["", _md_cell(sweep["message"])]
        for problem in sweep["problems"]:
            lines += ["", "Note: " + _md_cell(problem)]
    return lines


def _wall_table(runs):
    """The fit's whole wall time of each run, in parts (Markdown lines)."""
    lines = ["", "#### Wall time of each fit", ""]
    lines.append("| Run | Total | Steps | Warm-up | Between steps | Measurement |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    unknown = False
    for run in runs:
        wall = run.get("wall_ms") or {}
        shares = run.get("wall_shares") or {}
        if not wall.get("total"):
            unknown = True
        cells = [_md_code(run["run"]), fmt_ms_unit(wall.get("total"))]
        for key in analysis.WALL_PARTS:
            cell = fmt_ms_unit(wall.get(key))
            if wall.get(key) is not None and shares.get(key) is not None:
                cell += f" ({fmt_share(shares[key])})"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Steps: the steps after warm-up; warm-up: " + common.WARMUP_TEXT.split(" is ", 1)[1]
        + "; between steps: epoch starts, validation and "
        "callbacks at epoch end; measurement: the tool's own measurements kept "
        "out of the steps."
        + (
            f" {MISSING}: not recorded (written by an older tb-devicecost)."
            if unknown
            else ""
        )
    )
    return lines
