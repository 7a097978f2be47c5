"""The Device Cost tab in a real TensorBoard, driven in Debian's Chromium.

Screenshots of the overview, a run detail and a comparison are saved into
the directory named by `DEVICECOST_SCREENSHOTS` (the README's come from
`DEVICECOST_SCREENSHOTS=docs make test`), else into the test's temporary
directory.
"""

import json
import os
import re
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


def _traced_window(logdir):
    """The one trace window of `cpu/train` (keras.callbacks.TensorBoard's)."""
    [run] = [
        run
        for run in analysis.build_report(reader.read_runs(reader.local_provider(logdir)))["runs"]
        if run["run"] == "cpu/train"
    ]
    [window] = run["trace_windows"]
    return window


def _open_cpu_detail(frame):
    frame.locator('.dc-run-row[data-run="cpu/train"] a').first.click()
    expect(frame.locator(".dc-detail svg.dc-chart").first).to_be_visible(timeout=30_000)


def test_run_detail_shades_the_traced_steps_and_digests_the_trace(tab, logdir, screenshots):
    page, frame, problems = tab
    window = _traced_window(logdir)
    [capture] = reader.list_profile_captures(logdir, "cpu/train")
    assert window["capture"] == capture["capture"]
    assert window["source"] == "keras.callbacks.TensorBoard"
    expect(frame.locator('.dc-run-row[data-run="cpu/train"] .dc-traced')).to_have_count(1)
    _open_cpu_detail(frame)

    # The traced steps are a band on the step chart, with a legend entry.
    band = frame.locator(".dc-chart-panel svg.dc-step-chart rect.dc-trace-window")
    expect(band).to_have_count(1)
    expect(band).to_have_attribute("data-start", str(window["start_step"]))
    expect(band).to_have_attribute("data-stop", str(window["stop_step"]))
    assert float(band.get_attribute("width")) > 0
    expect(frame.locator(".dc-chart-panel .dc-legend")).to_contain_text("traced steps")
    band.hover(force=True)  # the chart's overlay takes the pointer; its read-out names the step
    expect(frame.locator(".dc-chart-panel .dc-tooltip-title")).to_contain_text("traced")

    # One block for the window, under the chart.
    block = frame.locator(f'.dc-traces .dc-trace[data-capture="{capture["capture"]}"]')
    expect(block).to_have_count(1)
    expect(block).to_contain_text(f"Steps {window['start_step']}\u2013{window['stop_step'] - 1}")
    expect(block).to_contain_text("captured by keras.callbacks.TensorBoard(profile_batch=...)")
    expect(block).to_contain_text("KiB trace")
    expect(frame.locator(".dc-traces")).to_contain_text("No step time measured")

    digest = block.locator("table.dc-trace-digest")
    expect(digest).to_be_visible()
    for row in ("input_wait", "compute", "other", "step", "pipeline_busy"):
        expect(digest.locator(f'tr[data-row="{row}"]')).to_have_count(1)
    expect(digest.locator("tr.dc-trace-device-row")).to_have_count(0)  # a CPU trace
    expect(digest.locator('tr[data-row="input_wait"] td.dc-num').first).to_have_text(re.compile(r"\d ms$"))
    assert block.locator(".dc-trace-error").count() == 0

    agreement = window["data_wait_agreement"]
    if agreement is not None:
        shown = block.locator(".dc-trace-disagree" if agreement["disagree"] else ".dc-trace-agreement")
        expect(shown).to_have_count(1)
        expect(shown).to_contain_text("differ by")

    link = block.locator("a.dc-trace-link")
    expect(link).to_have_text("Open in the Profile tab (Overview)")
    expect(link).to_have_attribute("target", "_top")
    href = link.get_attribute("href")
    assert not href.startswith(("http:", "https:", "/"))  # relative to the plugin's base
    query = urllib.parse.parse_qs(href.split("?", 1)[1].split("#")[0])
    assert query["run"] == [f"cpu/train/{capture['capture']}"]
    assert query["tool"] == ["overview_page"]
    assert query["host"] == [capture["host"]]

    page.mouse.move(0, 0)
    page.set_viewport_size({"width": 1400, "height": 1250})
    frame.locator(".dc-chart-panel").evaluate(
        "panel => window.scrollTo(0, panel.getBoundingClientRect().top + window.scrollY - 64)"
    )
    page.screenshot(path=os.path.join(screenshots, "detail_traces.png"))
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []


def test_trace_link_opens_the_capture_in_the_profile_tab(tab, logdir, screenshots):
    page, frame, problems = tab
    [capture] = reader.list_profile_captures(logdir, "cpu/train")
    run = f"cpu/train/{capture['capture']}"
    _open_cpu_detail(frame)
    assert problems["page_errors"] == []

    top_urls = []
    page.on("framenavigated", lambda f: top_urls.append(f.url) if f == page.main_frame else None)
    with page.expect_navigation():
        frame.locator("a.dc-trace-link").first.click()

    # The link's own URL reached the top page (target=_top), hash included.
    landed = urllib.parse.urlsplit(top_urls[0])
    query = urllib.parse.parse_qs(landed.query)
    assert query["run"] == [run]
    assert query["tool"] == ["overview_page"]
    assert query["host"] == [capture["host"]]
    assert landed.fragment == "profile"

    # TensorBoard's Profile tab is the active one ...
    active = page.locator('[role="tab"][aria-selected="true"]')
    expect(active).to_have_count(1, timeout=30_000)
    expect(active).to_have_text(re.compile(r"^\s*profile\s*$", re.IGNORECASE))
    # ... and xprof (an iframe that reads window.parent.location.search) has
    # selected the capture in its sidenav's "Sessions" list.
    profile = page.frame_locator('iframe[src*="name=profile"]')
    session = profile.locator("sidenav .item-container").filter(has_text="Sessions").locator("mat-select")
    expect(session).to_have_text(run, timeout=60_000)
    tool = profile.locator("sidenav .item-container").filter(has_text="Tools").locator("mat-select")
    expect(tool).to_have_text("Overview Page", timeout=30_000)

    # Once loaded, xprof rewrites the top URL with history.replaceState: it
    # renames `tool` to `tag`, adds `firstLoad=true` and drops `#profile`. The
    # run must survive that, and the tool under either name.
    final = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)
    assert final["run"] == [run]
    assert (final.get("tool") or final.get("tag")) == ["overview_page"]

    page.screenshot(path=os.path.join(screenshots, "profile_from_trace_link.png"))
    # xprof logs its own errors (Google Charts and fonts cannot load offline);
    # only ours count.
    assert problems["console_errors"] == []


def test_trace_blocks_show_device_rows_errors_and_no_unsafe_links(tab, screenshots):
    """Windows the fixture cannot make (a GPU trace, an unreadable one), served
    in place of the real run route's windows; their text is hostile."""
    page, frame, problems = tab
    hostile = "<img src=x onerror=alert(1)>"
    gpu = {
        "start_step": 10, "stop_step": 12, "source": "tb_devicecost", "capture": hostile,
        "host": hostile, "trace_bytes": 3 * 1024 * 1024, "error": None, "has_device_plane": True,
        "url": "javascript:alert(1)",
        "summary": {
            "mean_step_ms": 4.0, "mean_input_wait_ms": 0.5, "mean_compute_ms": 3.0,
            "mean_other_ms": 0.5, "mean_pipeline_busy_ms": 0.4, "input_wait_fraction": 0.125,
            "mean_device_busy_ms": 2.5, "mean_device_idle_ms": 1.5, "mean_kernels": 42.0,
            "mean_kernel_mean_us": 59.5, "mean_h2d_ms": 0.2, "mean_h2d_bytes": 131072,
            "mean_d2h_ms": None, "mean_d2h_bytes": None, "device_busy_fraction": 0.625,
        },
        "ours": {"data_wait_ms": 0.52, "compute_ms": None, "host_overhead_ms": 0.4},
        "steps": [],
        "data_wait_agreement": {"ours_ms": 0.52, "trace_ms": 0.5, "relative_difference": 0.04,
                                "disagree": False, "message": hostile + " They agree."},
    }
    broken = {
        "start_step": 20, "stop_step": 21, "source": hostile, "capture": "broken", "host": None,
        "trace_bytes": None, "error": hostile, "has_device_plane": False, "url": None,
        "summary": {}, "ours": None, "steps": [], "data_wait_agreement": None,
    }

    def serve(route):
        response = route.fetch()
        body = response.json()
        body["trace_windows"] = [gpu, broken]
        route.fulfill(response=response, body=json.dumps(body))

    page.route(re.compile(r".*/data/plugin/devicecost/run\?.*"), serve)
    _open_cpu_detail(frame)
    expect(frame.locator("rect.dc-trace-window")).to_have_count(2)

    block = frame.locator(".dc-trace").filter(has=frame.locator("table.dc-trace-digest"))
    expect(block).to_have_count(1)
    expect(block).to_have_attribute("data-capture", hostile)
    expect(block).to_contain_text("captured by tb-devicecost (profile_steps)")
    expect(block).to_contain_text("3.00 MiB trace")
    assert block.locator("a").count() == 0  # javascript: never becomes a link
    digest = block.locator("table.dc-trace-digest")
    expect(digest.locator("tr.dc-trace-device-row")).to_have_count(6)
    expect(digest.locator('tr[data-row="device_busy"] td.dc-trace-value')).to_have_text("63% (2.50 ms)")
    expect(digest.locator('tr[data-row="kernels"] td.dc-trace-value')).to_have_text("42")
    expect(digest.locator('tr[data-row="kernel_us"] td.dc-trace-value')).to_have_text("59.5 \u00b5s")
    expect(digest.locator('tr[data-row="h2d"] td.dc-trace-value')).to_have_text("0.200 ms \u00b7 128.0 KiB")
    expect(digest.locator('tr[data-row="d2h"] td.dc-trace-value')).to_have_text("\u2014")
    expect(digest.locator('tr[data-row="step"] td.dc-ours-value')).to_have_text("\u2014")
    expect(block.locator(".dc-trace-agreement")).to_have_text(hostile + " They agree.")
    assert block.locator(".dc-trace-disagree").count() == 0

    failed = frame.locator('.dc-trace[data-capture="broken"]')
    expect(failed.locator(".dc-trace-error")).to_contain_text(hostile)
    expect(failed).to_contain_text("Step 20")
    expect(failed).to_contain_text("captured by " + hostile)
    assert failed.locator("table.dc-trace-digest").count() == 0
    assert failed.locator("a").count() == 0

    assert frame.locator("img[src='x']").count() == 0
    frame.locator(".dc-traces").scroll_into_view_if_needed()
    page.screenshot(path=os.path.join(screenshots, "detail_traces_gpu.png"))
    page.wait_for_timeout(300)
    assert problems["dialogs"] == []
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []
