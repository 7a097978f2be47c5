"""The `tb-devicecost` command: `tb-devicecost report LOGDIR`.

Prints, for every run under LOGDIR that holds tb-devicecost summaries, where
each step's time went, the verdict with its fixes, and how the runs compare:
as a table for the terminal (default), `--json` (the stable machine
interface, documented in `docs/CLI.md`) or `--markdown`.

Exit status: 0 on success; 2, with a one-line reason on stderr, when LOGDIR
does not exist, holds no run with our data, or an option is wrong.
"""

import argparse
import json
import os
import sys
import textwrap

from tb_devicecost import analysis
from tb_devicecost import formatting
from tb_devicecost import version

PROG = "tb-devicecost"
WIDTH = 80
_USAGE = "tb-devicecost report LOGDIR [--baseline RUN] [--json | --markdown]"
# Character bars for the shares: data wait, compute, host overhead.
_BARS = ("█", "▓", "░")
_ASCII_BARS = ("#", "=", "-")
_BAR_WIDTH = 26
_RUN_WIDTH = 22


class UsageError(Exception):
    """A wrong command line or log directory: exit 2 with one line."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that `main` turns into exit 2."""

    def error(self, message):
        raise UsageError(f"{message} (usage: {_USAGE})")


def _build_parser():
    parser = _Parser(
        prog=PROG,
        description=(
            "Where each Keras training step's time went (data wait, compute, "
            "host overhead, warm-up), with a verdict, fixes and a comparison "
            "of runs."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version.__version__}"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    report = commands.add_parser(
        "report",
        help="report every run under a log directory",
        description=(
            "Report every run under LOGDIR (any depth) recorded by "
            "DeviceCostCallback or StepRecorder."
        ),
    )
    report.add_argument(
        "logdir", metavar="LOGDIR", help="the directory given to tensorboard --logdir"
    )
    report.add_argument(
        "--baseline",
        metavar="RUN",
        help=(
            "run to compare the others against, e.g. cpu/train; runs of another "
            "role (validation, evaluation) are compared with its run of that "
            "role (default: each run against the same model trained on the "
            "CPU, the run whose name differs only in the device; runs without "
            "one are not compared)"
        ),
    )
    output = report.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print the report as JSON (docs/CLI.md)"
    )
    output.add_argument(
        "--markdown", action="store_true", help="print the report as Markdown"
    )
    return parser


def main(argv=None):
    """Runs the command; returns the exit status (0, or 2 on a usage error)."""
    parser = _build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:  # --help and --version
            return exit_.code if isinstance(exit_.code, int) else 0
        if args.command is None:
            raise UsageError(
                f"choose a command, e.g. 'tb-devicecost report logs' (usage: {_USAGE})"
            )
        return _report(args)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


def _verdict_text(run):
    """`input_bound`, or `warmup_dominated (steady state: compute_bound)`."""
    text = run["verdict"] or "no verdict"
    if run["steady_verdict"] and run["steady_verdict"] != run["verdict"]:
        text += f" (steady state: {run['steady_verdict']})"
    return text


def _row_deltas(row):
    """Whether a comparison row is per 1000 samples, and its deltas so."""
    per_sample = row["basis"] == "samples_per_s"
    return per_sample, row["delta_per_1000_samples_ms" if per_sample else "delta_ms"]


def _load_records(logdir):
    if not os.path.exists(logdir):
        raise UsageError(
            f"log directory {logdir!r} does not exist; pass the directory that "
            "holds your runs (the parent of DeviceCostCallback's log_dir), e.g. 'logs'"
        )
    if not os.path.isdir(logdir):
        raise UsageError(
            f"{logdir!r} is a file, not a log directory; pass the directory that "
            "holds your runs, e.g. 'logs'"
        )
    _avoid_tensorflow_import()
    from tb_devicecost import reader  # Loads TensorBoard's event reading.

    try:
        provider = reader.local_provider(logdir)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return reader.read_runs(provider)


def _avoid_tensorflow_import():
    """Lets TensorBoard read local event files without importing TensorFlow.

    TensorBoard imports TensorFlow when it is installed, which takes seconds
    and logs to stderr; its own stub reads local files just as well. Only
    done when TensorFlow is not loaded already (as inside a training process).
    """
    if "tensorflow" in sys.modules or "tensorboard.compat.notf" in sys.modules:
        return
    import types

    sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")


def _report(args):
    records = _load_records(args.logdir)
    if not records:
        raise UsageError(
            f"no run under {args.logdir!r} holds tb-devicecost data; record one "
            "with model.fit(..., callbacks=[tb_devicecost.DeviceCostCallback("
            "'logs/cpu')]) and pass 'logs'"
        )
    try:
        report = analysis.build_report(records, baseline=args.baseline)
    except ValueError as error:
        raise UsageError(str(error)) from None
    known = {record.run for record in records}
    report["skipped"].extend(
        {
            "run": run,
            "reason": "Its event files hold no readable tb-devicecost summaries "
            "(only other summaries, or the files are unreadable).",
        }
        for run in _event_file_runs(args.logdir)
        if run not in known
    )
    if not report["runs"]:
        reasons = "; ".join(
            f"{item['run']}: {item['reason']}" for item in report["skipped"]
        )
        raise UsageError(
            f"no run under {args.logdir!r} could be reported ({_one_line(reasons)})"
        )
    if args.json:
        for item in report["skipped"]:
            print(
                f"{PROG}: skipped {item['run']}: {_one_line(item['reason'])}",
                file=sys.stderr,
            )
        text = json.dumps(report, indent=2, allow_nan=False)
    elif args.markdown:
        text = render_markdown(report)
    else:
        bars = _bar_characters()
        text = render_text(report, args.logdir, bars=bars)
        if bars == _ASCII_BARS:
            text = _ascii(text)
    _write(text)
    return 0


def _event_file_runs(logdir):
    """Run names (as TensorBoard names them) of directories with event files."""
    runs = []
    for directory, subdirectories, files in os.walk(logdir):
        subdirectories.sort()
        if any("tfevents" in name for name in files):
            relative = os.path.relpath(directory, logdir)
            runs.append("." if relative == os.curdir else relative.replace(os.sep, "/"))
    return runs


def _one_line(text):
    return " ".join(str(text).split())


def _write(text):
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except UnicodeEncodeError:
        encoding = sys.stdout.encoding or "ascii"
        sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))
        sys.stdout.write("\n")


def _ascii(text):
    """The few non-ASCII characters of the report, for a terminal without them."""
    for character, replacement in (
        ("Δ", "d"), ("…", "~"), (formatting.MISSING, "-"), ("\u2212", "-"),
        ("×", "x"), ("–", "-"), ("µ", "u"),
    ):
        text = text.replace(character, replacement)
    return text


def _bar_characters(stream=None):
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        "".join(_BARS).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return _ASCII_BARS
    return _BARS


# Shared formatting: every figure through `tb_devicecost.formatting`, the
# rule the findings and the tab use too.

_MISSING = formatting.MISSING


def _ms(value):
    return formatting.fmt_ms_unit(value)


def _share(value):
    return formatting.fmt_share(value)


def _count(value):
    return formatting.fmt_count(value)


def _signed_ms(value):
    return formatting.fmt_signed_ms(value)


def _is_baseline(row):
    return row.get("is_baseline", row["run"] == row.get("against"))


def _speedup(row):
    return "baseline" if _is_baseline(row) else formatting.fmt_speedup(row["speedup"])


def _wall_text(run):
    """`wall 12,345 ms: steps 80%, warm-up 10%, ...`: the fit's whole time."""
    wall = run.get("wall_ms") or {}
    shares = run.get("wall_shares") or {}
    if not wall.get("total"):
        return "wall: not recorded (older data); time between steps unknown"
    return (
        f"wall {_ms(wall['total'])}: steps {_share(shares.get('steps'))}, "
        f"warm-up {_share(shares.get('warmup'))}, between steps "
        f"{_share(shares.get('between_steps'))}, measuring "
        f"{_share(shares.get('measurement'))}"
    )


def _row_groups(rows):
    """Rows grouped by the run they are compared with, in order."""
    groups = {}
    for row in rows:
        groups.setdefault(row.get("against") or row["run"], []).append(row)
    return list(groups.items())


def share_bar(shares, width=_BAR_WIDTH, characters=_BARS):
    """A bar of `width` characters split by the steady-state shares."""
    values = [shares.get(name) or 0.0 for name in analysis.COMPONENTS]
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
        _one_line(text),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    )


# The terminal table.


def render_text(report, logdir=None, bars=_BARS):
    """The default output: fits an 80-column terminal."""
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
    for run in runs:
        name = run["run"]
        cell = name
        if len(name) > _RUN_WIDTH:
            lines.append(_fit(name))
            cell = ""
        lines.append(
            _fit(
                f"{cell:<{_RUN_WIDTH}} {(run['device'] or _MISSING):<7} "
                f"{_count(run['batch_size']):>6} {_ms(run['step_ms']['p50']):>10} "
                f"{_count(run['samples_per_s']):>10} {run['verdict'] or _MISSING}"
            )
        )
        shares = run["shares"]
        detail = (
            f"wait {_share(shares['data_wait'])} compute {_share(shares['compute'])} "
            f"host {_share(shares['host_overhead'])}"
        )
        if run["warmup_share_of_wall"] is not None:
            detail += f"  warm-up {_share(run['warmup_share_of_wall'])}"
        lines.append(_fit(f"  {share_bar(shares, characters=bars)}  {detail}"))
        lines.append(_fit(f"  {_wall_text(run)}"))
    lines.append(
        _fit(
            f"  {bars[0]} data wait  {bars[1]} compute  {bars[2]} host overhead: "
            "shares of the total steady-state time"
        )
    )
    lines.append(
        _fit(
            "  warm-up: share of the fit's wall time; wall: the fit's whole time, "
            "in parts"
        )
    )

    lines.append("")
    lines.append("FINDINGS")
    for run in runs:
        lines.append("")
        heading = f"{run['run']}: {_verdict_text(run)}"
        if run["status"] in ("running", "interrupted"):
            heading += f" [{run['status']}]"
        lines.append(_fit(heading))
        for finding in run["findings"]:
            lines.append(f"  [{finding['severity']}] {finding['id']}")
            lines.append(_wrap(finding["message"], "    "))
            lines.append(_wrap("Fix: " + finding["fix"], "    "))
        for problem in run["problems"]:
            lines.append(_wrap("Note: " + problem, "  "))

    comparison = report["comparison"]
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
                per_sample, deltas = _row_deltas(row)
                cell = row["run"]
                if len(cell) > _RUN_WIDTH:
                    lines.append(_fit(cell))
                    cell = ""
                if _is_baseline(row):
                    lines.append(_fit(f"{cell:<{_RUN_WIDTH}} {_speedup(row):>8}"))
                    continue
                lines.append(
                    _fit(
                        f"{cell:<{_RUN_WIDTH}} {_speedup(row):>8} "
                        f"{('1k samples' if per_sample else 'step'):>10} "
                        + " ".join(
                            f"{_signed_ms(deltas[name]):>10}"
                            for name in analysis.COMPONENTS
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
            if not _is_baseline(row):
                lines.append(_wrap("- " + row["explanation"], "  ").replace("  - ", "- ", 1))

    if report["skipped"]:
        lines.append("")
        lines.append("SKIPPED")
        for item in report["skipped"]:
            lines.append(_wrap(f"{item['run']}: {item['reason']}", "  "))
    return "\n".join(lines) + "\n"


def _fit(line, width=WIDTH):
    return line if len(line) <= width else line[: width - 1] + "…"


# Markdown.


def _md_cell(text):
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_code(text):
    text = str(text)
    if "`" in text:
        return _md_cell(text)
    return f"`{_md_cell(text)}`"


def render_markdown(report):
    """The report as GitHub-flavoured Markdown, for pull requests and CI."""
    lines = ["## tb-devicecost report", ""]
    lines.append(
        "| Run | Device | Batch | Step p50 | Samples/s | Data wait | Compute "
        "| Host overhead | Warm-up | Verdict |"
    )
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for run in report["runs"]:
        shares = run["shares"]
        warmup = _MISSING
        if run["warmup_ms"] is not None:
            warmup = f"{_ms(run['warmup_ms'])} ({_share(run['warmup_share_of_wall'])})"
        lines.append(
            "| "
            + " | ".join(
                [
                    _md_code(run["run"]),
                    _md_cell(run["device"] or _MISSING),
                    _count(run["batch_size"]),
                    _ms(run["step_ms"]["p50"]),
                    _count(run["samples_per_s"]),
                    _share(shares["data_wait"]),
                    _share(shares["compute"]),
                    _share(shares["host_overhead"]),
                    warmup,
                    f"**{run['verdict'] or _MISSING}**",
                ]
            )
            + " |"
        )
    lines.append("")
    lines.append(
        "Shares are of the total steady-state time; warm-up is the first step "
        "of each fit and its share of the fit's wall time."
    )
    lines.extend(_md_wall_table(report["runs"]))
    lines.append("")
    lines.append("### Findings")
    for run in report["runs"]:
        lines.append("")
        lines.append(f"#### {_md_code(run['run'])}: {_verdict_text(run)}")
        lines.append("")
        for finding in run["findings"]:
            lines.append(
                f"- **{finding['severity']}** `{finding['id']}`: "
                f"{_md_cell(finding['message'])}  "
            )
            lines.append(f"  *Fix:* {_md_cell(finding['fix'])}")
        for problem in run["problems"]:
            lines.append(f"- *Note:* {_md_cell(problem)}")
    comparison = report["comparison"]
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
            per_sample, deltas = _row_deltas(row)
            baseline = _is_baseline(row)
            lines.append(
                "| "
                + " | ".join(
                    [
                        _md_code(row["run"]),
                        _md_code(row.get("against") or row["run"]),
                        _speedup(row),
                        ""
                        if baseline
                        else "ms per 1000 samples" if per_sample else "ms per step",
                    ]
                    + [
                        "" if baseline else _signed_ms(deltas[name])
                        for name in analysis.COMPONENTS
                    ]
                )
                + " |"
            )
        lines.append("")
        for row in comparison["rows"]:
            if not _is_baseline(row):
                lines.append(f"- {_md_cell(row['explanation'])}")
    if report["skipped"]:
        lines.append("")
        lines.append("### Skipped")
        lines.append("")
        for item in report["skipped"]:
            lines.append(f"- {_md_code(item['run'])}: {_md_cell(_one_line(item['reason']))}")
    return "\n".join(lines) + "\n"


def _md_wall_table(runs):
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
        cells = [_md_code(run["run"]), _ms(wall.get("total"))]
        for key in analysis.WALL_PARTS:
            cell = _ms(wall.get(key))
            if wall.get(key) is not None and shares.get(key) is not None:
                cell += f" ({_share(shares[key])})"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Steps: the steady steps; between steps: epoch starts, validation and "
        "callbacks at epoch end; measurement: the tool's own measurements kept "
        "out of the steps."
        + (
            f" {_MISSING}: not recorded (written by an older tb-devicecost)."
            if unknown
            else ""
        )
    )
    return lines


if __name__ == "__main__":
    sys.exit(main())
