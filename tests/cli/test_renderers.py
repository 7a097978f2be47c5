"""`tb_devicecost.cli.renderers`: a report as a terminal table, Markdown and JSON.

Reports of hand-made runs: a CPU and a GPU run of one model (so there is a
comparison), a run with a name longer than the table's column, and a run
whose device and batch size are unknown.
"""

import json

import pytest

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.cli.renderers import common
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import jsonrenderer
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.format import vocabulary

from tests.support.documents import (
    cpu_placement,
    gpu_placement,
    make_aggregate,
    make_record,
    make_trace,
)


@pytest.fixture(scope="module")
def report():
    bare = cpu_placement()
    bare["ops"], bare["variables"], bare["devices"] = {}, {}, {}
    records = [
        make_record("cpu/train", aggregate=make_aggregate(
            0.1, 0.8, 0.05, batch_size=10, warmup_ms=300.0)),
        make_record("gpu/train", aggregate=make_aggregate(
            0.1, 1.9, 0.05, batch_size=10, warmup_ms=1800.0),
            placement=gpu_placement(), trace=make_trace(0.03)),
        make_record("a/run/name/longer/than/the/column/train",
                            aggregate=make_aggregate(3.0, 1.0, 0.5, spikes=4)),
        make_record("bare/train", aggregate=make_aggregate(
            0.1, 2.0, 0.1, batch_size=None), placement=bare, info={"batch_size": None}),
        make_record("empty/train"),
    ]
    return words.build_report(records)


def test_console_fits_80_columns_and_shows_every_part(report):
    text = console.render(report, "logs")
    lines = text.splitlines()
    assert lines[0] == "tb-devicecost report: 4 runs under logs"
    assert not [line for line in lines if len(line) > console.WIDTH]
    for heading in ("FINDINGS", "COMPARISON against cpu/train", "SKIPPED"):
        assert heading in lines, heading
    gpu = next(line for line in lines if line.startswith("gpu/train"))
    run = {run["run"]: run for run in report["runs"]}["gpu/train"]
    assert formatting.fmt_ms_unit(run["step_ms"]["p50"]) in gpu
    assert gpu.split()[-1] == run["verdict"] == "warmup_dominated"
    # A name too long for its column gets a line of its own.
    assert "a/run/name/longer/than/the/column/train" in lines
    bare = next(line for line in lines if line.startswith("bare/train"))
    assert bare.split()[1:3] == [formatting.MISSING, formatting.MISSING]


def test_console_in_ascii_for_a_terminal_without_blocks(report):
    text = console.render(report, "logs", ascii_only=True)
    assert text.isascii()
    assert "#" in text and "█" not in text
    bare = next(line for line in text.splitlines() if line.startswith("bare/train"))
    assert bare.split()[1:3] == ["-", "-"]


def test_share_bar_is_always_full_width():
    for shares in (
        {"data_wait": 1 / 3, "compute": 1 / 3, "host_overhead": 1 / 3},
        {"data_wait": 0.0, "compute": 1.0, "host_overhead": 0.0},
        {"data_wait": 0.005, "compute": 0.99, "host_overhead": 0.005},
    ):
        assert len(console.share_bar(shares, width=26)) == 26
    shares = {"data_wait": 0.5, "compute": 0.25, "host_overhead": 0.25}
    assert console.share_bar(shares, 8) == "████▓▓░░"
    assert console.share_bar(shares, 8, characters=console.ASCII_BARS) == "####==--"
    assert console.share_bar(dict.fromkeys(vocabulary.COMPONENTS), 5) == "     "


def test_markdown_tables_keep_their_columns(report):
    lines = markdown.render(report).splitlines()
    for header in ("| Run | Device", "| Run | Total", "| Run | Against"):
        start = next(i for i, line in enumerate(lines) if line.startswith(header))
        columns = lines[start].count("|")
        rows = []
        for line in lines[start + 1:]:
            if not line.startswith("|"):
                break
            rows.append(line)
        assert rows and all(row.count("|") == columns for row in rows), header
    assert "### Comparison against `cpu/train`" in lines
    assert "- `empty/train`: It holds tb-devicecost documents but no recorded step yet " \
        "(the fit may still be in its first epoch)." in lines


def test_markdown_escapes_table_cells():
    run = {
        "run": "a|b", "device": "CPU:0", "batch_size": 1, "step_ms": {"p50": 1.0},
        "samples_per_s": 1.0, "shares": dict.fromkeys(vocabulary.COMPONENTS, 1 / 3),
        "warmup_ms": None, "warmup_share_of_wall": None, "verdict": "compute_bound",
        "steady_verdict": "compute_bound", "findings": [], "problems": [],
    }
    out = markdown.render({"runs": [run], "comparison": None, "skipped": []})
    assert "`a\\|b`" in out


def test_json_is_the_report_and_refuses_nan(report):
    assert json.loads(jsonrenderer.render(report)) == json.loads(json.dumps(report))
    with pytest.raises(ValueError):
        jsonrenderer.render({"runs": [float("nan")]})


def test_each_fix_is_followed_by_what_it_would_buy(report):
    """gpu/train: 2.05 ms mean steps of 10 samples, its device busy 0.06 ms
    of each (the trace): 1.99 ms fixed, 6 µs per sample. Half busy at
    10 x 1.99 / 0.06 = 332 samples, capped at 32 x 10 = 320, so batch 256:
    1.99 + 256 x 0.006 = 3.526 ms a step, 72,604 samples/s against
    10 / 2.05 ms = 4,878, 14.9 times as many."""
    lines = console.render(report, "logs").splitlines()
    start = lines.index("  [high] latency_bound")
    block = lines[start:start + 16]
    fix = next(i for i, line in enumerate(block) if line.startswith("    Fix: "))
    expected = next(i for i, line in enumerate(block) if line.startswith("    Expected: "))
    assert fix < expected
    assert not [line for line in block[fix + 1:expected] if not line.startswith("    ")]
    assert block[expected].startswith(
        "    Expected: at least 14x the samples/s at batch 256 (72,000 instead of "
    )
    text = markdown.render(report)
    assert "  *Expected:* at least 14x the samples/s at batch 256 (72,000 instead of 4,878). How: " in text
    # A finding without an estimate says why, beside its fix too.
    assert "Expected: no estimate: " in console.render(report, "logs")


def test_findings_read_as_headlines_with_details_on_request(report):
    """Text and Markdown show each finding's headline, then its fix and
    gain; the arithmetic (its message) only with `verbose` (`--verbose`)."""
    findings = [finding for run in report["runs"] for finding in run["findings"]]
    detailed = [finding for finding in findings if finding["message"] != finding["headline"]]
    assert detailed
    short = console.render(report, "logs")
    long = console.render(report, "logs", verbose=True)
    flat = " ".join(short.split())
    for finding in findings:
        assert " ".join(finding["headline"].split()) in flat, finding["id"]
    assert "Details: " not in short
    assert long.count("    Details: ") == len(detailed)
    assert not [line for line in long.splitlines() if len(line) > console.WIDTH]
    assert "*Details:*" not in markdown.render(report)
    assert markdown.render(report, verbose=True).count("  *Details:* ") == len(detailed)


def test_each_column_says_its_statistic_and_warm_up_reads_the_same(report):
    """One statistic per column, named in its header (p50 step, samples/s of
    the mean step), and warm-up described in the words of the JSON's
    warmup_steps in the terminal legend and both Markdown footnotes."""
    lines = console.render(report, "logs").splitlines()
    header = next(line for line in lines if line.startswith("RUN ") and "VERDICT" in line)
    under = lines[lines.index(header) + 1]
    assert under.strip() == "mean step"
    assert header.index("SAMPLES/S") + len("SAMPLES/S") == len(under.rstrip())
    assert "STEP p50" in header
    text = markdown.render(report)
    assert "| p50 step | Samples/s (mean step) |" in text
    legend = " ".join(" ".join(lines).split())
    assert common.WARMUP_TEXT in legend
    assert text.count(common.WARMUP_TEXT.split(" is ", 1)[1]) == 2


def test_share_bar_shades_the_handover_apart_from_waiting():
    """Issue 23: the data wait's cells start with the part spent handing over
    ready batches, in its own character; the bar stays full width."""
    shares = {"data_wait": 0.5, "compute": 0.25, "host_overhead": 0.25}
    assert console.share_bar(shares, 8, handover=0.25) == "▒▒██▓▓░░"
    assert console.share_bar(shares, 8, characters=console.ASCII_BARS, handover=0.25,
                             handover_character=console.ASCII_HANDOVER_BAR) == "::##==--"
    # All of the wait a handover: no waiting cell at all.
    assert console.share_bar(shares, 8, handover=0.5) == "▒▒▒▒▓▓░░"
    # Never more than the data wait, and none without one.
    assert console.share_bar(shares, 8, handover=0.9) == "▒▒▒▒▓▓░░"
    assert console.share_bar(shares, 8, handover=None) == "████▓▓░░"
    for handover in (0.001, 0.1, 1 / 3):
        assert len(console.share_bar(shares, 26, handover=handover)) == 26


def test_a_pipeline_that_keeps_up_reads_as_handover_not_waiting():
    """A pipeline whose batches are ready (its whole 0.2 ms data wait is the
    0.2 ms fetch floor) beside a starved one (5 ms waits, the same floor):
    the report's `handover_share` is all of the first's data wait and a
    sliver of the second's, and the terminal's bar, its text and its
    legend, and the Markdown's data-wait cell, say so."""
    records = [
        make_record("ready/train", aggregate=make_aggregate(
            0.2, 0.6, 0.2, fetch_floor_ms=0.2)),
        make_record("starved/train", aggregate=make_aggregate(
            5.0, 4.0, 1.0, fetch_floor_ms=0.2)),
    ]
    report = words.build_report(records)
    runs = {run["run"]: run for run in report["runs"]}
    ready, starved = runs["ready/train"], runs["starved/train"]
    # Figures of the aggregates above: 0.2 of 1.0 ms, and 0.2 of 10 ms.
    assert ready["shares"]["data_wait"] == pytest.approx(0.2)
    assert ready["handover_share"] == pytest.approx(0.2)
    assert starved["handover_share"] == pytest.approx(0.02)
    lines = console.render(report).splitlines()
    assert not [line for line in lines if len(line) > console.WIDTH]

    def bar_line(name):
        return lines[lines.index(next(line for line in lines if line.startswith(name))) + 1]

    bar, text = bar_line("ready/train").split(None, 1)
    assert set(bar[:5]) == {console.HANDOVER_BAR} and console.BARS[0] not in bar
    assert text.startswith("wait 20% (handover 20%) compute 60% host 20%")
    bar, text = bar_line("starved/train").split(None, 1)
    assert bar.count(console.HANDOVER_BAR) == 1 and bar.count(console.BARS[0]) == 12
    assert text.startswith("wait 50% (handover 2%) compute 40% host 10%")
    flat = " ".join(lines)
    assert f"{console.HANDOVER_BAR} handover: the part of the data wait spent handing over" in flat
    ascii_text = console.render(report, ascii_only=True)
    assert ascii_text.isascii() and console.ASCII_HANDOVER_BAR * 5 in ascii_text
    table = markdown.render(report)
    assert "| 20% (handover 20%) | 60% |" in table
    assert "| 50% (handover 2%) | 40% |" in table
    assert "Handover: the part of the data wait" in table


def test_a_prediction_s_figures_are_never_cut():
    # Issue 35, item 9: a long predicted figure pushed the line past 80
    # characters and the ratio read "1.~"; the words give way instead.
    from tb_devicecost.cli.renderers import console

    pair = {"run": "a/naive-gpu0/train", "counterpart": "a/fixed-gpu0/train",
            "predicted_by": "input_bound", "change": "input_pipeline",
            "predicted": {"bound": "at_most"}, "predicted_speedup": 1234.5,
            "extrapolated": True, "achieved_speedup": 1.25, "achieved_over_predicted": 0.0010125}
    lines = console._prediction_lines([pair])
    [row] = [line for line in lines if "input_bound" in line and "→" not in line]
    assert row.rstrip().endswith("1.25x  0.00x"), row
    assert "~" not in row and "1,234.50x*" in row, row
