"""The comparison: the speedup and the reason, kept across a reload."""

import os
import re

import pytest
from playwright.sync_api import expect

from tests.support import plugin_runs
from tests.support.tab import device_cost_frame, open_compare


pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_compare_shows_the_speedup_and_the_reason(tab, screenshots):
    page, frame, problems = tab
    for run in ("cpu/train", "slow/train"):
        frame.locator(f'.dc-run-row[data-run="{run}"] input[type="checkbox"]').check()
    frame.get_by_role("button", name="Compare").click()
    # The two runs are not the same model on two devices: no baseline is
    # chosen for the user, who chooses one.
    select = frame.locator(".dc-compare select.dc-baseline")
    expect(select).to_be_visible(timeout=30_000)
    select.select_option("cpu/train")
    explanation = frame.locator(".dc-compare .dc-explanation").filter(has_text="slow/train")
    expect(explanation.first).to_be_visible(timeout=30_000)
    speedup = frame.locator('.dc-compare-table .dc-compare-row[data-run="slow/train"] .dc-speedup')
    expect(speedup).to_have_text(re.compile(r"^\d\.\d\dx"))
    # Two models, not one on two devices: the row says so (issue 23).
    expect(speedup.locator(".dc-different-model")).to_have_text(
        "different model: not a device comparison")
    expect(frame.locator(".dc-baseline-note")).to_contain_text("cpu/train")
    page.screenshot(path=os.path.join(screenshots, "compare.png"), full_page=True)
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []


def test_a_reload_keeps_the_compare_view(tab):
    page, frame, problems = tab
    names = ["cpu/train", f"{plugin_runs.XSS_RUN_DIR}/train"]
    open_compare(frame, names)
    baseline = frame.locator(".dc-compare select.dc-baseline").input_value()
    expect(page).to_have_url(re.compile(r"p\.devicecost\.view=compare"))
    page.reload()
    frame = device_cost_frame(page)
    rows = frame.locator(".dc-compare-table .dc-compare-row")
    expect(rows).to_have_count(2, timeout=60_000)
    assert sorted(rows.evaluate_all("rows => rows.map((r) => r.getAttribute('data-run'))")) == sorted(names)
    assert frame.locator(".dc-compare select.dc-baseline").input_value() == baseline
    assert frame.locator("img[src='x']").count() == 0
    assert problems["dialogs"] == []
    assert problems["page_errors"] == []
