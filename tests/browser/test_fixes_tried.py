"""The tab's "Fixes tried" panel and the tried gain beside a finding's
prediction, from a real `try_fixes` run (issue 34)."""

import os

import pytest
from playwright.sync_api import expect

from tb_devicecost.analysis import formatting
from demo import serve

from tests.support.scripts import run_backend_script
from tests.support.tab import open_detail, open_tab, report_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_fixes_tried_are_shown_as_the_report_gives_them(browser, tmp_path, screenshots):
    """JAX on this CPU, arrays in memory: `try_fixes` with a small budget
    records a baseline and each change as runs; the overview's panel lists
    every change with the report's figures (as text, in its order), the
    advised one marked, and the baseline's findings say what their change
    measured beside their prediction."""
    run_backend_script("trial_fits.py", "jax", tmp_path, "arrays",
                       "steps_per_execution,workers,batch_size")
    logdir = str(tmp_path)
    report = report_of(logdir)
    entries = report["fixes_tried"]
    assert {entry["change"] for entry in entries} >= {"input_free", "steps_per_execution"}
    process, url = serve.start_tensorboard(logdir, expected_runs=len(report["runs"]))
    try:
        page, frame, problems = open_tab(browser, url, rows=len(report["runs"]))
        table = frame.locator(".dc-fixes-tried table.dc-fixes-tried-table")
        table.scroll_into_view_if_needed()
        rows = table.locator("tbody tr.dc-fix-tried")
        expect(rows).to_have_count(len(entries))
        for index, entry in enumerate(entries):
            row = rows.nth(index)
            expect(row).to_have_attribute("data-change", entry["change"])
            expect(row.locator(".dc-fix-measured")).to_have_text(
                formatting.fmt_speedup(entry["measured"]))
            expect(row.locator(".dc-fix-noise")).to_have_text(
                "\u00b1" + formatting.fmt_share(entry["noise"]))
            expect(row.locator(".dc-fix-predicted")).to_have_text(
                formatting.fmt_speedup(entry["predicted"]) if entry["predicted"] else "\u2014")
            result = row.locator(".dc-fix-result")
            if entry["ceiling"]:
                expect(result).to_have_text("ceiling")
            elif entry["advised"]:
                expect(result).to_have_text("ADVISED")
                expect(row).to_have_class("dc-fix-tried dc-fix-advised")
            elif entry["slower"]:
                expect(result).to_have_text("slower")
        page.screenshot(path=os.path.join(screenshots, "fixes_tried.png"), full_page=True)
        # "What this means" names the fix and its gain: the tried one where
        # the run it names is the baseline with a change advised.
        base = next(run for run in report["runs"] if run["run"] == "tried/baseline/train")
        named = frame.locator(".dc-summary-run")
        if named.count() and named.text_content() == base["run"] and base["advised"]:
            expect(frame.locator(".dc-summary-fix")).to_contain_text(
                "Tried: " + base["advised"]["change"] + ", "
                + formatting.fmt_speedup(base["advised"]["measured"]))

        # The baseline's findings: the tried gain beside the prediction.
        base = next(run for run in report["runs"] if run["run"] == "tried/baseline/train")
        tried = [f for f in base["findings"] if f.get("tried")]
        assert tried, base["findings"]
        open_detail(frame, "tried/baseline/train")
        for finding in tried:
            item = frame.locator(f'.dc-finding[data-finding="{finding["id"]}"]')
            expect(item.locator(".dc-finding-tried")).to_have_text(
                f" ({finding['tried']['text']})")
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)
