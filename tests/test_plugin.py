"""The plugin through TensorBoard's real WSGI app, and a real TensorBoard."""

import json
import os
import urllib.parse
import urllib.request

import pytest
from tensorboard.backend import application
from tensorboard.backend.event_processing import data_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from werkzeug import test as werkzeug_test

from tb_devicecost import analysis
from tb_devicecost import plugin as plugin_module
from tb_devicecost import plugin_loader
from tb_devicecost import reader
from tb_devicecost import serve

import plugin_runs

PREFIX = "/data/plugin/devicecost"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("plugin_logs")
    plugin_runs.make_plugin_logdir(str(directory))
    # A run that holds nothing of ours and one that holds only a trace.
    os.makedirs(directory / "other" / "plugins" / "profile" / "2026_01_02_03_04_05")
    (directory / "other" / "plugins" / "profile" / "2026_01_02_03_04_05" / "h.xplane.pb").write_bytes(b"")
    return str(directory)


def make_client(logdir):
    """A client of TensorBoard's WSGI app serving only our plugin over `logdir`."""
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, logdir)
    context = base_plugin.TBContext(logdir=logdir, data_provider=provider)
    plugin = plugin_loader.DeviceCostPluginLoader().load(context)
    app = application.TensorBoardWSGI([plugin], data_provider=provider)
    return werkzeug_test.Client(app)


@pytest.fixture(scope="module")
def client(logdir):
    return make_client(logdir)


@pytest.fixture(scope="module")
def paired_client(tmp_path_factory, helpers):
    """One model trained on the CPU and on a GPU (hand-made), and another model."""
    directory = tmp_path_factory.mktemp("paired_logs")
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 10,
            "steps_per_record": 1, "fetch_in_graph": False}
    for run, aggregate, placement in (
        ("cpu/train", helpers.make_aggregate(0.1, 0.8, 0.05, batch_size=10),
         helpers.cpu_placement()),
        ("gpu/train", helpers.make_aggregate(0.1, 1.9, 0.05, batch_size=10),
         helpers.gpu_placement()),
        ("other/train", helpers.make_aggregate(0.1, 3.0, 0.05, batch_size=10),
         helpers.cpu_placement()),
    ):
        helpers.write_run(str(directory / run), aggregate=aggregate, info=info,
                          placement=placement)
    return make_client(str(directory))


def get_json(client, path):
    response = client.get(PREFIX + path)
    assert response.status_code == 200, response.get_data(as_text=True)
    return json.loads(response.get_data(as_text=True))


def test_runs_route_serves_the_same_analysis_as_the_report(client, logdir):
    body = get_json(client, "/runs")
    names = [run["run"] for run in body["runs"]]
    assert names == sorted(["cpu/train", "slow/train", f"{plugin_runs.XSS_RUN_DIR}/train"])
    expected = analysis.build_report(reader.read_runs(reader.local_provider(logdir)))
    for served, reported in zip(body["runs"], expected["runs"]):
        assert served["verdict"] == reported["verdict"]
        assert served["step_ms"] == reported["step_ms"]
        assert served["shares"] == reported["shares"]
    verdicts = {run["run"]: run["verdict"] for run in body["runs"]}
    assert verdicts["slow/train"] == "input_bound"
    assert verdicts["cpu/train"] != "input_bound"
    # Three different models, none with a run on the CPU to compare with.
    assert body["comparison"] == expected["comparison"] is None
    assert body["profile_only"] == ["other"]


def test_runs_route_takes_a_baseline_and_rejects_an_unknown_one(client):
    body = get_json(client, "/runs?baseline=slow/train")
    assert body["comparison"]["baseline"] == "slow/train"
    response = client.get(PREFIX + "/runs?baseline=nope")
    assert response.status_code == 404
    assert "nope" in response.get_data(as_text=True)


def test_run_route_serves_series_and_profile_links(client):
    body = get_json(client, "/run?run=cpu/train")
    series = body["series"]
    assert len(series["step"]) == 40
    assert series["step"] == sorted(series["step"])
    assert len(series["compute_ms"]) == len(series["step"])
    # One fit: its first step and, since Keras traced its step function in
    # that fit, the next one (docs/FORMAT.md, `warmup`).
    assert body["warmup_steps"] == [0, 1]
    assert body["info"]["backend"] == "tensorflow"
    [link] = body["profile"]
    assert link["url"].startswith("../../../?")
    query = urllib.parse.parse_qs(link["url"].split("?", 1)[1].split("#")[0])
    assert query["run"] == [f"cpu/train/{link['capture']}"]
    assert query["tool"] == ["overview_page"]
    assert link["url"].endswith("#profile")


def test_runs_route_compares_a_gpu_run_with_its_cpu_run(paired_client):
    comparison = get_json(paired_client, "/runs")["comparison"]
    assert comparison["baseline"] == "cpu/train"
    assert "same model trained on the CPU" in comparison["baseline_reason"]
    against = {row["run"]: row["against"] for row in comparison["rows"]}
    assert against == {"cpu/train": "cpu/train", "gpu/train": "cpu/train"}


def test_compare_route_picks_the_cpu_run_as_baseline(paired_client):
    body = get_json(paired_client, "/compare?run=gpu/train&run=cpu/train&run=other/train")
    assert body["baseline"] == "cpu/train"
    rows = {row["run"]: row for row in body["rows"]}
    assert set(rows) == {"cpu/train", "gpu/train"}
    assert rows["cpu/train"]["is_baseline"]
    assert rows["gpu/train"]["speedup"] == pytest.approx((0.1 + 0.8 + 0.05) / (0.1 + 1.9 + 0.05))
    assert rows["gpu/train"]["explanation"].startswith("gpu/train is 0.46x as fast as cpu/train")
    assert "other/train" in body["baseline_reason"]


def test_compare_route_without_a_cpu_counterpart_compares_nothing(client):
    body = get_json(client, "/compare?run=cpu/train&run=slow/train")
    assert body["baseline"] is None
    assert body["rows"] == []


def test_compare_route_rows_for_each_run(client):
    body = get_json(client, "/compare?run=cpu/train&run=slow/train&baseline=cpu/train")
    assert body["baseline"] == "cpu/train"
    rows = {row["run"]: row for row in body["rows"]}
    assert rows["cpu/train"]["speedup"] == pytest.approx(1.0)
    assert rows["slow/train"]["speedup"] < 1.0
    assert "slow/train" in rows["slow/train"]["explanation"]


@pytest.mark.parametrize(
    "path, status, message",
    [
        ("/run", 400, "Missing query parameter `run`"),
        ("/run?run=missing/train", 404, "missing/train"),
        ("/compare", 400, "Missing query parameter `run`"),
        ("/compare?run=cpu/train&run=cpu/train", 400, "2 to 100 different runs"),
        ("/compare?run=cpu/train&run=ghost", 404, "ghost"),
        ("/compare?run=cpu/train&run=slow/train&baseline=ghost", 400, "must be one of"),
        ("/run?run=" + "x" * 2000, 400, "at most 1024 characters"),
    ],
)
def test_bad_requests_get_a_clear_4xx(client, path, status, message):
    response = client.get(PREFIX + path)
    assert response.status_code == status
    assert message in response.get_data(as_text=True)


def test_static_route_serves_the_frontend(client):
    response = client.get(PREFIX + "/static/index.js")
    assert response.status_code == 200
    assert "javascript" in response.headers["Content-Type"]
    assert b"export" in response.get_data()


@pytest.mark.parametrize(
    "path",
    [
        "/static/../plugin.py",
        "/static/..%2fplugin.py",
        "/static/..%2F..%2Fsetup.cfg",
        "/static/%2e%2e/plugin.py",
        "/static/views/../../plugin.py",
        "/static/..\\plugin.py",
        "/static/%2fetc%2fpasswd",
        "/static/",
        "/static/nothing.js",
    ],
)
def test_static_route_refuses_traversal(client, path):
    response = client.get(PREFIX + path)
    assert response.status_code == 404


def test_static_file_resolution_stays_inside_the_frontend():
    # The package's static/ when installed from a wheel, frontend/ in a checkout.
    assert plugin_module._static_file(PREFIX + "/static/index.js") == os.path.join(
        plugin_module._STATIC_DIR, "index.js"
    )
    assert plugin_module._static_file(PREFIX + "/static/%2e%2e%2fplugin.py") is None


@pytest.fixture(scope="module")
def tensorboard_server(logdir):
    """A real `tensorboard` process on a free port, with its default loader."""
    process, url = serve.start_tensorboard(logdir, expected_runs=3)
    yield url
    serve.stop_tensorboard(process)


def test_real_tensorboard_lists_the_tab_and_serves_runs(tensorboard_server):
    with urllib.request.urlopen(tensorboard_server + "/data/plugins_listing") as response:
        listing = json.load(response)
    entry = listing["devicecost"]
    assert entry["tab_name"] == "Device Cost"
    assert entry["loading_mechanism"]["module_path"].endswith(
        "/data/plugin/devicecost/static/index.js"
    )
    # Served through the default (Rust) loader, not the multiplexer.
    with urllib.request.urlopen(tensorboard_server + PREFIX + "/runs") as response:
        body = json.load(response)
    verdicts = {run["run"]: run["verdict"] for run in body["runs"]}
    assert verdicts["slow/train"] == "input_bound"
    steps = {run["run"]: run["steps"] for run in body["runs"]}
    assert steps["cpu/train"] == 40
