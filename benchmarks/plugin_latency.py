"""How fast the Device Cost tab answers on a large log directory.

Writes a log directory of `--runs` runs of `--steps` steps each with
the callback's step accounting and a fake clock (synthetic, varied step times: input-,
compute-, host-bound, stalling and balanced runs, several fits and epochs,
warm-ups and a few spikes), starts a real TensorBoard on 127.0.0.1 (a free
port, the default loader), waits until every run is served complete, then
measures:

* `GET /data/plugin/devicecost/runs` and `GET /data/plugin/devicecost/run?run=R`,
  alternated in one loop, `--requests` each (after one warm-up request
  each, reported separately): median and p90;
* the time to first render of the tab in headless Chromium: from navigation
  start of `/#devicecost` (a fresh browser context each time, so nothing is
  cached) to the frame in which all runs' `.dc-run-row` rows are visible in
  the tab's iframe; median over `--loads` page loads.

Then it times `tb-devicecost report --json` on the log directory under
`/usr/bin/time -v` (wall time and peak memory, `--report-runs` times, in a
fresh process each), and prints the event files' bytes per recorded step.

Targets (docs/PERFORMANCE.md, issue 15): `/runs` under 100 ms and `/run`
under 200 ms (median), first render under 1.5 s (2 s from 200 runs on);
the report under 3 s and 200 MB for one run of 1,000,000 steps, under 10 s
and 300 MB for 200 runs of 10,000 steps with that run beside them
(`--extra-run-steps 1000000`); at most 64 bytes per recorded step.

The log directory is cached (under the system temporary directory, or
`--logdir`); `--reuse` skips writing it again when it was written with the
same `--runs` and `--steps`.

With `--profile` (and whenever a route misses its target) the two routes'
implementations are profiled in this process over TensorBoard's Rust data
server (the default loader's) and over a `MultiplexerDataProvider`.

Usage: python benchmarks/plugin_latency.py [--runs 20] [--steps 50000]
    [--extra-run-steps N] [--requests 30] [--loads 5] [--report-runs 3]
    [--no-tab] [--logdir DIR] [--reuse] [--profile]
"""

import argparse
import concurrent.futures
import contextlib
import gzip
import json
import os
import shutil
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

# The repository's root, for the demo's `serve` (as `overhead.py` does).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from demo import serve  # noqa: E402

RUNS_TARGET_MS = 100.0
ROUTE_TARGET_MS = 200.0
RENDER_TARGET_MS = 1500.0
# From this many runs on, the first render's target (issue 15: 201 runs).
MANY_RUNS = 200
MANY_RUNS_RENDER_TARGET_MS = 2000.0
BYTES_PER_STEP_TARGET = 64.0
# The report's targets: (seconds, MB of peak resident memory), by log directory.
REPORT_TARGETS = {"one_long_run": (3.0, 200.0), "many_runs": (10.0, 300.0)}
# In the log directory: what it holds and whether it is complete, for `--reuse`.
MARKER = "plugin_latency.json"
ROW_SELECTOR = ".dc-run-row"
IFRAME_SELECTOR = 'iframe[src*="name=devicecost"]'

# Step-time mixes, in milliseconds: median data wait, compute and host
# overhead, with the log-normal spread of each, and the share of steps whose
# fetch stalls (and by how much).
PROFILES = {
    "input_bound": dict(wait=12.0, compute=4.0, host=0.3, spread=0.35),
    "compute_bound": dict(wait=0.05, compute=20.0, host=0.5, spread=0.15),
    "host_bound": dict(wait=0.05, compute=3.0, host=2.0, spread=0.25),
    "balanced": dict(wait=1.0, compute=8.0, host=0.3, spread=0.2),
    "stalling": dict(wait=0.08, compute=6.0, host=0.3, spread=0.2,
                     stall_share=0.04, stall_ms=40.0),
}
BATCH_SIZES = (32, 64, 128, 256)


# Writing the log directory.


def run_plan(runs, steps, extra_run_steps=0):
    """One entry per run: its name and how its steps are drawn; with
    `extra_run_steps`, one more run (`long/train`) of that many steps."""
    names = list(PROFILES)
    plan = []
    for index in range(runs + (1 if extra_run_steps else 0)):
        profile = names[index % len(names)]
        extra = index == runs
        plan.append(
            {
                "index": index,
                "run": "long/train" if extra else f"r{index:02d}_{profile}/train",
                "profile": profile,
                # Different speeds within a profile (a "faster device").
                "scale": 0.5 + (index * 0.37) % 1.5,
                "batch_size": BATCH_SIZES[index % len(BATCH_SIZES)],
                "sessions": 1 + index % 3,
                "epochs_per_session": 4,
                "steps": extra_run_steps if extra else steps,
            }
        )
    return plan


def write_run(logdir, entry):
    """Writes one run with the callback's step accounting, driven by a fake
    clock."""
    from tb_devicecost.recording.accounting import StepAccounting

    rng = np.random.default_rng(1000 + entry["index"])
    profile = PROFILES[entry["profile"]]
    steps, scale = entry["steps"], entry["scale"]

    def draw(median):
        return median * scale * rng.lognormal(0.0, profile["spread"], steps)

    # Seconds, drawn at once: the loop below only drives the recorder.
    wait = draw(profile["wait"]) / 1e3
    compute = draw(profile["compute"]) / 1e3
    host = draw(profile["host"]) / 1e3
    if profile.get("stall_share"):
        stalls = rng.random(steps) < profile["stall_share"]
        wait[stalls] += profile["stall_ms"] * scale * rng.random(stalls.sum()) / 1e3
    # A few retracing spikes.
    spikes = rng.choice(steps, size=max(1, steps // 20000), replace=False)
    compute[spikes] *= 25.0
    session_length = -(-steps // entry["sessions"])
    epoch_length = -(-session_length // entry["epochs_per_session"])
    # Warm-up: the first step of each fit traces and compiles.
    for start in range(0, steps, session_length):
        compute[start] = (1.5 + rng.random()) * scale

    now = [1000.0]
    recorder = StepAccounting(
        os.path.join(logdir, *entry["run"].split("/")), clock=lambda: now[0]
    )
    info = {
        "backend": "tensorflow",
        "model": f"synthetic_{entry['profile']}",
        "batch_size": entry["batch_size"],
        "steps_per_execution": 1,
        "steps_per_record": 1,
        "fetch_in_graph": False,
        "jit_compile": bool(entry["index"] % 2),
        "cpu_count": 2,
        "benchmark": "plugin_latency",
    }
    begin_step, end_fetch, end_compute = (
        recorder.begin_step, recorder.end_fetch, recorder.end_compute
    )
    batch_size = entry["batch_size"]
    # The writing process's resident memory after a tenth of the steps and
    # at the end: the recorder's memory must not grow with the steps.
    tenth = max(1, steps // 10)
    rss = {}
    # Python floats a chunk at a time: the benchmark's own lists must not
    # hide the recorder's memory.
    chunk = 10_000
    chunks = (
        (begin + offset, values)
        for begin in range(0, steps, chunk)
        for offset, values in enumerate(zip(wait[begin:begin + chunk].tolist(),
                                            compute[begin:begin + chunk].tolist(),
                                            host[begin:begin + chunk].tolist()))
    )
    for step, (w, c, h) in chunks:
        if step == tenth:
            rss["tenth"] = resident_mb()
        if step % session_length == 0:
            recorder.begin_session(info)
        elif (step % session_length) % epoch_length == 0:
            # The end of an epoch: the callback closes the step and flushes.
            recorder.boundary()
            recorder.flush()
        begin_step()
        now[0] += w
        end_fetch(batch_size=batch_size)
        now[0] += c
        end_compute()
        now[0] += h
    recorder.boundary()
    recorder.end_session()
    rss["end"] = resident_mb()
    return entry["run"], steps, rss


def resident_mb():
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def read_marker(logdir):
    try:
        with open(os.path.join(logdir, MARKER), encoding="utf-8") as marker:
            return json.load(marker)
    except (OSError, ValueError):
        return None


def build_logdir(logdir, runs, steps, reuse, extra_run_steps=0):
    """Writes the runs into `logdir` (unless reusable); returns
    `{run: steps}`."""
    plan = run_plan(runs, steps, extra_run_steps)
    names = [entry["run"] for entry in plan]
    marker = read_marker(logdir)
    wanted = {"runs": runs, "steps": steps, "extra_run_steps": extra_run_steps,
              "names": names, "complete": True}
    expected = {entry["run"]: entry["steps"] for entry in plan}
    if reuse and marker and {key: marker.get(key) for key in wanted} == wanted:
        print(f"Reusing the log directory {logdir} ({runs} runs x {steps} steps"
              + (f" and one of {extra_run_steps}" if extra_run_steps else "") + ")")
        return expected
    if os.path.isdir(logdir) and os.listdir(logdir):
        if marker is None:
            raise SystemExit(
                f"{logdir} is not empty and was not written by this benchmark; "
                "pass an empty or new directory with --logdir."
            )
        shutil.rmtree(logdir)
    os.makedirs(logdir, exist_ok=True)
    # Marked as ours before anything else, so an interrupted write is redone.
    write_marker(logdir, dict(wanted, complete=False))
    workers = max(1, min(len(plan), os.cpu_count() or 1))
    print(f"Writing {runs} runs x {steps} steps"
          + (f" and one of {extra_run_steps}" if extra_run_steps else "")
          + f" into {logdir} ({workers} processes)...", flush=True)
    started = time.perf_counter()
    pool = concurrent.futures.ProcessPoolExecutor(workers)
    try:
        # The longest first, so it does not finish alone at the end.
        longest_first = sorted(plan, key=lambda entry: -entry["steps"])
        longest = None
        for run, steps_written, rss in pool.map(
                write_run, [logdir] * len(plan), longest_first, chunksize=4):
            if longest is None or steps_written > longest[1]:
                longest = (run, steps_written, rss)
        run, steps_written, rss = longest
        print(f"Recorder process resident memory writing {run} ({steps_written:,} steps): "
              f"{rss.get('tenth', float('nan')):.1f} MB after a tenth of the steps, "
              f"{rss['end']:.1f} MB at the end", flush=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    seconds = time.perf_counter() - started
    size = sum(
        os.path.getsize(os.path.join(directory, name))
        for directory, _, files in os.walk(logdir)
        for name in files
        if name != MARKER
    )
    write_marker(logdir, dict(wanted, bytes=size, written_s=round(seconds, 1)))
    print(f"Wrote {size / 1e6:.1f} MB in {seconds:.1f} s", flush=True)
    return expected


def write_marker(logdir, content):
    with open(os.path.join(logdir, MARKER), "w", encoding="utf-8") as marker:
        json.dump(content, marker)


# TensorBoard.


@contextlib.contextmanager
def tensorboard(logdir, steps_by_run, log_path):
    """A real `tensorboard` (default loader) serving every run complete.

    Yields its URL. Ready when each run is listed by the `runs` route with
    all its steps and a complete status: the newest aggregate is the last
    thing in each event file, so the whole file has been read.
    """
    names = list(steps_by_run)
    expected = set(names)
    served = [0]

    def all_complete(runs):
        complete = {run["run"] for run in runs
                    if run.get("steps") == steps_by_run.get(run["run"])
                    and run.get("status") == "complete"}
        served[0] = len(complete & expected)
        return complete >= expected

    started = time.perf_counter()
    try:
        # Its own process group: the data server it starts goes with it.
        process, url = serve.start_tensorboard(
            logdir, expected_runs=len(names), ready=all_complete, timeout=600,
            log=log_path, new_session=True,
        )
    except RuntimeError as error:
        raise RuntimeError(
            f"TensorBoard did not serve the {len(expected)} runs complete ({served[0]} were); "
            f"its log is {log_path}"
        ) from error
    try:
        print(f"TensorBoard at {url} served all {len(names)} runs complete after "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        yield url, process
    finally:
        serve.stop_tensorboard(process)


def tail(path, size=3000):
    try:
        with open(path, "rb") as file:
            return file.read()[-size:].decode(errors="replace")
    except OSError:
        return ""


def loader_in_use(log_path):
    """Which loader TensorBoard picked: it announces the Rust data server."""
    if "fast data loading" in tail(log_path, 200_000):
        return "Rust data server (--load_fast=auto picked it)"
    return "Python multiplexer (--load_fast=auto fell back)"


# Measurements.


def percentile(values, q):
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def timed_get(url):
    """GET as a browser does (gzip accepted): `(ms, bytes sent, JSON bytes)`."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
        status = response.status
        encoding = response.headers.get("Content-Encoding")
    elapsed = (time.perf_counter() - started) * 1e3
    if status != 200:
        raise RuntimeError(f"GET {url} answered {status}")
    plain = gzip.decompress(body) if encoding == "gzip" else body
    return elapsed, len(body), len(plain)


def measure_routes(url, run, requests):
    """Alternates the two routes; returns {route: {"cold", "ms", "bytes",
    "json_bytes"}}. The first request of each is a warm-up (`cold`)."""
    routes = {
        "runs": url + "/data/plugin/devicecost/runs",
        "run": url + "/data/plugin/devicecost/run?" + urllib.parse.urlencode({"run": run}),
    }
    results = {name: {"ms": []} for name in routes}
    for name, route in routes.items():
        (results[name]["cold"], results[name]["bytes"],
         results[name]["json_bytes"]) = timed_get(route)
    for _ in range(requests):
        for name, route in routes.items():
            elapsed, _, _ = timed_get(route)
            results[name]["ms"].append(elapsed)
    return results


# From the top page: the tab's iframe (same origin) holding `count` visible
# rows. Returns, in milliseconds since the navigation started (the top page's
# performance.now() of the animation frame in which that was first true),
# when the rows were visible, plus milestones on the way there.
_RENDERED_JS = """
([iframeSelector, rowSelector, count]) => {
  const iframe = document.querySelector(iframeSelector);
  const inner = iframe && iframe.contentDocument;
  if (!inner) return false;
  const rows = inner.querySelectorAll(rowSelector);
  if (rows.length < count) return false;
  const frameBox = iframe.getBoundingClientRect();
  if (!frameBox.width || !frameBox.height) return false;
  const view = iframe.contentWindow;
  for (const row of rows) {
    const box = row.getBoundingClientRect();
    if (!box.width || !box.height) return false;
    if (view.getComputedStyle(row).visibility === 'hidden') return false;
  }
  const rendered = performance.now();
  const shift = view.performance.timeOrigin - performance.timeOrigin;
  const ended = (entries, part) => {
    const entry = entries.find((item) => item.name.includes(part));
    return entry ? entry.responseEnd : null;
  };
  const top = performance.getEntriesByType('resource');
  const own = view.performance.getEntriesByType('resource');
  const runsEnd = ended(own, '/data/plugin/devicecost/runs');
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    rendered,
    dom_content_loaded: nav ? nav.domContentLoadedEventEnd : null,
    plugins_listing: ended(top, 'data/plugins_listing'),
    iframe_start: shift,
    runs_fetched: runsEnd === null ? null : runsEnd + shift,
  };
}
"""


def measure_first_render(url, count, loads):
    from playwright.sync_api import sync_playwright

    renders, walls, problems, milestones = [], [], [], []
    with sync_playwright() as playwright:
        browser = serve.launch_chromium(playwright)
        try:
            for _ in range(loads):
                # A fresh context: empty cache, no service worker, no storage.
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                try:
                    page = context.new_page()
                    page.on("pageerror", lambda error: problems.append(str(error)))
                    started = time.perf_counter()
                    page.goto(url + "/#devicecost", wait_until="commit")
                    handle = page.wait_for_function(
                        _RENDERED_JS,
                        arg=[IFRAME_SELECTOR, ROW_SELECTOR, count],
                        polling="raf",
                        timeout=120_000,
                    )
                    walls.append((time.perf_counter() - started) * 1e3)
                    marks = handle.json_value()
                    renders.append(float(marks["rendered"]))
                    milestones.append(marks)
                finally:
                    context.close()
        finally:
            browser.close()
    return renders, walls, problems, milestones


# Profiling (in this process, over the same data).


def profile_routes(logdir, run, count, repeats=5, top=18):
    """Profiles `runs_impl` and `run_impl` over both data providers."""
    from tensorboard.backend.event_processing import data_ingester
    from tensorboard.backend.event_processing import data_provider as mux_provider
    from tensorboard.backend.event_processing import plugin_event_multiplexer
    from tensorboard.data import server_ingester
    from tensorboard.util import grpc_util

    print("\n== Profile of the routes' implementations, in this process ==")
    # What TensorBoard's default loader serves: a Rust data server over gRPC.
    ingester = server_ingester.SubprocessServerDataIngester(
        server_binary=server_ingester.get_server_binary(),
        logdir=logdir,
        reload_interval=0,  # load once
        channel_creds_type=grpc_util.ChannelCredsType.LOCAL,
    )
    ingester.start()
    try:
        profile_provider("rust_data_server", ingester.data_provider, logdir, run,
                         count, repeats, top)
        rpc_timings(ingester.data_provider, run)
    finally:
        # The data server exits when its stdin closes.
        with contextlib.suppress(Exception):
            ingester._stdin_handle.close()  # pylint: disable=protected-access
    print("\nLoading the logdir with the Python loader (--load_fast=false)...", flush=True)
    started = time.perf_counter()
    # TensorBoard's own sampling (1000 scalars, 10 tensors per tag).
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=data_ingester.DEFAULT_SIZE_GUIDANCE,
        tensor_size_guidance=data_ingester.DEFAULT_TENSOR_SIZE_GUIDANCE,
    )
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    print(f"  loaded in {time.perf_counter() - started:.1f} s", flush=True)
    profile_provider("multiplexer", mux_provider.MultiplexerDataProvider(multiplexer, logdir),
                     logdir, run, count, repeats, top)


def profile_provider(label, provider, logdir, run, count, repeats, top):
    import cProfile
    import io
    import pstats

    from tensorboard import context as context_module
    from tensorboard.plugins import base_plugin

    from tb_devicecost.serving import plugin as plugin_module

    ctx = context_module.RequestContext()
    plugin = plugin_module.DeviceCostPlugin(
        base_plugin.TBContext(logdir=logdir, data_provider=provider)
    )
    calls = {
        "runs_impl": lambda: plugin.runs_impl(ctx, ""),
        # The runs route's body while nothing changed (its fingerprint checked).
        "runs_body_unchanged": lambda: plugin._runs_body(ctx, "", None),  # pylint: disable=protected-access
        "run_impl": lambda: plugin.run_impl(ctx, "", run),
    }
    # The data server loads in the background: wait until all is there.
    deadline = time.monotonic() + 600
    while True:
        with contextlib.suppress(Exception):
            runs = calls["runs_impl"]()["runs"]
            if len(runs) >= count and all(item.get("status") == "complete" for item in runs):
                break
        if time.monotonic() > deadline:
            raise RuntimeError(f"{label} never served the {count} runs complete")
        time.sleep(0.5)
    for name, call in calls.items():
        call()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1e3)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(repeats):
            call()
        profiler.disable()
        parts = split_time(provider, ctx, name, run, repeats)
        print(f"\n-- {label}: {name}: median {statistics.median(times):.1f} ms "
              f"over {repeats} calls (no profiler); {parts}", flush=True)
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(top)
        print(trim_stats(stream.getvalue()), flush=True)


def rpc_timings(provider, run, repeats=10):
    """Raw gRPC calls to the data server: time against response size.

    A fixed cost per call whatever its size points at the transport (e.g.
    Nagle's algorithm against delayed ACKs, about 40 ms on Linux), not at
    reading or sending the data.
    """
    from tensorboard.data.proto import data_provider_pb2 as pb

    stub = provider._stub  # pylint: disable=protected-access
    plugin = pb.PluginFilter(plugin_name="devicecost")
    one_run = pb.RunTagFilter(runs=pb.RunFilter(names=[run]))
    calls = {
        "ListRuns (empty request)": lambda: stub.ListRuns(pb.ListRunsRequest()),
        "ListTensors (all runs)": lambda: stub.ListTensors(
            pb.ListTensorsRequest(plugin_filter=plugin)),
        "ReadTensors (all runs, 1 point; the runs route)": lambda: stub.ReadTensors(
            pb.ReadTensorsRequest(plugin_filter=plugin, downsample=pb.Downsample(num_points=1))),
        "ReadTensors (one run, 1 point; the run route)": lambda: stub.ReadTensors(
            pb.ReadTensorsRequest(plugin_filter=plugin, run_tag_filter=one_run,
                                  downsample=pb.Downsample(num_points=1))),
        "ReadScalars (one run, 10 points)": lambda: stub.ReadScalars(
            pb.ReadScalarsRequest(plugin_filter=plugin, run_tag_filter=one_run,
                                  downsample=pb.Downsample(num_points=10))),
        "ReadScalars (one run, 1000 points; the run route)": lambda: stub.ReadScalars(
            pb.ReadScalarsRequest(plugin_filter=plugin, run_tag_filter=one_run,
                                  downsample=pb.Downsample(num_points=1000))),
        "ReadScalars (all runs, 1000 points)": lambda: stub.ReadScalars(
            pb.ReadScalarsRequest(plugin_filter=plugin, downsample=pb.Downsample(num_points=1000))),
    }
    print("\n-- rust_data_server: raw gRPC calls (median of "
          f"{repeats}; response size)", flush=True)
    for label, call in calls.items():
        call()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            response = call()
            times.append((time.perf_counter() - started) * 1e3)
        print(f"   {label:52s} {statistics.median(times):7.1f} ms "
              f"(min {min(times):6.1f})  {response.ByteSize() / 1e3:9.1f} kB", flush=True)


def split_time(provider, ctx, name, run, repeats):
    """Median ms of the data provider's reads vs. the analysis."""
    from tb_devicecost import analysis
    from tb_devicecost.reading import reader

    read, analyse = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        if name == "runs_body_unchanged":
            return "no split (a fingerprint, then the kept body)"
        if name == "runs_impl":
            records = reader.read_runs(provider, ctx, series_points=0)
        else:
            records = reader.read_runs(provider, ctx, runs=[run])
        middle = time.perf_counter()
        if name == "runs_impl":
            analysis.build_report(records)
        else:
            analysis.analyze_run(records[0])
        ended = time.perf_counter()
        read.append((middle - started) * 1e3)
        analyse.append((ended - middle) * 1e3)
    return (f"reader.read_runs {statistics.median(read):.1f} ms, "
            f"analysis {statistics.median(analyse):.1f} ms")


def trim_stats(text):
    lines = [line for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[max(0, start - 1):])


# Main.


def summarise(values):
    return f"median {statistics.median(values):.1f} ms, p90 {percentile(values, 90):.1f} ms, " \
           f"min {min(values):.1f} ms, max {max(values):.1f} ms"


def measure_report(logdir, repeats):
    """`tb-devicecost report LOGDIR --json` under `/usr/bin/time -v`, in a
    fresh process each time: `[(wall seconds, peak MB)]`."""
    results = []
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "tb_devicecost", "report",
               logdir, "--json"]
    for _ in range(repeats):
        completed = subprocess.run(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"the report failed: {completed.stderr[-2000:]}")
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)",
                         completed.stderr)
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", completed.stderr)
        hours, minutes, seconds = wall.groups()
        results.append((int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds),
                        int(peak.group(1)) / 1024))
    return results


def event_file_bytes(logdir):
    return sum(
        os.path.getsize(os.path.join(directory, name))
        for directory, _, files in os.walk(logdir)
        for name in files
        if "tfevents" in name
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50000)
    parser.add_argument("--extra-run-steps", type=int, default=0,
                        help="one more run (long/train) of this many steps")
    parser.add_argument("--requests", type=int, default=30,
                        help="timed requests per route (alternated)")
    parser.add_argument("--loads", type=int, default=5,
                        help="fresh page loads timed in Chromium")
    parser.add_argument("--report-runs", type=int, default=3,
                        help="times `tb-devicecost report` is timed (0: not timed)")
    parser.add_argument("--no-tab", action="store_true",
                        help="time only the report (no TensorBoard, no browser)")
    parser.add_argument("--logdir", default=None,
                        help="where the runs are written (default: a cache directory "
                             "under the system temporary directory)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the log directory if it holds the same runs and steps")
    parser.add_argument("--profile", action="store_true",
                        help="profile the routes' implementations even if they meet the target")
    args = parser.parse_args()
    if (args.runs < 1 or args.steps < 10 or args.requests < 1 or args.loads < 1
            or args.extra_run_steps < 0 or args.report_runs < 0):
        parser.error("--runs, --requests and --loads must be positive, --steps at least 10")

    suffix = f"+{args.extra_run_steps}" if args.extra_run_steps else ""
    logdir = os.path.abspath(args.logdir or os.path.join(
        tempfile.gettempdir(),
        f"tb-devicecost-plugin-latency-{args.runs}x{args.steps}{suffix}",
    ))
    # SIGTERM unwinds like Ctrl-C, so TensorBoard and Chromium are stopped.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    steps_by_run = build_logdir(logdir, args.runs, args.steps, args.reuse,
                                args.extra_run_steps)
    names = list(steps_by_run)
    size = event_file_bytes(logdir)
    total_steps = sum(steps_by_run.values())
    bytes_per_step = size / total_steps
    measured_run = names[0]
    shape = f"{args.runs}x{args.steps}" + suffix
    many = len(names) >= MANY_RUNS
    render_target = MANY_RUNS_RENDER_TARGET_MS if many else RENDER_TARGET_MS
    verdicts = {"bytes_per_step": bytes_per_step <= BYTES_PER_STEP_TARGET}
    summary = [f"{bytes_per_step:.1f} B/step ({mark(verdicts['bytes_per_step'])} "
               f"<={BYTES_PER_STEP_TARGET:.0f})"]

    print()
    print(f"Log directory: {logdir}: {len(names)} runs, {total_steps:,} steps, "
          f"{size / 1e6:.1f} MB of event files: {bytes_per_step:.1f} bytes per recorded step")
    print(f"Machine: {os.cpu_count()} CPUs, {cpu_model()}")

    if args.report_runs:
        report = measure_report(logdir, args.report_runs)
        seconds = statistics.median(wall for wall, _ in report)
        peak = max(megabytes for _, megabytes in report)
        target_s, target_mb = REPORT_TARGETS["many_runs" if len(names) > 1 else "one_long_run"]
        verdicts["report"] = seconds < target_s and peak < target_mb
        print(f"tb-devicecost report --json (/usr/bin/time -v, {len(report)} fresh processes): "
              f"wall {', '.join(f'{wall:.2f}' for wall, _ in report)} s; "
              f"peak RSS {', '.join(f'{mb:.0f}' for _, mb in report)} MB")
        summary.append(f"report median {seconds:.2f} s, peak {peak:.0f} MB "
                       f"({mark(verdicts['report'])} <{target_s:.0f} s, <{target_mb:.0f} MB)")

    if not args.no_tab:
        scratch = tempfile.mkdtemp(prefix="tb-devicecost-latency-")
        log_path = os.path.join(scratch, "tensorboard.log")
        try:
            with tensorboard(logdir, steps_by_run, log_path) as (url, _):
                routes = measure_routes(url, measured_run, args.requests)
                renders, walls, page_errors, milestones = measure_first_render(
                    url, len(names), args.loads
                )
                loader = loader_in_use(log_path)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"TensorBoard loader: {loader}")
        for name in ("runs", "run"):
            result = routes[name]
            label = "GET /data/plugin/devicecost/runs" if name == "runs" else \
                f"GET /data/plugin/devicecost/run?run={measured_run}"
            print(f"{label}: {summarise(result['ms'])} over {len(result['ms'])} requests; "
                  f"first (untimed warm-up) {result['cold']:.1f} ms; "
                  f"{result['bytes'] / 1e3:.1f} kB sent ({result['json_bytes'] / 1e3:.1f} kB "
                  "of JSON)")
        print(f"First render of the tab ({len(names)} rows visible, from navigation start): "
              f"{summarise(renders)} over {len(renders)} fresh loads; "
              f"each: {', '.join(f'{value:.0f}' for value in renders)} ms")
        print(f"  wall clock from page.goto to detection: median {statistics.median(walls):.0f} ms")
        steps = [
            ("TensorBoard page DOMContentLoaded", "dom_content_loaded"),
            ("/data/plugins_listing received", "plugins_listing"),
            ("tab iframe navigation start", "iframe_start"),
            ("devicecost/runs received in the iframe", "runs_fetched"),
            ("all rows visible", "rendered"),
        ]
        for label, key in steps:
            values = [marks[key] for marks in milestones if marks.get(key) is not None]
            if values:
                print(f"  {label:40s} median {statistics.median(values):7.0f} ms "
                      "after navigation start")
        if page_errors:
            print(f"Page errors: {page_errors[:3]}")
        runs_ms = statistics.median(routes["runs"]["ms"])
        run_ms = statistics.median(routes["run"]["ms"])
        render_ms = statistics.median(renders)
        verdicts.update(
            runs=runs_ms < RUNS_TARGET_MS,
            run=run_ms < ROUTE_TARGET_MS,
            render=render_ms < render_target,
        )
        if args.profile or not (verdicts["runs"] and verdicts["run"]):
            profile_routes(logdir, measured_run, len(names))
        summary[:0] = [
            f"/runs median {runs_ms:.1f} ms p90 {percentile(routes['runs']['ms'], 90):.1f} ms "
            f"{routes['runs']['bytes'] / 1e3:.0f} kB sent, "
            f"{routes['runs']['json_bytes'] / 1e3:.0f} kB JSON ({mark(verdicts['runs'])} "
            f"<{RUNS_TARGET_MS:.0f})",
            f"/run median {run_ms:.1f} ms p90 {percentile(routes['run']['ms'], 90):.1f} ms "
            f"({mark(verdicts['run'])} <{ROUTE_TARGET_MS:.0f})",
            f"first render median {render_ms:.0f} ms ({mark(verdicts['render'])} "
            f"<{render_target:.0f})",
        ]
    print(f"SUMMARY runs={shape}: " + "; ".join(summary)
          + f"; overall {mark(all(verdicts.values()))}")
    return 0 if all(verdicts.values()) else 1


def mark(ok):
    return "PASS" if ok else "FAIL"


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # TensorBoard and Chromium were stopped on the way out.
        print("Interrupted; TensorBoard and Chromium were stopped.", file=sys.stderr)
        sys.exit(130)
