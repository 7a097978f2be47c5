"""Damaged copies of a real run beside two intact runs: the report and the tab
survive every one (issue 16).

One run is recorded with `StepAccounting` under a fake clock (steps, run
info, placement, a trace window), then copied and damaged in many ways:
truncation at many offsets, bit flips, empty files, huge and deeply nested
documents, wrong shapes and types, non-finite and implausible numbers,
newer schemas, symbolic link loops, FIFOs, unreadable and unparseable
files. For each damaged copy, beside two intact runs:

- `tb-devicecost report` (through `cli.main`, and for some cases
  `python -m tb_devicecost report` with a timeout) exits 0 or 2, with one
  line on stderr for 2, and never a traceback or a hang;
- every route of the plugin, served by TensorBoard's WSGI app over
  TensorBoard's data provider for the log directory, answers 2xx or 4xx;
- the intact runs appear in `/runs` and in the report;
- the tab and the report list the same runs and skipped runs (reasons too).

Seeded, and bounded in time (well under two minutes on two cores). The
counts (tried / survived) are printed at the end. Hostile layouts (issues
25 and 35: `fuzz_layouts.py`) are tried the same way, with their own count.
"""

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from tensorboard.backend import application
from tensorboard.backend.event_processing import data_provider
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing import plugin_event_multiplexer
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto import tensor_pb2
from tensorboard.compat.proto import tensor_shape_pb2
from tensorboard.compat.proto import types_pb2
from tensorboard.plugins import base_plugin
from werkzeug import test as werkzeug_test

from tb_devicecost import cli
from tb_devicecost.format import metadata
from tb_devicecost.format import records
from tb_devicecost.format import writer as writer_module
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting
from tb_devicecost.serving import plugin_loader

from tests.support.clock import FakeClock


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow

SEED = 16
PREFIX = "/data/plugin/devicecost"
INTACT = ("cpu/train", "gpu/train")
# The damaged copy: a run on an accelerator, so the default comparison
# sets it against `cpu/train` (same model, device words aside).
DAMAGED = "tpu/train"
# Cases also run as `python -m tb_devicecost report` (a fresh process, a
# timeout): those most likely to hang or to print a traceback.
SUBPROCESS_KINDS = ("loop", "fifo", "deep", "flip", "truncate", "garbage", "newer_metadata")


# The real run and its intact neighbours.


def gpu_placement():
    return {
        "devices": {"physical": [{"name": "CPU:0", "kind": "CPU"},
                                 {"name": "GPU:0", "kind": "GPU", "model": "NVIDIA H100"}],
                    "logical": [{"name": "CPU:0", "kind": "CPU"},
                                {"name": "GPU:0", "kind": "GPU"}]},
        "accelerator_visible": True, "variables": {"GPU:0": 4},
        "optimizer_variables": {"GPU:0": 10}, "input_bytes_per_step": 2176,
        "input_devices": ["CPU:0"], "step_ops_captured": True,
        "ops": {"CPU:0": 40, "GPU:0": 300}, "cpu_op_types": ["IteratorGetNext"],
        "cross_device_copies": 2,
    }


def cpu_placement():
    placement = gpu_placement()
    placement.update(devices={"physical": [{"name": "CPU:0", "kind": "CPU"}],
                              "logical": [{"name": "CPU:0", "kind": "CPU"}]},
                     accelerator_visible=False, variables={"CPU:0": 4},
                     ops={"CPU:0": 340}, cross_device_copies=0)
    return placement


def trace_document():
    steps = [{"step": step, "step_ms": 3.0, "input_wait_ms": 0.4, "compute_ms": 2.4,
              "other_ms": 0.2, "pipeline_busy_ms": 0.5, "device_busy_ms": 2.0,
              "device_idle_ms": 1.0, "kernels": 40} for step in range(20, 25)]
    return {"windows": [{
        "start_step": 20, "stop_step": 25, "source": "tb_devicecost",
        "profile_run_dir": "/elsewhere", "capture": "2026_01_02_03_04_05", "host": "host",
        "trace_bytes": 4096, "steps": steps,
        "summary": {"mean_step_ms": 3.0, "mean_input_wait_ms": 0.4,
                    "input_wait_fraction": 0.13, "device_busy_fraction": 0.66},
        "has_device_plane": True, "device_planes": ["/device:GPU:0"],
        "device_busy_fraction": 0.66,
        "recorded_steps": [{"step": step, "data_wait_ms": 0.5, "compute_ms": 2.5,
                            "host_overhead_ms": 0.1} for step in range(20, 25)],
    }], "updated": 0.0}


def record_run(run_dir, placement, compute_ms, seed=0):
    """A run as the recorder writes it: 200 steps over two fits, documents."""
    rng = random.Random(seed)
    clock = FakeClock()
    recorder = accounting.StepAccounting(run_dir, flush_steps=64, clock=clock)
    for fit in range(2):
        recorder.begin_session({"backend": "tensorflow", "batch_size": 32,
                                "steps_per_record": 1, "fetch_in_graph": False,
                                "model": "mlp", "hostname": "host"})
        recorder.begin_span(clock())
        for step in range(100):
            recorder.begin_step()
            clock.advance(0.3 + 0.2 * rng.random())
            recorder.end_fetch(batch_size=32)
            clock.advance(compute_ms + rng.random())
            recorder.end_compute()
            clock.advance(0.05)
            if fit == 0 and step == 1:
                recorder.write_placement(placement)
            if step % 50 == 49:
                recorder.boundary()
                recorder.flush()
        recorder.end_span(clock())
        if fit == 0:
            recorder.write_document(metadata.TAG_TRACE, trace_document())
    recorder.end_session()
    return run_dir


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The intact runs and the run to damage, written once."""
    root = tmp_path_factory.mktemp("fuzz_pristine")
    record_run(str(root / "cpu" / "train"), cpu_placement(), 6.0, seed=1)
    record_run(str(root / "gpu" / "train"), gpu_placement(), 2.0, seed=2)
    record_run(str(root / "tpu" / "train"), gpu_placement(), 1.0, seed=3)
    return root


def event_files(run_dir):
    return sorted(os.path.join(run_dir, name) for name in os.listdir(run_dir)
                  if "tfevents" in name)


# Ways to damage a run. Each takes (run_dir, rng) and damages the copy of the
# run in run_dir; some return a function to call once TensorBoard's loader
# has read the directory (what TensorBoard itself could not survive: a FIFO
# it would block on, a directory it could not list).


def raw_event(step, tag, tensor, data_class="tensor"):
    event = event_pb2.Event(step=step, wall_time=1.0)
    value = event.summary.value.add(tag=tag)
    value.tensor.CopyFrom(tensor)
    value.metadata.CopyFrom(metadata.create_summary_metadata(data_class))
    return event


def string_tensor(*texts, shape=()):
    return tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape]),
        string_val=[text.encode("utf-8") for text in texts],
    )


def append_events(run_dir, *events):
    """Appends events in a new event file of the run (sorted after the others)."""
    writer = writer_module.SummaryWriter(run_dir)
    for event in events:
        writer.write_event(event)
    writer.close()


def append_document(run_dir, tag, text, step=1000):
    append_events(run_dir, raw_event(step, tag, string_tensor(text)))


def truncate(offset_share):
    def damage(run_dir, rng):
        path = event_files(run_dir)[-1]
        size = os.path.getsize(path)
        os.truncate(path, min(size - 1, int(size * offset_share)))
    return damage


def flip(run_dir, rng):
    path = rng.choice(event_files(run_dir))
    data = bytearray(open(path, "rb").read())
    position = rng.randrange(len(data))
    data[position] ^= 1 << rng.randrange(8)
    open(path, "wb").write(bytes(data))


def empty(run_dir, rng):
    for path in event_files(run_dir):
        open(path, "wb").close()


def empty_extra(run_dir, rng):
    open(os.path.join(run_dir, "events.out.tfevents.9999999999.host.empty"), "wb").close()


def garbage(run_dir, rng):
    for path in event_files(run_dir):
        os.remove(path)
    with open(os.path.join(run_dir, "events.out.tfevents.1.host.garbage"), "wb") as handle:
        handle.write(rng.randbytes(4096))


def garbage_record(run_dir, rng):
    """A record whose checksums are right and whose bytes are no Event."""
    path = event_files(run_dir)[-1]
    with open(path, "ab") as handle:
        handle.write(records.frame_records([rng.randbytes(200)]))


def document(tag, text):
    def damage(run_dir, rng):
        append_document(run_dir, tag, text)
    return damage


def deep(depth, tag=metadata.TAG_AGGREGATE):
    return document(tag, '{"schema": 1, "deep": %s%s}' % ("[" * depth, "]" * depth))


def tensor_under(tag, tensor, data_class="tensor"):
    def damage(run_dir, rng):
        append_events(run_dir, raw_event(1000, tag, tensor, data_class))
    return damage


def series_rows(values):
    """A new file of per-step rows after the recorded steps."""
    def damage(run_dir, rng):
        writer = writer_module.SummaryWriter(run_dir)
        rows = np.array([[200 + i, 1.0, *row] for i, row in enumerate(values)],
                        dtype=np.float64)
        writer.write_steps(rows)
        writer.close()
    return damage


def aggregate_with(**changes):
    """The recorded aggregate with some values replaced (raw JSON)."""
    def damage(run_dir, rng):
        aggregate = json.loads(json.dumps(BASE_AGGREGATE))
        for path, value in changes.items():
            target = aggregate
            keys = path.split("__")
            for key in keys[:-1]:
                target = target[key]
            target[keys[-1]] = value
        text = json.dumps(aggregate)  # NaN and Infinity as Python writes them
        text = text.replace('"__big__"', "1" + "0" * 400)
        append_document(run_dir, metadata.TAG_AGGREGATE, text)
    return damage


def newer_metadata(content):
    def damage(run_dir, rng):
        original = metadata.create_summary_metadata

        def patched(data_class):
            summary_metadata = original(data_class)
            summary_metadata.plugin_data.content = content
            return summary_metadata

        for path in event_files(run_dir):
            os.remove(path)
        metadata.create_summary_metadata = patched
        try:
            record_run(run_dir, gpu_placement(), 1.0, seed=3)
        finally:
            metadata.create_summary_metadata = original
    return damage


def link(target):
    def damage(run_dir, rng):
        os.symlink(target(run_dir), os.path.join(run_dir, "link"))
    return damage


def fifo(only):
    def damage(run_dir, rng):
        if only:
            for path in event_files(run_dir):
                os.remove(path)
        path = os.path.join(run_dir, "events.out.tfevents.9999999999.host.fifo")
        # TensorBoard's Python loader would block on it: made after loading.
        return lambda: os.mkfifo(path)
    return damage


def unreadable_file(run_dir, rng):
    extra = os.path.join(run_dir, "events.out.tfevents.9999999999.host.locked")
    open(extra, "wb").close()
    return ("deny_file", extra)


def unreadable_directory(run_dir, rng):
    return ("deny_dir", run_dir)


BASE_AGGREGATE = None  # Set from the pristine run (module fixture).


def cases():
    """(kind, name, damage), seeded."""
    rng = random.Random(SEED)
    found = []
    for share in sorted(rng.random() for _ in range(22)) + [0.0, 0.001, 0.5, 0.999]:
        found.append(("truncate", f"truncate at {share:.3f}", truncate(share)))
    for index in range(22):
        found.append(("flip", f"bit flip {index}", flip))
    found += [
        ("empty", "every event file empty", empty),
        ("empty", "an extra empty event file", empty_extra),
        ("garbage", "random bytes only", garbage),
        ("garbage", "a checksummed record that is no Event", garbage_record),
        ("huge", "a 5 MB aggregate", document(
            metadata.TAG_AGGREGATE, json.dumps({"schema": 1, "blob": "x" * 5_000_000}))),
        ("huge", "a 200,000-item list in the trace", document(
            metadata.TAG_TRACE, json.dumps({"schema": 1, "windows": [{}] * 200_000}))),
        ("deep", "an aggregate 100,000 deep", deep(100_000)),
        ("deep", "an aggregate 5,000 deep", deep(5_000)),
        ("deep", "run info 500 deep", deep(500, metadata.TAG_RUN_INFO)),
        ("deep", "a trace 40 deep", deep(40, metadata.TAG_TRACE)),
        ("shape", "aggregate as a string tensor of shape [2]", tensor_under(
            metadata.TAG_AGGREGATE, string_tensor('{"schema": 1}', '{"schema": 1}', shape=[2]))),
        ("shape", "aggregate as a string tensor of shape [0]", tensor_under(
            metadata.TAG_AGGREGATE, string_tensor(shape=[0]))),
        ("shape", "aggregate as a float tensor", tensor_under(
            metadata.TAG_AGGREGATE, tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                float_val=[1.0]))),
        ("shape", "a step series of shape [2]", tensor_under(
            metadata.TAG_COMPUTE_MS, tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(
                    dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2)]),
                float_val=[1.0, 2.0]), "scalar")),
        ("shape", "a step series holding a string", tensor_under(
            metadata.TAG_DATA_WAIT_MS, string_tensor("1.0"), "scalar")),
        ("type", "aggregate is a JSON array", document(metadata.TAG_AGGREGATE, "[1, 2]")),
        ("type", "aggregate is not JSON", document(metadata.TAG_AGGREGATE, "{not json")),
        ("type", "components is a string", aggregate_with(components="x")),
        ("type", "counts as strings", aggregate_with(components__compute__count="100")),
        ("type", "warm-up steps as an object", aggregate_with(warmup__steps={"a": 1})),
        ("type", "an unhashable step in the trace", document(metadata.TAG_TRACE, json.dumps(
            {"schema": 1, "windows": [{"steps": [{"step": [1]}],
                                       "recorded_steps": [{"step": {"a": 1}}]}]}))),
        ("type", "placement of wrong types", document(metadata.TAG_PLACEMENT, json.dumps(
            {"schema": 1, "devices": "GPU", "ops": [1, 2], "variables": {"GPU:0": "many"},
             "cpu_op_types": {"a": 1}, "input_bytes_per_step": -1}))),
        ("type", "run info of wrong types", document(metadata.TAG_RUN_INFO, json.dumps(
            {"schema": 1, "steps_per_record": "two", "batch_size": [32],
             "backend": {"name": 1}, "jit_compile": [True], "fetch_floor_ms": "1"}))),
        ("number", "NaN totals", aggregate_with(components__step__sum_ms=float("nan"))),
        ("number", "infinite mean", aggregate_with(components__compute__mean_ms=float("inf"))),
        ("number", "1e308 ms", aggregate_with(components__compute__sum_ms=1e308,
                                              components__compute__mean_ms=1e308)),
        ("number", "1e-310 ms steps", aggregate_with(components__step__mean_ms=1e-310,
                                                     components__step__sum_ms=1e-310)),
        ("number", "an integer too large for a float", aggregate_with(steps="__big__")),
        ("number", "negative counts", aggregate_with(components__step__count=-5)),
        ("number", "NaN and infinite steps", series_rows(
            [(float("nan"), 1.0, 0.1, 32.0, 0.0), (1.0, float("inf"), 0.1, 32.0, 0.0),
             (1e308, 1e-310, 0.1, 1e30, 0.0)])),
        ("newer", "aggregate of schema 99", aggregate_with(schema=99)),
        ("newer", "every document of schema 99", lambda run_dir, rng: [
            append_document(run_dir, tag, json.dumps({"schema": 99}))
            for tag in metadata.JSON_TAGS]),
        ("newer", "schema not a number", aggregate_with(schema="one")),
        ("newer_metadata", "summary metadata of schema 99",
         newer_metadata(b'{"schema": 99}')),
        ("newer_metadata", "summary metadata not JSON", newer_metadata(b"\xff\xfe")),
        ("loop", "loop -> .", link(lambda run_dir: ".")),
        ("loop", "up -> ..", link(lambda run_dir: "..")),
        ("loop", "a link to the log directory", link(
            lambda run_dir: os.path.dirname(os.path.dirname(run_dir)))),
        ("loop", "a broken link", link(lambda run_dir: "/nonexistent/x")),
        ("fifo", "a FIFO beside the event files", fifo(only=False)),
        ("fifo", "a FIFO as the only event file", fifo(only=True)),
        ("unreadable", "an unreadable extra event file", unreadable_file),
        ("unreadable", "an unreadable run directory", unreadable_directory),
    ]
    return found


# Reading a case through the CLI and the plugin.


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def make_client(logdir):
    """TensorBoard's WSGI app with our plugin over `logdir`: its Python
    loader (each run loaded on its own, as TensorBoard's reload loop keeps
    the runs it loaded before one that raised), sampling like its Rust
    loader (1000 points per series)."""
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance={event_accumulator.TENSORS: 1000},
        tensor_size_guidance={metadata.PLUGIN_NAME: 1000},
    )
    multiplexer.AddRunsFromDirectory(logdir)
    reader.reload_runs(multiplexer)
    provider = data_provider.MultiplexerDataProvider(multiplexer, logdir)
    context = base_plugin.TBContext(logdir=logdir, data_provider=provider)
    plugin = plugin_loader.DeviceCostPluginLoader().load(context)
    return werkzeug_test.Client(application.TensorBoardWSGI([plugin], data_provider=provider))


def lists(report):
    return ([run["run"] for run in report["runs"]],
            sorted((item["run"], item["reason"]) for item in report["skipped"]))


def check_cli_output(code, out, err, form):
    assert code in (0, 2), (form, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (form, err)
    if code == 2:
        assert out == "" and len(err.splitlines()) == 1, (form, err)
        assert err.startswith("tb-devicecost: error: "), (form, err)
        return None
    for line in err.splitlines():
        assert line.startswith("tb-devicecost: skipped "), (form, line)
    if form == "--json":
        return json.loads(out, parse_constant=lambda constant: pytest.fail(constant))
    return None


def check_case(logdir, after_loading, subprocess_too):
    client = make_client(logdir)
    for step in after_loading:
        step()
    code, out, err = run_cli("report", logdir, "--json")
    report = check_cli_output(code, out, err, "--json")
    assert report is not None, err
    for form in ("--markdown", None):
        check_cli_output(*run_cli("report", logdir, *([form] if form else [])), form)
    runs = [run["run"] for run in report["runs"]]
    assert set(INTACT) <= set(runs), (runs, report["skipped"])

    response = client.get(PREFIX + "/runs")
    assert response.status_code == 200, response.get_data(as_text=True)
    tab = json.loads(response.get_data(as_text=True))
    assert set(INTACT) <= {run["run"] for run in tab["runs"]}
    assert lists(tab) == lists(report)

    names = [run["run"] for run in tab["runs"]] + [item["run"] for item in tab["skipped"]]
    paths = ["/run?run=" + name for name in names + [DAMAGED]]
    paths += [
        "/compare?run=cpu/train&run=gpu/train&run=" + DAMAGED,
        f"/compare?run=cpu/train&run={DAMAGED}&baseline={DAMAGED}",
        "/runs?baseline=" + DAMAGED,
        "/runs?baseline=cpu/train",
        "/static/index.js",
    ]
    for path in paths:
        for method in ("GET", "POST"):
            response = client.open(PREFIX + path, method=method)
            assert 200 <= response.status_code < 500, (method, path, response.status_code,
                                                       response.get_data(as_text=True)[:300])
            if response.status_code == 405:  # Issue 35, item 11: as documented.
                assert response.content_type.startswith("text/plain"), response.content_type
            if response.status_code == 200 and "json" in response.content_type:
                json.loads(response.get_data(as_text=True),
                           parse_constant=lambda constant: pytest.fail(constant))

    if subprocess_too:
        completed = subprocess.run(
            [sys.executable, "-m", "tb_devicecost", "report", logdir],
            capture_output=True, text=True, timeout=90,
        )
        assert completed.returncode in (0, 2), completed.stderr[-2000:]
        assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
        if completed.returncode == 2:
            assert len(completed.stderr.splitlines()) == 1


@contextlib.contextmanager
def denied(kind, path):
    """Opening a file or listing a directory fails as for a user without
    the permission (tests run as root, who may read anything)."""
    path = os.path.abspath(path)
    patches = []
    if kind == "deny_file":
        real_open = os.open

        def fake_open(name, flags, *args, **kwargs):
            if os.path.abspath(os.fspath(name)) == path:
                raise PermissionError(13, "Permission denied", name)
            return real_open(name, flags, *args, **kwargs)

        patches.append(("open", fake_open))
    else:
        for name in ("scandir", "listdir"):
            real = getattr(os, name)

            def fake(target=".", real=real):
                if not isinstance(target, int) and os.path.abspath(os.fspath(target)) == path:
                    raise PermissionError(13, "Permission denied", target)
                return real(target)

            patches.append((name, fake))
    originals = {name: getattr(os, name) for name, _ in patches}
    try:
        for name, replacement in patches:
            setattr(os, name, replacement)
        yield
    finally:
        for name, original in originals.items():
            setattr(os, name, original)


def test_damaged_runs_never_crash_the_report_nor_blank_the_tab(pristine, tmp_path, capsys):
    global BASE_AGGREGATE
    [base] = reader.read_runs(reader.local_provider(str(pristine)), runs=[DAMAGED])
    BASE_AGGREGATE = base.aggregate
    assert base.aggregate["steps"] == 200 and base.trace and base.placement

    started = time.monotonic()
    tried, failures, seen_kinds = 0, [], set()
    rng = random.Random(SEED)
    for index, (kind, name, damage) in enumerate(cases()):
        logdir = str(tmp_path / f"case{index:03d}")
        shutil.copytree(str(pristine), logdir, symlinks=True)
        run_dir = os.path.join(logdir, *DAMAGED.split("/"))
        tried += 1
        try:
            outcome = damage(run_dir, rng)
            after_loading, patch = [], contextlib.nullcontext()
            if callable(outcome):
                after_loading.append(outcome)
            elif isinstance(outcome, tuple):
                # Denied once TensorBoard's loader has read the directory.
                after_loading.append(lambda outcome=outcome: stack.enter_context(
                    denied(*outcome)))
            with contextlib.ExitStack() as stack:
                stack.enter_context(patch)
                check_case(logdir, after_loading,
                           subprocess_too=kind in SUBPROCESS_KINDS and kind not in seen_kinds
                           and not isinstance(outcome, tuple))
            seen_kinds.add(kind)
        except Exception as error:  # pylint: disable=broad-except
            failures.append(f"{name}: {type(error).__name__}: {str(error)[:500]}")
        finally:
            shutil.rmtree(logdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    survived = tried - len(failures)
    with capsys.disabled():
        print(f"\nfuzz: {tried} damaged copies tried, {survived} survived "
              f"({elapsed:.0f} s, seed {SEED})")
    assert not failures, "\n".join(failures)
    assert tried >= 80


def test_hostile_layouts_never_crash_nor_hide_a_problem(pristine, tmp_path, capsys, monkeypatch):
    """Issue 25, items 1 to 8 (`fuzz_layouts.py`): each layout beside the
    intact runs, through `check_case` and the item's own check."""
    from tests.support import fuzz_layouts

    tried, failures = 0, []
    for index, (item, name, build, check) in enumerate(fuzz_layouts.cases()):
        logdir = str(tmp_path / f"layout{index:02d}")
        shutil.copytree(str(pristine), logdir, symlinks=True)
        tried += 1
        try:
            # Issue 35, item 11: nothing but "skipped" lines on stderr, so
            # no NumPy RuntimeWarning either.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", RuntimeWarning)
                outcome = build(logdir)
                check_case(logdir, [outcome] if callable(outcome) else [], subprocess_too=False)
                check(*fuzz_layouts.report_and_text(logdir))
            warned = [str(warning.message) for warning in caught
                      if issubclass(warning.category, RuntimeWarning)]
            assert not warned, warned
        except Exception as error:  # pylint: disable=broad-except
            failures.append(f"item {item}, {name}: {type(error).__name__}: {str(error)[:400]}")
        finally:
            fuzz_layouts.remove_tree(logdir)
    monkeypatch.syspath_prepend(str(tmp_path))  # Item 8's data module.
    more, failed = fuzz_layouts.cli_failures(tmp_path, run_cli)
    tried, failures = tried + more, failures + failed
    with capsys.disabled():
        print(f"\nfuzz (hostile layouts, issues 25 and 35): {tried} tried, "
              f"{tried - len(failures)} survived")
    assert not failures, "\n".join(failures)
