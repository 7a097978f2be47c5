"""The GIL wait of a step on the training thread, measured by the kernel's
per-thread counters (`backends/gil_wait.py`), against a thread that holds
the GIL and one that does not exist."""

import contextlib
import hashlib
import sys
import threading
import time

import pytest

from tb_devicecost.backends import gil_wait

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the meter reads Linux's per-thread counters"
)
# Each hash gives the GIL up (hashlib does above 2 KiB) and takes it back,
# as a PyTorch kernel does.
DATA = b"x" * (1 << 16)


def step(meter, seconds=0.2):
    """Hashes for `seconds`; returns `(wall, held, cpu)`: the step's wall
    time, the meter's GIL wait and the step's own CPU time."""
    cpu = time.thread_time()
    began = time.perf_counter()
    started = meter.start(began)
    while time.perf_counter() - began < seconds:
        hashlib.sha256(DATA).digest()
    now = time.perf_counter()
    cpu = time.thread_time() - cpu
    return now - began, meter.stop(started, now), cpu


@contextlib.contextmanager
def spinning():
    """Another thread running pure Python, holding the GIL, meanwhile."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(1000))

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        yield spinner
    finally:
        stop.set()
        spinner.join()


def test_a_step_beside_a_thread_running_python_waits_for_the_gil():
    """Another thread runs pure Python the whole time: after each hash the
    step waits for the GIL. On a quiet machine that is over 90% of the
    step (a switch interval of 5 ms against a hash of tens of
    microseconds); on a busy one the step also waits for a core, which is
    not a GIL wait, so only a floor is asserted. Never more than the time
    the step was not running its own work."""
    meter = gil_wait.GilWait()
    assert meter.available
    with spinning():
        wall, held, cpu = step(meter)
    # The meter's own readings take a little of the step's CPU: 1 ms of room.
    assert 0.1 * wall < held <= wall - cpu + 0.001


def test_a_step_alone_waits_for_nothing():
    """No other Python thread runs: whatever the step slept, no GIL wait."""
    meter = gil_wait.GilWait()
    wall, held, _ = step(meter)
    assert held < 0.05 * wall


def test_a_step_that_sleeps_beside_an_idle_thread_waits_for_nothing():
    """A thread that exists but sleeps holds no GIL: the step's own sleep
    (as a thread pool's barrier) is not a GIL wait."""
    meter = gil_wait.GilWait()
    stop = threading.Event()
    idle = threading.Thread(target=stop.wait, daemon=True)
    idle.start()
    try:
        began = time.perf_counter()
        started = meter.start(began)
        time.sleep(0.1)
        now = time.perf_counter()
        held = meter.stop(started, now)
    finally:
        stop.set()
        idle.join()
    assert held < 0.02


def test_no_reading_is_no_wait():
    """`start` found no counters (not Linux): `stop` reads 0."""
    assert gil_wait.GilWait().stop(None, time.perf_counter()) == 0.0


def sleep_beside_a_brief_thread(meters, asleep_is_gil=False):
    """Sleeps 0.1 s while another thread runs 2 ms of Python and then
    waits; returns each meter's reading of the sleep."""
    stop = threading.Event()

    def brief():
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        stop.wait()

    began = time.perf_counter()
    started = [meter.start(began) for meter in meters]
    thread = threading.Thread(target=brief, daemon=True)
    thread.start()
    try:
        time.sleep(0.1)
        now = time.perf_counter()
        return [meter.stop(each, now, asleep_is_gil=asleep_is_gil)
                for meter, each in zip(meters, started)]
    finally:
        stop.set()
        thread.join()


def test_a_waiter_not_woken_sleeps_one_switch_interval_more():
    """With an input pipeline's threads (`after_release`), a sleep beside a
    thread that ran counts up to one switch interval beyond that thread's
    time: a waiter that a release did not wake sleeps until its timeout."""
    plain, grace = sleep_beside_a_brief_thread(
        [gil_wait.GilWait(), gil_wait.GilWait(after_release=True)])
    assert plain < 0.05
    assert grace - plain == pytest.approx(sys.getswitchinterval(), abs=0.001)


def test_a_cuda_launch_s_sleep_beside_a_thread_that_ran_is_all_gil_wait():
    """`asleep_is_gil`: once another thread ran, all of the sleep counts
    (a CUDA step's launch sleeps for nothing else); with no other thread
    running, none of it."""
    [held] = sleep_beside_a_brief_thread([gil_wait.GilWait()], asleep_is_gil=True)
    assert held > 0.08
    meter = gil_wait.GilWait()
    began = time.perf_counter()
    started = meter.start(began)
    time.sleep(0.05)
    assert meter.stop(started, time.perf_counter(), asleep_is_gil=True) < 0.01


def test_threads_started_and_ended_between_steps_are_metered():
    """The meter lists the other threads again only when their number
    changes (issue 36): a spinner started after the meter's first steps
    still makes the next step wait, and once it has ended a step waits for
    nothing and the meter keeps working."""
    meter = gil_wait.GilWait()
    assert meter.available
    for _ in range(3):
        step(meter, seconds=0.02)  # The list of threads is read here: no spinner yet.
    with spinning():
        wall, held, cpu = step(meter)
    assert 0.1 * wall < held <= wall - cpu + 0.001
    time.sleep(0.01)
    began = time.perf_counter()
    started = meter.start(began)
    time.sleep(0.05)  # Asleep, with no other thread running.
    assert meter.stop(started, time.perf_counter()) < 0.01


def test_a_thread_of_ours_said_never_to_hold_the_gil_is_not_metered():
    """A thread left out with `never_holds_gil` (the SIGTERM watch, asleep
    on its pipe) is not read, even were it to run: here a spinner that
    holds the GIL makes a step wait only while it is metered."""
    with spinning() as spinner:
        wall, held, _ = step(gil_wait.GilWait())
        assert 0.1 * wall < held
        gil_wait.never_holds_gil(spinner)
        wall, held, _ = step(gil_wait.GilWait())
        assert held < 0.05 * wall


def test_the_sigterm_watch_is_left_out_of_the_meter():
    """The callback's SIGTERM watch waits on its pipe for the process's
    life: a step's meter reads no counters of it."""
    from tb_devicecost.recording import sigterm

    watch = sigterm._StuckMainWatch.start(lambda number: None)
    assert watch is not None and watch._thread.is_alive()
    try:
        meter = gil_wait.GilWait()
        meter.start(time.perf_counter())
        metered = [ident for ident, _, _ in meter._threads]
        assert watch._thread.ident not in metered
    finally:
        watch.stop()


class _Pool:
    """Keras's callback workers as the loop clock counts them
    (`keras_loop.LoopClock`: the calls `submitted`, and those `finished`
    by worker), each worker with one call finished."""

    def __init__(self, *threads):
        self.submitted = len(threads)
        self.finished = dict.fromkeys((thread.ident for thread in threads), 1)


def test_keras_s_workers_are_metered_while_they_have_a_call_to_run():
    """A worker of Keras's pool that has a batch-end call to run (more
    handed over than finished) may hold the GIL: a step beside it waits,
    as beside any thread. Once its calls are all finished it is idle until
    the next one, which only the training thread hands over, after its
    step: the step reads no counters and waits for nothing."""
    meter = gil_wait.GilWait()
    with spinning() as worker:
        meter.pool = _Pool(worker)
        meter.pool.submitted += 1  # Its second call is running.
        wall, held, cpu = step(meter)
        assert 0.1 * wall < held <= wall - cpu + 0.001
        meter.pool.finished[worker.ident] += 1
        assert meter.start(time.perf_counter()) is None
        assert meter.stop(None, time.perf_counter()) == 0.0


def test_a_thread_outside_keras_s_pool_is_metered_while_the_pool_is_idle():
    """Keras's worker idle, but another Python thread running (a user's,
    an input pipeline's): the step's wait for it is measured."""
    meter = gil_wait.GilWait()
    stop = threading.Event()
    idle = threading.Thread(target=stop.wait, daemon=True)
    idle.start()
    try:
        meter.pool = _Pool(idle)
        with spinning():
            wall, held, cpu = step(meter)
    finally:
        stop.set()
        idle.join()
    assert 0.1 * wall < held <= wall - cpu + 0.001
