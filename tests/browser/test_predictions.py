"""The handover shaded apart in the share bars, and the predictions checked
under the sweeps."""

import os
import re

import pytest
from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader
from demo import serve

from tests.support import paths
from tests.support.tab import open_compare, open_tab


pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_handover_is_shaded_apart_and_predictions_are_checked(browser, tmp_path, screenshots):
    """The demo recorded on a real NVIDIA H100 (tests/data/h100_demo/jax, the
    JAX backend): each share bar draws the part of the data wait spent
    handing over ready batches in its own, lighter shade, with a legend
    entry, so a pipeline that keeps up does not look input-bound; the
    comparison's stacked bars do too. Under the sweep, the predictions
    checked: each run with a fixed counterpart, the gain predicted beside
    the gain achieved, as the report gives them (issue 23)."""
    import shutil

    source = os.path.join(paths.DATA, "h100_demo", "jax")
    shutil.copytree(source, tmp_path / "jax")
    logdir = str(tmp_path / "jax")
    report = words.build_report(reader.read_runs(reader.local_provider(logdir)))
    runs = {run["run"]: run for run in report["runs"]}
    process, url = serve.start_tensorboard(logdir, expected_runs=len(runs))
    try:
        page, frame, problems = open_tab(browser, url, rows=len(runs))
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
            expect(row.locator(".dc-achieved")).to_have_text(
                formatting.fmt_speedup(pair["achieved_speedup"]))
            ratio = row.locator(".dc-achieved-over-predicted")
            if pair["predicted_speedup"] is None:
                # No honest figure: "none", the reason on hover and below.
                expect(row.locator(".dc-predicted")).to_have_text("none")
                expect(row.locator(".dc-predicted")).to_have_attribute(
                    "title", "No prediction: " + pair["unpredicted"])
                expect(ratio).to_have_text("\u2014")
                continue
            bound = {"at_least": "\u2265 ", "at_most": "\u2264 "}.get(pair["predicted"]["bound"], "")
            predicted = bound + formatting.fmt_speedup(pair["predicted_speedup"]) + (
                "*" if pair["extrapolated"] else "")
            expect(row.locator(".dc-predicted")).to_have_text(predicted)
            if bound:
                expect(ratio).to_have_text("held" if pair["within_bound"] else "broken")
            else:
                expect(ratio).to_have_text(formatting.fmt_speedup(pair["achieved_over_predicted"]))
            # The kind, then the sweep's name in code type as the README
            # has it (sweep `sweep`): never "sweep sweep" in one run of text.
            by = row.locator(".dc-prediction-by")
            if pair["predicted_by"] == "sweep":
                expect(by.locator("code.dc-sweep-name")).to_have_text(pair["sweep"])
                assert by.evaluate("cell => cell.firstChild.textContent") == "sweep "
            else:
                expect(by.locator("code")).to_have_text(pair["predicted_by"])
        assert any(pair["predicted_by"] == "sweep" for pair in report["predictions"])
        # Each pair without a figure says why, below the table.
        unpredicted = [pair for pair in report["predictions"] if pair["predicted_speedup"] is None]
        assert unpredicted
        items = frame.locator(".dc-predictions ul.dc-unpredicted li")
        expect(items).to_have_count(len(unpredicted))
        for item, pair in zip(range(len(unpredicted)), unpredicted):
            expect(items.nth(item)).to_contain_text(pair["unpredicted"])
        batch = table.locator('tr[data-change="batch_size"]')
        # One on each device, from the sweep of the model there.
        expect(batch.locator(".dc-prediction-change")).to_have_text(
            ["larger batch (10 \u2192 1,024)"] * 2)
        page.screenshot(path=os.path.join(screenshots, "predictions.png"), full_page=True)

        # The comparison's bars shade the handover too.
        frame.locator(".dc-overview").scroll_into_view_if_needed()
        open_compare(frame, [name, "small_work/batch10-cpu0/train"])
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
