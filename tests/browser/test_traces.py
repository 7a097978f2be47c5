"""Trace windows in a run's detail: the traced steps shaded, each window's
digest, and the link to the Profile tab."""

import json
import os
import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader

from tests.support.tab import open_detail, open_tab


pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _traced_window(logdir):
    """The one trace window of `cpu/train` (keras.callbacks.TensorBoard's)."""
    [run] = [
        run
        for run in words.build_report(reader.read_runs(reader.local_provider(logdir)))["runs"]
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
    expect(digest.locator('tr[data-row="device_busy"] td.dc-trace-value')).to_have_text(
        formatting.fmt_share(0.625) + " (2.50 ms)"
    )
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


def test_without_the_profile_tab_the_capture_links_say_how_to_install_it(
    browser, tensorboard_url
):
    """TensorBoard without xprof lists no active `profile` plugin: no dead
    link to the Profile tab, and a sentence that says how to get it."""

    def without_profile(body):
        body.pop("profile", None)

    page, frame, problems = open_tab(
        browser, tensorboard_url, rewrite=(r".*/data/plugins_listing(\?.*)?$", without_profile)
    )
    open_detail(frame, "cpu/train")
    expect(frame.locator(".dc-profile .dc-profile-capture")).to_have_count(1)
    assert frame.locator("a.dc-profile-link").count() == 0
    assert frame.locator("a.dc-trace-link").count() == 0
    for where in (".dc-profile", ".dc-traces"):
        expect(frame.locator(f"{where} .dc-no-profile-tab")).to_contain_text('pip install ".[profile]"')
    page.close()
    assert problems["page_errors"] == []
