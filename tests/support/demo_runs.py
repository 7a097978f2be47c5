"""The demo as the demo tests run it: `python -m demo` in a process of its
own, served and stopped by a signal, and what the tests read of its runs.

Each of `tests/demo/`'s modules runs its own demo (the quick one, the full
one's scenarios, the quick one without TensorFlow), so `make test JOBS=2`
can give each module to a process of its own.
"""

import os
import signal
import subprocess
import sys
import time

from tb_devicecost import analysis
from tb_devicecost import words
from tb_devicecost.reading import reader
from demo import serve

from tests.support import paths

REPO = paths.REPO
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")


def run_demo(*args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "demo", *args],
        cwd=REPO, env=ENV, capture_output=True, text=True, **kwargs
    )


# A run left by an earlier demo in a scenario the quick demo reruns: gone
# before TensorBoard serves.
STALE_RUN = os.path.join("warmup", "old-cpu0", "train")


def served_demo(tmp_path_factory, options, stop_with, sigint="SIG_DFL"):
    """Runs `python -m demo OPTIONS` as a user does, serving: trains, prints
    the report and the tab's URL; then asks the tab for its runs and stops
    the demo with the signal `stop_with`.

    Each demo run costs a minute or two of fits, so one run serves every
    test of this module that reads it: its runs and output, and how it
    served and stopped. Returns a dict: `stdout` and `stderr`; `runs`, the
    report's rows by run; `records`, the runs as read (their series), by
    run; `url` and `port`; `served`, the run names the tab
    listed; `stale_gone`, whether `STALE_RUN` (written into the log
    directory before the demo started) was gone when the URL was printed;
    `tensorboards`, the demo's child processes then that run TensorBoard;
    `returncode`; `outlived`, the children (TensorBoard or other) still
    alive 5 s after the demo exited."""
    directory = tmp_path_factory.mktemp("demo")
    logdir = directory / "logs"
    stale = logdir / STALE_RUN
    stale.mkdir(parents=True)
    (stale / "events.out.tfevents.0.x").write_bytes(b"")
    port = serve.free_port()
    facts = {"port": port}
    with start_demo(directory, *options, "--logdir", str(logdir), "--port", str(port),
                    sigint=sigint) as demo:
        lines = []
        facts["url"] = demo.wait_for_url(timeout=1800, lines=lines)
        assert facts["url"] is not None, demo.stderr()
        facts["stale_gone"] = not stale.exists()
        body = serve.get_json(facts["url"].split("/#")[0] + "/data/plugin/devicecost/runs", timeout=30)
        facts["served"] = {run["run"] for run in body["runs"]}
        children = children_of(demo.process.pid)
        facts["tensorboards"] = [pid for pid in children if "tensorboard" in command_line(pid)]
        demo.process.send_signal(stop_with)
        facts["returncode"] = demo.process.wait(timeout=60)
        deadline = time.monotonic() + 5
        while any(is_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        facts["outlived"] = [pid for pid in children if is_alive(pid)]
        facts["stdout"] = "".join(lines) + demo.process.stdout.read()
        facts["stderr"] = demo.stderr_path.read_text()
    records = reader.read_runs(reader.local_provider(str(logdir)))
    report = words.build_report(records)
    facts["runs"] = {run["run"]: run for run in report["runs"]}
    facts["records"] = {record.run: record for record in records}
    facts["logdir"] = logdir
    return facts



def verdicts(runs):
    """`{"scenario/variant": verdict}` of the runs on the CPU: the steady
    verdict, what each scenario is about, except for the warm-up scenario,
    which is about the whole fit. (On a busy 2-core machine a quick fit's
    tracing can outweigh its steady steps: the quick TFRecord fit read
    `warmup_dominated` once, its first two steps 9.6 s against 1.7 s in
    the full demo, its steady verdict `compute_bound` all the same.)"""
    return {
        name[: -len("-cpu0/train")]: run["verdict" if name.startswith("warmup/") else "steady_verdict"]
        for name, run in runs.items()
        if name.endswith("-cpu0/train")
    }


def assert_not_highly_input_bound(run):
    """A fixed pipeline keeps up. On a quiet machine these runs are
    compute_bound; with the 2 cores shared (the pipeline's threads and the
    step compete for them) a few percent of starvation can appear, which is
    MODERATE at most, never the HIGH starvation of the naive pipeline."""
    assert run["input_share"] < analysis.INPUT_HIGH, run["findings"]
    assert not [
        finding for finding in run["findings"]
        if finding["id"] == "input_bound" and finding["severity"] == "high"
    ]



# Sets SIGINT's disposition, then becomes the command: a signal disposition
# set here survives exec, whatever the test process inherited itself.
_WITH_SIGINT = (
    "import os, signal, sys; "
    "signal.signal(signal.SIGINT, getattr(signal, sys.argv[1])); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


def start_demo(tmp_path, *args, sigint="SIG_DFL"):
    """Starts `python -m demo ARGS` serving, in a process group of its own.

    `sigint` is the SIGINT disposition the demo inherits: "SIG_DFL", or
    "SIG_IGN" as under `cmd &` in a script or `nohup`. Use it as a context
    manager: on leaving, every process of the group (TensorBoard included)
    is killed, whatever the test did.
    """
    return _Demo(tmp_path, args, sigint)


class _Demo:
    def __init__(self, tmp_path, args, sigint):
        self.stderr_path = tmp_path / "demo.stderr"
        with open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WITH_SIGINT, sigint, "-m", "demo", *args],
                cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=stderr, text=True,
                start_new_session=True,
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # Every process of the group is gone already.
        self.process.wait()
        self.process.stdout.close()

    def stderr(self):
        return self.stderr_path.read_text()[-2000:]

    def wait_for_url(self, timeout=600, lines=None):
        """The tab's URL, once the demo prints it; `None` if it exits or
        `timeout` seconds pass first. Appends each line read to `lines`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if lines is not None:
                lines.append(line)
            if not line and self.process.poll() is not None:
                break
            if line.startswith("Device Cost tab: "):
                return line.split(": ", 1)[1].strip()
        return None


def children_of(pid):
    """Pids of the live (not zombie) processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # Gone meanwhile.
        state, parent = fields[0], int(fields[1])
        if parent == pid and state != "Z":
            found.append(int(entry))
    return found


def command_line(pid):
    """`pid`'s command line, its arguments joined by spaces ("" once gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def is_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
