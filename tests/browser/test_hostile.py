"""The tab under hostile layouts (issues 25 and 35), in headless Chromium."""

import os

import pytest
from playwright.sync_api import expect

from demo import serve

from tests.support import fuzz_layouts
from tests.support.tab import open_detail, open_tab


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


RLO = "\u202e"


def test_the_tab_lists_runs_beside_a_sys_link_and_isolates_every_recorded_string(
        browser, tmp_path):
    """Issue 35, items 6 to 8, in a real TensorBoard (its Rust loader).
    A link to /sys, which that loader follows and never finishes walking
    (the tab listed no run, each called damaged), is skipped with the
    reason while the runs are listed; a run named with a byte that is not
    UTF-8 is listed as `caf\\xe9/train`, as the report names it; device,
    model and host names holding U+202E sit each in its own <bdi>, so the
    override reorders nothing around them."""
    logdir = str(tmp_path)
    device = "GPU:0" + RLO + "x"
    model = "NVIDIA " + RLO + "H100"
    placement = {
        "devices": {"physical": [{"name": "CPU:0", "kind": "CPU"},
                                 {"name": device, "kind": "GPU", "model": model}],
                    "logical": [{"name": "CPU:0", "kind": "CPU"},
                                {"name": device, "kind": "GPU"}]},
        "accelerator_visible": True, "variables": {device: 4},
        "ops": {"CPU:0": 40, device: 300}, "cross_device_copies": 0,
    }
    fuzz_layouts.record(os.path.join(logdir, "gpu", "train"),
                        {"model": "mlp" + RLO + "x", "hostname": "host" + RLO + "y"},
                        placement=placement, steps=30)
    fuzz_layouts.record(os.path.join(logdir, os.fsdecode(b"caf\xe9"), "train"), {}, steps=30)
    os.symlink("/sys", os.path.join(logdir, "sys"))
    process, url = serve.start_tensorboard(logdir, expected_runs=2, timeout=90)
    try:
        page, frame, problems = open_tab(browser, url, rows=2)
        expect(frame.locator('.dc-run-row[data-run="caf\\\\xe9/train"]')).to_have_count(1)
        skipped = frame.locator(".dc-skipped")
        expect(skipped).to_contain_text("A symbolic link into /sys: not followed")
        expect(skipped).not_to_contain_text("no readable tb-devicecost summaries")
        row = frame.locator('.dc-run-row[data-run="gpu/train"]')
        expect(row.locator(".dc-device bdi")).to_have_text(device)
        open_detail(frame, "gpu/train")
        expect(frame.locator('.dc-stat[data-stat="device"] .dc-stat-value bdi')).to_have_text(
            [device, "CPU:0"])
        expect(frame.locator(".dc-placement .dc-step-device bdi")).to_have_text([device, model])
        values = frame.locator(".dc-kv dd bdi")
        for text in ("mlp" + RLO + "x", "host" + RLO + "y"):
            expect(values.filter(has_text=text)).to_have_count(1)
        assert problems["console_errors"] == []
        assert problems["page_errors"] == []
        page.close()
    finally:
        serve.stop_tensorboard(process)
