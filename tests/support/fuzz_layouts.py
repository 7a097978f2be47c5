"""Hostile layouts beside intact runs (issue 25, items 1 to 8), for
`test_fuzz.py`: a huge `process_count`, sweeps that cannot be fitted, two
fits in one `log_dir` at once, process directories that disagree with the
run info, a run name of 3,748 characters, 200 processes, bidirectional
controls in names, and `sweep --log-dir` where no directory can be.

Each case adds runs to a copy of the fuzz suite's log directory (its
intact runs stay), then is held to `test_fuzz.check_case` (the report in
every format and every route of the tab survive, the intact runs are
shown, the tab and the report list the same runs) and to what the item
asks (bounded output, the problem said, never a balance claimed without
aligned steps, the finding said once, no bidirectional control in a
sentence).

Issue 35's layouts (`reader_cases`, items 4 to 8 and 11) are held to the
same: a chain of 1,000 directories, one block of steps whose shape lies,
links to /sys and to /proc, a name that is not UTF-8, invisible
characters in names, steps near 2**63. Those TensorBoard's Python loader
cannot list (the chain, the name) or would walk (the links) are made once
it has loaded, as its Rust loader would not serve them either.
"""

import json
import os
import random
import subprocess
import unicodedata

import numpy as np

from tb_devicecost import words
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.format import metadata
from tb_devicecost.format import writer as writer_module
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting

from tests.support.clock import FakeClock

BIDI = frozenset(chr(code) for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
SENTENCE_KEYS = ("message", "fix", "reason", "problems", "explanation", "text", "basis")


def record(run_dir, info, compute_ms=2.0, steps=12, wait_ms=0.3, seed=0, placement=None):
    """A short run written as the recorder writes it, with `info` in its run
    info (and `placement`, when given)."""
    rng = random.Random(seed)
    clock = FakeClock()
    recorder = accounting.StepAccounting(str(run_dir), flush_steps=64, clock=clock)
    recorder.begin_session(dict({"backend": "tensorflow", "batch_size": 32,
                                 "steps_per_record": 1, "fetch_in_graph": False,
                                 "model": "mlp", "hostname": "host"}, **info))
    recorder.begin_span(clock())
    if placement is not None:
        recorder.write_placement(placement)
    for _ in range(steps):
        recorder.begin_step()
        clock.advance(wait_ms + 0.01 * rng.random())
        recorder.end_fetch(batch_size=32)
        clock.advance(compute_ms + 0.01 * rng.random())
        recorder.end_compute()
        clock.advance(0.05)
    recorder.end_span(clock())
    recorder.end_session()


def job(logdir, group, count, indices, names=None, slow=None, steps=12):
    for position, index in enumerate(indices):
        part = (names or {}).get(position, f"process_{index}")
        record(os.path.join(logdir, group, part, "train"),
               {"process_index": index, "process_count": count},
               wait_ms=8.0 if index == slow else 0.3, steps=steps, seed=position)


def collide(logdir, spans):
    run_dir = os.path.join(logdir, "same", "train")
    for index, (opened, last_write, pid) in enumerate(spans):
        source = os.path.join(logdir + ".scratch", str(index))
        record(source, {"model": f"model_{index}"}, steps=10 + 10 * index)
        os.makedirs(run_dir, exist_ok=True)
        [name] = os.listdir(source)
        target = os.path.join(
            run_dir, f"events.out.tfevents.{opened:010d}.host.{pid}.{index:06d}.devicecost")
        os.replace(os.path.join(source, name), target)
        os.utime(target, (last_write, last_write))


def sentences(value, key=None):
    if isinstance(value, dict):
        for name, item in value.items():
            yield from sentences(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from sentences(item, key)
    elif isinstance(value, str) and key in SENTENCE_KEYS:
        yield value


# The checks of each item, given the report and its text.


def bounded(report, text):
    # What each run costs anyway (its own section, its own waiting finding
    # in a job), and no more: a finding copied into every run of a job of
    # 200 would be ten times this.
    runs = len(report["runs"]) + 1
    assert len(json.dumps(report)) < 10_000 * runs, len(json.dumps(report))
    assert len(text) < 4_000 * runs, len(text)


def huge_count(count):
    def check(report, text):
        bounded(report, text)
        [group] = [g for g in report["workers"] if g["group"] == "big/train"]
        assert group["missing_processes"] == [[2, count - 1]]
    return check


def sweep_named(name):
    def check(report, text):
        sweeps = {sweep["name"]: sweep for sweep in report["sweeps"]}
        assert name in sweeps, list(sweeps)
        bad = sweeps[name]["devices"].get("CPU:0")
        assert sweeps[name]["problems"] or (bad and bad["fixed_ms"] is not None)
    return check


def collided(expected):
    def check(report, text):
        [run] = [run for run in report["runs"] if run["run"] == "same/train"]
        said = [problem for problem in run["problems"] if "at once" in problem]
        assert bool(said) == expected, run["problems"]
    return check


def named_not_dropped(runs, no_balance=False):
    def check(report, text):
        group = next(g for g in report["workers"] if g["group"] == "y/train")
        shown = {entry["run"] for entry in group["runs"]} | {
            item["run"] for item in group["unaligned"]}
        assert set(runs) <= shown, (runs, shown)
        for name in runs:
            assert name in text, name
        if not group["aligned_steps"]:
            assert group["problems"] and "keep pace" not in text
        if no_balance:
            assert not group["aligned_steps"]
    return check


def listed_and_opened(report, text):
    assert any(len(run["run"]) == 3_748 for run in report["runs"])


def said_once(report, text):
    bounded(report, text)
    carrying = [run["run"] for run in report["runs"]
                if any(item["id"] == "straggler" for item in run["findings"])]
    assert carrying == ["many/process_7/train"], carrying[:5]
    assert text.count("Process 7 (many/process_7/train) holds") <= 1


def no_bidi_in_sentences(report, text):
    found = list(sentences(report))
    assert any("\\u202e" in item for item in found), "no sentence quotes the name"
    for item in found:
        assert not set(item) & BIDI, item
    assert not set(text) & BIDI


LONG = "/".join(["d" * 200] * 18 + ["x" * 124, "train"])


# Issue 35: readers that never fall over (items 4 to 8 and 11).


def remove_tree(path):
    """`rm -rf path`: `shutil.rmtree` recurses, and a chain of 1,000
    directories is deeper than Python's recursion limit."""
    subprocess.run(["rm", "-rf", "--", str(path)], check=False)


def deep_chain(logdir, depth=1_000):
    def make():
        path = logdir
        for _ in range(depth):
            path = os.path.join(path, "d")
            os.mkdir(path)
    return make


def lying_block(run_dir, step, rows, shape_rows):
    """A block of steps with right checksums whose shape says `shape_rows`."""
    from tensorboard.compat.proto import event_pb2

    event = event_pb2.Event(step=step, wall_time=1.0)
    value = event.summary.value.add(tag=metadata.TAG_STEPS)
    value.tensor.dtype = 1  # DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=shape_rows)
    value.tensor.tensor_shape.dim.add(size=len(metadata.BLOCK_COLUMNS))
    value.tensor.tensor_content = np.asarray(
        [[0.001 * i, 0.3, 2.0, 0.05, 32.0, 0.0] for i in range(rows)], dtype="<f4").tobytes()
    value.metadata.CopyFrom(metadata.create_summary_metadata("tensor"))
    writer = writer_module.SummaryWriter(str(run_dir))
    writer.write_event(event)
    writer.close()


def skipped_as(run, phrase):
    def check(report, text):
        reasons = {item["run"]: item["reason"] for item in report["skipped"]}
        assert phrase in reasons.get(run, ""), reasons
    return check


def only_own_runs(report, text):
    skipped_as("cwd", "A symbolic link into /proc: not followed")(report, text)
    assert not [run["run"] for run in report["runs"] if run["run"].startswith("cwd/")]


def job_keeps_its_steps(report, text):
    [group] = [g for g in report["workers"] if g["group"] == "blk/train"]
    assert group["aligned_steps"], group
    [run] = [run for run in report["runs"] if run["run"] == "blk/process_1/train"]
    assert any("1 block(s) of steps" in problem for problem in run["problems"]), run["problems"]
    assert "no steady steps" not in text


def not_utf8_escaped(report, text):
    assert "caf\\xe9/train" in [run["run"] for run in report["runs"]]
    for shown in (text, markdown.render(report)):
        shown.encode("utf-8")  # Raises on a lone surrogate: bytes not UTF-8.
        assert "caf\\xe9/train" in shown.replace("\\\\", "\\")


INVISIBLE = "\u2028\u2029\u200b\ufeff"


def no_invisible_character(report, text):
    assert f"in{INVISIBLE}visible/train" in [run["run"] for run in report["runs"]]
    for shown in (text, markdown.render(report)):
        hidden = [c for c in shown if c != "\n" and unicodedata.category(c) in
                  ("Cc", "Cf", "Zl", "Zp", "Cs")]
        assert not hidden, hidden


def far_steps_said(report, text):
    [run] = [run for run in report["runs"] if run["run"] == "far/train"]
    assert any("numbered beyond" in problem for problem in run["problems"]), run["problems"]


def reader_cases():
    """Issue 35: `(item, name, build(logdir), check(report, text))`; a
    build may return a function to call once TensorBoard's loader has read
    the directory."""
    return [
        ("35.4", "a chain of 1,000 directories", deep_chain,
         skipped_as("/".join(["d"] * 100), "at most 100 directories below")),
        ("35.5", "a block whose shape says 1,000 rows and holds 10, in a job", lambda logdir: [
            job(logdir, "blk", 2, [0, 1]),
            lying_block(os.path.join(logdir, "blk", "process_1", "train"), 400, 10, 1_000)],
         job_keeps_its_steps),
        ("35.6", "a link to /sys",
         lambda logdir: lambda: os.symlink("/sys", os.path.join(logdir, "sys")),
         skipped_as("sys", "A symbolic link into /sys: not followed")),
        ("35.6", "a link to /proc/self/cwd",
         lambda logdir: lambda: os.symlink("/proc/self/cwd", os.path.join(logdir, "cwd")),
         only_own_runs),
        ("35.7", "a run named with a byte that is not UTF-8",
         lambda logdir: lambda: record(
             os.path.join(logdir, os.fsdecode(b"caf\xe9"), "train"), {}),
         not_utf8_escaped),
        ("35.8", "U+2028, U+2029, U+200B, U+FEFF in run, model and host names",
         lambda logdir: record(os.path.join(logdir, f"in{INVISIBLE}visible", "train"),
                               {"model": f"m{INVISIBLE}", "hostname": f"h{INVISIBLE}"}),
         no_invisible_character),
        ("35.11", "a block numbered near 2**63", lambda logdir: [
            record(os.path.join(logdir, "far", "train"), {}),
            lying_block(os.path.join(logdir, "far", "train"), 2**63 - 5, 10, 10)],
         far_steps_said),
    ]


def cases():
    """`(item, name, build(logdir), check(report, text))`."""
    found = []
    for count in (10**6, 10**8, 10**12):
        found.append((1, f"process_count {count:.0e}",
                      lambda logdir, count=count: job(logdir, "big", count, [0, 1]),
                      huge_count(count)))
    found += [
        (2, "sweep at batch 999,999,999 and 999,999,998 (names)", lambda logdir: [
            record(os.path.join(logdir, "sw", f"cpu_b{batch}", "train"), {}, compute_ms=2.0)
            for batch in (999_999_999, 999_999_998)], sweep_named("sw")),
        (2, "sweep at batch 1e15 and 1e15 - 1 (run info)", lambda logdir: [
            record(os.path.join(logdir, "ri", str(batch % 7), "train"),
                   {"sweep": {"name": "ri", "device": "cpu", "batch_size": batch}})
            for batch in (10**15, 10**15 - 1)], sweep_named("ri")),
        (3, "two fits in one log_dir at once",
         lambda logdir: collide(logdir, [(1_000, 1_050.5, 111), (1_010, 1_060.5, 222)]),
         collided(True)),
        (3, "two fits in one log_dir one after the other",
         lambda logdir: collide(logdir, [(1_000, 1_050.5, 111), (1_050, 1_090.0, 222)]),
         collided(False)),
        (4, "process_1 and process_01",
         lambda logdir: job(logdir, "y", 2, [0, 1, 1], names={2: "process_01"}),
         named_not_dropped(["y/process_0/train", "y/process_1/train", "y/process_01/train"])),
        (4, "process 1 renamed process_7",
         lambda logdir: job(logdir, "y", 2, [0, 1], names={1: "process_7"}),
         named_not_dropped(["y/process_0/train", "y/process_7/train"], no_balance=True)),
        (4, "an index beyond the count",
         lambda logdir: job(logdir, "y", 2, [0, 1, 5], slow=1),
         named_not_dropped(["y/process_5/train"])),
        (5, "a run name of 3,748 characters",
         lambda logdir: record(os.path.join(logdir, *LONG.split("/")), {}),
         listed_and_opened),
        (6, "200 processes, one straggler",
         lambda logdir: job(logdir, "many", 200, range(200), slow=7, steps=6), said_once),
        (7, "U+202E in the names of a job's runs",
         lambda logdir: job(logdir, "r\u202eevil", 2, [0, 1], slow=1), no_bidi_in_sentences),
    ]
    return found + reader_cases()


def cli_cases():
    """Item 8: `(name, argv(tmp_path), exit status, stderr start)`."""
    def under_file(tmp_path):
        path = os.path.join(str(tmp_path), "plain.txt")
        with open(path, "w") as handle:
            handle.write("x")
        return path

    return [
        ("sweep --log-dir a file", lambda tmp: under_file(tmp), 2, "tb-devicecost: error: --log-dir"),
        ("sweep --log-dir under a file", lambda tmp: os.path.join(under_file(tmp), "s"), 2,
         "tb-devicecost: error: --log-dir"),
        ("sweep --log-dir /proc/nope", lambda tmp: "/proc/nope", 2, "tb-devicecost: error: --log-dir"),
    ]


def cli_failures(tmp_path, run_cli):
    """Item 8 through `run_cli(*argv)`: `(tried, failures)`. `tmp_path`
    must be on `sys.path` (a data module that Ctrl-C interrupts is
    written there)."""
    (tmp_path / "interrupted_data.py").write_text("def data():\n    raise KeyboardInterrupt\n")
    tried, failures = 0, []
    for name, log_dir, status, start in cli_cases() + [
            ("Ctrl-C during a sweep", lambda tmp: str(tmp / "s"), 130, "tb-devicecost: interrupted")]:
        tried += 1
        # A data function that raises: a sweep that got past its checks
        # would exit 1 with its error.
        data = ("interrupted_data:data" if status == 130
                else "tests.support.sweep_models:broken_data")
        code, out, err = run_cli("sweep", "tests.support.sweep_models:build", "--data", data,
                                 "--log-dir", log_dir(tmp_path))
        if (code, out, err.count("\n")) != (status, "", 1) or not err.startswith(start):
            failures.append(f"item 8, {name}: exit {code}, stderr {err[-300:]!r}")
    return tried, failures


def report_and_text(logdir):
    """The report as `tb-devicecost report` builds it (the scan too), and its text."""
    scan = reader.scan_logdir(logdir)
    records, unread = reader.read_logdir(reader.local_provider(logdir, scan=scan), scan)
    report = words.build_report(records, unread=unread)
    return json.loads(json.dumps(report)), console.render(report, logdir)
