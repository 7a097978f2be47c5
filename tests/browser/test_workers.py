"""The workers view: the processes of a distributed fit side by side, the
straggler named."""

import os

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support.tab import open_tab


pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_workers_view_names_the_straggler_of_a_distributed_fit(browser, jax_job, screenshots):
    """Two two-process JAX jobs (jax.distributed on gloo, DataParallel), one
    with process 1 slowed a batch (the session's `jax_job`, shared with
    analysis/test_workers.py): the tab shows each job's processes side by
    side, the slowed one as the straggler with its cause and fix and the
    report's figures, the other job as keeping pace; the straggler's detail
    carries the same finding."""
    logdir = jax_job["logdir"]
    report = words.build_report(reader.read_runs(reader.local_provider(logdir)))
    groups = {group["group"]: group for group in report["workers"]}
    slow = groups["slow/train"]
    assert slow["straggler_index"] == 1
    process, url = serve.start_tensorboard(logdir, expected_runs=4)
    try:
        page, frame, problems = open_tab(browser, url, rows=4)
        panels = frame.locator(".dc-workers-group")
        expect(panels).to_have_count(2)
        slow_panel = panels.filter(has_text="Processes of slow/train")
        box = slow_panel.locator(".dc-straggler-box")
        expect(box).to_have_attribute("data-straggler", "1")
        expect(box.locator(".dc-verdict")).to_have_attribute("data-verdict", "input_bound")
        expect(box.locator(".dc-straggler-share")).to_contain_text(
            formatting.fmt_share(slow["straggler_share"]))
        # The straggler's own input fix, for the PyDataset that fed it (issue 23).
        expect(box.locator(".dc-finding-fix")).to_contain_text("workers=N")
        expect(slow_panel.locator(".dc-skew-p50")).to_have_text(
            formatting.fmt_ms_unit(slow["skew_ms"]["p50"]))
        rows = slow_panel.locator(".dc-workers-table tbody tr")
        expect(rows).to_have_count(2)
        expect(slow_panel.locator("tr.dc-straggler-row")).to_have_attribute(
            "data-run", "slow/process_1/train")
        waiting = {entry["process_index"]: entry for entry in slow["runs"]}[0]
        expect(slow_panel.locator('tr[data-process="0"] .dc-wait-p50')).to_have_text(
            formatting.fmt_ms_unit(waiting["wait_ms"]["p50"]))
        expect(slow_panel.locator(".dc-share-bar")).to_have_count(2)
        expect(slow_panel.locator("path.dc-skew-line")).to_have_count(1)
        even_panel = panels.filter(has_text="Processes of even/train")
        expect(even_panel.locator(".dc-workers-balanced")).to_have_count(1)
        expect(even_panel.locator(".dc-straggler-box")).to_have_count(0)
        page.screenshot(path=os.path.join(screenshots, "workers.png"))
        # The straggler's detail shows the finding (said once per job, issue 25).
        slow_panel.locator('tr[data-process="1"] .dc-run-link').click()
        finding = frame.locator('.dc-finding[data-finding="straggler"]')
        expect(finding).to_have_count(1)
        message = next(item for item in report["runs"]
                       if item["run"] == "slow/process_1/train")
        expected = next(item for item in message["findings"] if item["id"] == "straggler")
        expect(finding.locator(".dc-finding-message")).to_have_text(expected["message"])
        # Its run info: which process it is, what it holds, how the batch splits.
        info = frame.locator(".dc-kv").filter(has_text="Backend")
        expect(info).to_contain_text("1 of 2, holding cpu:")
        expect(info).to_contain_text("64 in all, 32 per process, 32 per replica")
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)
