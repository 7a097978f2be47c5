"""The SIGTERM chain: a terminated fit's step accounting writes what it has.

A job scheduler ends a fit with SIGTERM. `SIGTERM_CHAIN` makes every
`StepAccounting` in a session write its steps and an `"interrupted"`
aggregate first, then hands the signal on as if we were not there.
Internal: `accounting.StepAccounting` tracks itself here for the length of
each session.
"""

import os
import signal
import threading
import weakref


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
        self._previous, self._installed = None, False

    def _handle(self, signum, frame):
        for accounting in list(self._tracked):
            try:
                accounting._interrupted()  # pylint: disable=protected-access
            except Exception:  # pylint: disable=broad-except
                pass
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            # End as the default disposition would: by the signal itself.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


SIGTERM_CHAIN = SigtermChain()
