"""`python -m demo`: why a GPU can be slower than a CPU, measured, then the tab.

Runs each scenario on every visible device (`/CPU:0` always, each GPU when
present) with `DeviceCostCallback`, then a batch-size sweep over all of
them, prints the report, then starts TensorBoard on 127.0.0.1 and prints
the URL of the tab. Ctrl-C stops it.

It runs on the Keras backend that `KERAS_BACKEND` names. Without it, on
TensorFlow when TensorFlow is installed, else on JAX, else on PyTorch: the
demo also runs where TensorFlow is absent (`demo/scenarios.py` says what
changes there).
"""

import argparse
import importlib
import os
import shutil
import signal
import sys
import threading
import time

from demo import serve as tb_serve
from tb_devicecost import backends

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
    global _owner_pid
    if _owner_pid is None:
        os.register_at_fork(before=_hold_signals, after_in_parent=_release_signals,
                            after_in_child=_default_signals_in_child)
    _owner_pid = os.getpid()


# The process whose signals `own_signals` owns (and registered the fork
# hooks, once), or `None`.
_owner_pid = None
# The forking thread's signal mask before `_hold_signals`, by thread.
_held_masks = {}
_ENDING_SIGNALS = {signal.SIGTERM, signal.SIGHUP}


def _hold_signals():
    """Before a fork: SIGTERM and SIGHUP wait in the forking thread until
    the child has its own dispositions.

    A pool stopped at an epoch's end (a `PyDataset` with worker processes,
    the fixes tried) terminates workers that may be being born. A Python
    handler inherited by such a worker runs inside the interpreter's own
    after-fork code, which ignores the exception it raises: the worker
    lived on, waiting for work, and the pool's `terminate()` waited for it
    forever (the demo hung in the fixes scenario)."""
    _held_masks[threading.get_ident()] = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING_SIGNALS)


def _release_signals():
    mask = _held_masks.pop(threading.get_ident(), None)
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _default_signals_in_child():
    """In a forked child: the default dispositions (a SIGHUP ignored on
    purpose stays ignored), so a SIGTERM held since the fork ends it."""
    try:
        for signum in _ENDING_SIGNALS:
            if signal.getsignal(signum) == _exit_on_signal:
                signal.signal(signum, signal.SIG_DFL)
    finally:
        _release_signals()


def _exit_on_signal(signum, frame):
    if os.getpid() != _owner_pid:
        # A forked child's (see `_hold_signals`): end as the default
        # disposition would, which no after-fork code can swallow.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    # Once is enough: a second signal must not cut the cleanup short.
    for other in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(other) == _exit_on_signal:
            signal.signal(other, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def stop_children():
    while _children:
        stop_tensorboard(_children.pop())


# The scenarios, by name only: importing them would start TensorFlow.
SCENARIO_NAMES = ("small_work", "input_pipeline", "warmup", "placement", "tfrecord", "sweep", "fixes")

# The `fixes` scenario's models (demo/tried.py) and the seconds each may
# take, by `--quick`.
FIXES_TRIED = {False: (("mlp_b10", "python_input"), 5), True: (("mlp_b32",), 2)}


def parse_args(argv):
    names = list(SCENARIO_NAMES)
    parser = argparse.ArgumentParser(
        prog="python -m demo",
        description="Train small models for each reason commonly given for a GPU "
        "being slower than a CPU, measure them with tb-devicecost, and open the Device Cost tab.",
    )
    parser.add_argument("--logdir", default="runs", help="where runs are written (default: runs)")
    parser.add_argument(
        "--scenarios",
        default=",".join(names),
        help=f"comma-separated subset of: {', '.join(names)} (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="shorter fits that reach the same verdicts, in about half the time"
    )
    parser.add_argument("--no-serve", action="store_true", help="do not start TensorBoard")
    parser.add_argument("--port", type=int, default=6006, help="first port to try (default: 6006)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(names))
    if unknown or not chosen:
        parser.error(f"unknown scenario(s) {unknown}; expected a comma-separated subset of {names}")
    args.scenarios = chosen
    return args


def _run_count(logdir):
    """How many runs (folders holding event files) are under `logdir`."""
    return sum(
        any("tfevents" in name for name in files) for _, _, files in os.walk(logdir)
    )


def start_tensorboard(logdir, port):
    """Starts TensorBoard on 127.0.0.1 and waits until the tab lists every run.

    Returns `(process, base_url)`. TensorBoard loads runs in the background,
    and an empty or half-filled tab would be a poor first sight. The process
    is stopped when this one exits, however it exits.
    """
    try:
        process, base = tb_serve.start_tensorboard(
            logdir, port, expected_runs=max(1, _run_count(logdir))
        )
    except OSError as error:  # No free port.
        raise SystemExit(f"{error} Pass --port.")
    except RuntimeError as error:
        raise SystemExit(f"{error}\nRun it yourself: tensorboard --logdir {logdir}")
    _children.append(process)
    return process, base


def stop_tensorboard(process):
    if process in _children:
        _children.remove(process)
    tb_serve.stop_tensorboard(process)


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


def choose_backend():
    """The Keras backend to run on: `KERAS_BACKEND`, else the first of
    TensorFlow, JAX and PyTorch that is installed."""
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    for backend in ("tensorflow", "jax", "torch"):
        try:
            # Imported, not only found: an installation that cannot be
            # imported is no backend.
            importlib.import_module(backend)
        except ImportError:
            continue
        return backend
    raise SystemExit("No Keras backend is installed: install tensorflow, jax or torch.")


def visible_devices(backend):
    """`/CPU:0` and each GPU the backend can use, as `/GPU:<index>`."""
    if backend == "tensorflow":
        import tensorflow as tf

        if not tf.config.list_physical_devices("GPU"):
            # Two logical CPUs, so the placement scenario still crosses devices.
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    # The GPUs counted as the batch sweep counts them (one listing a backend).
    gpus = backends.get(backend).device_counts()["gpu"]
    return ["/CPU:0"] + [f"/GPU:{index}" for index in range(gpus)]


def _summary(scenario):
    """A scenario's docstring's first line: one line per scenario."""
    return (scenario.__doc__ or "").strip().splitlines()[0] if scenario.__doc__ else ""


def _main(args):
    os.environ["KERAS_BACKEND"] = choose_backend()
    devices = visible_devices(os.environ["KERAS_BACKEND"])
    from demo import scenarios
    from tb_devicecost import cli

    print(f"Backend: {scenarios.BACKEND}. Devices: {', '.join(devices)}")
    started = time.monotonic()
    for index, name in enumerate(args.scenarios, start=1):
        # Re-running replaces this scenario's runs instead of mixing with them.
        shutil.rmtree(os.path.join(args.logdir, name), ignore_errors=True)
        if name == "fixes":
            # The scenarios' fixes tried on their own models (demo/tried.py).
            from demo import tried

            chosen, budget_s = FIXES_TRIED[args.quick]
            print(f"\n[{index}/{len(args.scenarios)}] fixes: {_summary(tried)}", flush=True)
            tried.run(os.path.join(args.logdir, name), chosen, budget_s=budget_s, detail=False)
            continue
        if name in scenarios.ALL_DEVICE_SCENARIOS:
            scenario = scenarios.ALL_DEVICE_SCENARIOS[name]
            print(f"\n[{index}/{len(args.scenarios)}] {name} on {', '.join(devices)}: {_summary(scenario)}", flush=True)
            scenario(args.logdir, devices, args.quick)
            continue
        for device in devices:
            scenario = scenarios.SCENARIOS[name]
            print(f"\n[{index}/{len(args.scenarios)}] {name} on {device}: {_summary(scenario)}", flush=True)
            skipped = scenario(args.logdir, device, args.quick)
            if skipped:
                print(f"  {name}: {skipped}", flush=True)
    print(f"\nTrained the {'quick' if args.quick else 'full'} scenarios in {time.monotonic() - started:.0f} s.\n")
    status = cli.main(["report", args.logdir])
    if args.no_serve:
        return status
    return serve(args.logdir, args.port)


if __name__ == "__main__":
    sys.exit(main())
