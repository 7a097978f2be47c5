"""Fits that die, repeat or share a log_dir: never lost, never read as whole
(issue 35, items 1 to 3).

Each probe is a real Keras fit on JAX in a process of its own
(`tests/support/fit_probe.py`), bounded by a timeout: kill -9 and SIGHUP
in the first epoch, a disk that fills in the second epoch (the writer's
write raising `OSError(ENOSPC)`), a script run twice into one log_dir,
two tiny fits at once. Then `tb-devicecost report --json` and the tab
(TensorBoard's WSGI app over its own loader) must say what happened. The
count of probes tried and survived is printed, as the fuzz tests print
theirs.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.end_to_end import test_fuzz
from tests.support import paths

pytestmark = pytest.mark.slow

PREFIX = test_fuzz.PREFIX


def fit(log_dir, mode="none", steps=200, batch=32, at=-1, barrier=None, wait=True):
    """Starts `fit_probe.py` (and waits for it, with `wait`)."""
    argv = [sys.executable, "-m", "tests.support.fit_probe", mode, str(log_dir),
            str(steps), str(batch), str(at)] + ([str(barrier)] if barrier else [])
    env = dict(os.environ, PYTHONPATH=paths.REPO, KERAS_BACKEND="jax",
               TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
    process = subprocess.Popen(argv, cwd=paths.REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    out, err = process.communicate(timeout=240)
    return process.returncode, out, err


def report_and_tab(logdir):
    """`(report runs by name, tab run objects by name)`."""
    code, out, err = test_fuzz.run_cli("report", str(logdir), "--json")
    assert code == 0, err
    runs = {run["run"]: run for run in json.loads(out)["runs"]}
    client = test_fuzz.make_client(str(logdir))
    tab = {}
    for name in runs:
        response = client.get(f"{PREFIX}/run?run={name}")
        assert response.status_code == 200, response.get_data(as_text=True)
        tab[name] = json.loads(response.get_data(as_text=True))
    return runs, tab


def finding(run, identifier):
    return next((item for item in run["findings"] if item["id"] == identifier), None)


# The killed fits' epoch and the step they die at. The callback writes its
# first aggregate 1 s into the fit (`accounting.FIRST_WRITE_S`); 500 steps
# sleep 3 ms each (`fit_probe.py`), 1.5 s at the least on any machine, so a
# fit killed there has written one.
KILL_STEPS, KILL_AT = 1_000, 500


def check_unclosed(logdir, returncode, signum):
    assert returncode == -signum, returncode
    runs, tab = report_and_tab(logdir)
    for view in (runs, tab):
        run = view["train"]
        assert run["status"] == "running", run["status"]
        found = finding(run, "incomplete_run")
        assert found is not None, [item["id"] for item in run["findings"]]
        assert "not closed" in found["headline"], found["headline"]
        end = run["fit_end"]
        assert end["closed"] is False and 1 <= end["reached_step"] <= KILL_AT
    code, text, _ = test_fuzz.run_cli("report", str(logdir))
    assert code == 0 and "older data" not in text


def probe_kill(tmp_path):
    # Item 2: kill -9 half way through the first epoch.
    logdir = tmp_path / "kill"
    returncode, _, err = fit(logdir, "kill", steps=KILL_STEPS, at=KILL_AT)
    check_unclosed(logdir, returncode, signal.SIGKILL)


def probe_sighup(tmp_path):
    # Item 2: SIGHUP (a closed terminal) in the first epoch.
    logdir = tmp_path / "hup"
    returncode, _, err = fit(logdir, "hup", steps=KILL_STEPS, at=KILL_AT)
    check_unclosed(logdir, returncode, signal.SIGHUP)


def probe_full_disk(tmp_path):
    # Item 2: the disk fills in the second epoch, after a validation: the
    # train run and its validation run both say recording stopped, and why.
    logdir = tmp_path / "full"
    returncode, _, err = fit(logdir, "enospc", steps=200, at=300)
    assert returncode == 0 and "No space left on device" in err, err[-2000:]
    runs, tab = report_and_tab(logdir)
    for view in (runs, tab):
        for name in ("train", "validation"):
            run = view[name]
            assert run["status"] == "interrupted", (name, run["status"])
            end = run["fit_end"]
            assert end["reason"] == "No space left on device", (name, end)
            found = finding(run, "incomplete_run")
            assert found is not None, (name, run["findings"])
            assert found["headline"].startswith("Recording stopped: No space left on device at step"), found
            assert "Report again once the fit has finished" not in found["fix"]
            # The last aggregate, in a file of its own after the failed
            # write, is the same fit's: no second fit is said.
            assert not [p for p in run["problems"] if "This run holds" in p], run["problems"]
    assert 300 <= runs["train"]["fit_end"]["reached_step"] <= 400


def probe_full_disk_for_good(tmp_path):
    # Item 2: the disk stays full: not even a last aggregate fits. The run
    # is still not read as whole.
    logdir = tmp_path / "full_for_good"
    returncode, _, err = fit(logdir, "enospc_forever", steps=200, at=300)
    assert returncode == 0, err[-2000:]
    runs, tab = report_and_tab(logdir)
    for view in (runs, tab):
        for name in ("train", "validation"):
            run = view[name]
            assert run["status"] in ("running", "interrupted"), (name, run["status"])
            assert finding(run, "incomplete_run") is not None, name


def probe_rerun(tmp_path):
    # Item 1: the same script twice into one log_dir, 2 epochs of 100 steps
    # at batch 32 and then of 50 at batch 64: both fits said, with their
    # own figures.
    logdir = tmp_path / "rerun"
    for steps, batch in ((100, 32), (50, 64)):
        returncode, _, err = fit(logdir / "same", steps=steps, batch=batch)
        assert returncode == 0, err[-2000:]
    runs, tab = report_and_tab(logdir)
    for view in (runs, tab):
        said = [problem for problem in view["same/train"]["problems"]
                if "This run holds 2 fits" in problem]
        assert len(said) == 1, view["same/train"]["problems"]
        assert "one after another" in said[0]
        assert "200 steps, batch 32" in said[0] and "100 steps, batch 64" in said[0], said[0]
        assert "its figures are fit 2's" in said[0]


def probe_tiny_concurrent(tmp_path):
    # Item 3: two fits of 3 steps at once into one log_dir (a barrier
    # starts them together): said, however short.
    logdir = tmp_path / "tiny"
    barrier = tmp_path / "barrier"
    processes = [fit(logdir / "same", steps=3, barrier=barrier, wait=False) for _ in range(2)]
    for process in processes:
        _, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-2000:]
    runs, tab = report_and_tab(logdir)
    for view in (runs, tab):
        problems = view["same/train"]["problems"]
        assert any("at once" in problem for problem in problems), problems
        assert any("This run holds 2 fits" in problem for problem in problems), problems


PROBES = [probe_kill, probe_sighup, probe_full_disk, probe_full_disk_for_good,
          probe_rerun, probe_tiny_concurrent]


def test_fits_that_die_or_repeat_are_never_lost_nor_read_as_whole(tmp_path, capsys, monkeypatch):
    # The probes' fits compile the same programs: JAX's compilation cache on
    # disk compiles each once (0.8 s of CPU less a process). No probe is
    # about compiling.
    for name, value in (("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax_cache")),
                        ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0"),
                        ("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")):
        monkeypatch.setenv(name, value)
    failures = []
    for probe in PROBES:
        try:
            probe(tmp_path)
        except Exception as error:  # pylint: disable=broad-except
            failures.append(f"{probe.__name__}: {type(error).__name__}: {str(error)[:600]}")
    with capsys.disabled():
        print(f"\nfuzz (fits that die or repeat, issue 35): {len(PROBES)} tried, "
              f"{len(PROBES) - len(failures)} survived")
    assert not failures, "\n".join(failures)
