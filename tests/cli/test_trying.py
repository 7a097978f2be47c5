"""`tb-devicecost try` (`cli/trying.py`): the command line, its output and
its bad input, through `main(argv)`."""

import json
import os

import pytest

from tb_devicecost import cli
from tb_devicecost.format import vocabulary

MODELS = "tests.support.sweep_models"


def run_main(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_try_prints_the_fixes_tried_as_json(tmp_path, capsys):
    logdir = tmp_path / "try"
    code, out, err = run_main(
        capsys, "try", f"{MODELS}:build", "--data", f"{MODELS}:data", "--log-dir", str(logdir),
        "--budget", "1", "--steps", "10", "--batch-size", "10", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert set(result) == {"log_dir", "advised", "failed", "fixes_tried"}
    changes = {entry["change"] for entry in result["fixes_tried"]}
    # The ceilings always; every change a word of the vocabulary.
    assert {"input_free", "empty_step"} <= changes
    assert changes <= set(vocabulary.CHANGES + vocabulary.CEILINGS)
    assert "baseline" in os.listdir(logdir / "tried")
    for entry in result["fixes_tried"]:
        assert os.path.isdir(logdir / "tried" / entry["change"] / "train")
    # The report of the directory holds the same entries.
    code, out, _ = run_main(capsys, "report", str(logdir))
    assert code == 0 and "FIXES TRIED" in out


@pytest.mark.parametrize("argv, message", [
    ([f"{MODELS}:build", "--data", f"{MODELS}:data"], "the following arguments are required: --log-dir"),
    ([MODELS, "--data", f"{MODELS}:data", "--log-dir", "x"], "MODULE:BUILDER must name a function"),
    ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--log-dir", "x", "--budget", "0"],
     "`budget_s` must be a positive number"),
    ([f"{MODELS}:build", "--data", f"{MODELS}:data", "--log-dir", "x", "--steps", "2"],
     "`steps` must be None or an integer of at least 8"),
])
def test_cli_try_bad_input(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, "try", *argv)
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("tb-devicecost: error: ")
    assert message in err and "Traceback" not in err


def test_cli_try_refuses_a_log_dir_that_holds_trials(tmp_path, capsys):
    os.makedirs(tmp_path / "tried")
    code, out, err = run_main(capsys, "try", f"{MODELS}:build", "--data", f"{MODELS}:data",
                              "--log-dir", str(tmp_path))
    assert code == 2 and out == ""
    assert "already holds trials" in err and err.count("\n") == 1


def test_cli_try_reports_failing_user_data_in_one_line(tmp_path, capsys):
    code, out, err = run_main(capsys, "try", f"{MODELS}:build", "--data",
                              f"{MODELS}:broken_data", "--log-dir", str(tmp_path / "t"))
    assert code == 1 and out == ""
    assert err == ("tb-devicecost: error: the trials failed: RuntimeError: no data today\n")
