"""The Device Cost tab in a page of Chromium, for the browser tests: opened,
watched for our errors, its routes rewritten, its views opened, and the
report it must agree with."""

import json
import re

from playwright.sync_api import expect

from tb_devicecost import words
from tb_devicecost.reading import reader


def watch(page):
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


def device_cost_frame(page):
    return page.frame_locator('iframe[src*="name=devicecost"]')


def open_tab(browser, tensorboard_url, rewrite=None, rows=3, width=1400):
    """A new page on the Device Cost tab once its overview lists `rows` runs;
    `rewrite`, `(pattern, change)`, changes a route's JSON first (see
    `rewrite_json`). Returns `(page, frame, problems)`."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = watch(page)
    if rewrite:
        rewrite_json(page, *rewrite)
    page.goto(tensorboard_url + "/#devicecost")
    frame = device_cost_frame(page)
    expect(frame.locator(".dc-run-row")).to_have_count(rows, timeout=60_000)
    return page, frame, problems


def rewrite_json(page, pattern, change):
    """Serves the plugin route matching `pattern` with `change(body)` applied."""

    def serve(route):
        response = route.fetch()
        body = response.json()
        change(body)
        route.fulfill(response=response, body=json.dumps(body))

    page.route(re.compile(pattern), serve)


def report_of(logdir):
    return words.build_report(reader.read_runs(reader.local_provider(logdir)))


def run_result(logdir, name):
    [run] = [run for run in report_of(logdir)["runs"] if run["run"] == name]
    return run


def open_detail(frame, name):
    frame.locator(f'.dc-run-row[data-run="{name}"] a.dc-run-link').first.click()
    expect(frame.locator(f'.dc-detail[data-run="{name}"] svg.dc-chart').first).to_be_visible(
        timeout=30_000
    )


def open_compare(frame, names):
    for name in names:
        frame.locator(f'.dc-run-row[data-run="{name}"] input[type="checkbox"]').check()
    frame.get_by_role("button", name="Compare").click()
    expect(frame.locator(".dc-compare .dc-compare-table")).to_be_visible(timeout=30_000)
