"""`python -m demo`: the seeds' scenarios, measured, then the Device Cost tab.

Runs each scenario on every visible device (`/CPU:0` always, each GPU when
present) with `DeviceCostCallback`, prints the report, then starts
TensorBoard on 127.0.0.1 and prints the URL of the tab. Ctrl-C stops it.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# The processes this one started and must stop before it exits.
_children = []


def own_signals():
    """Makes Ctrl-C and `kill` end this process cleanly, children included.

    A program started in the background by a script (`cmd &`) or under
    `nohup` inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt: Ctrl-C is what the demo says stops it, so it is
    restored. SIGTERM and SIGHUP (`kill PID`, a closed terminal) exit through
    the `finally` blocks, which stop the children, instead of leaving them
    running with no parent; a SIGHUP ignored on purpose (`nohup`) stays
    ignored.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _exit_on_signal)


def _exit_on_signal(signum, frame):
    # Once is enough: a second signal must not cut the cleanup short.
    for other in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(other) == _exit_on_signal:
            signal.signal(other, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def stop_children():
    while _children:
        stop_tensorboard(_children.pop())


def parse_args(argv):
    # Names only: importing the scenarios would start TensorFlow.
    names = ["small_work", "input_pipeline", "warmup", "placement", "tfrecord"]
    parser = argparse.ArgumentParser(
        prog="python -m demo",
        description="Reproduce the seeds' 'slower on GPU' scenarios with tb-devicecost.",
    )
    parser.add_argument("--logdir", default="runs", help="where runs are written (default: runs)")
    parser.add_argument(
        "--scenarios",
        default=",".join(names),
        help=f"comma-separated subset of: {', '.join(names)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs (about a minute)")
    parser.add_argument("--no-serve", action="store_true", help="do not start TensorBoard")
    parser.add_argument("--port", type=int, default=6006, help="first port to try (default: 6006)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(names))
    if unknown or not chosen:
        parser.error(f"unknown scenario(s) {unknown}; expected a comma-separated subset of {names}")
    args.scenarios = chosen
    return args


def free_port(first):
    for port in range(first, first + 100):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit(f"No free port in {first}-{first + 99}; pass --port.")


def start_tensorboard(logdir, port):
    """Starts TensorBoard on 127.0.0.1 and waits until the tab has data.

    Returns `(process, base_url)`. TensorBoard loads runs in the background,
    and an empty tab would be a poor first sight.
    """
    port = free_port(port)
    process = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _children.append(process)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(base + "/data/plugin/devicecost/runs", timeout=10) as response:
                if json.load(response)["runs"]:
                    return process, base
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    stop_tensorboard(process)
    raise SystemExit(f"TensorBoard did not serve the runs; run it yourself: tensorboard --logdir {logdir}")


def stop_tensorboard(process):
    if process in _children:
        _children.remove(process)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve(logdir, port):
    """Starts TensorBoard, prints the tab's URL and waits for Ctrl-C."""
    process, base = start_tensorboard(logdir, port)
    try:
        print(f"\nDevice Cost tab: {base}/#devicecost", flush=True)
        print("Press Ctrl-C to stop TensorBoard.", flush=True)
        process.wait()
    except KeyboardInterrupt:
        print("\nStopping TensorBoard.")
    finally:
        stop_tensorboard(process)
    return 0


def main(argv=None):
    own_signals()
    try:
        return _main(parse_args(argv))
    finally:
        stop_children()


def _main(args):
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        # Two logical CPUs, so the placement scenario still crosses devices.
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from demo import scenarios
    from tb_devicecost import cli

    devices = ["/CPU:0"] + [device.name.replace("/device:", "/") for device in tf.config.list_logical_devices("GPU")]
    print(f"Devices: {', '.join(devices)}")
    for index, name in enumerate(args.scenarios, start=1):
        # Re-running replaces this scenario's runs instead of mixing with them.
        shutil.rmtree(os.path.join(args.logdir, name), ignore_errors=True)
        for device in devices:
            print(f"\n[{index}/{len(args.scenarios)}] {name} on {device}: {scenarios.SCENARIOS[name].__doc__}", flush=True)
            scenarios.SCENARIOS[name](args.logdir, device, args.quick)
    print()
    status = cli.main(["report", args.logdir])
    if args.no_serve:
        return status
    return serve(args.logdir, args.port)


if __name__ == "__main__":
    sys.exit(main())
