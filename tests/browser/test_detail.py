"""The Device Cost tab in a real TensorBoard, driven in Debian's Chromium.

Screenshots of the overview, a run detail and a comparison are saved into
the directory named by `DEVICECOST_SCREENSHOTS` (the README's come from
`DEVICECOST_SCREENSHOTS=docs make test`), else into the test's temporary
directory.
"""

import json
import os
import re
import subprocess
import sys
import urllib.parse

import pytest
from playwright.sync_api import expect
from playwright.sync_api import sync_playwright

from tb_devicecost import analysis
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support import plugin_runs


pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("browser_logs"))
    plugin_runs.make_plugin_logdir(directory)
    return directory


@pytest.fixture(scope="module")
def tensorboard_url(logdir):
    process, url = serve.start_tensorboard(logdir, expected_runs=3)
    yield url
    serve.stop_tensorboard(process)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        instance = serve.launch_chromium(playwright)
        yield instance
        instance.close()


@pytest.fixture
def screenshots(tmp_path):
    directory = os.environ.get("DEVICECOST_SCREENSHOTS") or str(tmp_path)
    os.makedirs(directory, exist_ok=True)
    return directory


def _watch(page):
    """Collects the page's problems: our console errors, page errors, dialogs."""
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
    return problems


def _device_cost_frame(page):
    return page.frame_locator('iframe[src*="name=devicecost"]')


@pytest.fixture
def tab(browser, tensorboard_url):
    """The TensorBoard page on the Device Cost tab, with its problems logged."""
    page, frame, problems = _open_tab(browser, tensorboard_url)
    yield page, frame, problems
    page.close()


def _open_tab(browser, tensorboard_url, rewrite=None, rows=3, width=1400):
    """A new page on the Device Cost tab once its overview lists `rows` runs;
    `rewrite`, `(pattern, change)`, changes a route's JSON first (see
    `_rewrite_json`). Returns `(page, frame, problems)`."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = _watch(page)
    if rewrite:
        _rewrite_json(page, *rewrite)
    page.goto(tensorboard_url + "/#devicecost")
    frame = _device_cost_frame(page)
    expect(frame.locator(".dc-run-row")).to_have_count(rows, timeout=60_000)
    return page, frame, problems


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


# ---------------------------------------------------------------------------
# Honest numbers (issue 10): one formatting rule, labelled statistics, where
# the step ran, layout from 900 px, the view in the URL, words for users.

FRONTEND = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "frontend")


def _report(logdir):
    return analysis.build_report(reader.read_runs(reader.local_provider(logdir)))


def _run_result(logdir, name):
    [run] = [run for run in _report(logdir)["runs"] if run["run"] == name]
    return run


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


def _open_detail(frame, name):
    frame.locator(f'.dc-run-row[data-run="{name}"] a.dc-run-link').first.click()
    expect(frame.locator(f'.dc-detail[data-run="{name}"] svg.dc-chart').first).to_be_visible(
        timeout=30_000
    )


def _open_compare(frame, names):
    for name in names:
        frame.locator(f'.dc-run-row[data-run="{name}"] input[type="checkbox"]').check()
    frame.get_by_role("button", name="Compare").click()
    expect(frame.locator(".dc-compare .dc-compare-table")).to_be_visible(timeout=30_000)


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
    ]
    values += [n / 1000 for n in range(0, 1001, 7)] + [n / 64 for n in range(0, 6400, 37)]
    functions = {
        "fmtMs": formatting.fmt_ms, "fmtMsUnit": formatting.fmt_ms_unit,
        "fmtSignedMs": formatting.fmt_signed_ms, "fmtShare": formatting.fmt_share,
        "fmtCount": formatting.fmt_count, "fmtSpeedup": formatting.fmt_speedup,
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
    _open_detail(frame, "cpu/train")
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
    runs = {run["run"]: run for run in _report(logdir)["runs"]}
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
    _open_compare(frame, names)
    check(frame.locator("table.dc-compare-table"), ["p50", "mean"])
    speedup = [h for h in _columns(frame.locator("table.dc-compare-table")) if "speedup" in h.lower()]
    assert speedup and "mean" in speedup[0].lower()  # the speedup says it is from means

    frame.locator(".dc-back").first.click()
    _open_detail(frame, "slow/train")
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


def test_the_detail_view_shows_one_fetch_floor(tab, logdir):
    page, frame, problems = tab
    run = _run_result(logdir, "cpu/train")
    _open_detail(frame, "cpu/train")
    # Outside the findings (sentences of the analysis), one place names it.
    places = frame.locator(".dc-detail").evaluate(
        """root => {
          const found = [];
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          let node;
          while ((node = walker.nextNode())) {
            if (node.parentElement.closest('.dc-findings-panel')) continue;
            if (/fetch[ _]floor/i.test(node.data)) found.push(node.data);
          }
          return found;
        }"""
    )
    assert len(places) == 1, places
    expect(frame.locator('.dc-stat[data-stat="fetch_floor"] .dc-stat-value')).to_have_text(
        formatting.fmt_ms_unit(run["fetch_floor_ms"])
    )
    assert problems["page_errors"] == []


def _rewrite_json(page, pattern, change):
    """Serves the plugin route matching `pattern` with `change(body)` applied."""

    def serve(route):
        response = route.fetch()
        body = response.json()
        change(body)
        route.fulfill(response=response, body=json.dumps(body))

    page.route(re.compile(pattern), serve)


def _runs_of(body):
    runs = list(body.get("runs", []))
    if "run" in body:  # the run route: one run
        runs.append(body)
    return runs


def test_the_device_column_shows_where_the_step_ran(browser, tensorboard_url, logdir):
    """The fixture's process has two logical CPUs, so every run sees CPU:0 and
    CPU:1 but runs on one: only that one is shown. A step that used two
    devices (served in place of slow/train's) shows both."""
    runs = _report(logdir)["runs"]
    assert all(len(run["placement"]["devices"]) > 1 for run in runs)  # visible, not used

    def two_devices(body):
        for run in _runs_of(body):
            if run["run"] == "slow/train":
                run["device"] = "CPU:1"
                run["devices_used"] = ["CPU:1", "CPU:0"]

    page, frame, problems = _open_tab(browser, tensorboard_url, rewrite=(
        r".*/data/plugin/devicecost/(runs|run|compare)\?.*|.*/data/plugin/devicecost/runs$", two_devices
    ))
    for run in runs:
        if run["run"] == "slow/train":
            continue
        cell = frame.locator(f'.dc-run-row[data-run="{run["run"]}"] td.dc-col-device .dc-device')
        expect(cell).to_have_text(run["device"])
        expect(frame.locator(f'.dc-run-row[data-run="{run["run"]}"] td.dc-col-device')).not_to_contain_text(
            [d for d in run["placement"]["devices"] if d != run["device"]][0]
        )
    slow = frame.locator('.dc-run-row[data-run="slow/train"] td.dc-col-device')
    expect(slow.locator(".dc-device")).to_have_text("CPU:1")
    expect(slow.locator(".dc-device-more")).to_contain_text("CPU:0")

    _open_detail(frame, "cpu/train")
    cpu = _run_result(logdir, "cpu/train")
    expect(frame.locator('.dc-stat[data-stat="device"] .dc-stat-value')).to_have_text(cpu["device"])
    expect(frame.locator(".dc-placement .dc-step-device")).to_have_text(cpu["device"])
    page.close()
    assert problems["page_errors"] == []


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

    page, frame, problems = _open_tab(
        browser, tensorboard_url, rewrite=(r".*/data/plugin/devicecost/runs(\?.*)?$", add_long_run),
        rows=4, width=width,
    )
    layout = _layout(frame)
    page.screenshot(path=os.path.join(screenshots, f"overview_{width}.png"))
    assert layout["overflow"] == [], layout
    assert layout["offscreen"] == [], layout
    assert all(char in "/ " for _, char in layout["breaks"]), layout["breaks"]

    _open_compare(frame, ["cpu/train", "slow/train", f"{plugin_runs.XSS_RUN_DIR}/train"])
    layout = _layout(frame)
    page.screenshot(path=os.path.join(screenshots, f"compare_{width}.png"), full_page=True)
    assert layout["overflow"] == [], layout
    assert layout["offscreen"] == [], layout
    assert all(char in "/ " for _, char in layout["breaks"]), layout["breaks"]

    frame.locator(".dc-back").first.click()
    _open_detail(frame, "cpu/train")
    layout = _layout(frame)
    assert layout["overflow"] == [], layout
    page.close()
    assert problems["page_errors"] == []


def _devicecost_params(url):
    fragment = urllib.parse.urlsplit(url).fragment
    return [part for part in fragment.split("&") if part.startswith("p.devicecost.")]


def test_a_reload_or_a_shared_link_keeps_the_detail_view(tab, browser):
    page, frame, problems = tab
    _open_detail(frame, "slow/train")
    expect(page).to_have_url(re.compile(r"#devicecost&.*p\.devicecost\.run="))
    page.reload()
    frame = _device_cost_frame(page)
    expect(frame.locator('.dc-detail[data-run="slow/train"] svg.dc-chart').first).to_be_visible(
        timeout=60_000
    )
    shared = browser.new_page(viewport={"width": 1400, "height": 900})
    shared.goto(page.url)
    expect(
        _device_cost_frame(shared).locator('.dc-detail[data-run="slow/train"] svg.dc-chart').first
    ).to_be_visible(timeout=60_000)
    shared.close()

    # Back to the overview: the address bar holds no view any more.
    frame.locator(".dc-back").first.click()
    expect(frame.locator(".dc-run-row")).to_have_count(3, timeout=30_000)
    page.wait_for_function("() => !location.hash.includes('p.devicecost.view')")
    assert urllib.parse.urlsplit(page.url).fragment.split("&")[0] == "devicecost"
    assert problems["page_errors"] == []


def test_a_reload_keeps_the_compare_view(tab):
    page, frame, problems = tab
    names = ["cpu/train", f"{plugin_runs.XSS_RUN_DIR}/train"]
    _open_compare(frame, names)
    baseline = frame.locator(".dc-compare select.dc-baseline").input_value()
    expect(page).to_have_url(re.compile(r"p\.devicecost\.view=compare"))
    page.reload()
    frame = _device_cost_frame(page)
    rows = frame.locator(".dc-compare-table .dc-compare-row")
    expect(rows).to_have_count(2, timeout=60_000)
    assert sorted(rows.evaluate_all("rows => rows.map((r) => r.getAttribute('data-run'))")) == sorted(names)
    assert frame.locator(".dc-compare select.dc-baseline").input_value() == baseline
    assert frame.locator("img[src='x']").count() == 0
    assert problems["dialogs"] == []
    assert problems["page_errors"] == []


def test_without_the_profile_tab_the_capture_links_say_how_to_install_it(
    browser, tensorboard_url
):
    """TensorBoard without xprof lists no active `profile` plugin: no dead
    link to the Profile tab, and a sentence that says how to get it."""

    def without_profile(body):
        body.pop("profile", None)

    page, frame, problems = _open_tab(
        browser, tensorboard_url, rewrite=(r".*/data/plugins_listing(\?.*)?$", without_profile)
    )
    _open_detail(frame, "cpu/train")
    expect(frame.locator(".dc-profile .dc-profile-capture")).to_have_count(1)
    assert frame.locator("a.dc-profile-link").count() == 0
    assert frame.locator("a.dc-trace-link").count() == 0
    for where in (".dc-profile", ".dc-traces"):
        expect(frame.locator(f"{where} .dc-no-profile-tab")).to_contain_text('pip install ".[profile]"')
    page.close()
    assert problems["page_errors"] == []


def test_run_info_shows_what_helps_the_user(tab, logdir):
    page, frame, problems = tab

    def distributed(body):
        if body.get("run") == "slow/train":
            body["info"]["distribution_strategy"] = "MirroredStrategy"
            body["info"]["replicas"] = 2
            body["info"]["steps_per_execution"] = 4

    _rewrite_json(page, r".*/data/plugin/devicecost/run\?.*", distributed)
    [record] = [r for r in reader.read_runs(reader.local_provider(logdir)) if r.run == "cpu/train"]
    _open_detail(frame, "cpu/train")
    info = frame.locator(".dc-info")
    text = info.inner_text()
    for internal in ("schema", "_Default", "DefaultDistributionStrategy", "steps per record",
                     "steps_per_record", "fetch", "sessions", "Distribution strategy",
                     "steps_per_execution"):
        assert internal.lower() not in text.lower(), (internal, text)
    expect(info).to_contain_text(record.info["backend"])
    expect(info).to_contain_text("Keras " + record.info["versions"]["keras"])
    expect(info).to_contain_text(record.info["dtype_policy"])
    expect(info.locator("dt").filter(has_text="Batch size")).to_have_count(1)

    frame.locator(".dc-back").first.click()
    _open_detail(frame, "slow/train")
    info = frame.locator(".dc-info")
    expect(info).to_contain_text("MirroredStrategy")
    expect(info.locator("dt").filter(has_text="steps_per_execution")).to_have_count(1)
    assert problems["page_errors"] == []


def test_the_detail_view_breaks_down_the_fit_wall_time(tab):
    page, frame, problems = tab
    wall = {"total": 1523.0, "steps": 700.25, "warmup": 600.5, "between_steps": 212.0,
            "measurement": 10.25}

    def with_wall(body):
        body["wall_ms"] = dict(wall)
        body["wall_shares"] = {k: v / wall["total"] for k, v in wall.items() if k != "total"}

    _rewrite_json(page, r".*/data/plugin/devicecost/run\?.*", with_wall)
    _open_detail(frame, "cpu/train")
    panel = frame.locator(".dc-wall")
    for part in ("steps", "warmup", "between_steps", "measurement"):
        cells = panel.locator(f'tr[data-part="{part}"] td.dc-num')
        expect(cells.nth(0)).to_have_text(formatting.fmt_ms(wall[part]))
        expect(cells.nth(1)).to_have_text(formatting.fmt_share(wall[part] / wall["total"]))
    expect(panel.locator('tr[data-part="total"] td.dc-num').first).to_have_text(
        formatting.fmt_ms(wall["total"])
    )
    expect(panel.locator(".dc-wall-sentence")).to_contain_text(formatting.fmt_ms_unit(wall["total"]))
    assert problems["page_errors"] == []


def test_without_a_sensible_baseline_no_speedup_is_shown(tab, logdir):
    """The fixture's runs are not one model on two devices, so the analysis
    chooses no baseline: no ratio in the tab, and a sentence that says why."""
    page, frame, problems = tab
    assert _report(logdir)["comparison"] is None
    cells = frame.locator(".dc-run-row .dc-speedup")
    expect(cells).to_have_count(3)
    for text in cells.all_inner_texts():
        assert text.strip() == formatting.MISSING
    expect(frame.locator(".dc-overview .dc-baseline-note")).to_contain_text("No speedups")
    frame.locator(".dc-overview select.dc-baseline").select_option("cpu/train")
    expect(frame.locator('.dc-run-row[data-run="cpu/train"] .dc-speedup')).to_contain_text("baseline")
    expect(frame.locator(".dc-overview .dc-baseline-note")).to_contain_text("cpu/train")
    # Each other row compares another model with it, and says so.
    expect(frame.locator(".dc-run-row .dc-different-model")).to_have_count(2)
    assert problems["page_errors"] == []


def test_runs_recorded_on_an_h100_show_beside_their_cpu_runs(browser, tmp_path):
    """Runs recorded on a real NVIDIA H100 (tests/data/h100, JAX and PyTorch)
    in the tab: the backend and the GPU named, the CPU run as the baseline,
    and the small MLP's GPU run slower than its CPU run at batch 32."""
    import shutil

    source = os.path.join(os.path.dirname(__file__), "data", "h100")
    runs = ["jax_mlp_b32", "torch_mlp_b32"]
    for name in runs:
        shutil.copytree(os.path.join(source, name), tmp_path / name)
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=4)
    try:
        page, frame, problems = _open_tab(browser, url, rows=4)
        for name, backend in zip(runs, ["jax", "torch"]):
            row = frame.locator(f'.dc-run-row[data-run="{name}/gpu/train"]')
            expect(row).to_contain_text("GPU:0")
            expect(row).to_contain_text(backend)
        jax_gpu = frame.locator('.dc-run-row[data-run="jax_mlp_b32/gpu/train"]')
        speedup = jax_gpu.locator(".dc-speedup")
        expect(speedup).to_have_count(1)
        value = float(re.search(r"([0-9.]+)x", speedup.inner_text()).group(1))
        assert value < 1  # the CPU run is the faster one at batch 32
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)


def test_a_findings_fix_shows_what_it_would_buy(browser, tmp_path, screenshots):
    """The JAX MLP at batch 32 on a real NVIDIA H100 with its trace window
    (tests/data/h100_traced): the latency_bound finding's fix is followed by
    its estimate, the figures of tests/test_gpu_runs.py (0.029 ms of device
    time per 32 samples, 0.777 ms fixed: about 10 times the samples/s at
    batch 512); the warm-up finding carries its bound."""
    import shutil

    source = os.path.join(os.path.dirname(__file__), "data", "h100_traced", "jax_mlp_b32")
    shutil.copytree(source, tmp_path / "jax_mlp_b32")
    report = analysis.build_report(reader.read_runs(reader.local_provider(str(tmp_path))))
    run = next(item for item in report["runs"] if item["run"] == "jax_mlp_b32/gpu/train")
    latency = next(item for item in run["findings"] if item["id"] == "latency_bound")
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=1)
    try:
        page, frame, problems = _open_tab(browser, url, rows=1)
        # The overview's summary: the worst finding's headline only (issue 23).
        summary = frame.locator(".dc-summary")
        expect(summary.locator(".dc-summary-headline")).to_have_count(1)
        expect(summary).not_to_contain_text(" ms mean traced step")
        expect(summary).not_to_contain_text("Fix")
        _open_detail(frame, "jax_mlp_b32/gpu/train")
        finding = frame.locator('.dc-finding[data-finding="latency_bound"]')
        # A headline, and the evidence behind "details", closed until asked.
        expect(finding.locator(".dc-finding-headline")).to_have_text(latency["headline"])
        details = finding.locator("details.dc-finding-details")
        expect(details.locator(".dc-finding-message")).to_be_hidden()
        details.locator("summary").click()
        expect(details.locator(".dc-finding-message")).to_be_visible()
        expect(details.locator(".dc-finding-message")).to_have_text(latency["message"])
        # Beside the fix: the element right after it.
        expected = finding.locator(".dc-finding-fix + .dc-finding-expected")
        expect(expected).to_be_visible()
        expect(expected).to_have_attribute("data-estimated", "true")
        expect(expected.locator(".dc-expected-text")).to_have_text(
            "about 10x the samples/s at batch 512 (410,000 instead of 39,697)"
        )
        expect(expected).to_contain_text("At batch 512")
        none = frame.locator(
            '.dc-finding[data-finding="warmup_dominated"] .dc-finding-expected')
        expect(none).to_contain_text("at most")
        page.screenshot(path=os.path.join(screenshots, "finding_expected.png"), full_page=True)
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)


def test_the_workers_view_names_the_straggler_of_a_distributed_fit(browser, tmp_path, screenshots):
    """Two two-process JAX jobs (jax.distributed on gloo, DataParallel), one
    with process 1 slowed by 20 ms a batch: the tab shows each job's
    processes side by side, the slowed one as the straggler with its cause
    and fix and the report's figures, the other job as keeping pace; the
    straggler's detail carries the same finding."""
    from tests.support import distributed_runs

    logdir = str(tmp_path / "logs")
    distributed_runs.run_job("jax", os.path.join(logdir, "slow"), delay_ms=20, steps=40)
    distributed_runs.run_job("jax", os.path.join(logdir, "even"), delay_ms=0, steps=40)
    report = analysis.build_report(reader.read_runs(reader.local_provider(logdir)))
    groups = {group["group"]: group for group in report["workers"]}
    slow = groups["slow/train"]
    assert slow["straggler_index"] == 1
    process, url = serve.start_tensorboard(logdir, expected_runs=4)
    try:
        page, frame, problems = _open_tab(browser, url, rows=4)
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


def test_the_sweep_chart_says_where_the_gpu_wins(browser, tmp_path, screenshots):
    """The dense sweep recorded on a real NVIDIA H100 (tests/data/h100/sweep_jax:
    JAX, the seeds' MLP, 11 batch sizes per device, named before sweeps were
    marked) beside a marked sweep run here on two CPU devices with the
    user's batch size: each is drawn as samples/s against batch size per
    device, log-log, with its points, fits, crossover and the report's
    sentence; the user's batch size is marked."""
    import shutil

    import tb_devicecost
    from tests.support.sweep_models import build, data

    source = os.path.join(os.path.dirname(__file__), "data", "h100", "sweep_jax")
    shutil.copytree(source, tmp_path / "sweep_jax")
    x, y = data()
    tb_devicecost.sweep(build, x, y, batch_sizes=(8, 64), devices=("cpu:0", "cpu:1"),
                        log_dir=tmp_path / "mine", steps=4, your_batch_size=8)
    report = analysis.build_report(reader.read_runs(reader.local_provider(str(tmp_path))))
    sweeps = {sweep["name"]: sweep for sweep in report["sweeps"]}
    h100 = sweeps["sweep_jax"]
    assert h100["faster_above"] == "GPU:0"
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=26)
    try:
        page, frame, problems = _open_tab(browser, url, rows=26)
        panel = frame.locator('.dc-sweep[data-sweep="sweep_jax"]')
        expect(panel.locator(".dc-sweep-message")).to_have_text(h100["message"])
        assert h100["message"].startswith("GPU:0 overtakes CPU:0 above about ")
        chart = panel.locator("svg.dc-sweep-chart")
        for device in ("CPU:0", "GPU:0"):
            expect(chart.locator(f'circle.dc-sweep-point[data-device="{device}"]')).to_have_count(11)
            expect(chart.locator(f'path.dc-sweep-fit[data-device="{device}"]')).to_have_count(1)
            fit = h100["devices"][device]
            expect(panel.locator(f'.dc-legend-item[data-device="{device}"]')).to_have_text(
                f"{device}: {formatting.fmt_ms_unit(fit['fixed_ms'])} per step + "
                f"{formatting.fmt_ms(fit['per_sample_us'])} \u00b5s per sample")
        crossover = chart.locator("line.dc-sweep-crossover")
        expect(crossover).to_have_attribute("data-batch", str(h100["crossover_batch"]))

        def x_of(device, batch):
            point = chart.locator(f'circle[data-device="{device}"][data-batch="{batch}"]')
            return float(point.get_attribute("cx")), float(point.get_attribute("cy"))

        # Log-log: batch sizes 2x apart are evenly spaced; the crossover
        # lies between the points either side of it; the GPU's samples/s
        # rise with the batch (a higher point is a smaller y).
        x16, _ = x_of("GPU:0", 16)
        x32, _ = x_of("GPU:0", 32)
        x64, _ = x_of("GPU:0", 64)
        assert x32 - x16 == pytest.approx(x64 - x32, abs=0.2)
        below = max(b for b in (1024, 2048, 4096) if b <= h100["crossover_batch"])
        assert x_of("GPU:0", below)[0] < float(crossover.get_attribute("x1")) < x_of("GPU:0", below * 2)[0]
        assert x_of("GPU:0", 16384)[1] < x_of("GPU:0", 16)[1]
        expect(panel.locator("line.dc-sweep-yours")).to_have_count(0)

        mine = frame.locator('.dc-sweep[data-sweep="mine"]')
        expect(mine.locator(".dc-sweep-message")).to_have_text(sweeps["mine"]["message"])
        expect(mine.locator(".dc-sweep-message")).to_contain_text("at your batch of 8 ")
        expect(mine.locator("line.dc-sweep-yours")).to_have_attribute("data-batch", "8")
        expect(mine.locator("circle.dc-sweep-point")).to_have_count(4)
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=os.path.join(screenshots, "sweep.png"))
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)


def test_the_handover_is_shaded_apart_and_predictions_are_checked(browser, tmp_path, screenshots):
    """The demo recorded on a real NVIDIA H100 (tests/data/h100_demo/jax, the
    JAX backend): each share bar draws the part of the data wait spent
    handing over ready batches in its own, lighter shade, with a legend
    entry, so a pipeline that keeps up does not look input-bound; the
    comparison's stacked bars do too. Under the sweep, the predictions
    checked: each run with a fixed counterpart, the gain predicted beside
    the gain achieved, as the report gives them (issue 23)."""
    import shutil

    source = os.path.join(os.path.dirname(__file__), "data", "h100_demo", "jax")
    shutil.copytree(source, tmp_path / "jax")
    logdir = str(tmp_path / "jax")
    report = analysis.build_report(reader.read_runs(reader.local_provider(logdir)))
    runs = {run["run"]: run for run in report["runs"]}
    process, url = serve.start_tensorboard(logdir, expected_runs=len(runs))
    try:
        page, frame, problems = _open_tab(browser, url, rows=len(runs))
        # A run whose wait is partly a handover: its own shade, first.
        name = "small_work/batch10-gpu0/train"
        handover = runs[name]["handover_share"]
        assert 0 < handover < runs[name]["shares"]["data_wait"]
        bar = frame.locator(f'.dc-run-row[data-run="{name}"] svg.dc-share-bar')
        parts = bar.locator("rect")
        expect(parts.first).to_have_attribute("data-component", "handover")
        expect(parts.nth(1)).to_have_attribute("data-component", "data_wait")
        fills = {
            parts.nth(i).get_attribute("data-component"): parts.nth(i).get_attribute("fill")
            for i in range(parts.count())
        }
        assert len(set(fills.values())) == len(fills) == 4, fills
        widths = {
            parts.nth(i).get_attribute("data-component"): float(parts.nth(i).get_attribute("width"))
            for i in range(parts.count())
        }
        total = sum(widths.values())
        assert widths["handover"] / total == pytest.approx(handover, abs=0.01)
        expect(bar).to_have_attribute(
            "aria-label", re.compile(r"^data wait \S+ \(handover " +
                                     re.escape(formatting.fmt_share(handover)) + r"\) \u00b7 "))
        # A run without a handover to show draws none.
        expect(frame.locator(
            '.dc-run-row[data-run="input_pipeline/augment_in_model-cpu0/train"] '
            'rect[data-component="handover"]')).to_have_count(0)
        legend = frame.locator('.dc-overview .dc-legend-item[data-component="handover"]')
        expect(legend).to_have_count(1)
        expect(legend).to_contain_text("handover of ready batches")
        swatch = legend.locator(".dc-swatch").get_attribute("style")
        assert fills["handover"].lower() in swatch.lower()

        # The predictions checked, in the report's order and figures.
        table = frame.locator(".dc-predictions table.dc-predictions-table")
        table.scroll_into_view_if_needed()
        rows = table.locator("tbody tr.dc-prediction")
        expect(rows).to_have_count(len(report["predictions"]))
        for index, pair in enumerate(report["predictions"]):
            row = rows.nth(index)
            expect(row).to_have_attribute("data-run", pair["run"])
            expect(row).to_have_attribute("data-counterpart", pair["counterpart"])
            predicted = formatting.fmt_speedup(pair["predicted_speedup"]) + (
                "*" if pair["extrapolated"] else "")
            expect(row.locator(".dc-predicted")).to_have_text(predicted)
            expect(row.locator(".dc-achieved")).to_have_text(
                formatting.fmt_speedup(pair["achieved_speedup"]))
            expect(row.locator(".dc-achieved-over-predicted")).to_have_text(
                formatting.fmt_speedup(pair["achieved_over_predicted"]))
            # The kind, then the sweep's name in code type as the README
            # has it (sweep `sweep`): never "sweep sweep" in one run of text.
            by = row.locator(".dc-prediction-by")
            if pair["predicted_by"] == "sweep":
                expect(by.locator("code.dc-sweep-name")).to_have_text(pair["sweep"])
                assert by.evaluate("cell => cell.firstChild.textContent") == "sweep "
            else:
                expect(by.locator("code")).to_have_text(pair["predicted_by"])
        assert any(pair["predicted_by"] == "sweep" for pair in report["predictions"])
        batch = table.locator('tr[data-change="batch_size"]')
        expect(batch.locator(".dc-prediction-change")).to_have_text("larger batch (10 \u2192 1,024)")
        page.screenshot(path=os.path.join(screenshots, "predictions.png"), full_page=True)

        # The comparison's bars shade the handover too.
        frame.locator(".dc-overview").scroll_into_view_if_needed()
        _open_compare(frame, [name, "small_work/batch10-cpu0/train"])
        chart = frame.locator(".dc-compare svg.dc-bars")
        expect(chart.locator('rect[data-component="handover"]')).to_have_count(2)
        expect(frame.locator('.dc-compare .dc-legend-item[data-component="handover"]')).to_have_count(1)
        # One crossover for the model: its sweep's, named as such (issue 23).
        [sweep] = report["sweeps"]
        expect(frame.locator(".dc-compare .dc-crossover")).to_have_text(
            "GPU:0 overtakes CPU:0 above about "
            f"{formatting.fmt_count(sweep['crossover_batch'])} samples per step. "
            "From the sweep \u201csweep\u201d of this model.")
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)
