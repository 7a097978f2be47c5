"""`tb-devicecost report`: through `main(argv)` and `python -m tb_devicecost`."""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import unicodedata

import pytest

from tb_devicecost import analysis
from tb_devicecost import cli
from tb_devicecost import version
from tb_devicecost import words
from tb_devicecost.cli.renderers import console
from tb_devicecost.format import metadata
from tb_devicecost.format import vocabulary

from tests.support import paths
from tests.support.documents import cpu_placement, gpu_placement, make_aggregate
from tests.support.event_files import write_run


# Keys of the JSON report that DESIGN.md section 4 and docs/CLI.md promise,
# with their types (None allowed where a number can be unknown).
NUMBER = (int, float)
RUN_KEYS = {
    "run": str,
    "steps": int,
    "device": str,
    "backend": str,
    "batch_size": int,
    "step_ms": dict,
    "data_wait_ms": dict,
    "compute_ms": dict,
    "host_overhead_ms": dict,
    "shares": dict,
    "warmup_ms": NUMBER,
    "warmup_share_of_wall": NUMBER,
    "spikes": int,
    "samples_per_s": NUMBER,
    "placement": dict,
    "verdict": str,
    "findings": list,
    "status": str,
    "fetch_floor_ms": NUMBER,
    "starved_data_wait_ms": NUMBER,
    "steps_per_record": int,
    "problems": list,
    "devices_used": list,
    "device_source": str,
    "wall_ms": dict,
    "wall_shares": dict,
    "retraces": dict,
}
PLACEMENT_KEYS = {
    "devices": list,
    "variables": dict,
    "ops": dict,
    "cpu_ops_on_accelerator_run": list,
    "cross_device_copies": int,
    "input_bytes_per_step": int,
}
ROW_KEYS = {
    "run": str,
    "against": str,
    "is_baseline": bool,
    "speedup": NUMBER,
    "speedup_samples_per_s": NUMBER,
    "same_batch_size": bool,
    "step_ms": NUMBER,
    "per_step_ms": dict,
    "per_1000_samples_ms": dict,
    "delta_ms": dict,
    "explanation": str,
}


def run_main(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_module(*argv, env=None):
    environment = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "tb_devicecost", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def assert_type(value, expected, where):
    assert isinstance(value, expected) and not (
        expected is int and isinstance(value, bool)
    ), f"{where}: {value!r} is not {expected}"


# The three formats.


def test_text_report(fit_logdir, capsys):
    code, out, err = run_main(capsys, "report", fit_logdir)
    assert code == 0, err
    lines = out.splitlines()
    too_wide = [line for line in lines if len(line) > console.WIDTH]
    assert not too_wide
    for run in ("compute/train", "input/train", "pinned/train"):
        assert any(line.startswith(run) for line in lines), run
    input_row = next(line for line in lines if line.startswith("input/train"))
    assert input_row.rstrip().endswith("input_bound")
    # Shares as a bar of characters, 26 wide, right under each run.
    bar_line = lines[lines.index(input_row) + 1]
    bar = bar_line.split()[0]
    assert len(bar) == 26 and set(bar) <= set(console.BARS) | {console.HANDOVER_BAR}
    assert "FINDINGS" in lines
    assert "Fix: Make the tf.data pipeline parallel" in out
    # Headlines by default; the arithmetic behind each with --verbose.
    assert "Input-bound: on average each step waits" in out
    assert "Details: " not in out
    code, verbose, err = run_main(capsys, "report", fit_logdir, "--verbose")
    assert code == 0, err
    assert "    Details: " in verbose
    assert not [line for line in verbose.splitlines() if len(line) > console.WIDTH]
    # Three different models and no CPU counterpart: nothing to compare, and
    # the report says why and how to ask for a comparison.
    assert "COMPARISON" in lines
    flat = " ".join(out.split())
    assert "No comparison: no run has a like-for-like baseline" in flat
    assert "pass --baseline RUN, e.g. --baseline compute/train." in flat
    code, out, err = run_main(capsys, "report", fit_logdir, "--baseline", "compute/train")
    assert code == 0, err
    assert "COMPARISON against compute/train" in out
    assert "compute/train was chosen as the baseline" in out
    assert "- input/train is" in out
    assert not [line for line in out.splitlines() if len(line) > console.WIDTH]


def test_json_report_has_every_documented_key(fit_logdir, capsys):
    code, out, err = run_main(capsys, "report", fit_logdir, "--json",
                              "--baseline", "compute/train")
    assert code == 0, err
    report = json.loads(out)
    assert report["schema"] == 1
    assert report["skipped"] == []
    assert len(report["runs"]) == 3
    for run in report["runs"]:
        for key, expected in RUN_KEYS.items():
            assert key in run, key
            assert_type(run[key], expected, f"{run['run']}.{key}")
        for key in ("step_ms", "data_wait_ms", "compute_ms", "host_overhead_ms"):
            for stat in ("p50", "p90", "p99", "mean"):
                assert_type(run[key][stat], NUMBER, f"{key}.{stat}")
        assert set(run["shares"]) == {"data_wait", "compute", "host_overhead"}
        assert sum(run["shares"].values()) == pytest.approx(1.0)
        for key, expected in PLACEMENT_KEYS.items():
            assert_type(run["placement"][key], expected, f"placement.{key}")
        assert run["verdict"] in analysis.VERDICTS
        assert set(run["wall_ms"]) == {"total", "steps", "warmup", "between_steps",
                                       "measurement"}
        assert set(run["wall_shares"]) == {"steps", "warmup", "between_steps",
                                           "measurement"}
        assert set(run["retraces"]) == {"count", "steps", "source"}
        for finding in run["findings"]:
            assert set(finding) == {"id", "severity", "headline", "message", "fix", "change", "expected"}
            assert finding["change"] in vocabulary.CHANGES
            assert all(isinstance(finding[key], str)
                       for key in ("id", "severity", "headline", "message", "fix"))
            assert set(finding["expected"]) == {
                "bound", "speedup", "of", "samples_per_s", "step_ms", "wall_ms",
                "batch_size", "capped", "basis", "text"}
            assert isinstance(finding["expected"]["basis"], str)
    comparison = report["comparison"]
    assert comparison["baseline"] == "compute/train"
    assert comparison["statistic"] == "mean"
    assert isinstance(comparison["baseline_reason"], str)
    assert comparison["baselines"] == ["compute/train"]
    assert len(comparison["rows"]) == 3
    for row in comparison["rows"]:
        for key, expected in ROW_KEYS.items():
            assert_type(row[key], expected, f"row {row['run']}.{key}")
        for key in ("per_step_ms", "per_1000_samples_ms", "delta_ms"):
            assert set(row[key]) == {"data_wait", "compute", "host_overhead"}
        assert "scaling" in row
        if not row["is_baseline"]:
            assert set(row["parts"]) == {"fixed_ms", "device_busy_ms", "input_bytes_per_step",
                                         "warmup_ms", "starved_data_wait_ms"}


def test_json_matches_the_analysis(fit_logdir, fit_records, capsys):
    code, out, _ = run_main(capsys, "report", fit_logdir, "--json")
    assert code == 0
    expected = words.build_report(list(fit_records.values()))
    assert json.loads(out) == json.loads(json.dumps(expected))


def test_markdown_report(fit_logdir, capsys):
    code, out, err = run_main(capsys, "report", fit_logdir, "--markdown",
                              "--baseline", "compute/train")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| Run | Device"))
    columns = lines[header].count("|")
    assert lines[header + 1].startswith("|---")
    assert lines[header + 1].count("|") == columns
    rows = lines[header + 2 : header + 5]
    assert [row.split("|")[1].strip() for row in rows] == [
        "`compute/train`", "`input/train`", "`pinned/train`"
    ]
    assert all(row.count("|") == columns for row in rows)
    assert "**input_bound**" in rows[1]
    assert "### Comparison against `compute/train`" in out
    assert "*Fix:*" in out
    assert "No comparison" not in out
    code, out, err = run_main(capsys, "report", fit_logdir, "--markdown")
    assert code == 0, err
    assert "### Comparison\n\nNo comparison: no run has a like-for-like baseline" in out
    assert "--baseline RUN" in out


def test_baseline_option(fit_logdir, capsys):
    code, out, _ = run_main(capsys, "report", fit_logdir, "--json", "--baseline", "input/train")
    assert code == 0
    report = json.loads(out)
    comparison = report["comparison"]
    assert comparison["baseline"] == "input/train"
    row = {row["run"]: row for row in comparison["rows"]}["compute/train"]
    rates = {run["run"]: run["samples_per_s"] for run in report["runs"]}
    # Batch 256 against 32: compared in samples/s (how fast each is depends
    # on the machine's load).
    assert row["basis"] == "samples_per_s"
    assert row["speedup"] == pytest.approx(rates["compute/train"] / rates["input/train"])
    assert row["explanation"].startswith("compute/train is")


def documented_keys(section):
    """Backticked names in the first column of a table of docs/CLI.md."""
    path = os.path.join(paths.REPO, "docs", "CLI.md")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    keys, in_table = [], False
    for line in text[text.index(section):].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            if line.startswith("| `"):
                keys.extend(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
        elif in_table:
            break  # The first table after the heading has ended.
    assert keys, section
    return keys


def test_docs_list_exactly_the_json_keys(fit_logdir, capsys):
    code, out, _ = run_main(capsys, "report", fit_logdir, "--json",
                            "--baseline", "compute/train")
    report = json.loads(out)
    run = report["runs"][0]
    row = report["comparison"]["rows"][0]
    assert sorted(documented_keys("### Top level")) == sorted(report)
    assert sorted(documented_keys("### Run object")) == sorted(run)
    assert sorted(documented_keys("`placement`:")) == sorted(run["placement"])
    assert sorted(documented_keys("`wall_ms`:")) == sorted(run["wall_ms"])
    assert sorted(documented_keys("### Comparison")) == sorted(report["comparison"])
    assert sorted(documented_keys("Each row:")) == sorted(row)
    assert sorted(documented_keys("`expected` (each finding")) == sorted(
        run["findings"][0]["expected"])


def test_terminals_that_cannot_show_blocks_get_ascii():
    class Latin1:
        encoding = "latin-1"

    class Utf8:
        encoding = "utf-8"

    assert not cli._shows(console.BARS, Latin1())
    assert cli._shows(console.BARS, Utf8())


# Bad input: what was skipped, and the rest reported.


def test_skipped_runs_are_reported(edge_logdir, capsys):
    code, out, err = run_main(capsys, "report", edge_logdir)
    assert code == 0, err
    skipped = out[out.index("SKIPPED"):]
    assert "newer/train: devicecost/aggregate: Written with schema version 3" in skipped
    assert "info_only/train" in skipped
    assert "garbage/train" in skipped
    for run in ("good/train", "running/train", "nan/train", "truncated/train"):
        assert any(line.startswith(run) for line in out.splitlines()), run
    # 19% of its steps waiting 0.5 ms, no fetch floor: no evidence of a
    # slow pipeline (docs/VERDICTS.md).
    assert "running/train: compute_bound [running]" in out
    assert "Note: The aggregate holds invalid numbers" in out


def test_skipped_runs_in_json_and_on_stderr(edge_logdir, capsys):
    code, out, err = run_main(capsys, "report", edge_logdir, "--json")
    assert code == 0
    report = json.loads(out)
    skipped = {item["run"] for item in report["skipped"]}
    assert skipped == {"newer/train", "info_only/train", "garbage/train"}
    assert sorted(line.split(":")[1].split()[-1] for line in err.splitlines()) == sorted(skipped)


def test_only_unreadable_runs_exit_2(tmp_path, capsys):
    write_run(str(tmp_path / "a" / "train"), info={"schema": 1})
    code, out, err = run_main(capsys, "report", str(tmp_path))
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "could be reported" in err and "a/train" in err


# Errors: exit 2 with one line on stderr saying what was wrong.


def error_cases(tmp_path, fit_logdir):
    empty = tmp_path / "empty"
    empty.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("not a log directory")
    return [
        (["report", str(tmp_path / "missing")], "does not exist"),
        (["report", str(a_file)], "is a file, not a log directory"),
        (["report", str(empty)], "no run under"),
        (["report", fit_logdir, "--baseline", "gpu/train"], "Unknown baseline run 'gpu/train'"),
        (["report", fit_logdir, "--json", "--markdown"], "not allowed with argument --json"),
        (["report", fit_logdir, "--jsn"], "unrecognized arguments: --jsn"),
        (["report"], "required: LOGDIR"),
        (["report", fit_logdir, "--baseline"], "expected one argument"),
        ([], "choose a command"),
        (["reprot", fit_logdir], "invalid choice: 'reprot'"),
    ]


def test_errors_through_main(tmp_path, fit_logdir, capsys):
    for argv, reason in error_cases(tmp_path, fit_logdir):
        code, out, err = run_main(capsys, *argv)
        assert code == 2, argv
        assert out == "", argv
        assert len(err.splitlines()) == 1, (argv, err)
        assert err.startswith("tb-devicecost: error: "), err
        assert reason in err, (argv, err)
        if "usage" in err:
            assert "tb-devicecost report LOGDIR" in err


@pytest.mark.slow
def test_errors_through_python_m(tmp_path, fit_logdir):
    cases = error_cases(tmp_path, fit_logdir)
    # Ten fresh interpreters, independent and untimed: started side by side.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: run_module(*case[0]), cases))
    for (argv, reason), completed in zip(cases, results):
        assert completed.returncode == 2, (argv, completed.stderr)
        assert completed.stdout == "", argv
        assert len(completed.stderr.splitlines()) == 1, (argv, completed.stderr)
        assert reason in completed.stderr, (argv, completed.stderr)


@pytest.mark.slow
def test_python_m_report(fit_logdir):
    completed = run_module("report", fit_logdir, "--json")
    assert completed.returncode == 0, completed.stderr
    # TensorFlow is never loaded to read the logs, so nothing is logged.
    assert completed.stderr == ""
    report = json.loads(completed.stdout)
    verdicts = {run["run"]: run["verdict"] for run in report["runs"]}
    assert verdicts["input/train"] == "input_bound"
    text = run_module("report", fit_logdir, "--baseline", "compute/train",
                      env={"PYTHONIOENCODING": "utf-8"})
    assert text.returncode == 0
    assert "COMPARISON against compute/train" in text.stdout
    assert "█" in text.stdout
    # A terminal that cannot show blocks gets plain characters, not '?'.
    ascii_text = run_module("report", fit_logdir, "--baseline", "compute/train",
                            env={"PYTHONIOENCODING": "ascii"})
    assert ascii_text.returncode == 0
    assert ascii_text.stdout.isascii()
    assert "?" not in ascii_text.stdout
    assert "#" in ascii_text.stdout


def test_version_and_help(capsys):
    code, out, _ = run_main(capsys, "--version")
    assert code == 0
    assert out.strip() == f"tb-devicecost {version.__version__}"
    code, out, _ = run_main(capsys, "report", "--help")
    assert code == 0
    assert "--baseline RUN" in out and "--markdown" in out


# Issue 10: honest numbers in the report.


def hand_made_logdir(root, runs, batch_size=32):
    """`runs`: {name: (aggregate, placement or None)} written as event files."""
    info = {"schema": 1, "backend": "tensorflow", "steps_per_record": 1,
            "fetch_in_graph": False}
    if batch_size:
        info["batch_size"] = batch_size
    for name, (aggregate, placement) in runs.items():
        write_run(
            str(root / name), aggregate=aggregate, info=info,
            placement=placement or cpu_placement(),
        )
    return str(root)


def test_baseline_of_another_role_never_compares_a_run_with_itself(tmp_path, capsys):
    logdir = hand_made_logdir(tmp_path, {
        "mine/train": (make_aggregate(0.1, 2.0, 0.1), None),
        "mine/validation": (make_aggregate(0.1, 1.0, 0.1), None),
    })
    for argv in ([], ["--baseline", "mine/validation"], ["--baseline", "mine/train"]):
        code, out, err = run_main(capsys, "report", logdir, "--json", *argv)
        assert code == 0, err
        assert json.loads(out)["comparison"] is None, argv
        code, out, err = run_main(capsys, "report", logdir, *argv)
        assert "1.00x" not in out, out
        assert "No comparison: no two runs of the same kind" in " ".join(out.split())


def test_text_and_markdown_show_the_wall_time_breakdown(tmp_path, capsys):
    recorded = make_aggregate(0.1, 2.0, 0.1, warmup_ms=400.0)
    recorded["wall_ms"] = {"total": 2000.0, "steps": 1000.0, "warmup": 400.0,
                           "between_steps": 590.0, "measurement": 10.0}
    logdir = hand_made_logdir(tmp_path, {
        "new/train": (recorded, None),
        "old/train": (make_aggregate(0.1, 2.0, 0.1), None),
    })
    code, out, err = run_main(capsys, "report", logdir)
    assert code == 0, err
    lines = out.splitlines()
    new = lines[next(i for i, line in enumerate(lines) if line.startswith("new/train")) + 2]
    assert new.split() == ["wall", "2,000", "ms:", "steps", "50%,", "warm-up", "20%,",
                           "between", "steps", "29%,", "measuring", "0.5%"]
    old = lines[next(i for i, line in enumerate(lines) if line.startswith("old/train")) + 2]
    assert "not recorded" in old
    code, out, err = run_main(capsys, "report", logdir, "--markdown")
    assert "| `new/train` | 2,000 ms | 1,000 ms (50%) | 400 ms (20%) | 590 ms (29%) | 10.0 ms (0.5%) |" in out
    assert "| `old/train` | \u2014 | \u2014 | \u2014 | \u2014 | \u2014 |" in out
    code, out, err = run_main(capsys, "report", logdir, "--json")
    runs = {run["run"]: run for run in json.loads(out)["runs"]}
    assert runs["new/train"]["wall_ms"] == recorded["wall_ms"]
    assert runs["old/train"]["wall_ms"]["total"] is None


def test_missing_values_read_as_one_dash(tmp_path, capsys):
    aggregate = make_aggregate(0.1, 2.0, 0.1, batch_size=None)
    placement = cpu_placement()
    placement["ops"], placement["variables"], placement["devices"] = {}, {}, {}
    logdir = hand_made_logdir(tmp_path, {"bare/train": (aggregate, placement)},
                              batch_size=None)
    code, out, err = run_main(capsys, "report", logdir)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("bare/train"))
    # No device and no batch size: the one missing-value symbol, twice.
    assert row.split()[1:3] == ["\u2014", "\u2014"], row
    assert " - " not in row and "?" not in row
    # A terminal that cannot show the dash gets a plain one.
    completed = run_module("report", logdir, env={"PYTHONIOENCODING": "ascii"})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.isascii() and "?" not in completed.stdout
    row = next(line for line in completed.stdout.splitlines() if line.startswith("bare/train"))
    assert row.split()[1:3] == ["-", "-"], row


# Issue 16: any directory tree, damaged and hostile data.


def intact_logdir(root, names=("cpu/train",)):
    info = {"schema": 1, "backend": "tensorflow", "batch_size": 32,
            "steps_per_record": 1, "fetch_in_graph": False}
    for name in names:
        write_run(str(root / name), aggregate=make_aggregate(1.0, 4.0, 0.5),
                          info=info, placement=cpu_placement(),
                          rows=[(step, 1.0, 4.0, 0.5, 32) for step in range(20)])
    return str(root)


def test_the_report_finishes_on_symlink_loops_and_fifos(tmp_path):
    logdir = intact_logdir(tmp_path, ("a/train", "b/train"))
    run_dir = tmp_path / "a" / "train"
    os.symlink(".", run_dir / "loop")
    os.symlink("..", run_dir / "up")
    os.mkfifo(run_dir / "events.out.tfevents.9.host.fifo")
    completed = subprocess.run(
        [sys.executable, "-m", "tb_devicecost", "report", logdir, "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert [run["run"] for run in report["runs"]] == ["a/train", "b/train"]
    assert {item["run"] for item in report["skipped"]} == {"a/train/loop", "a/train/up"}
    [problem] = [p for p in report["runs"][0]["problems"] if "FIFO" in p]
    assert "events.out.tfevents.9.host.fifo" in problem
    assert "Traceback" not in completed.stderr


def test_an_unreadable_run_directory_is_skipped_with_the_reason(tmp_path, capsys,
                                                                monkeypatch):
    """Tests run as root, who may list any directory: listing one is made
    to fail as it does for a user without the right (mode 000)."""
    logdir = intact_logdir(tmp_path, ("good/train", "locked/train"))
    locked = str(tmp_path / "locked" / "train")
    real_scandir, real_listdir = os.scandir, os.listdir

    def denied(path):
        return not isinstance(path, int) and os.path.abspath(os.fspath(path)) == locked

    def scandir(path="."):
        if denied(path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    def listdir(path="."):
        if denied(path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    code, out, err = run_main(capsys, "report", logdir)
    assert code == 0, err
    assert "locked/train: The directory could not be read (PermissionError: " \
        "Permission denied)." in " ".join(out.split())
    assert any(line.startswith("good/train") for line in out.splitlines())


def test_deep_documents_and_a_lost_aggregate_do_not_stop_the_report(tmp_path, capsys):
    logdir = intact_logdir(tmp_path)
    deep = "[" * 100_000 + "]" * 100_000
    write_run(str(tmp_path / "deep" / "train"),
                      rows=[(step, 1.0, 2.0, 0.1, 32) for step in range(10)],
                      raw_documents={metadata.TAG_AGGREGATE: '{"schema": 1, "d": %s}' % deep})
    code, out, err = run_main(capsys, "report", logdir, "--json")
    assert code == 0, err
    runs = {run["run"]: run for run in json.loads(out)["runs"]}
    assert runs["deep/train"]["source"] == "series"
    assert any("nested deeper than" in problem for problem in runs["deep/train"]["problems"])


def test_extreme_values_give_json_without_infinities(tmp_path, capsys):
    # Written as the JSON a damaged writer could leave: tb-devicecost's own
    # writer refuses non-finite numbers (1e-310 ms steps make an infinite
    # samples/s, 1e308 ms ones an infinite sum).
    for name, (data_wait, compute), placement in (
        ("cpu/train", (1e-310, 1e-310), cpu_placement()),
        ("gpu/train", (0.1, [1e308, 1e308]), gpu_placement()),
        ("tiny/train", (1e-9, 1e-9), cpu_placement()),
        ("huge/train", (0.1, 1e14), cpu_placement()),
    ):
        write_run(
            str(tmp_path / name), placement=placement,
            info={"schema": 1, "batch_size": 32, "steps_per_record": 1},
            raw_documents={metadata.TAG_AGGREGATE: json.dumps(
                make_aggregate(data_wait, compute, 0.0))})
    code, out, err = run_main(capsys, "report", str(tmp_path), "--json", "--baseline",
                              "tiny/train")
    assert code == 0, err
    json.loads(out, parse_constant=lambda constant: pytest.fail(f"{constant} in the JSON"))
    code, out, err = run_main(capsys, "report", str(tmp_path), "--baseline", "tiny/train")
    assert code == 0, err
    assert "infx" not in out and "inf ms" not in out


HOSTILE = "\x1b]0;pwned\x07\x1b[31mred\u202e"
HTML = "<img src=x onerror=alert(1)>"


def test_text_report_neutralises_terminal_control_characters(tmp_path, capsys):
    intact_logdir(tmp_path, (f"{HOSTILE}/train", f"{HTML}/train"))
    os.makedirs(tmp_path / f"skip{HOSTILE}")
    (tmp_path / f"skip{HOSTILE}" / "events.out.tfevents.1.x").write_bytes(b"")
    for argv in ([], ["--markdown"], ["--json"]):
        code, out, err = run_main(capsys, "report", str(tmp_path), *argv)
        assert code == 0, err
        for stream in (out, err):
            assert not any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) <= 0x9F
                           or c == "\u202e" for c in stream), (argv, stream)
        if not argv:
            assert "\\x1b]0;pwned\\x07\\x1b[31mred\\u202e/train" in out
    code, out, err = run_main(capsys, "report", str(tmp_path), "--json")
    assert HOSTILE + "/train" in [run["run"] for run in json.loads(out)["runs"]]


INVISIBLE = "\u2028\u2029\u200b\u200d\ufeff\u2066\u00ad\U000e0041"


def test_invisible_characters_are_escapes_in_text_and_markdown(tmp_path, capsys):
    """Issue 35, item 8: line and paragraph separators, zero-width and
    other invisible characters in a run name are shown as escapes in the
    text and Markdown reports (raw, one breaks a line or hides a
    difference between two names); the JSON keeps the name as it is."""
    intact_logdir(tmp_path, (f"in{INVISIBLE}visible/train", "cpu/train"))
    for argv in ([], ["--markdown"]):
        code, out, err = run_main(capsys, "report", str(tmp_path), *argv)
        assert code == 0, err
        for stream in (out, err):
            hidden = [c for c in stream if c != "\n" and unicodedata.category(c) in
                      ("Cc", "Cf", "Zl", "Zp", "Cs")]
            assert not hidden, (argv, hidden)
        assert "\\u2028\\u2029\\u200b\\u200d\\ufeff\\u2066\\xad\\U000e0041" in out, argv
    code, out, err = run_main(capsys, "report", str(tmp_path), "--json")
    assert f"in{INVISIBLE}visible/train" in [run["run"] for run in json.loads(out)["runs"]]


def test_a_name_that_is_not_utf8_is_shown_escaped_alike_in_every_form(tmp_path, capsys):
    """Issue 35, item 7: a directory named with bytes that are not UTF-8
    is reported (not skipped), as `caf\\xe9/train` in the text, the
    Markdown and the JSON alike, and no output holds a lone surrogate
    (text that is not UTF-8)."""
    intact_logdir(tmp_path, (os.fsdecode(b"caf\xe9") + "/train", "cpu/train"))
    for argv in ([], ["--markdown"], ["--json"]):
        code, out, err = run_main(capsys, "report", str(tmp_path), *argv)
        assert code == 0, err
        out.encode("utf-8"), err.encode("utf-8")  # Raises on a lone surrogate.
        assert "caf\\xe9/train" in out.replace("\\\\", "\\"), (argv, out[:400])
    report = json.loads(out)
    assert [run["run"] for run in report["runs"]] == ["caf\\xe9/train", "cpu/train"]
    assert report["skipped"] == []


def test_markdown_escapes_html_and_markdown_in_user_strings(tmp_path, capsys):
    intact_logdir(tmp_path, (f"{HTML}/train", "a`b/train", "[x](javascript:1)/train"))
    code, out, err = run_main(capsys, "report", str(tmp_path), "--markdown", "--baseline",
                              f"{HTML}/train")
    assert code == 0, err
    # Names are code spans (no HTML in them is interpreted); running text
    # holds no raw tag, no link.
    outside_code = re.sub(r"(`+) ?.*? ?\1", "", out)
    assert "<" not in outside_code, outside_code
    assert not re.search(r"(?<!\\)\]\(", outside_code), outside_code
    assert "\\[x\\](javascript:1)/train is" in out
    assert f"`{HTML}/train`" in out
    assert "``a`b/train``" in out
    assert "&lt;img src=x onerror=alert(1)&gt;/train was chosen as the baseline" in out


def test_an_unreadable_log_directory_exits_2_with_one_line(tmp_path, capsys,
                                                           monkeypatch):
    """As root any directory can be listed: listing the log directory is
    made to fail as it does for a user without the right."""
    logdir = intact_logdir(tmp_path)
    real_listdir = os.listdir

    def listdir(path="."):
        if not isinstance(path, int) and os.path.abspath(os.fspath(path)) == logdir:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    code, out, err = run_main(capsys, "report", logdir)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"tb-devicecost: error: log directory {logdir!r} could not be read "
        "(PermissionError: Permission denied)"]
