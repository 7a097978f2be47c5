"""A local TensorBoard serving the Device Cost tab, and a headless Chromium to
look at it.

One implementation for everything that opens the tab on this machine: the
demo (`python -m demo` serves its runs; its tour screenshots them), the
scale benchmark (`benchmarks/scale.py`) and the tests (`tests/browser/`, the
plugin and profiling tests). It lives in the demo rather than in `tests/`
because the demo and the benchmarks are programs of their own, which must
not import the test suite, and the tests and benchmarks import the demo
already (its scenarios); nor in the installed package, which has no use for
a TensorBoard process of its own. It imports no browser: Playwright is
needed only by a caller of `launch_chromium`.

Example:

```python
process, url = serve.start_tensorboard("logs", expected_runs=2)
try:
    with sync_playwright() as playwright:
        browser = serve.launch_chromium(playwright)
        ...
finally:
    serve.stop_tensorboard(process)
```
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"
PLUGIN = "devicecost"

# Debian's Chromium (Playwright's own download is not reachable here), as
# the tests, the benchmark and the tour run it: headless, as root in a
# container (no sandbox), with nothing fetched or updated in the background.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def free_port(first=None, tries=100):
    """A TCP port free on 127.0.0.1.

    Args:
        first: the port wanted; the first free one of `first` and the
            `tries - 1` after it is returned. Defaults to `None`: any port
            the system picks.
        tries: how many ports from `first` on are tried. Defaults to 100.

    Raises:
        OSError: none of the ports tried is free.
    """
    candidates = [0] if first is None else range(first, first + tries)
    for port in candidates:
        with socket.socket() as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise OSError(f"No free port in {first}-{first + tries - 1}.")


def get_json(url, timeout=60):
    """The JSON body of a GET of `url`."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


class TensorBoardProcess(subprocess.Popen):
    """A `tensorboard` started by `start_tensorboard`: a `Popen` that also
    holds the file its output goes to and whether it leads its own group."""

    def __init__(self, args, log_file, own_group, **kwargs):
        super().__init__(args, stdout=log_file, stderr=subprocess.STDOUT,
                         start_new_session=own_group, **kwargs)
        self.log_file = log_file
        self.own_group = own_group

    def output_tail(self, size=3000):
        """The last `size` bytes of what TensorBoard wrote, as text."""
        if self.log_file.closed:
            return ""
        fd = self.log_file.fileno()
        end = os.fstat(fd).st_size
        # pread: TensorBoard writes through the same open file; keep its offset.
        return os.pread(fd, size, max(0, end - size)).decode(errors="replace")


def start_tensorboard(logdir, port=None, *, expected_runs=1, ready=None, timeout=120,
                      log=None, new_session=False):
    """Starts `tensorboard --logdir logdir` on 127.0.0.1 and waits until it
    serves the Device Cost tab with data.

    TensorBoard reads the log directory in the background, and an empty tab
    is a poor first sight (and no state to test or to time), so this waits
    until the tab is enabled and its `runs` route lists `expected_runs` runs,
    and `ready(runs)` is true when given.

    Args:
        logdir: the log directory.
        port: the first port to try (see `free_port`). Defaults to `None`:
            any free port.
        expected_runs: how many runs the tab must list. Defaults to 1.
        ready: a function of the `runs` route's list of runs, true when
            TensorBoard serves what is wanted of them (all steps of each, say).
            Defaults to `None`: the run count alone.
        timeout: seconds to wait. Defaults to 120.
        log: a path that TensorBoard's output is written to. Defaults to
            `None`: a temporary file, whose end is quoted when it fails.
        new_session: start TensorBoard in a process group of its own, which
            `stop_tensorboard` then stops whole (the data server TensorBoard
            starts included). Defaults to `False`: TensorBoard stays in the
            caller's group, so a signal to that group (Ctrl-C) reaches it too.

    Returns:
        `(process, url)`: the `TensorBoardProcess` (a `subprocess.Popen`) and
        `http://127.0.0.1:PORT`.

    Raises:
        RuntimeError: TensorBoard exited, or did not serve in time; it is
            stopped, and the end of its output is in the message.
    """
    port = free_port(port)
    log_file = open(log, "w+b") if log else tempfile.TemporaryFile()
    try:
        process = TensorBoardProcess(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
             "--host", HOST, "--port", str(port)],
            log_file,
            new_session,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        )
    except BaseException:
        log_file.close()
        raise
    url = f"http://{HOST}:{port}"
    try:
        _wait_until_served(process, url, logdir, expected_runs, ready, timeout)
    except BaseException:
        # Also on Ctrl-C or SystemExit while waiting: never leave it running.
        stop_tensorboard(process)
        raise
    return process, url


def _wait_until_served(process, url, logdir, expected_runs, ready, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            listing = get_json(url + "/data/plugins_listing", timeout=10)
            if listing.get(PLUGIN, {}).get("enabled"):
                runs = get_json(url + f"/data/plugin/{PLUGIN}/runs", timeout=60)["runs"]
                if len(runs) >= expected_runs and (ready is None or ready(runs)):
                    return
        except (OSError, ValueError, KeyError):
            pass  # Not listening yet, or not read far enough.
        if process.poll() is not None:
            problem = f"TensorBoard exited with status {process.returncode}"
        elif time.monotonic() > deadline:
            problem = f"TensorBoard did not serve the runs of {logdir} within {timeout} s"
        else:
            time.sleep(0.5)
            continue
        raise RuntimeError(f"{problem}; the end of its output:\n{process.output_tail()}")


def stop_tensorboard(process, timeout=30):
    """Stops a TensorBoard from `start_tensorboard` and waits for it: SIGTERM,
    then SIGKILL after `timeout` seconds. Its process group goes with it when
    it has one of its own. Stopping a stopped one does nothing."""

    def send(signum):
        try:
            if process.own_group:
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
        except (ProcessLookupError, PermissionError):
            pass

    if process.poll() is None:
        send(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            process.wait()
    if process.own_group:
        send(signal.SIGKILL)  # Whatever is left in the group: the data server.
    process.log_file.close()


def chromium_executable():
    """Debian's Chromium: `chromium` on the PATH, else /usr/bin/chromium."""
    return shutil.which("chromium") or "/usr/bin/chromium"


def launch_chromium(playwright, **options):
    """A headless Debian Chromium through Playwright's `sync_playwright()`
    (or async) handle, with `CHROMIUM_ARGS`; `options` go to
    `playwright.chromium.launch`."""
    return playwright.chromium.launch(
        executable_path=chromium_executable(), args=list(CHROMIUM_ARGS), **options
    )
