"""How fast the report and the Device Cost tab answer at scale.

Writes a log directory with the callback's own step accounting
(`StepAccounting`) driven by a fake clock, so any size is cheap to make, in
one of two shapes:

* runs (the default): `--runs` runs of `--steps` steps (input-, compute-,
  host-bound, stalling and balanced mixes, 1-3 fits of 4 epochs, warm-ups
  and a few spikes), with `--extra-run-steps N` one more run of N steps;
* `--processes 8,16,32,64`: per count, one synchronous job of that many
  processes (each fetching in 0.2 ms and computing 8 ms, the last one
  fetching 5 ms longer, so the others wait for it inside their compute).

Then it measures: the event files' bytes per recorded step and the
writer's resident memory after a tenth of the steps and at the end (runs);
`tb-devicecost report --json` under `/usr/bin/time -v` in a fresh process
(`--report-runs` times: wall time, peak memory); for a job, reading, the
analysis and the workers analysis in this process (median of `--repeat`);
with `--tab`, a real TensorBoard on 127.0.0.1 (the default loader) serving
every run complete: `GET runs` and `GET run` alternated (runs) or `GET runs`
with a new `baseline` each time, analysed afresh, and without, from the
plugin's cache (a job), `--requests` each; and the tab's first render in
headless Chromium until every row shows (`.dc-run-row`, or the workers
table's rows), `--loads` fresh browser contexts.

Targets (issue 15, docs/SCALE.md): at most 64 bytes a recorded step; the
report under 3 s and 200 MB for one run of 1,000,000 steps, under 10 s and
300 MB for 200 runs of 10,000 steps beside it; `runs` under 100 ms and
`run` under 200 ms (medians), first render under 1.5 s (2 s from 200
runs). A job of up to 512 processes: the workers analysis under 0.5 s, the
report under 15 s, `runs` analysed afresh under 3 s. The last line gives
each figure against its target.

Usage: python benchmarks/scale.py [--runs 20] [--steps 50000]
    [--extra-run-steps N] [--tab] [--requests 30] [--loads 5]
    [--report-runs 3] [--logdir DIR] [--reuse]
       python benchmarks/scale.py --processes 8,16,32,64 [--steps 2000] [--tab]
"""

import argparse
import concurrent.futures
import gzip
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The repository's root, for the demo's `serve` (benchmarks run as scripts).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BYTES_PER_STEP_TARGET = 64.0
# The report's targets: (seconds, MB of peak resident memory), by log directory.
REPORT_TARGETS = {"one_long_run": (3.0, 200.0), "many_runs": (10.0, 300.0), "job": (15.0, None)}
RUNS_TARGET_MS, RUN_TARGET_MS = 100.0, 200.0
RENDER_TARGET_MS, MANY_RUNS_RENDER_TARGET_MS, MANY_RUNS = 1500.0, 2000.0, 200
WORKERS_TARGET_S, FRESH_RUNS_TARGET_S = 0.5, 3.0
# In a runs log directory: what it holds and whether it is complete, for `--reuse`.
MARKER = "plugin_latency.json"

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
# A job, per step, ms: every process's fetch, compute and host overhead;
# the straggler's extra fetch.
FETCH_MS, COMPUTE_MS, HOST_MS, STRAGGLER_EXTRA_MS = 0.2, 8.0, 0.3, 5.0


# Writing the log directories.


def run_plan(runs, steps, extra_run_steps=0):
    """One entry per run: its name and how its steps are drawn; with
    `extra_run_steps`, one more run (`long/train`) of that many steps."""
    names = list(PROFILES)
    plan = []
    for index in range(runs + (1 if extra_run_steps else 0)):
        profile = names[index % len(names)]
        extra = index == runs
        plan.append({
            "index": index,
            "run": "long/train" if extra else f"r{index:02d}_{profile}/train",
            "profile": profile,
            # Different speeds within a profile (a "faster device").
            "scale": 0.5 + (index * 0.37) % 1.5,
            "batch_size": BATCH_SIZES[index % len(BATCH_SIZES)],
            "sessions": 1 + index % 3,
            "epochs_per_session": 4,
            "steps": extra_run_steps if extra else steps,
        })
    return plan


def write_run(logdir, entry):
    """Writes one run with the callback's step accounting, driven by a fake
    clock; returns `(run, steps, resident MB after a tenth and at the end)`."""
    import numpy as np

    from tb_devicecost.recording.accounting import StepAccounting

    rng = np.random.default_rng(1000 + entry["index"])
    profile = PROFILES[entry["profile"]]
    steps, scale = entry["steps"], entry["scale"]

    def draw(median):
        return median * scale * rng.lognormal(0.0, profile["spread"], steps) / 1e3

    wait, compute, host = draw(profile["wait"]), draw(profile["compute"]), draw(profile["host"])
    if profile.get("stall_share"):
        stalls = rng.random(steps) < profile["stall_share"]
        wait[stalls] += profile["stall_ms"] * scale * rng.random(stalls.sum()) / 1e3
    # A few retracing spikes.
    compute[rng.choice(steps, size=max(1, steps // 20000), replace=False)] *= 25.0
    session_length = -(-steps // entry["sessions"])
    epoch_length = -(-session_length // entry["epochs_per_session"])
    # Warm-up: the first step of each fit traces and compiles.
    for start in range(0, steps, session_length):
        compute[start] = (1.5 + rng.random()) * scale
    now = [1000.0]
    recorder = StepAccounting(os.path.join(logdir, *entry["run"].split("/")), clock=lambda: now[0])
    info = {
        "backend": "tensorflow", "model": f"synthetic_{entry['profile']}",
        "batch_size": entry["batch_size"], "steps_per_execution": 1, "steps_per_record": 1,
        "fetch_in_graph": False, "jit_compile": bool(entry["index"] % 2), "cpu_count": 2,
        "benchmark": "plugin_latency",
    }
    # The recorder's memory must not grow with the steps; Python floats a
    # chunk at a time, so the benchmark's own lists do not hide it.
    tenth, rss, chunk = max(1, steps // 10), {}, 10_000
    for begin in range(0, steps, chunk):
        rows = zip(wait[begin:begin + chunk].tolist(), compute[begin:begin + chunk].tolist(),
                   host[begin:begin + chunk].tolist())
        for step, (w, c, h) in enumerate(rows, begin):
            if step == tenth:
                rss["tenth"] = resident_mb()
            if step % session_length == 0:
                recorder.begin_session(info)
            elif (step % session_length) % epoch_length == 0:
                # The end of an epoch: the callback closes the step and flushes.
                recorder.boundary()
                recorder.flush()
            recorder.begin_step()
            now[0] += w
            recorder.end_fetch(batch_size=entry["batch_size"])
            now[0] += c
            recorder.end_compute()
            now[0] += h
    recorder.boundary()
    recorder.end_session()
    rss["end"] = resident_mb()
    return entry["run"], steps, rss


def resident_mb():
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def write_marker(logdir, content):
    with open(os.path.join(logdir, MARKER), "w", encoding="utf-8") as marker:
        json.dump(content, marker)


def build_runs(logdir, runs, steps, reuse, extra_run_steps=0):
    """Writes the runs into `logdir` (unless reusable); returns `{run: steps}`."""
    plan = run_plan(runs, steps, extra_run_steps)
    expected = {entry["run"]: entry["steps"] for entry in plan}
    wanted = {"runs": runs, "steps": steps, "extra_run_steps": extra_run_steps,
              "names": list(expected), "complete": True}
    try:
        with open(os.path.join(logdir, MARKER), encoding="utf-8") as handle:
            marker = json.load(handle)
    except (OSError, ValueError):
        marker = None
    if reuse and marker and {key: marker.get(key) for key in wanted} == wanted:
        print(f"Reusing the log directory {logdir}")
        return expected
    if os.path.isdir(logdir) and os.listdir(logdir):
        if marker is None:
            raise SystemExit(f"{logdir} is not empty and was not written by this benchmark; "
                             "pass an empty or new directory with --logdir.")
        shutil.rmtree(logdir)
    os.makedirs(logdir, exist_ok=True)
    # Marked as ours before anything else, so an interrupted write is redone.
    write_marker(logdir, dict(wanted, complete=False))
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(max(1, min(len(plan), os.cpu_count() or 1))) as pool:
        # The longest first, so it does not finish alone at the end.
        plan.sort(key=lambda entry: -entry["steps"])
        written = list(pool.map(write_run, [logdir] * len(plan), plan, chunksize=4))
    run, steps_written, rss = max(written, key=lambda item: item[1])
    print(f"Wrote {len(plan)} runs in {time.perf_counter() - started:.1f} s; the writer's "
          f"resident memory over {run} ({steps_written:,} steps): "
          f"{rss.get('tenth', float('nan')):.1f} MB after a tenth, {rss['end']:.1f} MB at the end")
    write_marker(logdir, wanted)
    return expected


def write_job(logdir, processes, steps, seed=0):
    """Writes `processes` runs of one synchronous job; returns `{run: steps}`."""
    import numpy as np

    from tb_devicecost.recording.accounting import StepAccounting

    rng = np.random.default_rng(seed)
    fetch = FETCH_MS * rng.lognormal(0.0, 0.3, (processes, steps))
    fetch[-1] += STRAGGLER_EXTRA_MS
    own = COMPUTE_MS * rng.lognormal(0.0, 0.05, (processes, steps))
    host = HOST_MS * rng.lognormal(0.0, 0.2, (processes, steps))
    # A step arrives at the collective after its fetch and the host overhead
    # that followed the step before; every process leaves when the last one
    # has arrived and computed, so each one's compute holds its wait.
    arrive = fetch + np.concatenate([np.zeros((processes, 1)), host[:, :-1]], axis=1)
    compute = (arrive + own).max(axis=0) - arrive
    compute[:, 0] += 1500.0  # the first step is warm-up (compilation)
    for index in range(processes):
        now = [1000.0]
        recorder = StepAccounting(os.path.join(logdir, "job", f"process_{index}", "train"),
                                  clock=lambda: now[0])
        recorder.begin_session({
            "backend": "jax", "batch_size": 32, "steps_per_record": 1,
            "fetch_in_graph": False, "process_index": index,
            "process_count": processes, "local_devices": [f"cuda:{index % 8}"],
            "device_count": processes, "distribution_strategy": "DataParallel",
            "replicas": processes, "hostname": "bench-host", "benchmark": "scale",
        })
        for step in range(steps):
            if step and step % 500 == 0:
                recorder.boundary()
                recorder.flush()
            recorder.begin_step()
            now[0] += fetch[index, step] / 1e3
            recorder.end_fetch(batch_size=32 * processes)
            now[0] += compute[index, step] / 1e3
            recorder.end_compute()
            now[0] += host[index, step] / 1e3
        recorder.boundary()
        recorder.end_session()
    return {f"job/process_{index}/train": steps for index in range(processes)}


def event_file_bytes(logdir):
    return sum(os.path.getsize(os.path.join(directory, name))
               for directory, _, files in os.walk(logdir) for name in files if "tfevents" in name)


# Measurements.


def measure_report(logdir, repeats):
    """`tb-devicecost report LOGDIR --json` under `/usr/bin/time -v`, in a
    fresh process each time: `([(wall seconds, peak MB)], the last report)`."""
    results, report = [], None
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "tb_devicecost", "report",
               logdir, "--json"]
    for _ in range(max(1, repeats)):
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"the report failed: {completed.stderr[-2000:]}")
        wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)",
                         completed.stderr)
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", completed.stderr)
        hours, minutes, seconds = wall.groups()
        results.append((int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds),
                        int(peak.group(1)) / 1024))
        report = completed.stdout
    return results, json.loads(report)


def in_process(logdir, repeat):
    """Medians (s) of reading, the whole analysis and the workers part."""
    from tb_devicecost import words
    from tb_devicecost.analysis import record as run_records
    from tb_devicecost.analysis import workers
    from tb_devicecost.reading import reader

    read, build, part = [], [], []
    for _ in range(repeat):
        started = time.perf_counter()
        records, unread = reader.read_logdir(reader.local_provider(logdir),
                                             reader.scan_if_local(logdir))
        read.append(time.perf_counter() - started)
        started = time.perf_counter()
        report = words.build_report(records, unread=unread)
        build.append(time.perf_counter() - started)
        started = time.perf_counter()
        workers.build_workers([run_records.read_run(item) for item in records], report["runs"])
        part.append(time.perf_counter() - started)
    return statistics.median(read), statistics.median(build), statistics.median(part)


def timed_get(url):
    """GET as a browser does (gzip accepted): `(ms, bytes sent, JSON bytes)`."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        body = response.read()
        encoding = response.headers.get("Content-Encoding")
    elapsed = (time.perf_counter() - started) * 1e3
    return elapsed, len(body), len(gzip.decompress(body) if encoding == "gzip" else body)


def measure_routes(routes, requests):
    """Alternates the routes (`{name: a function of the request's index that
    gives its URL}`) after one untimed request each: `{name: [ms]}`, and the
    bytes sent and of JSON of each route's first answer."""
    timed, sizes = {name: [] for name in routes}, {}
    for name, url_of in routes.items():
        sizes[name] = timed_get(url_of(0))[1:]
    for index in range(requests):
        for name, url_of in routes.items():
            timed[name].append(timed_get(url_of(index))[0])
    return timed, sizes


# From the top page: the tab's iframe (same origin) holding `count` visible
# rows. Returns, in ms since the navigation started (the animation frame in
# which that was first true), when the rows were visible, and milestones.
_RENDERED_JS = """
([rowSelector, count]) => {
  const iframe = document.querySelector('iframe[src*="name=devicecost"]');
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
  const shift = view.performance.timeOrigin - performance.timeOrigin;
  const runs = view.performance.getEntriesByType('resource')
    .find((item) => item.name.includes('/data/plugin/devicecost/runs'));
  return {rendered: performance.now(), iframe_start: shift,
          runs_fetched: runs ? runs.responseEnd + shift : null};
}
"""


def measure_first_render(url, row_selector, count, loads):
    """Per fresh page load, the milestones of `_RENDERED_JS` (ms)."""
    from playwright.sync_api import sync_playwright

    from demo import serve

    loaded = []
    with sync_playwright() as playwright:
        browser = serve.launch_chromium(playwright)
        try:
            for _ in range(loads):
                # A fresh context: empty cache, no service worker, no storage.
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                try:
                    page = context.new_page()
                    page.goto(url + "/#devicecost", wait_until="commit")
                    handle = page.wait_for_function(_RENDERED_JS, arg=[row_selector, count],
                                                    polling="raf", timeout=300_000)
                    loaded.append(handle.json_value())
                finally:
                    context.close()
        finally:
            browser.close()
    return loaded


def tab(logdir, steps_by_run, routes, row_selector, requests, loads):
    """A real TensorBoard serving every run complete: the routes' timings
    (`measure_routes`) and the first renders (`measure_first_render`)."""
    from demo import serve

    def all_complete(runs):
        complete = {run["run"] for run in runs if run.get("status") == "complete"
                    and run.get("steps") == steps_by_run.get(run["run"])}
        return complete >= set(steps_by_run)

    # Its own process group: the data server it starts goes with it.
    process, url = serve.start_tensorboard(logdir, expected_runs=len(steps_by_run),
                                           ready=all_complete, timeout=600, new_session=True)
    try:
        base = url + "/data/plugin/devicecost/"
        timed, sizes = measure_routes({name: (lambda i, f=f: base + f(i))
                                       for name, f in routes.items()}, requests)
        loaded = measure_first_render(url, row_selector, len(steps_by_run), loads)
    finally:
        serve.stop_tensorboard(process)
    for name, values in timed.items():
        print(f"GET {name}: median {statistics.median(values):.1f} ms, "
              f"p90 {statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]:.1f} "
              f"ms over {len(values)} requests; {sizes[name][0] / 1e3:.0f} kB sent, "
              f"{sizes[name][1] / 1e3:.0f} kB of JSON")
    for key in ("iframe_start", "runs_fetched", "rendered"):
        values = [marks[key] for marks in loaded if marks.get(key) is not None]
        if values:
            print(f"  first render, {key}: median {statistics.median(values):.0f} ms "
                  "after navigation start")
    return ({name: statistics.median(values) for name, values in timed.items()},
            statistics.median(marks["rendered"] for marks in loaded))


def verdict(label, value, target, unit):
    met = value < target if unit != "B" else value <= target
    return f"{label} {value:.4g} {unit} " \
           f"({'met' if met else 'MISSED'}: {'<=' if unit == 'B' else '<'} {target:g})", met


def runs_shape(args):
    suffix = f"+{args.extra_run_steps}" if args.extra_run_steps else ""
    logdir = os.path.abspath(args.logdir or os.path.join(
        tempfile.gettempdir(), f"tb-devicecost-plugin-latency-{args.runs}x{args.steps}{suffix}"))
    steps_by_run = build_runs(logdir, args.runs, args.steps, args.reuse, args.extra_run_steps)
    names = list(steps_by_run)
    bytes_per_step = event_file_bytes(logdir) / sum(steps_by_run.values())
    print(f"{logdir}: {len(names)} runs, {sum(steps_by_run.values()):,} steps, "
          f"{bytes_per_step:.1f} bytes per recorded step")
    figures = [verdict("event files", bytes_per_step, BYTES_PER_STEP_TARGET, "B")]
    if args.report_runs:
        timed, _ = measure_report(logdir, args.report_runs)
        print("tb-devicecost report --json: wall " + ", ".join(f"{s:.2f}" for s, _ in timed)
              + " s; peak " + ", ".join(f"{mb:.0f}" for _, mb in timed) + " MB")
        target_s, target_mb = REPORT_TARGETS["many_runs" if len(names) > 1 else "one_long_run"]
        figures.append(verdict("report", statistics.median(s for s, _ in timed), target_s, "s"))
        figures.append(verdict("report peak", max(mb for _, mb in timed), target_mb, "MB"))
    if args.tab:
        run = urllib.parse.urlencode({"run": names[0]})
        routes = {"runs": lambda i: "runs", "run": lambda i: "run?" + run}
        medians, render = tab(logdir, steps_by_run, routes, ".dc-run-row",
                              args.requests, args.loads)
        render_target = MANY_RUNS_RENDER_TARGET_MS if len(names) >= MANY_RUNS else RENDER_TARGET_MS
        figures += [verdict("/runs", medians["runs"], RUNS_TARGET_MS, "ms"),
                    verdict("/run", medians["run"], RUN_TARGET_MS, "ms"),
                    verdict("first render", render, render_target, "ms")]
    return f"runs={args.runs}x{args.steps}" + (f"+{args.extra_run_steps}" if args.extra_run_steps
                                              else ""), figures


def processes_shape(args):
    root = args.logdir or tempfile.mkdtemp(prefix="tb_devicecost_scale_")
    figures = []
    for count in (int(value) for value in args.processes.split(",")):
        logdir = os.path.join(root, f"p{count}")
        shutil.rmtree(logdir, ignore_errors=True)
        started = time.perf_counter()
        steps_by_run = write_job(logdir, count, args.steps)
        write_s = time.perf_counter() - started
        timed, report = measure_report(logdir, args.report_runs)
        [group] = [group for group in report["workers"] if group["group"] == "job/train"]
        # The job's shape is known: its last process is the straggler.
        assert group["straggler_index"] == count - 1, group["straggler"]
        read_s, build_s, workers_s = in_process(logdir, args.repeat)
        print(f"{count} processes: written in {write_s:.1f} s, "
              f"{event_file_bytes(logdir) / count / 1024:.0f} KB a process; report "
              f"{statistics.median(s for s, _ in timed):.2f} s, peak {max(mb for _, mb in timed):.0f} MB; "
              f"in this process: read {read_s:.2f} s, analysis {build_s:.3f} s, workers "
              f"{workers_s:.4f} s; {group['aligned_steps']} steps aligned, straggler "
              f"{group['straggler_index']}", flush=True)
        figures = [verdict(f"at {count} processes: workers analysis", workers_s, WORKERS_TARGET_S, "s"),
                   verdict("report", statistics.median(s for s, _ in timed),
                           REPORT_TARGETS["job"][0], "s")]
        if args.tab:
            # A new baseline each time makes the plugin read and analyse afresh.
            routes = {"runs (afresh)": lambda i: "runs?" + urllib.parse.urlencode(
                {"baseline": f"job/process_{i % count}/train"}), "runs (cached)": lambda i: "runs"}
            medians, render = tab(logdir, steps_by_run, routes, ".dc-workers-table tbody tr",
                                  args.requests, args.loads)
            print(f"  first render, every process's row: {render:.0f} ms", flush=True)
            figures.append(verdict("runs afresh", medians["runs (afresh)"] / 1e3,
                                   FRESH_RUNS_TARGET_S, "s"))
    return f"processes={args.processes}x{args.steps}", figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=None,
                        help="steps a run (default 50000) or a process (default 2000)")
    parser.add_argument("--extra-run-steps", type=int, default=0,
                        help="one more run (long/train) of this many steps")
    parser.add_argument("--processes", help="a job per count of processes, e.g. 8,16,32,64")
    parser.add_argument("--repeat", type=int, default=3,
                        help="in-process repeats of reading and analysing a job")
    parser.add_argument("--report-runs", type=int, default=3,
                        help="times `tb-devicecost report` is timed (runs: 0 skips it)")
    parser.add_argument("--tab", action="store_true",
                        help="also time TensorBoard's routes and the tab's first render")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per route")
    parser.add_argument("--loads", type=int, default=5, help="fresh page loads in Chromium")
    parser.add_argument("--logdir", help="where to write (default: under the temporary directory)")
    parser.add_argument("--reuse", action="store_true",
                        help="runs: reuse the log directory if it holds the same runs and steps")
    args = parser.parse_args()
    if args.steps is None:
        args.steps = 2000 if args.processes else 50000
    if (args.runs < 1 or args.steps < 10 or args.requests < 1 or args.loads < 1
            or args.extra_run_steps < 0 or args.report_runs < 0 or args.repeat < 1):
        parser.error("--runs, --requests, --loads and --repeat must be positive, --steps at least 10")
    # SIGTERM unwinds like Ctrl-C, so TensorBoard and Chromium are stopped.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    print(f"Machine: {os.cpu_count()} CPUs", flush=True)
    shape, figures = processes_shape(args) if args.processes else runs_shape(args)
    met = all(ok for _, ok in figures)
    print(f"SUMMARY {shape}: " + "; ".join(text for text, _ in figures)
          + f"; {'all targets met' if met else 'a target MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted; TensorBoard and Chromium were stopped.", file=sys.stderr)
        sys.exit(130)
