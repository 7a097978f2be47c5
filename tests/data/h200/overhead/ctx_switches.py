"""The training thread's context switches and its user and system CPU a
step, in whole fits of the seeds' MLP at batch 32 with and without
DeviceCostCallback, alternating (a one-off probe for issue 36; see
README.md here): whether the callback's cost beyond its own time is the
GIL handed between the training thread and Keras's worker more often
(each hand-over a futex wake-up, dear on KVM vCPUs). Per step, medians of
each kind and of the paired differences; user and system time in clock
ticks (10 ms), so only their medians over many fits say anything.

Usage: KERAS_BACKEND=jax python3 tests/data/h200/overhead/ctx_switches.py
    STEPS ROUNDS   (from the checkout's root)
"""

import os
import statistics
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "benchmarks")]
import tb_devicecost  # noqa: E402
import models  # noqa: E402

NAMES = ("wall_us", "cpu_us", "user_us", "sys_us", "voluntary_switches",
         "involuntary_switches", "every_thread_switches")


def switches(tid):
    """`(voluntary, involuntary)` context switches of thread `tid`."""
    with open(f"/proc/self/task/{tid}/status", encoding="ascii") as status:
        fields = dict(line.split(":", 1) for line in status.read().splitlines() if "ctxt" in line)
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def readings(tid, tick):
    with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    every = 0
    for other in os.listdir("/proc/self/task"):
        try:
            every += sum(switches(other))
        except OSError:
            pass  # It ended meanwhile.
    return (time.perf_counter(), time.thread_time(), int(fields[11]) / tick,
            int(fields[12]) / tick, *switches(tid), every)


def main(steps, rounds):
    x, y = models.data("mlp", steps * 32)
    model = models.build("mlp")
    model.fit(x, y, batch_size=32, verbose=0, shuffle=False)  # compile
    tid, tick = threading.get_native_id(), os.sysconf("SC_CLK_TCK")
    per_step = {"none": [], "full": []}
    for index in range(rounds):
        for variant in (("none", "full") if index % 2 == 0 else ("full", "none")):
            callbacks = ([tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)]
                         if variant == "full" else [])
            before = readings(tid, tick)
            model.fit(x, y, batch_size=32, verbose=0, shuffle=False, callbacks=callbacks)
            after = readings(tid, tick)
            seconds_or_counts = [b - a for a, b in zip(before, after)]
            per_step[variant].append([value * 1e6 / steps for value in seconds_or_counts[:4]]
                                     + [value / steps for value in seconds_or_counts[4:]])
    for column, name in enumerate(NAMES):
        none = [row[column] for row in per_step["none"]]
        full = [row[column] for row in per_step["full"]]
        paired = statistics.median(b - a for a, b in zip(none, full))
        print(f"{name:21s} none {statistics.median(none):9.2f}  full {statistics.median(full):9.2f}"
              f"  paired {paired:+9.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
