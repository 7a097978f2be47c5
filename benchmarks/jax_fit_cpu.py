"""Where a JAX fit's time per step goes, with and without the callback.

Alternating fits of one model (a new `DeviceCostCallback(device_busy=False)`
each), per step: wall time, the training thread's CPU time, the process's
CPU time (every thread: Keras's worker, JAX's runtime), and the training
thread's voluntary and involuntary context switches. Medians over fits;
the per-fit wall times are printed last. A wall cost well above the CPU
cost means waiting (for the GIL, for other threads), not work.

Target: the callback's training-thread CPU time at most 3% of the step
(docs/PERFORMANCE.md).

Usage: python benchmarks/jax_fit_cpu.py [MODEL BATCH STEPS FITS [EPOCHS]]
    (defaults: mlp 32 1000 12 1; with EPOCHS a fit is that many epochs of
    STEPS / EPOCHS steps, each paying the callback's epoch end)
"""

import os
import statistics
import sys
import threading
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tb_devicecost  # noqa: E402
from models import build, data  # noqa: E402


def context_switches():
    """`(voluntary, involuntary)` context switches of this thread so far."""
    counts = {}
    with open(f"/proc/self/task/{threading.get_native_id()}/status") as status:
        for line in status:
            if "ctxt_switches" in line:
                name, value = line.split(":")
                counts[name] = int(value)
    return counts["voluntary_ctxt_switches"], counts["nonvoluntary_ctxt_switches"]


def main():
    kind, batch, steps, fits, epochs = "mlp", 32, 1000, 12, 1
    if len(sys.argv) > 1:
        kind, batch, steps, fits = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if len(sys.argv) > 5:
        epochs = int(sys.argv[5])
        steps -= steps % epochs
    x, y = data(kind, batch * steps // epochs)
    model = build(kind)
    model.fit(x, y, batch_size=batch, verbose=0, shuffle=False)  # compiles
    figures = {"without": [], "with": []}
    for index in range(fits):
        for which in (("without", "with") if index % 2 == 0 else ("with", "without")):
            callbacks = [] if which == "without" else [tb_devicecost.DeviceCostCallback(
                f"/tmp/jax_fit_cpu/{index}", device_busy=False)]
            switches = context_switches()
            wall, thread, process = time.perf_counter(), time.thread_time(), time.process_time()
            model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, shuffle=False,
                      callbacks=callbacks)
            wall = time.perf_counter() - wall
            thread, process = time.thread_time() - thread, time.process_time() - process
            after = context_switches()
            figures[which].append((
                wall / steps * 1e6, thread / steps * 1e6, process / steps * 1e6,
                (after[0] - switches[0]) / steps, (after[1] - switches[1]) / steps,
            ))
    print(f"{kind} batch {batch}, {steps} steps a fit in {epochs} epoch(s), {fits} fits of each, medians")
    names = ("wall us/step", "training thread CPU us/step", "process CPU us/step",
             "voluntary switches/step", "involuntary switches/step")
    for column, name in enumerate(names):
        without = statistics.median(row[column] for row in figures["without"])
        with_callback = statistics.median(row[column] for row in figures["with"])
        print(f"{name:28s} without {without:8.2f}  with {with_callback:8.2f}  "
              f"difference {with_callback - without:+8.2f}")
    for which in ("without", "with"):
        print(f"wall us/step, each fit, {which}: "
              + " ".join(f"{row[0]:.0f}" for row in figures[which]))


if __name__ == "__main__":
    main()
