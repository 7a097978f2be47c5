"""The overview: each run's row, its verdict, where its step ran, and its
speedup (or why none)."""

import os
import re

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support import paths, plugin_runs
from tests.support.tab import open_detail, open_tab, report_of, run_result


pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_overview_lists_each_run_with_the_cli_verdict(tab, logdir, screenshots):
    page, frame, problems = tab
    report = words.build_report(reader.read_runs(reader.local_provider(logdir)))
    for run in report["runs"]:
        row = frame.locator(f'.dc-run-row[data-run="{run["run"]}"]')
        expect(row).to_have_count(1)
        expect(row.locator(".dc-verdict")).to_have_attribute("data-verdict", run["verdict"])
    # The Python pipeline starves the steady steps. Its whole fit's verdict
    # is the one shown (checked above): `input_bound` quiet, but under load
    # its warm-up (about 1 s quiet) can outweigh 80 steps of 30 ms.
    [slow] = [run for run in report["runs"] if run["run"] == "slow/train"]
    assert slow["steady_verdict"] == "input_bound", slow["findings"]
    page.screenshot(path=os.path.join(screenshots, "overview.png"))
    assert problems["console_errors"] == []
    assert problems["page_errors"] == []


def _runs_of(body):
    runs = list(body.get("runs", []))
    if "run" in body:  # the run route: one run
        runs.append(body)
    return runs


def test_the_device_column_shows_where_the_step_ran(browser, tensorboard_url, logdir):
    """The fixture's process has two logical CPUs, so every run sees CPU:0 and
    CPU:1 but runs on one: only that one is shown. A step that used two
    devices (served in place of slow/train's) shows both."""
    runs = report_of(logdir)["runs"]
    assert all(len(run["placement"]["devices"]) > 1 for run in runs)  # visible, not used

    def two_devices(body):
        for run in _runs_of(body):
            if run["run"] == "slow/train":
                run["device"] = "CPU:1"
                run["devices_used"] = ["CPU:1", "CPU:0"]

    page, frame, problems = open_tab(browser, tensorboard_url, rewrite=(
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

    open_detail(frame, "cpu/train")
    cpu = run_result(logdir, "cpu/train")
    expect(frame.locator('.dc-stat[data-stat="device"] .dc-stat-value')).to_have_text(cpu["device"])
    expect(frame.locator(".dc-placement .dc-step-device")).to_have_text(cpu["device"])
    page.close()
    assert problems["page_errors"] == []


def test_without_a_sensible_baseline_no_speedup_is_shown(tab, logdir):
    """The fixture's runs are not one model on two devices, so the analysis
    chooses no baseline: no ratio in the tab, and a sentence that says why."""
    page, frame, problems = tab
    assert report_of(logdir)["comparison"] is None
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


def test_a_run_named_with_html_is_shown_as_text(tab):
    page, frame, problems = tab
    name = f"{plugin_runs.XSS_RUN_DIR}/train"
    row = frame.locator(".dc-run-row").filter(has_text=name)
    expect(row).to_have_count(1)
    assert frame.locator("img[src='x']").count() == 0
    page.wait_for_timeout(500)
    assert problems["dialogs"] == []


def test_runs_recorded_on_an_h100_show_beside_their_cpu_runs(browser, tmp_path):
    """Runs recorded on a real NVIDIA H100 (tests/data/h100, JAX and PyTorch)
    in the tab: the backend and the GPU named, the CPU run as the baseline,
    and the small MLP's GPU run slower than its CPU run at batch 32."""
    import shutil

    source = os.path.join(paths.DATA, "h100")
    runs = ["jax_mlp_b32", "torch_mlp_b32"]
    for name in runs:
        shutil.copytree(os.path.join(source, name), tmp_path / name)
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=4)
    try:
        page, frame, problems = open_tab(browser, url, rows=4)
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


def test_short_validation_runs_are_never_worth_a_look_first(browser, tensorboard_url):
    """Issue 35, item 10: a run marked `few_steps` (a short validation run,
    judged by its typical step) is neither the summary's run nor in its
    "Also worth a look", however its verdict reads; the others still are."""

    def change(body):
        for index, run in enumerate(body["runs"]):
            run["verdict"] = "input_bound"
            run["few_steps"] = index > 0

    page, frame, problems = open_tab(
        browser, tensorboard_url, rewrite=(r"/data/plugin/devicecost/runs", change))
    try:
        summary = frame.locator(".dc-summary-text")
        expect(summary).to_contain_text("input-bound")
        expect(summary).not_to_contain_text("Also worth a look")
        assert problems["page_errors"] == [] and problems["console_errors"] == []
    finally:
        page.close()

    def unmarked(body):
        for run in body["runs"]:
            run["verdict"] = "input_bound"
            run["few_steps"] = False

    # Unmarked, the same runs fill it: the check above can fail.
    page, frame, problems = open_tab(
        browser, tensorboard_url, rewrite=(r"/data/plugin/devicecost/runs", unmarked))
    try:
        expect(frame.locator(".dc-summary-text")).to_contain_text("Also worth a look")
    finally:
        page.close()
