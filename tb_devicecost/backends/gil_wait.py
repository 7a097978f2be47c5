"""How long a step on the training thread waited for Python's GIL.

A step that runs on the training thread (PyTorch on the CPU) gives the GIL
up around each kernel and must take it back for its next line of Python.
When other Python threads of the process hold it (a `PyDataset`'s worker
threads decoding and augmenting in Python), the step waits, on a machine
with cores to spare often for most of its time: a 6.5 ms step read 62 ms
on an H100 host beside four such workers. That wait is not the model's
work.

It is measured from what the kernel keeps per thread, with no thread of
ours and nothing that needs the GIL:

- the training thread's time asleep during the step: its wall time less
  its own CPU time (`time.thread_time`) and its time runnable but waiting
  for a core (the second field of `/proc/thread-self/schedstat`), so a
  busy machine's preemption is not counted;
- the time the process's other Python threads ran or were runnable
  meanwhile (their CPU time, `time.pthread_getcpuclockid`, and their time
  waiting for a core, `/proc/self/task/<tid>/schedstat`: a thread
  preempted while it holds the GIL still holds it), the most they can
  have held the GIL.

The wait is the smaller of the two: asleep while no other Python thread
ran (a barrier of PyTorch's intra-op thread pool) is not a GIL wait, nor is
another thread's work while the step ran. Asleep at such a barrier while
another Python thread does run is counted: the meter cannot tell the two
sleeps apart, so it can read high by the barrier's waits (about 1.5 ms of
a 9.5 ms step of the demo's CNN on a 2-core machine). Where the kernel offers neither
(not Linux), the meter reads 0 and the step keeps its wall time as before.

Where the only other Python threads are Keras's callback workers and
none has a batch-end call to run (`GilWait.pool`: the loop clock counts
the calls handed to them and those finished), nothing can hold the GIL
during the step: the meter reads nothing and the wait is 0, which saves a
default PyTorch step on the CPU its dozen system calls (12.5 of the 21 µs
the callback's own code took a step on this project's CPU). A worker's
last microseconds of a call, after it (Keras's future set done), are not
metered then.

Where the other threads are an input pipeline's (`after_release=True`),
the waiter's own timeout counts too: a thread waiting for the GIL is woken
when a holder releases it, but with several waiters the release wakes one
of them, and a thread not woken sleeps until its timeout, one switch
interval (`sys.getswitchinterval()`, 5 ms) after it began to wait. Beside a
pool's threads handing batches over, the training thread slept 5.1 ms of a
5.3 ms dispatch while they ran 1.1 ms between them (JAX on the CPU). So
once another thread ran, up to one interval more is a wait for the GIL.
"""

import os
import sys
import threading
import time
import weakref


class _ActiveCount:
    """`len()` of it is `threading.active_count()`."""

    def __len__(self):
        return threading.active_count()


# The started Python threads by ident: `threading`'s own table (what
# `threading.active_count()` counts, less the threads still starting), whose
# `len()` reads without that function's lock and frame, twice a step; on a
# Python without it, `threading.active_count()` itself.
_STARTED = getattr(threading, "_active", None)
if not isinstance(_STARTED, dict):
    _STARTED = _ActiveCount()

# Threads of ours that sleep in a system call for the process's life and
# hold the GIL only for a moment when woken (the SIGTERM watch): not
# metered, which saves reading their counters twice a step.
_QUIET = weakref.WeakSet()


def never_holds_gil(thread):
    """Leaves `thread` out of every meter's other threads: a thread of ours
    that waits in a system call and holds the GIL only for a moment when
    woken (`recording/sigterm.py`'s watch)."""
    _QUIET.add(thread)


class GilWait:
    """Measures, per step, the GIL wait of the thread that created it.

    Create it on the training thread; `start` and `stop` are called there.
    Each costs about a microsecond per Python thread of the process.

    Args:
        after_release: Whether the sleep until the waiter's timeout, up to
            one switch interval after another thread ran, is a wait for the
            GIL too (where the other threads are an input pipeline's).
    """

    def __init__(self, after_release=False):
        self._grace = sys.getswitchinterval() if after_release else 0.0
        self._thread = threading.get_ident()
        # Open schedstat files of the other threads, by native thread id,
        # and `(ident, CPU clock id, file)` of each (`_refresh`).
        self._files = {}
        self._threads = []
        self._count = None
        # Keras's callback workers, where known (`keras_loop.LoopClock`:
        # the calls `submitted` to them and those `finished`, by worker),
        # and how many other threads are not among them (`_refresh`).
        self.pool = None
        self._pooled = 0
        self._outside = None
        try:
            # Opened by the training thread: the descriptor reads its own
            # counters whichever thread reads it later.
            self._schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            self._runnable()
            time.pthread_getcpuclockid(self._thread)
        except (OSError, AttributeError, ValueError):
            self._close()

    @property
    def available(self):
        return self._schedstat is not None

    def start(self, now):
        """Readings at the start of a step, at `now` (the loop's clock);
        `None` where the meter is unavailable."""
        fd = self._schedstat
        if fd is None:
            return None
        pool = self.pool
        if pool is not None:
            finished = pool.finished
            if len(_STARTED) != self._count or len(finished) != self._pooled:
                self._refresh()
            if self._outside == 0 and pool.submitted == sum(finished.values()):
                # Only Keras's workers, all idle until the step hands them
                # its logs: no other Python thread can run meanwhile.
                return None
        # `_runnable`, inline: a frame fewer, several times a step.
        return now, time.thread_time(), int(os.pread(fd, 64, 0).split()[1]), self._others()

    def stop(self, started, now, asleep_is_gil=False):
        """Seconds of the step `[started, now]` spent waiting for the GIL.

        `asleep_is_gil`: every sleep of the thread meanwhile was a wait for
        the GIL, once another Python thread ran: where it only launches
        work for a device (a CUDA step's launches sleep for nothing else;
        a full launch queue spins in the driver), so the other threads'
        time need not bound it.
        """
        fd = self._schedstat
        if started is None or fd is None:
            return 0.0
        began, cpu, runnable_ns, others = started
        try:
            runnable = (int(os.pread(fd, 64, 0).split()[1]) - runnable_ns) * 1e-9
            asleep = (now - began) - (time.thread_time() - cpu) - runnable
        except OSError:
            self._close()
            return 0.0
        if asleep <= 0.0:
            return 0.0
        ran = 0.0
        for ident, cpu_now in self._others().items():
            ran += cpu_now - others.get(ident, 0.0)
        if ran > 0.0:
            if asleep_is_gil:
                return asleep
            ran += self._grace
        return max(0.0, min(asleep, ran))

    def _runnable(self):
        # Seconds runnable but not running, cumulative ("run_delay"); the
        # step's reads parse it inline.
        return int(os.pread(self._schedstat, 64, 0).split()[1]) * 1e-9

    def _others(self):
        """Seconds so far that each other Python thread ran or was
        runnable, by ident."""
        if len(_STARTED) != self._count:
            self._refresh()
        times, clock, pread = {}, time.clock_gettime, os.pread
        for ident, clock_id, fd in self._threads:
            try:
                # `_runnable`'s parse, on this thread's file, inline.
                times[ident] = clock(clock_id) + int(pread(fd, 64, 0).split()[1]) * 1e-9
            except (OSError, ValueError):
                self._count = None  # It ended meanwhile: listed again next time.
        return times

    def _refresh(self):
        """The other Python threads' CPU clocks and open schedstat files,
        read again only when the number of threads changed: listing them
        and asking for their clocks every step cost more than reading them
        (issue 36)."""
        threads, files, settled = [], {}, True
        workers = self.pool.finished if self.pool is not None else {}
        self._pooled, outside = len(workers), 0
        for thread in threading.enumerate():
            ident, native = thread.ident, getattr(thread, "native_id", None)
            if ident is None or native is None:
                # Still starting: counted already, so listed again next time.
                settled = False
                outside += 1
                continue
            if ident == self._thread or thread in _QUIET:
                continue
            if ident not in workers:
                outside += 1
            try:
                fd = self._files.pop(native, None)
                if fd is None:
                    fd = os.open(f"/proc/self/task/{native}/schedstat", os.O_RDONLY)
                files[native] = fd
                threads.append((ident, time.pthread_getcpuclockid(ident), fd))
            except (OSError, ValueError):
                settled = False
                continue  # It ended meanwhile.
        # The threads that ended: their files go.
        for fd in self._files.values():
            _close_quietly(fd)
        self._files = files
        self._threads = threads
        self._outside = outside
        self._count = len(_STARTED) if settled else None

    def _close(self):
        fd, self._schedstat = getattr(self, "_schedstat", None), None
        if fd is not None:
            _close_quietly(fd)
        for fd in getattr(self, "_files", {}).values():
            _close_quietly(fd)
        self._files = {}

    def __del__(self):
        self._close()


def _close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


class WaitBetweenSteps:
    """The loop's wait for the GIL between two steps (`GilWait`),
    from one step's return to the next one's dispatch; nothing across a
    boundary of `steps` (an epoch's end), which is no step's.

    Args:
        meter: The training thread's `GilWait`.
        steps: The `AsyncSteps` whose boundaries end a reading.
    """

    def __init__(self, meter, steps):
        self._meter, self._steps = meter, steps
        self._started, self._since = None, 0

    def returned(self, now):
        """A step returned at `now`: the next wait starts."""
        self._started, self._since = self._meter.start(now), self._steps.boundaries

    def until(self, now):
        """Seconds waited for the GIL from the last step's return to `now`."""
        if self._started is None or self._since != self._steps.boundaries:
            return 0.0
        return self._meter.stop(self._started, now)
