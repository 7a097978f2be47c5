"""Layout from 900 px up: no table wider than its box, run names broken only
after a "/"."""

import os

import pytest

from tests.support import plugin_runs
from tests.support.tab import open_compare, open_detail, open_tab


pytestmark = [pytest.mark.browser, pytest.mark.slow]


LONG_RUN = "input_pipeline/augment_in_model_with_a_long_name/train"


def _layout(frame):
    """Tables wider than their box, and each run name's line breaks."""
    return frame.locator("body").evaluate(
        """body => {
          const overflow = [];
          for (const wrap of body.querySelectorAll('.dc-table-wrap')) {
            if (wrap.scrollWidth > wrap.clientWidth) overflow.push([wrap.scrollWidth, wrap.clientWidth]);
          }
          const page = document.scrollingElement;
          if (page.scrollWidth > page.clientWidth) overflow.push(['page', page.scrollWidth, page.clientWidth]);
          // The character before each line break of every run name.
          const breaks = [];
          for (const name of body.querySelectorAll('table .dc-run-name')) {
            const walker = document.createTreeWalker(name, NodeFilter.SHOW_TEXT);
            let node; let lastTop = null; let lastChar = null;
            while ((node = walker.nextNode())) {
              for (let i = 0; i < node.length; i++) {
                const range = document.createRange();
                range.setStart(node, i);
                range.setEnd(node, i + 1);
                const rect = range.getClientRects()[0];
                if (rect && rect.width > 0) {
                  if (lastTop !== null && rect.top > lastTop + 2) breaks.push([name.textContent, lastChar]);
                  lastTop = rect.top;
                }
                lastChar = node.data[i];
              }
            }
          }
          // The last column (the speedup) must be on screen.
          const offscreen = [];
          for (const cell of body.querySelectorAll('.dc-speedup, .dc-verdict')) {
            if (cell.getBoundingClientRect().right > document.documentElement.clientWidth) offscreen.push(cell.textContent);
          }
          return {overflow, breaks, offscreen};
        }"""
    )


@pytest.mark.parametrize("width", [900, 1280, 1920])
def test_the_tables_fit_and_run_names_stay_whole(browser, tensorboard_url, width, screenshots):
    """No table wider than its box, verdicts and speedups on screen, and run
    names broken only after a '/' (or at a space), from 900 px up."""

    def add_long_run(body):
        runs = body.get("runs")
        if isinstance(runs, list) and runs and not any(r["run"] == LONG_RUN for r in runs):
            runs.append(dict(runs[0], run=LONG_RUN))

    page, frame, problems = open_tab(
        browser, tensorboard_url, rewrite=(r".*/data/plugin/devicecost/runs(\?.*)?$", add_long_run),
        rows=4, width=width,
    )
    layout = _layout(frame)
    page.screenshot(path=os.path.join(screenshots, f"overview_{width}.png"))
    assert layout["overflow"] == [], layout
    assert layout["offscreen"] == [], layout
    assert all(char in "/ " for _, char in layout["breaks"]), layout["breaks"]

    open_compare(frame, ["cpu/train", "slow/train", f"{plugin_runs.XSS_RUN_DIR}/train"])
    layout = _layout(frame)
    page.screenshot(path=os.path.join(screenshots, f"compare_{width}.png"), full_page=True)
    assert layout["overflow"] == [], layout
    assert layout["offscreen"] == [], layout
    assert all(char in "/ " for _, char in layout["breaks"]), layout["breaks"]

    frame.locator(".dc-back").first.click()
    open_detail(frame, "cpu/train")
    layout = _layout(frame)
    assert layout["overflow"] == [], layout
    page.close()
    assert problems["page_errors"] == []
