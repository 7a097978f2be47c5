"""CPU time DeviceCostCallback adds to each step, per thread, on every backend.

Wall time of a whole fit varies by several percent from one fit to the next
(±15% on a GPU host); the CPU time a thread spends is what the callback
adds and what noise moves least. Fits with and without the callback
alternate in one process (A B B A ...), each of `--steps` steps of the
seeds' MLP (100 -> 128 -> 10) at batch 32 from NumPy arrays, one model per
variant warmed up first. Per pair of fits, and per step:

- the training thread's CPU time (`/proc/self/task/<tid>/schedstat`,
  nanoseconds),
- Keras's callback workers' (the `ThreadPoolExecutor` threads that run
  async-safe batch-end hooks on JAX and PyTorch), read before the fit ends,
- the whole process's (`time.process_time`), and the wall time of `fit()`;
- what the callback's run says measuring took a step (`self_us_per_step`,
  read after the fit): its own time, against which the thread's figure
  shows how much slower the rest of the step runs beside it;
- how long `fit()` took to return after its last `on_train_end` hook:
  freeing Keras's tf.data iterator there waits, in some TensorFlow fits
  with or without the callback, for tf.data's autotune thread's next
  wake-up (a lost wake-up in TensorFlow, docs/PERFORMANCE.md): up to its
  period then, 2.5 s in a 2-5 s fit. Fits over 20 ms late are counted on
  each side, and the wall ratio is also given to the last `on_train_end`,
  where that wait, TensorFlow's and on both sides, is left out.

Those are read in the steady state: from the start of step 50 (after the
first step's one-off probes, compilation and warm-up) to the end of the
epoch, after every other callback's epoch-end hook (the last boundary's
drain and write included). What a fit costs once, before and after (the
callback's set-up, its last summaries), is printed apart as the fixed cost
per fit: the whole fit's training-thread CPU difference less the steady
one times the steps.

The callback runs with `device_busy=False`: on an accelerator the default
device-busy trace window is a one-off per run (seconds of CPU), measured
apart by `gpu_backends.py`.

With `--calls` it also counts, once per backend, the Python-level calls
(functions and C built-ins, `sys.setprofile`) the training thread and
Keras's workers make from step 50 to 50 steps before the epoch's end, in
a fit with and one without the callback: calls added a step, for telling
a change's effect apart from the fits' noise (machine load does not move
it; writes due every few seconds move it by a call or two). The count is
not a time: in a running fit each call costs about a microsecond here.
The same fit also counts the bytecodes executed in tb_devicecost's own
code a step on each thread (`sys.settrace` with opcode events), the
callback's Python work a step, whatever the machine's load.

With `--short-epochs` it also times fits of 20 epochs of 50 steps, each
with 10 validation steps, with and without the callback: the training
thread's CPU time (`time.thread_time`) and the process's added an epoch,
and the wall ratio. What a fit pays once an epoch (the drain and write of
its steps at the epoch's end and validation's, validation's step function)
weighs there as much as the steps do.

With `--aa` neither side has the callback (an A/A run): what it prints
is the instrument's own floor on this machine, the difference two
identical fits show. With `--floor` the callback is replaced by the least
a per-step recording can be: an async-safe callback that wraps the step
function with two clock reads and adds one row of two floats to a buffer
a step, with no hook of its own (Keras still calls its empty batch
hooks, two frames a step on the training thread and two on its worker).
What it adds is the floor the callback's figures stand on.

Each backend runs in a process of its own (Keras fixes its backend at
import). Target (issue 36): at most 8 µs a step added on the training
thread and 8 µs on Keras's worker, on every backend; a TensorFlow fit with
the callback within ±2% of one without. The last line gives the largest
training-thread figure against the target.

Usage: python benchmarks/step_cpu.py [--backends tensorflow,jax,torch]
       [--rounds 6] [--steps 2000] [--json FILE] [--calls] [--aa | --floor]
       [--short-epochs]
"""

import argparse
import array
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

TARGET_US = 8.0
# Steps before the steady state is read: the first step's one-off probes,
# compilation and warm-up are a fixed cost of the fit.
WARM_STEPS = 50
TF_WALL_RANGE = (0.98, 1.02)
# A fit returning this long after its last `on_train_end` waited for
# tf.data's autotune thread (a few ms otherwise): counted on each side.
LATE_END_S = 0.02
# `--short-epochs`: fits of this many epochs of this many steps, each with
# a validation pass of `SHORT_VALIDATION` steps (what a small dataset's fit
# looks like), where the callback's cost per epoch adds up.
SHORT_EPOCHS, SHORT_STEPS, SHORT_VALIDATION = 20, 50, 10


def _thread_cpu_ns(native_id):
    """A thread's CPU time so far, in ns (0 once it has ended)."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", encoding="ascii") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _workers():
    return [t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")]


def _measure_backend(args):
    """One backend, in this process: prints a JSON object of per-pair
    figures (µs a step added, with over without)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    import tb_devicecost
    from tb_devicecost import words
    from tb_devicecost.reading import reader

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import models  # pylint: disable=import-outside-toplevel

    if keras.backend.backend() == "torch":
        import torch

        torch.set_num_threads(1)
    x, y = models.data("mlp", args.steps * 32)
    scratch = tempfile.mkdtemp(prefix="step-cpu-")
    training = threading.get_native_id()

    class SteadyClock(keras.callbacks.Callback):
        """Reads the threads' CPU time from the start of step `WARM_STEPS`
        to the epoch's end, after every other callback's epoch-end hook
        (listed last; overrides no batch-end hook, so Keras's async
        dispatch stays as it is), and Keras's workers' before Keras shuts
        them down."""

        def on_train_batch_begin(self, batch, logs=None):
            if batch == WARM_STEPS:
                self.steady0 = (_thread_cpu_ns(training), time.process_time(),
                                time.perf_counter(), self._workers_ns())

        def on_epoch_end(self, epoch, logs=None):
            self.steady1 = (_thread_cpu_ns(training), time.process_time(),
                            time.perf_counter(), self._workers_ns())

        def on_train_begin(self, logs=None):
            self.start = {t.native_id: _thread_cpu_ns(t.native_id) for t in _workers()}

        def on_train_end(self, logs=None):
            self.ns = self._workers_ns()
            self.ended = time.perf_counter()

        def _workers_ns(self):
            return sum(
                _thread_cpu_ns(t.native_id) - self.start.get(t.native_id, 0) for t in _workers()
            )

    class LeanWrapper(keras.callbacks.Callback):
        """`--floor`: two clock reads and a row of floats a step around the
        step function, and nothing else."""

        async_safe = True

        def on_train_begin(self, logs=None):
            original = self.original = self.model.train_function
            clock, rows = time.perf_counter, array.array("d")
            pack, add = struct.Struct("2d").pack, rows.frombytes

            def step(*arguments):
                began = clock()
                result = original(*arguments)
                add(pack(began, clock()))
                return result

            self.model.train_function = step

        def on_train_end(self, logs=None):
            self.model.train_function = self.original

    def measured(with_callback):
        """The callback measured on the side that has it, as a list."""
        if not with_callback or args.aa:
            return []
        if args.floor:
            return [LeanWrapper()]
        # The per-step cost: the device-busy trace window, a one-off per
        # run on an accelerator, is measured apart (gpu_backends.py).
        return [tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(dir=scratch), device_busy=False)]

    def own_us(callbacks):
        """What the callback's train run says measuring took a step
        (`self_us_per_step`), read after the fit; `None` without one."""
        for callback in callbacks:
            if isinstance(callback, tb_devicecost.DeviceCostCallback):
                for run in reader.read_runs(reader.local_provider(callback.log_dir)):
                    if run.run == "train":
                        return words.analyze_run(run).get("self_us_per_step")
        return None

    def fit(model, with_callback, steps):
        clock = SteadyClock()
        callbacks = measured(with_callback) + [clock]
        thread0, wall0 = _thread_cpu_ns(training), time.perf_counter()
        model.fit(x[: steps * 32], y[: steps * 32], batch_size=32, epochs=1, verbose=0,
                  shuffle=False, callbacks=callbacks)
        returned = time.perf_counter()
        wall = returned - wall0
        figures = {
            "fit_thread_us": (_thread_cpu_ns(training) - thread0) / 1e3,
            "wall_us": wall * 1e6 / steps,
            "to_end_us": (clock.ended - wall0) * 1e6 / steps,
            # From the last `on_train_end` to `fit()`'s return.
            "end_s": returned - clock.ended,
            "own_us": own_us(callbacks),
        }
        if hasattr(clock, "steady0"):
            steady = steps - WARM_STEPS
            (thread_a, process_a, wall_a, workers_a), (thread_b, process_b, wall_b, workers_b) = (
                clock.steady0, clock.steady1)
            figures.update({
                "thread_us": (thread_b - thread_a) / 1e3 / steady,
                "worker_us": (workers_b - workers_a) / 1e3 / steady,
                "process_us": (process_b - process_a) * 1e6 / steady,
                "steady_wall_us": (wall_b - wall_a) * 1e6 / steady,
            })
        return figures

    def calls_per_step(model, with_callback, steps):
        """Python-level calls a step on the training thread and Keras's
        workers (functions and C built-ins), and the bytecodes executed in
        this package's own code there, counted from step `WARM_STEPS` to
        `WARM_STEPS` steps before the epoch's end."""
        # [Keras's workers', the training thread's], and whether counting.
        counted, ours, active = [0, 0], [0, 0], [False]
        training_ident = threading.get_ident()
        package = os.path.dirname(tb_devicecost.__file__) + os.sep

        def profile(frame, event, arg):
            if active[0] and event in ("call", "c_call"):
                counted[threading.get_ident() == training_ident] += 1

        def opcodes(frame, event, arg):
            if event == "opcode":
                ours[threading.get_ident() == training_ident] += 1
            return opcodes

        def trace(frame, event, arg):
            # Only frames of the package's own code, opcode by opcode.
            if not active[0] or not frame.f_code.co_filename.startswith(package):
                return None
            frame.f_trace_opcodes = True
            return opcodes

        class Counter(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                if batch == WARM_STEPS:
                    active[0] = True
                    sys.setprofile(profile)
                    sys.settrace(trace)
                elif batch == steps - WARM_STEPS:
                    active[0] = False
                    sys.setprofile(None)
                    sys.settrace(None)

        callbacks = measured(with_callback) + [Counter()]
        # Keras's workers start with the fit: they inherit both.
        threading.setprofile(profile)
        threading.settrace(trace)
        try:
            model.fit(x[: steps * 32], y[: steps * 32], batch_size=32, epochs=1, verbose=0,
                      shuffle=False, callbacks=callbacks)
        finally:
            sys.setprofile(None)
            sys.settrace(None)
            threading.setprofile(None)
            threading.settrace(None)
        counted_steps = steps - 2 * WARM_STEPS
        return {"thread": counted[1] / counted_steps, "worker": counted[0] / counted_steps,
                "thread_bytecodes": ours[1] / counted_steps,
                "worker_bytecodes": ours[0] / counted_steps}

    def short_epochs_fit(model, with_callback):
        """`[training thread CPU, process CPU, wall]` seconds of a fit of
        `SHORT_EPOCHS` epochs with validation."""
        callbacks = measured(with_callback)
        before = (time.thread_time(), time.process_time(), time.perf_counter())
        model.fit(x[: SHORT_STEPS * 32], y[: SHORT_STEPS * 32], batch_size=32,
                  epochs=SHORT_EPOCHS, verbose=0, shuffle=False, callbacks=callbacks,
                  validation_data=(x[-SHORT_VALIDATION * 32:], y[-SHORT_VALIDATION * 32:]))
        after = (time.thread_time(), time.process_time(), time.perf_counter())
        return [end - start for start, end in zip(before, after)]

    models_by_variant = {False: models.build("mlp"), True: models.build("mlp")}
    for with_callback, model in models_by_variant.items():
        fit(model, with_callback, 50)  # compile and warm up
    pairs = []
    for round_index in range(args.rounds):
        order = (False, True) if round_index % 2 == 0 else (True, False)
        figures = {with_callback: fit(models_by_variant[with_callback], with_callback, args.steps)
                   for with_callback in order}
        with_, without = figures[True], figures[False]
        thread_us = with_["thread_us"] - without["thread_us"]
        pairs.append({
            "thread_us": thread_us,
            "worker_us": with_["worker_us"] - without["worker_us"],
            "process_us": with_["process_us"] - without["process_us"],
            "wall_ratio": with_["wall_us"] / without["wall_us"],
            "to_end_ratio": with_["to_end_us"] / without["to_end_us"],
            "steady_wall_ratio": with_["steady_wall_us"] / without["steady_wall_us"],
            "fixed_ms": (with_["fit_thread_us"] - without["fit_thread_us"]
                         - thread_us * args.steps) / 1e3,
            "step_us_without": without["wall_us"],
            "end_s_with": with_["end_s"],
            "end_s_without": without["end_s"],
            "own_us": with_["own_us"],
        })
    short = []
    if args.short_epochs:
        for with_callback, model in models_by_variant.items():
            short_epochs_fit(model, with_callback)  # validation's compilation
        for round_index in range(args.rounds):
            order = (False, True) if round_index % 2 == 0 else (True, False)
            figures = {with_callback: short_epochs_fit(models_by_variant[with_callback], with_callback)
                       for with_callback in order}
            (thread_a, process_a, wall_a), (thread_b, process_b, wall_b) = (
                figures[False], figures[True])
            short.append({
                "thread_ms_per_epoch": (thread_b - thread_a) * 1e3 / SHORT_EPOCHS,
                "process_ms_per_epoch": (process_b - process_a) * 1e3 / SHORT_EPOCHS,
                "wall_ratio": wall_b / wall_a,
                "epoch_ms_without": wall_a * 1e3 / SHORT_EPOCHS,
            })
    calls = None
    if args.calls:
        calls = {
            "with": calls_per_step(models_by_variant[True], True, 500),
            "without": calls_per_step(models_by_variant[False], False, 500),
        }
    print(json.dumps({"backend": keras.backend.backend(), "pairs": pairs, "calls": calls,
                      "short_epochs": short}))


def _spread(values, style="+.1f"):
    ordered = sorted(values)
    if len(ordered) < 4:
        return f"{ordered[0]:{style}} to {ordered[-1]:{style}}"
    quartiles = statistics.quantiles(ordered, n=4)
    return f"IQR {quartiles[0]:{style}} to {quartiles[2]:{style}}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument("--rounds", type=int, default=6, help="pairs of fits per backend")
    parser.add_argument("--steps", type=int, default=2000, help="steps per fit (at least 2,000)")
    parser.add_argument("--json", metavar="FILE", help="also write every pair's figures to FILE")
    parser.add_argument("--calls", action="store_true",
                        help="also count the Python calls the callback adds a step (deterministic)")
    variant = parser.add_mutually_exclusive_group()
    variant.add_argument("--aa", action="store_true",
                         help="no callback on either side: the instrument's own floor")
    variant.add_argument("--floor", action="store_true",
                         help="a lean wrapper (two clock reads and a row a step) in place "
                              "of the callback: the floor of any per-step recording")
    parser.add_argument("--short-epochs", action="store_true",
                        help=f"also time fits of {SHORT_EPOCHS} epochs of {SHORT_STEPS} steps with "
                             f"validation: what the callback adds an epoch")
    parser.add_argument("--one-backend", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_backend:
        _measure_backend(args)
        return
    results, calls, short = {}, {}, {}
    for backend in args.backends.split(","):
        completed = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--one-backend",
             "--rounds", str(args.rounds), "--steps", str(args.steps)]
            + (["--calls"] if args.calls else []) + (["--aa"] if args.aa else [])
            + (["--floor"] if args.floor else [])
            + (["--short-epochs"] if args.short_epochs else []),
            capture_output=True, text=True, check=False,
            env=dict(os.environ, KERAS_BACKEND=backend),
        )
        if completed.returncode != 0:
            sys.exit(f"step_cpu.py: the {backend} fits failed: {completed.stderr.strip()[-2000:]}")
        measured = json.loads(completed.stdout.strip().splitlines()[-1])
        results[backend] = measured["pairs"]
        if measured.get("calls"):
            calls[backend] = measured["calls"]
        if measured.get("short_epochs"):
            short[backend] = measured["short_epochs"]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(dict(results, **({"calls": calls} if calls else {}),
                           **({"short_epochs": short} if short else {})), out, indent=1)
    what = ("A/A: neither side has the callback; the CPU time one fit of two identical ones adds"
            if args.aa else "CPU time added a step by a lean wrapper (--floor)"
            if args.floor else "CPU time added a step by DeviceCostCallback")
    print(f"{what} in the steady state, {args.steps}-step fits, {args.rounds} pairs, median (spread):")
    worst = 0.0
    for backend, pairs in results.items():
        column = {key: [pair[key] for pair in pairs] for key in pairs[0]}
        thread, worker = statistics.median(column["thread_us"]), statistics.median(column["worker_us"])
        worst = max(worst, thread, worker)
        print(f"  {backend:10s} training thread {thread:+6.1f} µs ({_spread(column['thread_us'])}), "
              f"Keras worker {worker:+6.1f} µs ({_spread(column['worker_us'])}), "
              f"process {statistics.median(column['process_us']):+6.1f} µs; "
              f"fixed cost per fit {statistics.median(column['fixed_ms']):+.1f} ms of the "
              f"training thread; wall x{statistics.median(column['to_end_ratio']):.3f} "
              f"to the last on_train_end (x{statistics.median(column['wall_ratio']):.3f} "
              f"to the return, steady x{statistics.median(column['steady_wall_ratio']):.3f}) on "
              f"{statistics.median(column['step_us_without']):.0f} µs steps")
        own = [value for value in column["own_us"] if value is not None]
        if own:
            print(f"  {'':10s} the callback's own time a step, as its runs record it "
                  f"(self_us_per_step): {statistics.median(own):.1f} µs ({_spread(own, '.1f')})")
        late = [sum(value > LATE_END_S for value in column[key])
                for key in ("end_s_with", "end_s_without")]
        if any(late):
            print(f"  {'':10s} fits returning over {LATE_END_S * 1e3:.0f} ms after the last "
                  f"on_train_end (tf.data's autotune wake-up): {late[0]} of {len(pairs)} with "
                  f"the callback, {late[1]} without; longest "
                  f"{max(column['end_s_with'] + column['end_s_without']):.2f} s")
    if calls:
        print("Python calls added a step on the training thread and Keras's workers (one fit each, counted):")
    for backend, counted in calls.items():
        print(f"  {backend:10s} " + "; ".join(
            f"{where} {counted['with'][where] - counted['without'][where]:+.1f} "
            f"({counted['with'][where]:.1f} with the callback, {counted['without'][where]:.1f} without)"
            for where in ("thread", "worker")))
        if "thread_bytecodes" in counted["with"]:
            print(f"  {'':10s} bytecodes of tb_devicecost's own code a step: thread "
                  f"{counted['with']['thread_bytecodes']:.0f}, worker "
                  f"{counted['with']['worker_bytecodes']:.0f}")
    if short:
        print(f"Added an epoch, fits of {SHORT_EPOCHS} epochs of {SHORT_STEPS} steps and "
              f"{SHORT_VALIDATION} validation steps, {args.rounds} pairs, median (spread):")
    for backend, pairs in short.items():
        column = {key: [pair[key] for pair in pairs] for key in pairs[0]}
        print(f"  {backend:10s} training thread "
              f"{statistics.median(column['thread_ms_per_epoch']):+5.2f} ms "
              f"({_spread(column['thread_ms_per_epoch'], '+.2f')}), process "
              f"{statistics.median(column['process_ms_per_epoch']):+5.2f} ms; wall "
              f"x{statistics.median(column['wall_ratio']):.3f} on "
              f"{statistics.median(column['epoch_ms_without']):.1f} ms epochs")
    if "tensorflow" in results:
        ratio = statistics.median(pair["to_end_ratio"] for pair in results["tensorflow"])
        print(f"TensorFlow fit with / without, to the last on_train_end: x{ratio:.3f} "
              f"(target {TF_WALL_RANGE[0]}-{TF_WALL_RANGE[1]})")
    print(f"largest CPU time added a step: {worst:.1f} µs (target <= {TARGET_US})")


if __name__ == "__main__":
    main()
