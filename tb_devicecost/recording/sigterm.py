"""The SIGTERM chain: a terminated fit's step accounting writes what it has.

A job scheduler ends a fit with SIGTERM. `SIGTERM_CHAIN` makes every
`StepAccounting` in a session write its steps and an `"interrupted"`
aggregate first, then hands the signal on as if we were not there.
Internal: `accounting.StepAccounting` tracks itself here for the length of
each session.

Two ways a process can meet the chain without being the fit it serves:

- **A forked child** (a `PyDataset`'s worker processes, a `DataLoader`'s,
  a pool in `__getitem__`) inherits the handler and the accountings. In
  the child, `os.register_at_fork` puts the signal's disposition back and
  forgets every accounting without writing: a child never writes to the
  fit's files and never runs our handler (a pool stopped at an epoch's end
  would otherwise mark a running fit `"interrupted"`). SIGTERM is held back
  in the forking thread until then, so a child terminated as it is born
  dies by the default disposition, not by ours.
- **A fit stuck in C** (TensorFlow waiting in an iterator's `next()`)
  never runs a Python handler: Python runs handlers between bytecodes of
  the main thread. A thread of ours reads the signal numbers Python's C
  handler writes to a wakeup fd; if the handler has not started within
  `STUCK_GRACE_S`, it writes the runs' `"interrupted"` state itself and,
  where the disposition before ours was the default, ends the process by
  SIGTERM as it would have ended without the callback.
"""

import ctypes
import os
import signal
import threading
import weakref

from tb_devicecost.backends import gil_wait

# How long the main thread has to start our handler before it counts as
# stuck in C code.
STUCK_GRACE_S = 1.0


class SigtermChain:
    """On SIGTERM, every `StepAccounting` in a session writes what it has and
    marks its run `"interrupted"`; then the signal goes on as if we were
    not there: to the handler installed before ours, or, for the default
    disposition, the process ends by the signal as it would have.

    Installed (from the main thread only) while some `StepAccounting` is in a
    session, and put back when the last one ends, unless someone installed
    another handler since. A handler set from C code, or SIGTERM ignored,
    is left alone: nothing would run ours, or the process is not ending.
    """

    def __init__(self):
        self._tracked = weakref.WeakSet()
        self._previous = None
        self._installed = False
        self._watch = None
        # Whoever writes the runs' "interrupted" state first: the handler
        # or the watch; never both.
        self._lock = threading.Lock()
        self._written = False
        self._handler_started = threading.Event()
        self._mask = None

    def track(self, accounting):
        self._tracked.add(accounting)
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        try:
            previous = signal.getsignal(signal.SIGTERM)
            if previous is None or previous == signal.SIG_IGN:
                return
            signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError, AttributeError):
            return
        self._previous, self._installed = previous, True
        self._written = False
        self._handler_started.clear()
        self._watch = _StuckMainWatch.start(self._on_signal_number)

    def untrack(self, accounting):
        self._tracked.discard(accounting)
        if len(self._tracked) or not self._installed:
            return
        if threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._previous)
        except (ValueError, OSError):
            return
        self._stop_watch()
        self._previous, self._installed = None, False

    def _stop_watch(self):
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.stop()

    def _write_interrupted(self):
        with self._lock:
            if self._written:
                return
            self._written = True
        for accounting in list(self._tracked):
            try:
                accounting._interrupted()  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                pass

    def _handle(self, signum, frame):
        self._handler_started.set()
        self._write_interrupted()
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            # End as the default disposition would: by the signal itself.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        # The process lives on (a handler of the user's): a later SIGTERM
        # writes again.
        self._written = False
        self._handler_started.clear()

    def _on_signal_number(self, signum):
        """On the watch's thread: SIGTERM arrived; the handler has
        `STUCK_GRACE_S` to start on the main thread."""
        if signum != signal.SIGTERM or self._handler_started.wait(STUCK_GRACE_S):
            return
        self._write_interrupted()
        if self._previous == signal.SIG_DFL:
            # The main thread is stuck in C: end as a process without our
            # handler would have, by the signal. `signal.signal` is for the
            # main thread only; the C library's `signal` is not.
            _default_disposition(signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
        # A handler of the user's runs when (if) the main thread comes back,
        # as it would have without us.

    def before_fork(self):
        """SIGTERM is held back in the forking thread across `fork()`: a
        child terminated the moment it is born (a pool stopped while it
        replaces a worker) would otherwise run our C-level handler before
        `after_fork_in_child`, and write SIGTERM into the wakeup pipe it
        shares with us, for our watch to take as the fit's own."""
        if self._installed:
            try:
                self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            except (AttributeError, OSError, ValueError):
                self._mask = None

    def after_fork_in_parent(self):
        mask, self._mask = self._mask, None
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def after_fork_in_child(self):
        """In a forked child: the parent's accountings are forgotten without
        a write, and SIGTERM goes back to what it was before ours; a SIGTERM
        held back since the fork then ends the child as it would have."""
        mask, self._mask = self._mask, None
        try:
            self._forget_in_child()
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def _forget_in_child(self):
        tracked, self._tracked = list(self._tracked), weakref.WeakSet()
        for accounting in tracked:
            try:
                accounting._forget_in_child()  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                pass
        self._watch = None
        _StuckMainWatch.forget_in_child()
        if self._installed:
            try:
                if signal.getsignal(signal.SIGTERM) == self._handle:
                    signal.signal(signal.SIGTERM, self._previous)
            except (ValueError, OSError):
                _default_disposition(signal.SIGTERM)
            self._previous, self._installed = None, False
        self._lock = threading.Lock()
        self._written = False
        self._handler_started = threading.Event()


class _StuckMainWatch:
    """A daemon thread reading the signal numbers Python's C-level handler
    writes to `signal.set_wakeup_fd`, which it does whatever the main
    thread is doing. Not started where another wakeup fd is set (an
    asyncio loop's): that one is left alone, and a fit stuck in C then
    needs SIGKILL, as before.

    One thread and pipe serve every fit of the process: a fit claims the
    wakeup fd at its start and gives it back at its end, and starts no
    thread (starting and joining one took about a millisecond a fit, a
    share of a short fit's wall time on a slow host)."""

    _shared = None

    def __init__(self, read_fd, write_fd):
        self._read_fd, self._write_fd = read_fd, write_fd
        self._pid = os.getpid()
        self._on_signal_number = None
        self._thread = threading.Thread(
            target=self._run, name="tb_devicecost-sigterm", daemon=True
        )

    @classmethod
    def start(cls, on_signal_number):
        """The process's watch, its pipe made the wakeup fd and
        `on_signal_number` called for each signal; `None` where another
        wakeup fd is set or none can be."""
        if os.name != "posix":
            return None
        watch = cls._shared
        if watch is None or watch._pid != os.getpid() or not watch._thread.is_alive():
            read_fd, write_fd = os.pipe()
            try:
                os.set_blocking(write_fd, False)
            except OSError:
                _close(read_fd)
                _close(write_fd)
                return None
            watch = cls(read_fd, write_fd)
            watch._thread.start()
            # Asleep on its pipe: no GIL a step's meter need read.
            gil_wait.never_holds_gil(watch._thread)
            cls._shared = watch
        try:
            previous = signal.set_wakeup_fd(watch._write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            return None
        if previous not in (-1, watch._write_fd):
            signal.set_wakeup_fd(previous)
            return None
        watch._on_signal_number = on_signal_number
        return watch

    def _run(self):
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except InterruptedError:
                continue
            except OSError:
                return
            if not data:
                return
            for signum in data:
                try:
                    if self._on_signal_number is not None:
                        self._on_signal_number(signum)
                except Exception:  # pylint: disable=broad-except
                    pass

    def stop(self):
        """Puts the wakeup fd back (unless someone replaced ours); the
        thread stays, asleep on the pipe, for the next fit (main thread
        only)."""
        self._on_signal_number = None
        self._release_wakeup_fd()

    @classmethod
    def forget_in_child(cls):
        """In a forked child, which has no such thread: the child's signals
        must not reach the parent's watch through the shared pipe."""
        watch, cls._shared = cls._shared, None
        if watch is not None:
            watch._release_wakeup_fd()
            _close(watch._write_fd)
            _close(watch._read_fd)

    def _release_wakeup_fd(self):
        """No wakeup fd, unless someone replaced ours: theirs stays."""
        try:
            current = signal.set_wakeup_fd(-1)
            if current not in (-1, self._write_fd):
                signal.set_wakeup_fd(current)
        except (ValueError, OSError):
            pass


def _close(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def _default_disposition(signum):
    """SIGTERM's default disposition, from any thread."""
    try:
        ctypes.CDLL(None, use_errno=True).signal(signum, 0)  # SIG_DFL
    except (OSError, AttributeError):
        pass


SIGTERM_CHAIN = SigtermChain()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=SIGTERM_CHAIN.before_fork,
        after_in_parent=SIGTERM_CHAIN.after_fork_in_parent,
        after_in_child=SIGTERM_CHAIN.after_fork_in_child,
    )
