"""The Device Cost tab in a real TensorBoard, driven in Debian's Chromium.

Screenshots of the overview, a run detail and a comparison are saved into
the directory named by `DEVICECOST_SCREENSHOTS` (the README's come from
`DEVICECOST_SCREENSHOTS=docs make test`), else into the test's temporary
directory.
"""

import os
import shutil
import urllib.parse

import pytest
from playwright.sync_api import expect
from playwright.sync_api import sync_playwright

from tb_devicecost import analysis
from tb_devicecost import reader

import plugin_runs

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("browser_logs"))
    plugin_runs.make_plugin_logdir(directory)
    return directory


@pytest.fixture(scope="module")
def tensorboard_url(logdir):
    process, url = plugin_runs.start_tensorboard(logdir, expected_runs=3)
    yield url
    plugin_runs.stop_tensorboard(process)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def screenshots(tmp_path):
    directory = os.environ.get("DEVICECOST_SCREENSHOTS") or str(tmp_path)
    os.makedirs(directory, exist_ok=True)
    return directory


@pytest.fixture
def tab(browser, tensorboard_url):
    """The TensorBoard page on the Device Cost tab, with its problems logged."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems = {"console_errors": [], "page_errors": [], "dialogs": []}

    def on_console(message):
        location = (message.location or {}).get("url", "")
        if message.type == "error" and "/data/plugin/devicecost" in location:
            problems["console_errors"].append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems["page_errors"].append(str(error)))

    def on_dialog(dialog):
        problems["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(tensorboard_url + "/#devicecost")
    frame = page.frame_locator('iframe[src*="name=devicecost"]')
    expect(frame.locator(".dc-run-row")).to_have_count(3, timeout=60_000)
    yield page, frame, problems
    page.close()


def test_overview_lists_each_run_with_the_cli_verdict(tab, logdir, screenshots):
    page, frame, problems = tab
    report = analysis.build_report(reader.read_runs(reader.local_provider(logdir)))
    for run in report["runs"]:
        row = frame.locator(f'.dc-run-row[data-run="{run["run"]}"]')
        expect(row).to_have_count(1)
        expect(row.locator(".dc-verdict")).to_have_attribute("data-verdict", run["verdict"])
    expect(frame.locator('.dc-run-row[data-run="slow/train"] .dc-verdict')).to_have_attribute(
        "data-verdict", "input_bound"
    )
    page.screenshot(path=os.path.join(screenshots, "overview.png"))
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []


def test_a_run_named_with_html_is_shown_as_text(tab):
    page, frame, problems = tab
    name = f"{plugin_runs.XSS_RUN_DIR}/train"
    row = frame.locator(".dc-run-row").filter(has_text=name)
    expect(row).to_have_count(1)
    assert frame.locator("img[src='x']").count() == 0
    page.wait_for_timeout(500)
    assert problems["dialogs"] == []


def test_run_detail_draws_the_step_chart_and_links_the_capture(tab, logdir, screenshots):
    page, frame, problems = tab
    frame.locator('.dc-run-row[data-run="cpu/train"] a').first.click()
    chart = frame.locator(".dc-detail svg.dc-chart").first
    expect(chart).to_be_visible(timeout=30_000)
    assert chart.locator("rect, path").count() > 10
    link = frame.locator("a.dc-profile-link").first
    href = link.get_attribute("href")
    [capture] = reader.list_profile_captures(logdir, "cpu/train")
    query = urllib.parse.parse_qs(href.split("?", 1)[1].split("#")[0])
    assert query["run"] == [f"cpu/train/{capture['capture']}"]
    assert query["tool"] == ["overview_page"]
    assert query["host"] == [capture["host"]]
    page.screenshot(path=os.path.join(screenshots, "detail.png"), full_page=True)
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []


def test_compare_shows_the_speedup_and_the_reason(tab, screenshots):
    page, frame, problems = tab
    for run in ("cpu/train", "slow/train"):
        frame.locator(f'.dc-run-row[data-run="{run}"] input[type="checkbox"]').check()
    frame.get_by_role("button", name="Compare").click()
    explanation = frame.locator(".dc-compare .dc-explanation").filter(has_text="slow/train")
    expect(explanation.first).to_be_visible(timeout=30_000)
    expect(frame.locator(".dc-compare")).to_contain_text("×")
    page.screenshot(path=os.path.join(screenshots, "compare.png"), full_page=True)
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []
