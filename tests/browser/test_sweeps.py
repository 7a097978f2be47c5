"""The sweeps: samples/s against batch size per device, with the crossover."""

import os

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support import paths
from tests.support.tab import open_tab


pytestmark = [pytest.mark.browser, pytest.mark.slow]


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

    source = os.path.join(paths.DATA, "h100", "sweep_jax")
    shutil.copytree(source, tmp_path / "sweep_jax")
    x, y = data()
    tb_devicecost.sweep(build, x, y, batch_sizes=(8, 64), devices=("cpu:0", "cpu:1"),
                        log_dir=tmp_path / "mine", steps=4, your_batch_size=8)
    report = words.build_report(reader.read_runs(reader.local_provider(str(tmp_path))))
    sweeps = {sweep["name"]: sweep for sweep in report["sweeps"]}
    h100 = sweeps["sweep_jax"]
    assert h100["faster_above"] == "GPU:0"
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=26)
    try:
        page, frame, problems = open_tab(browser, url, rows=26)
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
