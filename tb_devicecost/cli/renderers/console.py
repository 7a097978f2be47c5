"""The report for a terminal: tables and bars that fit 80 columns.

`render` is what `tb-devicecost report` prints by default. A terminal whose
encoding cannot show the bars' block characters (or the em dash, `Δ`, `×`)
gets `render(..., ascii_only=True)`: the same report in plain ASCII.
"""

import textwrap

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

WIDTH = 80
# Character bars for the shares: data wait, compute, host overhead.
BARS = ("█", "▓", "░")
ASCII_BARS = ("#", "=", "-")
# The part of the data wait that is handing over ready batches, in its own
# shade at the start of the data wait's cells: a pipeline that keeps up
# does not look input-bound.
HANDOVER_BAR = "▒"
ASCII_HANDOVER_BAR = ":"
_BAR_WIDTH = 26
_RUN_WIDTH = 22


def _wall_text(run):
    """`wall 12,345 ms: steps 80%, warm-up 10%, ...`: the fit's whole time."""
    wall = run.get("wall_ms") or {}
    shares = run.get("wall_shares") or {}
    if not wall.get("total"):
        if run.get("fit_end"):
            # Data with a fit identity: the aggregate that holds it is missing.
            return ("wall: not recorded (no aggregate of this fit was read); "
                    "time between steps unknown")
        if run.get("source") == "aggregate":
            return "wall: not recorded (older data); time between steps unknown"
        return "wall: not recorded (no aggregate was read); time between steps unknown"
    return (
        f"wall {fmt_ms_unit(wall['total'])}: steps "
        f"{fmt_share(shares.get('steps'))}, "
        f"warm-up {fmt_share(shares.get('warmup'))}, between steps "
        f"{fmt_share(shares.get('between_steps'))}, measuring "
        f"{fmt_share(shares.get('measurement'))}"
    )


def _row_groups(rows):
    """Rows grouped by the run they are compared with, in order."""
    groups = {}
    for row in rows:
        groups.setdefault(row.get("against") or row["run"], []).append(row)
    return list(groups.items())


def share_bar(shares, width=_BAR_WIDTH, characters=BARS, handover=None,
              handover_character=HANDOVER_BAR):
    """A bar of `width` characters split by the steady-state shares.

    Args:
        shares: The run's `shares` (data wait, compute, host overhead).
        width: The bar's length in characters. Defaults to 26.
        characters: One character per component. Defaults to `BARS`.
        handover: The part of the data wait's share that is handing over
            ready batches (the run's `handover_share`), drawn first in
            `handover_character`. Defaults to `None` (not shown).
        handover_character: Defaults to `HANDOVER_BAR`.
    """
    values = [shares.get(name) or 0.0 for name in vocabulary.COMPONENTS]
    if handover and values[0] > 0:
        part = min(handover, values[0])
        values = [part, values[0] - part] + values[1:]
        characters = (handover_character,) + tuple(characters)
    total = sum(values)
    if total <= 0:
        return " " * width
    # Largest remainders, so the bar is always exactly `width` long.
    exact = [value / total * width for value in values]
    cells = [int(value) for value in exact]
    order = sorted(range(len(exact)), key=lambda i: exact[i] - cells[i], reverse=True)
    for index in order[: width - sum(cells)]:
        cells[index] += 1
    return "".join(char * cell for char, cell in zip(characters, cells))


def _wrap(text, indent, width=WIDTH):
    return textwrap.fill(
        common.one_line(text),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    )


# The terminal table.


def render(report, logdir=None, ascii_only=False, verbose=False):
    """The report as lines of at most `WIDTH` characters.

    Args:
        report: A report of `tb_devicecost.words.build_report`.
        logdir: The log directory named in the title. Defaults to `None`
            (not named).
        ascii_only: Whether to write only ASCII characters, for a terminal
            that cannot show the others. Defaults to `False`.
        verbose: Whether to show each finding's details (the arithmetic
            behind its headline). Defaults to `False`.
    """
    bars = ASCII_BARS if ascii_only else BARS
    handover_bar = ASCII_HANDOVER_BAR if ascii_only else HANDOVER_BAR
    # Every string of the recorded data is shown, never acted on.
    report = common.neutralised(report)
    logdir = None if logdir is None else common.neutral(logdir)
    runs = report["runs"]
    lines = []
    title = f"tb-devicecost report: {len(runs)} run{'s' if len(runs) != 1 else ''}"
    if logdir:
        title += f" under {logdir}"
    lines.append(_fit(title))
    lines.append("")
    header = (
        f"{'RUN':<{_RUN_WIDTH}} {'DEVICE':<7} {'BATCH':>6} {'STEP p50':>10} "
        f"{'SAMPLES/S':>10} VERDICT"
    )
    lines.append(header)
    # Samples/s is of the mean step (the p50 step is not its inverse).
    lines.append(f"{'':<{_RUN_WIDTH}} {'':<7} {'':>6} {'':>10} {'mean step':>10}")
    for run in runs:
        name = run["run"]
        cell = name
        if len(name) > _RUN_WIDTH:
            lines.append(_fit(name))
            cell = ""
        lines.append(
            _fit(
                f"{cell:<{_RUN_WIDTH}} {(run['device'] or MISSING):<7} "
                f"{fmt_count(run['batch_size']):>6} "
                f"{fmt_ms_unit(run['step_ms']['p50']):>10} "
                f"{fmt_rate(run['samples_per_s']):>10} {run['verdict'] or MISSING}"
            )
        )
        shares = run["shares"]
        handover = run.get("handover_share")
        detail = f"wait {fmt_share(shares['data_wait'])} "
        if common.handover_text(run):
            detail += f"(handover {common.handover_text(run)}) "
        detail += (
            f"compute {fmt_share(shares['compute'])} "
            f"host {fmt_share(shares['host_overhead'])}"
        )
        if (run.get("wall_shares") or {}).get("warmup") is None and (
            run["warmup_share_of_wall"] is not None
        ):
            # Else the wall line below gives it.
            detail += f"  warm-up {fmt_share(run['warmup_share_of_wall'])}"
        bar = share_bar(shares, characters=bars, handover=handover,
                        handover_character=handover_bar)
        lines.append(_fit(f"  {bar}  {detail}"))
        lines.append(_fit(f"  {_wall_text(run)}"))
    lines.append(
        _fit(
            f"  {bars[0]} data wait  {bars[1]} compute  {bars[2]} host overhead: "
            "shares of the total steady-state time"
        )
    )
    lines.append(_wrap(f"{handover_bar} {common.HANDOVER_TEXT}", "  "))
    lines.append(
        _wrap(
            "warm-up: its share of the fit's wall time (on the wall line when "
            "that was recorded); " + common.WARMUP_TEXT
            + ". wall: the fit's whole time, in parts",
            "  ",
        )
    )

    lines.append("")
    lines.append("FINDINGS")
    for run in runs:
        lines.append("")
        heading = f"{run['run']}: {common.verdict_text(run)}"
        if run["status"] in ("running", "interrupted"):
            heading += f" [{run['status']}]"
        lines.append(_fit(heading))
        if common.self_cost_text(run):
            lines.append(_wrap(common.self_cost_text(run), "  "))
        for finding in run["findings"]:
            lines.append(f"  [{finding['severity']}] {finding['id']}")
            lines.append(_wrap(common.headline(finding), "    "))
            lines.append(_wrap("Fix: " + finding["fix"], "    "))
            expected = common.expected_text(finding)
            if expected:
                lines.append(_wrap("Expected: " + expected, "    "))
            details = common.details(finding)
            if verbose and details:
                lines.append(_wrap("Details: " + details, "    "))
        for problem in run["problems"]:
            lines.append(_wrap("Note: " + problem, "  "))

    comparison = report["comparison"]
    if not comparison:
        lines.append("")
        lines.append("COMPARISON")
        lines.append(_wrap(common.no_comparison_text(report), "  "))
    if comparison:
        lines.append("")
        title = "COMPARISON"
        if comparison.get("baseline"):
            title += f" against {comparison['baseline']}"
        lines.append(_fit(title))
        if comparison.get("baseline_reason"):
            lines.append(_wrap(comparison["baseline_reason"], "  "))
        lines.append(
            f"{'RUN':<{_RUN_WIDTH}} {'SPEEDUP':>8} {'PER':>10} {'Δ WAIT':>10} "
            f"{'Δ COMPUTE':>10} {'Δ HOST':>10}"
        )
        groups = _row_groups(comparison["rows"])
        for against, rows in groups:
            if len(groups) > 1:
                lines.append(_fit(f"  against {against}:"))
            for row in rows:
                per_sample, deltas = common.row_deltas(row)
                cell = row["run"]
                if len(cell) > _RUN_WIDTH:
                    lines.append(_fit(cell))
                    cell = ""
                if common.is_baseline(row):
                    lines.append(_fit(f"{cell:<{_RUN_WIDTH}} {common.speedup_text(row):>8}"))
                    continue
                lines.append(
                    _fit(
                        f"{cell:<{_RUN_WIDTH}} {common.speedup_text(row):>8} "
                        f"{('1k samples' if per_sample else 'step'):>10} "
                        + " ".join(
                            f"{fmt_signed_ms(deltas[name]):>10}"
                            for name in vocabulary.COMPONENTS
                        )
                    )
                )
        lines.append(
            _fit(
                "  speedup: baseline mean step / run's (samples/s if batches "
                "differ); Δ: mean ms"
            )
        )
        for row in comparison["rows"]:
            if not common.is_baseline(row):
                lines.append(_wrap("- " + row["explanation"], "  ").replace("  - ", "- ", 1))

    lines.extend(_workers_lines(report.get("workers") or []))

    lines.extend(_sweep_lines(report.get("sweeps") or []))

    lines.extend(_fixes_tried_lines(report.get("fixes_tried") or []))
    lines.extend(_prediction_lines(report.get("predictions") or []))

    if report["skipped"]:
        lines.append("")
        lines.append("SKIPPED")
        for item in report["skipped"]:
            lines.append(_wrap(f"{item['run']}: {item['reason']}", "  "))
    text = "\n".join(lines) + "\n"
    return _ascii(text) if ascii_only else text


def render_sweeps(sweeps, logdir=None, ascii_only=False):
    """Only the sweeps of a report (what `tb-devicecost sweep` prints).

    Args:
        sweeps: The report's `sweeps` (`tb_devicecost.analysis.find_sweeps`).
        logdir: The sweep's directory, named in the title. Defaults to `None`.
        ascii_only: Whether to write only ASCII characters. Defaults to `False`.
    """
    sweeps = common.neutralised(sweeps)
    title = "tb-devicecost sweep"
    if logdir is not None:
        title += f" under {common.neutral(logdir)}"
    lines = [_fit(title)]
    lines.extend(_sweep_lines(sweeps) or ["", "No sweep with two or more recorded runs."])
    lines.append("")
    lines.append(_wrap(
        "Every run is a run of the report: tb-devicecost report "
        f"{common.neutral(logdir) if logdir is not None else 'LOGDIR'} for each one's breakdown.",
        "",
    ))
    text = "\n".join(lines) + "\n"
    return _ascii(text) if ascii_only else text


def _sweep_lines(sweeps):
    """Each sweep: its devices' costs, samples/s per batch size, its sentence."""
    lines = []
    for sweep in sweeps:
        devices = list(sweep["devices"])
        lines.append("")
        lines.append(_fit(
            f"SWEEP {sweep['name']}: step = fixed + per sample × batch, fitted on "
            f"each run's {sweep['step_statistic']} step"
        ))
        lines.append(f"  {'DEVICE':<10} {'FIXED':>10} {'PER SAMPLE':>12}")
        for device in devices:
            fit = sweep["devices"][device]
            per_sample = fit["per_sample_us"]
            lines.append(_fit(
                f"  {device:<10} {fmt_ms_unit(fit['fixed_ms']):>10} "
                f"{(MISSING if per_sample is None else fmt_ms(per_sample) + ' µs'):>12}"
            ))
        by_batch = {}
        for device in devices:
            for point in sweep["devices"][device]["points"]:
                by_batch.setdefault(point["batch_size"], {})[device] = point["samples_per_s"]
        lines.append(_fit(
            f"  {'BATCH':>7} " + " ".join(f"{(d + ' samples/s')[:16]:>16}" for d in devices)
        ))
        for batch in sorted(by_batch):
            lines.append(_fit(
                f"  {fmt_count(batch):>7} "
                + " ".join(f"{fmt_count(by_batch[batch].get(d)):>16}" for d in devices)
            ))
        if sweep["message"]:
            lines.append(_wrap(sweep["message"], "  "))
        for problem in sweep["problems"]:
            lines.append(_wrap("note: " + problem, "  "))
    return lines


def render_fixes_tried(entries, ascii_only=False):
    """`tb-devicecost try`'s output: the FIXES TRIED section alone."""
    lines = _fixes_tried_lines(entries) or ["No fix could be tried."]
    text = "\n".join(line for line in lines).lstrip("\n")
    return _ascii(text) if ascii_only else text


def _fixes_tried_lines(entries):
    """What `try_fixes` measured of each change, best first."""
    if not entries:
        return []
    lines = ["", "FIXES TRIED: each change measured on this model against the baseline"]
    lines.append(f"  {'CHANGE':<22} {'PREDICTED':>9} {'MEASURED':>9} {'NOISE':>7}  RESULT")
    session = None
    for entry in entries:
        if entry.get("baseline") != session:
            session = entry.get("baseline")
            lines.append(_wrap(f"against {session}", "  "))
        noise = entry.get("noise")
        lines.append(_fit(
            f"  {_cut(str(entry['change']), 22):<22} "
            f"{common.fix_gain_text(entry.get('predicted')):>9} "
            f"{common.fix_gain_text(entry.get('measured')):>9} "
            f"{('±' + fmt_share(noise)) if isinstance(noise, (int, float)) else '-':>7}  "
            f"{common.fix_verdict_text(entry)}"
        ))
    lines.append(_wrap(common.FIXES_TRIED_TEXT, "  "))
    return lines


def _prediction_lines(pairs):
    """Each run with a fixed counterpart: the gain predicted and achieved."""
    if not pairs:
        return []
    lines = ["", "PREDICTIONS CHECKED: each fix's predicted gain beside the achieved one"]
    lines.append(
        f"  {'PREDICTED BY':<20} {'CHANGE':<28} {'PREDICTED':>9} {'ACHIEVED':>9} "
        f"{'RATIO':>6}"
    )
    for pair in pairs:
        lines.append(_wrap(f"{pair['run']} → {pair['counterpart']}", "  "))
        # The figures are never cut: the words before them give way.
        figures = (
            f"{common.predicted_text(pair):>9} "
            f"{fmt_speedup(pair['achieved_speedup']):>9} "
            f"{common.ratio_text(pair):>6}"
        )
        change = max(8, min(28, WIDTH - 24 - len(figures)))
        lines.append(
            f"  {_cut(common.predicted_by_text(pair), 20):<20} "
            f"{_cut(common.change_text(pair), change):<{change}} " + figures
        )
        if pair.get("unpredicted"):
            lines.append(_wrap("no prediction: " + common.neutral(pair["unpredicted"]), "    "))
    lines.append(_wrap(
        common.PREDICTIONS_TEXT + "; ratio: achieved over predicted, or whether a "
        "bound held. --json gives each pair's basis", "  "))
    return lines


def _workers_lines(groups):
    """The processes of each distributed job side by side, and its straggler."""
    lines = []
    for group in groups:
        lines.append("")
        # A process's run is the group's name with `process_<index>` in it.
        lines.append(_fit(
            f"PROCESSES of {group['group']}: {group['process_count']}, "
            f"{group['aligned_steps']} steps aligned, skew p50 "
            f"{fmt_ms_unit(group['skew_ms']['p50'])} p90 "
            f"{fmt_ms_unit(group['skew_ms']['p90'])}"
        ))
        lines.append(
            f"  {'PROCESS':<8} {'STEP p50':>10} {'WAITS p50':>10} {'WAIT':>6} "
            f"{'LOST TO IT':>10} STEADY VERDICT"
        )
        for entry in group["runs"]:
            marker = "*" if entry["run"] == group["straggler"] else " "
            lines.append(_fit(
                f" {marker}{entry['process_index']:<8} "
                f"{fmt_ms_unit((entry['step_ms'] or {}).get('p50')):>10} "
                f"{fmt_ms_unit(entry['wait_ms']['p50']):>10} "
                f"{fmt_share(entry['wait_share']):>6} "
                f"{fmt_share(entry['lost_share']):>10} "
                f"{entry['steady_verdict'] or entry['verdict'] or MISSING}"
            ))
            lines.extend(_wrap(text, "    ") for text in common.device_split_lines(entry))
        missing = common.missing_text(group)
        if missing:
            lines.append(_wrap(missing, "  "))
        for problem in group.get("problems") or ():
            lines.append(_wrap("note: " + problem, "  "))
        if group["straggler"]:
            lines.append(_wrap(
                f"* straggler: process {group['straggler_index']}, "
                f"{fmt_share(group['straggler_share'])} of all the processes' step time "
                f"lost to it, cause {group['cause'] or MISSING} (finding "
                "`straggler` above)", "  "))
        else:
            lines.append(_wrap(common.balance_text(group), "  "))
    return lines


def _cut(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


def _fit(line, width=WIDTH):
    return line if len(line) <= width else line[: width - 1] + "…"


def _ascii(text):
    """The few non-ASCII characters of the report, for a terminal without them."""
    for character, replacement in (
        ("Δ", "d"), ("…", "~"), (MISSING, "-"), ("\u2212", "-"),
        ("×", "x"), ("–", "-"), ("µ", "u"), ("\u2192", "->"), ("\u2264", "<="),
        ("\u2265", ">="),
    ):
        text = text.replace(character, replacement)
    return text

