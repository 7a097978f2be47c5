"""The tab under hostile layouts (issue 25), in headless Chromium."""

import pytest
from playwright.sync_api import expect

from demo import serve

from tests.support import fuzz_layouts
from tests.support.tab import open_tab


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow


def test_the_workers_view_confines_rtl_names_and_names_what_it_cannot_align(browser, tmp_path):
    """Issue 25, items 4 and 7: a job whose run names hold U+202E (a
    straggler among them) beside a job whose processes share no step and
    hold a renamed process directory. The names sit in <bdi> elements, the
    messages carry the override as an escape, and the unaligned job says
    why instead of claiming its processes keep pace."""
    logdir = str(tmp_path)
    fuzz_layouts.job(logdir, "r\u202eevil", 2, [0, 1], slow=1)
    fuzz_layouts.job(logdir, "y", 2, [0, 1], names={1: "process_7"})
    process, url = serve.start_tensorboard(logdir, expected_runs=4)
    try:
        page, frame, problems = open_tab(browser, url, rows=4)
        panels = frame.locator(".dc-workers-group")
        expect(panels).to_have_count(2)
        evil = panels.filter(has=frame.locator(".dc-straggler-box"))
        expect(evil.locator(".dc-panel-title bdi")).to_have_text("r\u202eevil/train")
        expect(evil.locator(".dc-finding-message")).to_contain_text("r\\u202eevil")
        for name in frame.locator(".dc-summary-text .dc-run-link").all():
            assert name.locator("bdi").count() == 1
        unaligned = panels.filter(has_text="process_7")
        expect(unaligned.locator(".dc-workers-problem")).not_to_have_count(0)
        expect(unaligned.locator(".dc-workers-unaligned")).to_have_count(1)
        expect(unaligned.locator(".dc-workers-balanced")).to_have_count(0)
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)
