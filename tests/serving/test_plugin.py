"""The plugin through TensorBoard's real WSGI app, and a real TensorBoard."""

import contextlib
import gzip
import io
import json
import os
import urllib.parse
import urllib.request

import numpy as np
import pytest
from tensorboard.backend import application
from tensorboard.backend.event_processing import data_provider
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from werkzeug import test as werkzeug_test

from tb_devicecost import cli
from tb_devicecost import words
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader
from tb_devicecost.serving import plugin as plugin_module
from tb_devicecost.serving import plugin_loader
from demo import serve

from tests.support import paths, plugin_runs
from tests.support.documents import cpu_placement, gpu_placement, make_aggregate, make_trace
from tests.support.event_files import write_run


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
def paired_client(tmp_path_factory):
    """One model trained on the CPU and on a GPU (hand-made), and another model."""
    directory = tmp_path_factory.mktemp("paired_logs")
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 10,
            "steps_per_record": 1, "fetch_in_graph": False}
    for run, aggregate, placement in (
        ("cpu/train", make_aggregate(0.1, 0.8, 0.05, batch_size=10),
         cpu_placement()),
        ("gpu/train", make_aggregate(0.1, 1.9, 0.05, batch_size=10),
         gpu_placement()),
        ("other/train", make_aggregate(0.1, 3.0, 0.05, batch_size=10),
         cpu_placement()),
    ):
        write_run(str(directory / run), aggregate=aggregate, info=info,
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
    expected = words.build_report(reader.read_runs(reader.local_provider(logdir)))
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
    assert series["step"] == list(range(40))  # Every step of a short fit.
    assert len(series["compute_ms"]) == len(series["step"])
    # Each step's start, in order: a real fit of 40 steps, seconds apart at most.
    wall = series["wall_time"]
    assert len(wall) == 40 and wall == sorted(wall) and 0 < wall[-1] - wall[0] < 60
    assert series["warmup"][:3] == [1.0, 1.0, 0.0]
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
        ("/run?run=" + "x" * 5000, 400, "at most 4096 characters"),
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
    # The glossary the tab's header links to (docs/READING.md).
    response = client.get(PREFIX + "/static/READING.txt")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert b"# How to read the tab" in response.get_data()


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


@pytest.mark.slow
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


# Issue 16: damaged runs beside intact ones; methods.


@pytest.mark.parametrize("route", ["/runs", "/run?run=cpu/train",
                                   "/compare?run=cpu/train&run=slow/train",
                                   "/static/index.js"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "FOO"])
def test_every_route_answers_405_to_a_method_it_does_not_serve(client, route, method):
    response = client.open(PREFIX + route, method=method)
    assert response.status_code == 405
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}
    # As docs/HTTP_API.md says of every error (issue 35, item 11): one
    # plain sentence, not werkzeug's HTML page.
    assert response.content_type.startswith("text/plain"), response.content_type
    text = response.get_data(as_text=True)
    assert "<" not in text and text.count("\n") <= 1 and method in text, text
    assert client.open(PREFIX + route, method="HEAD").status_code == 200


def damaged_logdir(root):
    """Two intact runs, and beside them runs damaged as issue 16 found."""
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 32,
            "steps_per_record": 1, "fetch_in_graph": False}
    rows = [(step, 1.0, 4.0, 0.5, 32) for step in range(30)]
    for run in ("cpu/train", "gpu/train"):
        write_run(str(root / run), aggregate=make_aggregate(1.0, 4.0, 0.5),
                          info=info, placement=cpu_placement(), rows=rows)
    deep = "[" * 5000 + "]" * 5000
    write_run(str(root / "deep" / "train"), info=info, rows=rows,
                      raw_documents={metadata.TAG_AGGREGATE: '{"schema": 1, "x": %s}' % deep,
                                     metadata.TAG_RUN_INFO: '{"schema": 1, "y": %s}' % deep})
    trace = make_trace(0.5)
    trace["windows"][0]["steps"][0]["step"] = [1]
    write_run(str(root / "trace" / "train"), info=info, rows=rows,
                      aggregate=make_aggregate(1.0, 4.0, 0.5),
                      raw_documents={metadata.TAG_TRACE: json.dumps(trace)})
    # The aggregate lost: cut in its last record.
    cut = write_run(str(root / "cut" / "train"), info=info, rows=rows,
                            aggregate=make_aggregate(1.0, 4.0, 0.5))
    [name] = [n for n in os.listdir(cut) if "tfevents" in n]
    path = os.path.join(cut, name)
    os.truncate(path, os.path.getsize(path) - 40)
    # An event file of random bytes only, and no step yet.
    os.makedirs(root / "garbage" / "train")
    (root / "garbage" / "train" / "events.out.tfevents.1.host").write_bytes(os.urandom(2048))
    write_run(str(root / "empty" / "train"), info=info)
    return str(root)


def report_lists(report):
    return ([run["run"] for run in report["runs"]],
            sorted((item["run"], item["reason"]) for item in report["skipped"]))


def test_the_tab_and_the_report_list_the_same_runs_and_skipped_runs(tmp_path):
    logdir = damaged_logdir(tmp_path)
    client = make_client(logdir)
    tab = get_json(client, "/runs")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main(["report", logdir, "--json"]) == 0, err.getvalue()
    report = json.loads(out.getvalue())
    assert report_lists(tab) == report_lists(report)
    runs, skipped = report_lists(tab)
    # The lost aggregate: the steps come from the series, in both.
    assert {"cpu/train", "gpu/train", "cut/train", "trace/train", "deep/train"} <= set(runs)
    assert {name for name, _ in skipped} == {"garbage/train", "empty/train"}
    for run in runs:
        assert client.get(PREFIX + "/run?run=" + run).status_code == 200, run
    response = client.get(PREFIX + "/compare?run=cpu/train&run=deep/train&run=trace/train")
    assert response.status_code == 200
    for run in ("garbage/train", "empty/train"):
        response = client.get(PREFIX + "/run?run=" + run)
        assert response.status_code == 404
        assert dict(skipped)[run] in response.get_data(as_text=True)


def test_run_and_compare_routes_skip_a_run_the_analysis_cannot_take(logdir, monkeypatch):
    """`/run` and `/compare` are guarded as `/runs` is: a run whose
    analysis raises is a 404 with the reason, never a 500."""
    client = make_client(logdir)  # A plugin whose `runs` body is not built yet.
    original = words.report.run_object

    def analyze(run):
        if run.run == "slow/train":
            raise TypeError("unhashable type: 'list'")
        return original(run)

    monkeypatch.setattr(words.report, "run_object", analyze)
    body = get_json(client, "/runs")
    reason = {item["run"]: item["reason"] for item in body["skipped"]}["slow/train"]
    assert "TypeError" in reason
    for path in ("/run?run=slow/train", "/compare?run=cpu/train&run=slow/train"):
        response = client.get(PREFIX + path)
        assert response.status_code == 404, path
        assert reason in response.get_data(as_text=True)


def test_runs_route_is_built_again_exactly_when_its_data_changes(tmp_path, monkeypatch):
    """The `runs` body is kept while the data, the event files and the
    captures are unchanged, and built again when any of them changes."""
    info = {"schema": 2, "backend": "tensorflow", "batch_size": 32,
            "steps_per_record": 1, "fetch_in_graph": False}
    run_dir = str(tmp_path / "a" / "train")
    write_run(run_dir, aggregate=make_aggregate(1.0, 4.0, 0.5), info=info,
                      rows=[(step, 1.0, 4.0, 0.5, 32) for step in range(20)])
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(tmp_path))
    plugin = plugin_loader.DeviceCostPluginLoader().load(
        base_plugin.TBContext(logdir=str(tmp_path), data_provider=provider))
    client = werkzeug_test.Client(application.TensorBoardWSGI([plugin], data_provider=provider))
    built = []
    original = words.build_report
    monkeypatch.setattr(words, "build_report",
                        lambda *args, **kwargs: built.append(1) or original(*args, **kwargs))

    [run] = get_json(client, "/runs")["runs"]
    assert (run["steps"], run["profile"], len(built)) == (101, [], 1)
    assert get_json(client, "/runs")["runs"][0]["steps"] == 101
    assert len(built) == 1  # Unchanged: not analysed again.

    # A newer aggregate, once TensorBoard has read it.
    write_run(run_dir, aggregate=make_aggregate(1.0, 4.0, 0.5, warmup_ms=None))
    assert get_json(client, "/runs")["runs"][0]["steps"] == 101  # The file changed...
    assert len(built) == 2
    multiplexer.Reload()
    assert get_json(client, "/runs")["runs"][0]["steps"] == 100  # ...then the data.
    assert len(built) == 3

    # A profiler capture: the same data, a new link.
    capture = tmp_path / "a" / "train" / "plugins" / "profile" / "2026_01_02_03_04_05"
    os.makedirs(capture)
    (capture / "host.xplane.pb").write_bytes(b"")
    [run] = get_json(client, "/runs")["runs"]
    assert [item["capture"] for item in run["profile"]] == ["2026_01_02_03_04_05"]
    assert len(built) == 4
    # A client that does not take gzip gets the JSON itself; one that does, gzip.
    response = client.get(PREFIX + "/runs", headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(response.get_data()))["runs"][0]["run"] == "a/train"
    assert len(built) == 4


def test_compare_route_gives_the_same_models_sweep_crossover():
    """The demo recorded on a real NVIDIA H100 (tests/data/h100_demo/jax):
    comparing small_work/batch10-gpu0 with small_work/batch10-cpu0 in the
    tab gives the crossover of the same model's sweep, the one its sweep
    panel shows, not a second one from the two small_work batch sizes."""
    logdir = os.path.join(paths.DATA, "h100_demo", "jax")
    gpu, cpu = "small_work/batch10-gpu0/train", "small_work/batch10-cpu0/train"
    body = get_json(make_client(logdir), f"/compare?run={gpu}&run={cpu}")
    [tab_row] = [row for row in body["rows"] if row["run"] == gpu]
    report = words.build_report(reader.read_runs(reader.local_provider(logdir)))
    [sweep] = report["sweeps"]
    assert tab_row["scaling"]["sweep"] == sweep["name"]
    assert tab_row["scaling"]["crossover_batch"] == sweep["crossover_batch"]
    assert f"wins above about {sweep['crossover_batch']:,} samples per step" in tab_row["explanation"]


@pytest.mark.slow
def test_compare_route_explains_with_the_same_models_other_runs_as_the_report():
    """Runs recorded on an NVIDIA H100 (tests/data/h100): comparing only the
    batch-32 GPU and CPU runs in the tab, the explanation still draws on the
    same model's batch-8192 runs, as the report's comparison does, so both
    quote the same fixed costs and crossover."""
    logdir = os.path.join(paths.DATA, "h100")
    gpu, cpu = "jax_mlp_b32/gpu/train", "jax_mlp_b32/cpu/train"
    body = get_json(make_client(logdir), f"/compare?run={gpu}&run={cpu}")
    [tab_row] = [row for row in body["rows"] if row["run"] == gpu]
    report = words.build_report(reader.read_runs(reader.local_provider(logdir)))
    [report_row] = [row for row in report["comparison"]["rows"] if row["run"] == gpu]
    assert tab_row["scaling"] is not None
    assert tab_row["scaling"] == report_row["scaling"]
    assert tab_row["explanation"] == report_row["explanation"]


@pytest.mark.slow
def test_a_long_run_through_tensorboards_data_server_shows_whole_sampled_blocks(
        tmp_path):
    """TensorBoard's default loader keeps 100 blocks of a run's steps
    (docs/FORMAT.md, "Per-step rows"): the run route shows every step of
    each block it kept, the newest block among them, each step's own row."""
    from tb_devicecost.format import writer as writer_module

    run_dir = str(tmp_path / "long" / "train")
    writer = writer_module.SummaryWriter(run_dir)
    for block in range(150):  # 150 flushes of 8 steps: 1200 steps
        steps = np.arange(8 * block, 8 * block + 8)
        writer.write_steps(np.column_stack([
            steps, 1000.0 + steps, steps % 5, np.full(8, 2.0), np.full(8, 0.5),
            np.full(8, 32.0), (steps == 0).astype(float)]))
    aggregate = make_aggregate(2.0, 2.0, 0.5)
    aggregate.update(steps=1200, steady_steps=1199)
    writer.write_json(metadata.TAG_AGGREGATE, 1199, 2200.0, aggregate)
    writer.close()
    process, url = serve.start_tensorboard(str(tmp_path), expected_runs=1)
    try:
        with urllib.request.urlopen(url + PREFIX + "/run?run=long/train") as response:
            series = json.load(response)["series"]
    finally:
        serve.stop_tensorboard(process)
    steps = np.array(series["step"])
    blocks = steps // 8
    kept = np.unique(blocks)
    assert len(kept) == 100 and len(steps) == 800
    assert all((blocks == block).sum() == 8 for block in kept)  # whole blocks
    assert kept[-1] == 149 and kept[0] < 30 and kept[50] < 100  # spread over the run
    assert series["data_wait_ms"] == (steps % 5).astype(float).tolist()
    assert series["wall_time"] == (1000.0 + steps).tolist()


def test_a_long_run_name_that_is_listed_can_be_opened(tmp_path):
    # Issue 25, item 5: one rule (`reader.MAX_RUN_NAME`) for what /runs
    # lists and what /run and /compare open: a 3,748-character run name.
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 10,
            "steps_per_record": 1, "fetch_in_graph": False}
    parts = ["d" * 200] * 18 + ["x" * 124, "train"]
    long_name = "/".join(parts)
    assert len(long_name) == 3_748
    for run_dir in (os.path.join(str(tmp_path), *parts), str(tmp_path / "cpu" / "train")):
        write_run(run_dir, aggregate=make_aggregate(0.1, 0.8, 0.05, batch_size=10),
                          info=info, placement=cpu_placement())
    client = make_client(str(tmp_path))
    listed = get_json(client, "/runs")
    assert long_name in {run["run"] for run in listed["runs"]}
    quoted = urllib.parse.quote(long_name, safe="")
    assert get_json(client, "/run?run=" + quoted)["run"] == long_name
    compared = get_json(client, "/compare?run=cpu/train&run=" + quoted)
    assert {run["run"] for run in compared["runs"]} == {"cpu/train", long_name}


def test_every_route_serves_from_one_read_of_the_log_directory(logdir, monkeypatch):
    """The routes share one snapshot of the log directory while nothing in
    it changes: the overview, a run, a comparison and the overview again
    read the runs once, plus the opened run's own per-step series; and
    `is_active` does not walk the disk on every reload."""
    client = make_client(logdir)
    reads = []
    original = reader.read_logdir
    monkeypatch.setattr(
        reader, "read_logdir",
        lambda *args, **kwargs: reads.append(kwargs.get("runs")) or original(*args, **kwargs),
    )
    runs = [run["run"] for run in get_json(client, "/runs")["runs"]]
    assert len(reads) == 1 and reads[0] is None
    opened = get_json(client, "/run?run=" + urllib.parse.quote(runs[0]))
    assert opened["run"] == runs[0] and opened["series"]
    assert reads[1:] == [[runs[0]]]
    get_json(client, "/compare?" + urllib.parse.urlencode([("run", r) for r in runs[:2]]))
    get_json(client, "/runs")
    assert len(reads) == 2

    walks = []
    monkeypatch.setattr(reader, "find_profile_runs", lambda *a: walks.append(1) or ["x"])
    loaded = plugin_loader.DeviceCostPluginLoader().load(
        base_plugin.TBContext(logdir=logdir, data_provider=None))
    assert loaded.is_active() and loaded.is_active()
    assert len(walks) == 1


def test_a_jobs_processes_are_lined_up_once_per_read_of_the_log_directory(tmp_path, monkeypatch):
    """Opening each process of a job lines the job up once, not once per
    process (a request each: with hundreds of processes, that was a read
    of every process per request), and each view names the same job and
    straggler as the report."""
    from tests.support import fuzz_layouts

    logdir = str(tmp_path / "logs")
    fuzz_layouts.job(logdir, "job", 6, range(6), slow=4)
    client = make_client(logdir)
    lineups = []
    original = words.worker_groups
    monkeypatch.setattr(
        words, "worker_groups", lambda *args: lineups.append(1) or original(*args))
    [group] = get_json(client, "/runs")["workers"]
    views = [get_json(client, f"/run?run=job/process_{index}/train") for index in range(6)]
    assert len(lineups) == 1
    assert {view["job"] for view in views} == {group["group"]}
    stragglers = [view["run"] for view in views
                  if any(item["id"] == "straggler" for item in view["findings"])]
    assert stragglers == [group["straggler"]] == ["job/process_4/train"]


def test_the_tab_is_active_where_tensorboard_serves_none_of_our_runs(tmp_path):
    """Issue 35, item 6: with a link to /sys in the log directory,
    TensorBoard's Rust loader never finishes its walk and its plugin
    listing never names the tab; our own event files (named
    `*.devicecost`) found by the scan make it active, and its routes read
    them from their files."""
    from tests.support import fuzz_layouts

    fuzz_layouts.record(str(tmp_path / "cpu" / "train"), {})
    os.symlink("/sys", tmp_path / "sys")
    loaded = plugin_loader.DeviceCostPluginLoader().load(
        base_plugin.TBContext(logdir=str(tmp_path), data_provider=None))
    assert loaded.is_active()
    other = tmp_path / "other" / "train"
    other.mkdir(parents=True)
    (other / "events.out.tfevents.1.host").write_bytes(b"")  # Not ours.
    foreign = plugin_loader.DeviceCostPluginLoader().load(
        base_plugin.TBContext(logdir=str(tmp_path / "other"), data_provider=None))
    assert not foreign.is_active()
