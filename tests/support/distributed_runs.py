"""Starting the processes of a distributed fit (`distributed_fits.py`) and
stopping every one of them, for `analysis/test_workers.py` and
`browser/test_workers.py`.

Each child writes to files, not pipes: a child blocked on a full pipe would
hold every other process inside a collective.
"""

import json
import os
import socket
import subprocess
import sys
import time

SCRIPT = os.path.join(os.path.dirname(__file__), "distributed_fits.py")
# A two-process fit of 40 steps takes about 1.5 s on an idle machine, and
# JAX's and Keras's imports a few seconds more on a busy one.
TIMEOUT_S = 240
# The two-process JAX jobs of `jax_jobs` (the session's `jax_job` fixture,
# `tests/conftest.py`): the slowed process's delay per batch, long beside a
# collective that a busy 2-core machine slows to about 12 ms (both
# processes then spend it in the all-reduce), so the other process still
# mostly waits; and the steps of each process.
JAX_JOB_DELAY_MS = 40.0
JAX_JOB_STEPS = 40


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_job(mode, logdir, count=2, delay_ms=0.0, steps=40, workdir=None):
    """Runs `count` processes of `distributed_fits.py MODE` recording into
    `logdir`; the last one sleeps `delay_ms` per batch. Returns each
    process's facts (the JSON object it printed last), by index.

    Raises:
        AssertionError: when a process fails or outlives `TIMEOUT_S`; every
            process is stopped either way.
    """
    workdir = workdir or logdir + ".out"
    os.makedirs(workdir, exist_ok=True)
    port = free_port()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(__file__)] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    processes, files = [], []
    try:
        for index in range(count):
            out = open(os.path.join(workdir, f"{mode}_{index}.out"), "w")
            err = open(os.path.join(workdir, f"{mode}_{index}.err"), "w")
            files += [out, err]
            processes.append(subprocess.Popen(
                [sys.executable, SCRIPT, mode, str(index), str(count), str(port),
                 str(logdir), str(delay_ms), str(steps)],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
            ))
        # Until all are done; one that fails leaves the others waiting in a
        # collective, so they are stopped at once (below).
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            codes = [process.poll() for process in processes]
            if all(code is not None for code in codes) or any(code for code in codes):
                break
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for handle in files:
            handle.close()
    facts = {}
    for index, process in enumerate(processes):
        err_path = os.path.join(workdir, f"{mode}_{index}.err")
        with open(err_path, encoding="utf-8", errors="replace") as handle:
            err_tail = handle.read()[-3000:]
        assert process.returncode == 0, (
            f"process {index} exited {process.returncode} (negative: stopped by "
            f"the test, after another failed or {TIMEOUT_S} s passed):\n{err_tail}")
        with open(os.path.join(workdir, f"{mode}_{index}.out"), encoding="utf-8") as handle:
            facts[index] = json.loads(handle.read().strip().splitlines()[-1])
    return facts


def run_single(mode, logdir, workdir=None):
    """Runs `distributed_fits.py MODE LOGDIR` (one process); its facts."""
    workdir = workdir or logdir + ".out"
    os.makedirs(workdir, exist_ok=True)
    out_path = os.path.join(workdir, f"{mode}.out")
    err_path = os.path.join(workdir, f"{mode}.err")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(
            [sys.executable, SCRIPT, mode, str(logdir)],
            stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
        )
        try:
            process.wait(timeout=TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    with open(err_path, encoding="utf-8", errors="replace") as handle:
        assert process.returncode == 0, handle.read()[-3000:]
    with open(out_path, encoding="utf-8") as handle:
        return json.loads(handle.read().strip().splitlines()[-1])


def jax_jobs(logdir):
    """The two-process JAX job into `logdir`, once with process 1 slowed by
    `JAX_JOB_DELAY_MS` a batch (`slow/`) and once without (`even/`).
    Returns each job's facts (`run_job`), by job name."""
    return {
        "slow": run_job("jax", os.path.join(logdir, "slow"), delay_ms=JAX_JOB_DELAY_MS,
                        steps=JAX_JOB_STEPS),
        "even": run_job("jax", os.path.join(logdir, "even"), delay_ms=0, steps=JAX_JOB_STEPS),
    }
