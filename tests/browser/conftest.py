"""The browser tests' fixtures: one log directory of real fits, one
TensorBoard serving it and one Chromium for the whole folder, and a fresh
page on the Device Cost tab for each test.

Screenshots are saved into the directory named by `DEVICECOST_SCREENSHOTS`
(the README's come from `DEVICECOST_SCREENSHOTS=docs make test`), else into
the test's temporary directory.
"""

import os

import pytest
from playwright.sync_api import sync_playwright

from demo import serve

from tests.support import plugin_runs
from tests.support.tab import open_tab


@pytest.fixture(scope="package")
def logdir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("browser_logs"))
    plugin_runs.make_plugin_logdir(directory)
    return directory


@pytest.fixture(scope="package")
def tensorboard_url(logdir):
    process, url = serve.start_tensorboard(logdir, expected_runs=3)
    yield url
    serve.stop_tensorboard(process)


@pytest.fixture(scope="package")
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


@pytest.fixture
def tab(browser, tensorboard_url):
    """The TensorBoard page on the Device Cost tab, with its problems logged."""
    page, frame, problems = open_tab(browser, tensorboard_url)
    yield page, frame, problems
    page.close()
