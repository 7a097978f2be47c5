"""A run's detail: its step chart, statistics, run info, wall time and
findings, kept across a reload."""

import os
import re
import urllib.parse

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support import paths
from tests.support.tab import device_cost_frame, open_detail, open_tab, rewrite_json, run_result


pytestmark = [pytest.mark.browser, pytest.mark.slow]


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


def test_the_detail_view_shows_one_fetch_floor(tab, logdir):
    page, frame, problems = tab
    run = run_result(logdir, "cpu/train")
    open_detail(frame, "cpu/train")
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


def test_run_info_shows_what_helps_the_user(tab, logdir):
    page, frame, problems = tab

    def distributed(body):
        if body.get("run") == "slow/train":
            body["info"]["distribution_strategy"] = "MirroredStrategy"
            body["info"]["replicas"] = 2
            body["info"]["steps_per_execution"] = 4

    rewrite_json(page, r".*/data/plugin/devicecost/run\?.*", distributed)
    [record] = [r for r in reader.read_runs(reader.local_provider(logdir)) if r.run == "cpu/train"]
    open_detail(frame, "cpu/train")
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
    open_detail(frame, "slow/train")
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

    rewrite_json(page, r".*/data/plugin/devicecost/run\?.*", with_wall)
    open_detail(frame, "cpu/train")
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


def test_a_findings_fix_shows_what_it_would_buy(browser, tmp_path, screenshots):
    """The JAX MLP at batch 32 on a real NVIDIA H100 with its trace window
    (tests/data/h100_traced): the latency_bound finding's fix is followed by
    its estimate, the figures of tests/end_to_end/test_gpu_runs.py (0.029 ms of device
    time per 32 samples, 0.777 ms fixed: at least 10 times the samples/s at
    batch 512, a bound from below); the warm-up finding carries its bound."""
    import shutil

    source = os.path.join(paths.DATA, "h100_traced", "jax_mlp_b32")
    shutil.copytree(source, tmp_path / "jax_mlp_b32")
    report = words.build_report(reader.read_runs(reader.local_provider(str(tmp_path))))
    run = next(item for item in report["runs"] if item["run"] == "jax_mlp_b32/gpu/train")
    latency = next(item for item in run["findings"] if item["id"] == "latency_bound")
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=1)
    try:
        page, frame, problems = open_tab(browser, url, rows=1)
        # The overview's summary: the worst finding's headline (issue 23),
        # then its fix's expected gain, not its evidence (issue 34): here the
        # verdict's own finding, warm-up, whose fix changes no setting.
        summary = frame.locator(".dc-summary")
        expect(summary.locator(".dc-summary-headline")).to_have_count(1)
        expect(summary).not_to_contain_text(" ms mean traced step")
        top = run["findings"][0]
        assert top["id"] == run["verdict"] and top["change"] == "none"
        expect(summary.locator(".dc-summary-fix")).to_have_text(
            f"Fix: expected {top['expected']['text']}. ")
        open_detail(frame, "jax_mlp_b32/gpu/train")
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
            "at least 10x the samples/s at batch 512 (410,000 instead of 39,697)"
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


def test_a_reload_or_a_shared_link_keeps_the_detail_view(tab, browser):
    page, frame, problems = tab
    open_detail(frame, "slow/train")
    expect(page).to_have_url(re.compile(r"#devicecost&.*p\.devicecost\.run="))
    page.reload()
    frame = device_cost_frame(page)
    expect(frame.locator('.dc-detail[data-run="slow/train"] svg.dc-chart').first).to_be_visible(
        timeout=60_000
    )
    shared = browser.new_page(viewport={"width": 1400, "height": 900})
    shared.goto(page.url)
    expect(
        device_cost_frame(shared).locator('.dc-detail[data-run="slow/train"] svg.dc-chart').first
    ).to_be_visible(timeout=60_000)
    shared.close()

    # Back to the overview: the address bar holds no view any more.
    frame.locator(".dc-back").first.click()
    expect(frame.locator(".dc-run-row")).to_have_count(3, timeout=30_000)
    page.wait_for_function("() => !location.hash.includes('p.devicecost.view')")
    assert urllib.parse.urlsplit(page.url).fragment.split("&")[0] == "devicecost"
    assert problems["page_errors"] == []


def test_the_detail_view_says_what_measuring_took(tab, logdir):
    page, frame, problems = tab
    run = run_result(logdir, "cpu/train")
    open_detail(frame, "cpu/train")
    stat = frame.locator('.dc-stat[data-stat="self_cost"]')
    expect(stat.locator(".dc-stat-value")).to_have_text(
        formatting.fmt_ms(run["self_us_per_step"]) + " µs a step")
    expect(stat.locator(".dc-stat-sub")).to_have_text(run["self_cost_text"])
    expect(frame.locator(".dc-detail .dc-uncertain")).to_have_count(
        1 if run["verdict_uncertain"] else 0)
    assert problems["page_errors"] == []


def test_an_uncertain_verdict_is_marked_and_older_data_says_not_recorded(tab, logdir):
    page, frame, problems = tab

    def rewritten(body):
        if body.get("run") == "cpu/train":
            body["verdict_uncertain"] = True
            body["self_share"] = 0.072
        if body.get("run") == "slow/train":
            body["self_us_per_step"] = None
            body["self_cost_text"] = "What measuring took of each step was not recorded (older data, or a custom loop)."

    rewrite_json(page, r".*/data/plugin/devicecost/run\?.*", rewritten)
    open_detail(frame, "cpu/train")
    expect(frame.locator(".dc-detail .dc-uncertain")).to_have_text(
        "uncertain: measuring took 7.2% of the step")
    frame.locator(".dc-crumbs a").first.click()
    open_detail(frame, "slow/train")
    stat = frame.locator('.dc-stat[data-stat="self_cost"]')
    expect(stat.locator(".dc-stat-value")).to_have_text("not recorded")
    expect(frame.locator(".dc-detail .dc-uncertain")).to_have_count(0)
    assert problems["page_errors"] == []
