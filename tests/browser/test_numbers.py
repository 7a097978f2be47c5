"""Honest numbers (issue 10): one formatting rule for the tab and the report,
and every statistic labelled."""

import os
import re
import subprocess
import sys
import urllib.parse

import pytest
from playwright.sync_api import expect

from tb_devicecost.analysis import formatting

from tests.support import paths
from tests.support.tab import open_compare, open_detail, report_of


pytestmark = [pytest.mark.browser, pytest.mark.slow]


FRONTEND = os.path.join(paths.REPO, "frontend")


@pytest.fixture(scope="module")
def cli_text(logdir):
    """What `tb-devicecost report LOGDIR` prints, on a UTF-8 terminal."""
    result = subprocess.run(
        [sys.executable, "-m", "tb_devicecost.cli", "report", logdir],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(os.environ, PYTHONIOENCODING="utf-8", TF_CPP_MIN_LOG_LEVEL="3"),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _cli_figures(text, name):
    """The report table's p50 step and shares for run `name`, as printed."""
    lines = text.splitlines()
    [header] = [line for line in lines if line.startswith("RUN ") and "VERDICT" in line]
    p50_end = re.search(r"STEP p50|p50", header).end()
    start = lines.index(next(line for line in lines if line.split(" ", 1)[0] == name))
    row = lines[start]
    step = re.search(r"(\S+ ms)$", row[:p50_end].rstrip()).group(1)
    shares_line = next(line for line in lines[start + 1:] if " wait " in line)
    wait, handover, compute, host = re.search(
        r"wait (\S+) (?:\(handover (\S+)\) )?compute (\S+) host (\S+)", shares_line).groups()
    # On the shares line, or on the wall line under it when that was recorded.
    after = lines[lines.index(shares_line):lines.index(shares_line) + 2]
    warmup = re.search(r"warm-up (\S+?),?(?:\s|$)", " ".join(after)).group(1)
    return {"p50": step, "data_wait": wait, "handover": handover, "compute": compute,
            "host_overhead": host, "warmup": warmup}


def _columns(table):
    """{header text: {run: cell text}} of a one-header-row table."""
    return table.evaluate(
        """table => {
          const heads = Array.from(table.tHead.rows[0].cells).map((th) => th.textContent.trim());
          const out = {};
          heads.forEach((h) => { out[h] = {}; });
          for (const tr of table.tBodies[0].rows) {
            Array.from(tr.cells).forEach((td, i) => {
              if (heads[i] !== undefined) out[heads[i]][tr.getAttribute('data-run')] = td.textContent.trim();
            });
          }
          return out;
        }"""
    )


def _statistic_columns(columns):
    """(statistic, header) for each column of step times in ms."""
    found = []
    for header in columns:
        if "(ms)" not in header or "step" not in header.lower():
            continue
        lower = header.lower()
        if "median" in lower or "p50" in lower:
            found.append(("p50", header))
        elif "mean" in lower:
            found.append(("mean", header))
        else:
            found.append((None, header))
    return found


def test_format_module_is_the_python_formatting_rule(browser):
    """frontend/format.js writes every value as tb_devicecost.analysis.formatting does."""
    values = [
        0.0, 0.0625, 1.005, 2.675, 9.996, 9.9949, 99.95, 99.96, 100.5, 1234.5, 123456.5,
        0.0005, 0.1235, 0.2291, 0.5934, 17.25, -0.0004, -1.5, 0.001, 0.0004, 0.042, 0.05,
        0.127, 0.1496, 0.14960, 0.29, 0.5, 0.7, 0.999, 1.0, 1.2, 0.625, 3.0, 31417.24,
        0.333, 1 / 3, 2 / 3, 0.00025, 12.345, 99.94,
    ]
    values += [n / 1000 for n in range(0, 1001, 7)] + [n / 64 for n in range(0, 6400, 37)]
    functions = {
        "fmtMs": formatting.fmt_ms, "fmtMsUnit": formatting.fmt_ms_unit,
        "fmtSignedMs": formatting.fmt_signed_ms, "fmtShare": formatting.fmt_share,
        "fmtCount": formatting.fmt_count, "fmtSpeedup": formatting.fmt_speedup,
        "fmtRate": formatting.fmt_rate,
    }
    page = browser.new_page()

    def serve(route):
        path = urllib.parse.urlsplit(route.request.url).path.lstrip("/") or "index.html"
        if path == "index.html":
            route.fulfill(body="<!doctype html><title>format</title>", content_type="text/html")
            return
        with open(os.path.join(FRONTEND, path), encoding="utf-8") as f:
            route.fulfill(body=f.read(), content_type="text/javascript")

    page.route("http://format.test/**", serve)
    page.goto("http://format.test/index.html")
    written = page.evaluate(
        """async ([values, names]) => {
          const f = await import('/format.js');
          const out = {};
          for (const name of names) {
            out[name] = values.map((v) => f[name](v));
            out[name].push(f[name](null), f[name](undefined), f[name](NaN), f[name](Infinity));
          }
          return out;
        }""",
        [values, list(functions)],
    )
    page.close()
    for name, python in functions.items():
        expected = [python(v) for v in values] + [python(None)] * 2 + [python(float("nan"))] * 1 + [
            python(float("inf"))
        ]
        mismatches = [
            (v, want, got) for v, want, got in zip(values + [None] * 4, expected, written[name])
            if want != got
        ]
        assert not mismatches, f"{name}: (value, Python, JavaScript) {mismatches[:10]}"


def test_the_tab_prints_the_numbers_the_report_prints(tab, cli_text):
    """Shares and milliseconds of a run read the same in the tab and the CLI."""
    page, frame, problems = tab
    for name in ("cpu/train", "slow/train"):
        cli = _cli_figures(cli_text, name)
        row = frame.locator(f'.dc-run-row[data-run="{name}"]')
        expect(row.locator('td[data-stat="p50"]')).to_have_text(cli["p50"].removesuffix(" ms"))
        expect(row.locator(".dc-warmup-pct")).to_have_text(cli["warmup"])
        bar = row.locator("svg.dc-share-bar")
        handover = f" (handover {cli['handover']})" if cli["handover"] else ""
        expect(bar).to_have_attribute(
            "aria-label",
            f"data wait {cli['data_wait']}{handover} \u00b7 compute {cli['compute']} \u00b7 "
            f"host overhead {cli['host_overhead']}",
        )
    open_detail(frame, "cpu/train")
    cli = _cli_figures(cli_text, "cpu/train")
    expect(frame.locator('.dc-stat[data-stat="p50"] .dc-stat-value')).to_have_text(cli["p50"])
    for component, label in (("data_wait", "data wait"), ("compute", "compute"),
                              ("host_overhead", "host overhead")):
        expect(
            frame.locator(f'table.dc-percentiles tr[data-component="{label}"] td').last
        ).to_have_text(cli[component])
    assert problems["page_errors"] == []


def test_every_step_column_holds_the_statistic_its_label_names(tab, logdir, cli_text):
    """p50 where a label says p50 or median, the mean where it says mean; the
    same run's p50 reads the same in the overview, the detail, the comparison
    and the report."""
    page, frame, problems = tab
    runs = {run["run"]: run for run in report_of(logdir)["runs"]}
    names = ["cpu/train", "slow/train"]
    expected = {
        name: {"p50": formatting.fmt_ms(runs[name]["step_ms"]["p50"]),
               "mean": formatting.fmt_ms(runs[name]["step_ms"]["mean"])}
        for name in names
    }
    for name in names:
        assert _cli_figures(cli_text, name)["p50"] == expected[name]["p50"] + " ms"

    def check(table, must_show):
        columns = _columns(table)
        statistics = _statistic_columns(columns)
        assert {stat for stat, _ in statistics} >= set(must_show), columns.keys()
        for stat, header in statistics:
            assert stat is not None, f"{header!r} does not name its statistic"
            for name in names:
                assert columns[header][name] == expected[name][stat], (header, name)

    check(frame.locator("table.dc-runs"), ["p50"])
    # Samples/s is of the mean step, and its header says so (issue 23).
    overview = _columns(frame.locator("table.dc-runs"))
    assert "Samples/s (mean step)" in overview, overview.keys()
    assert "Warm-up (share of wall time)" in overview, overview.keys()
    open_compare(frame, names)
    check(frame.locator("table.dc-compare-table"), ["p50", "mean"])
    speedup = [h for h in _columns(frame.locator("table.dc-compare-table")) if "speedup" in h.lower()]
    assert speedup and "mean" in speedup[0].lower()  # the speedup says it is from means

    frame.locator(".dc-back").first.click()
    open_detail(frame, "slow/train")
    expect(frame.locator('.dc-stat[data-stat="p50"] .dc-stat-label')).to_have_text(
        re.compile("p50", re.IGNORECASE)
    )
    expect(frame.locator('.dc-stat[data-stat="p50"] .dc-stat-value')).to_have_text(
        expected["slow/train"]["p50"] + " ms"
    )
    expect(frame.locator('.dc-stat[data-stat="mean"] .dc-stat-label')).to_have_text(
        re.compile("mean", re.IGNORECASE)
    )
    expect(frame.locator('.dc-stat[data-stat="mean"] .dc-stat-value')).to_have_text(
        expected["slow/train"]["mean"] + " ms"
    )
    assert problems["page_errors"] == []
