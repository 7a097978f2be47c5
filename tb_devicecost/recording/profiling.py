"""Which steps of a run are profiled, and the `devicecost/trace` document.

`TraceSchedule` chooses a run's trace windows
(`profiler_window.ProfilerWindow`): the `profile_steps` one,
`keras.callbacks.TensorBoard(profile_batch=...)`'s, or the default
device-busy window of an accelerator run (`trace_budget`), opens and closes
them between steps, and writes their digests.
"""

import os
import shutil
import time
import warnings

from tb_devicecost import backends
from tb_devicecost.format import metadata
from tb_devicecost.recording import trace_budget
from tb_devicecost.recording.profiler_window import FORMAT_XPLANE  # noqa: F401 (re-exported)
from tb_devicecost.recording.profiler_window import PURPOSE_DEVICE_BUSY
from tb_devicecost.recording.profiler_window import PURPOSE_KERAS_TENSORBOARD  # noqa: F401 (re-exported)
from tb_devicecost.recording.profiler_window import PURPOSE_PROFILE_STEPS  # noqa: F401 (re-exported)
from tb_devicecost.recording.profiler_window import SOURCE_DEVICECOST  # noqa: F401 (re-exported)
from tb_devicecost.recording.profiler_window import SOURCE_KERAS_TENSORBOARD  # noqa: F401 (re-exported)
from tb_devicecost.recording.profiler_window import ProfilerWindow
from tb_devicecost.recording.profiler_window import keras_tensorboard_window

# The default window of a run whose step runs on an accelerator: at most
# this many steps, starting at least this many steps into the fit (past its
# warm-up), and only once the run has trained long enough to carry its cost
# (`trace_budget`: at most 1% of the run's wall time).
DEVICE_BUSY_OFFSET = 10
DEVICE_BUSY_STEPS = 10
# Windows kept in the `devicecost/trace` document: a few per run are useful.
_MAX_WINDOWS = 20


class TraceSchedule:
    """Which steps of a run are traced, and the digest of each window.

    One per callback. At most one window of its own is traced (the
    `profile_steps` one), plus the window of any
    `keras.callbacks.TensorBoard(profile_batch=...)` in the same fit, whose
    trace is used instead of starting a second profiler.

    When the step runs on an accelerator and nothing else traces the run,
    it traces up to `DEVICE_BUSY_STEPS` steps of its own (once per run),
    for the device's busy share: the evidence of a `latency_bound` verdict.
    That trace is digested and its files deleted. With `device_busy="auto"`
    the window opens only once its expected cost is at most 1% of the
    run's wall time so far (`trace_budget.BusyBudget`), and a run too short
    for that is not traced: the trace document says so (`device_busy`).
    With `True` it opens `DEVICE_BUSY_OFFSET` steps into the fit.

    Args:
        profile_steps: `(start, stop)` global steps to trace, or `None`.
        device_busy: `"auto"` (trace the device-busy window when the step
            runs on an accelerator), `True` (on any device) or `False`.
    """

    def __init__(self, profile_steps, device_busy="auto"):
        self.profile_steps = profile_steps
        self.device_busy = device_busy
        # Whether the step runs on an accelerator: known after the first step.
        self.accelerated = None
        self._busy_done = False
        self._fit = None
        self.window = None
        self._finished = []
        self._entries = []
        self._own_window_done = False
        self._said_external = False
        # The default window's budget (`"auto"` only), and what the trace
        # document says of a window not opened yet.
        self._budget = None
        self._busy_note = None
        self._note_changed = False

    def begin_fit(self, accounting, callbacks, backend="tensorflow"):
        """Chooses the window of the fit that starts now, if any.

        Under asynchronous dispatch a window that starts with the fit's
        first step opens now, before any step.
        """
        first_step = accounting.upcoming_step()
        self._fit = (accounting, first_step, backend)
        self.window = self._window_for(first_step, callbacks, accounting.run_dir, backend)
        window = self.window
        if window is not None:
            self._prepare(accounting)
            if window.asynchronous:
                self.before_async_step(first_step)

    def _prepare(self, accounting):
        window = self.window
        accounting.watch_steps(range(window.start, window.stop))
        if window.owns_profiler and window.state == "pending":
            backends.get(window.backend).prepare_profiler()

    def found_device(self, accelerated):
        """After the fit's first step: whether the step ran on an
        accelerator. Schedules the device-busy window in this fit when
        nothing else traces it (the caller keeps this call's time out of
        the records)."""
        if self.accelerated is None:
            self.accelerated = bool(accelerated)
        if self.window is None and self._fit is not None:
            accounting, first_step, backend = self._fit
            self.window = self._busy_window(first_step, accounting.run_dir, backend)
            if self.window is not None:
                self._prepare(accounting)
                if self.device_busy == "auto" and self._budget is None:
                    self._budget = trace_budget.BusyBudget(
                        backend, first_step + DEVICE_BUSY_OFFSET, DEVICE_BUSY_STEPS
                    )
                    self._budget.started(accounting.upcoming_step(), time.perf_counter())

    def _budget_allows(self, step):
        """Whether the pending window may open before `step` (the step it
        would start at). A default window the run cannot carry yet moves
        to the step its budget names (`trace_budget`); one that opens is
        cut to the budget's step count."""
        window = self.window
        if (
            self._budget is None
            or window.purpose != PURPOSE_DEVICE_BUSY
            or window.state != "pending"
        ):
            return True
        plan = self._budget.plan(step, time.perf_counter())
        if plan is None:
            window.start, window.stop = step + 1, step + 1 + (window.stop - window.start)
            allowed = False
        else:
            start, stop = plan
            allowed = start <= step
            window.start, window.stop = (step, step + stop - start) if allowed else plan
        if self._fit is not None:
            self._fit[0].watch_steps(range(window.start, window.stop))
        return allowed

    def _busy_window(self, first_step, run_dir, backend):
        wanted = self.device_busy is True or (
            self.device_busy == "auto" and self.accelerated
        )
        if not wanted or self._busy_done or self.profile_steps is not None:
            return None
        start = first_step + DEVICE_BUSY_OFFSET
        return ProfilerWindow(
            start, start + DEVICE_BUSY_STEPS, run_dir, backend=backend,
            purpose=PURPOSE_DEVICE_BUSY,
        )

    def _window_for(self, first_step, callbacks, run_dir, backend):
        external = keras_tensorboard_window(callbacks, first_step, backend)
        if external is not None:
            if not self._said_external:
                self._said_external = True
                dropped = ""
                if self.profile_steps is not None:
                    start, stop = self.profile_steps
                    dropped = (
                        f" Your profile_steps=({start}, {stop}) window is "
                        f"dropped: steps {external.start} to {external.stop - 1} "
                        "are traced instead."
                    )
                warnings.warn(
                    "DeviceCostCallback: keras.callbacks.TensorBoard("
                    "profile_batch=...) traces this fit, so no second profiler "
                    "is started: its trace is marked and digested instead."
                    + dropped,
                    stacklevel=4,
                )
            return external
        if self.profile_steps is None or self._own_window_done:
            return self._busy_window(first_step, run_dir, backend)
        start, stop = self.profile_steps
        if stop <= first_step:
            return None
        return ProfilerWindow(start, stop, run_dir, backend=backend)

    def before_step(self, accounting):
        """Starts or stops the profiler before a step, outside its time."""
        started = time.perf_counter()
        window = self.window
        step = accounting.upcoming_step()
        try:
            if window.state == "pending" and step >= window.start and not (
                self._budget_allows(step)
            ):
                accounting.exclude(time.perf_counter() - started)
                return
            window.before_step(step)
        except Exception as error:  # pylint: disable=broad-except
            window.error = f"Tracing failed: {type(error).__name__}: {error}"
            window.state = "done"
        if window.state == "done":
            self.end_fit()
        accounting.exclude(time.perf_counter() - started)

    def before_async_step(self, step):
        """Asynchronous dispatch, main thread, before train step `step` is
        dispatched: opens the window at its first step, closes it at the
        step after its last.

        Before our profiler starts or stops, it waits for Keras to report
        the step before complete (the device done with it, and its
        completion marked inside the trace), so the profiler's cost falls
        between steps, where the caller keeps it out of the records.

        Returns:
            `None` when nothing was done, else `(began, ended, previous)`:
            when this call began and ended and when the step before
            completed (`None` if unknown), on `time.perf_counter`.
        """
        window = self.window
        if window is None:
            return None
        # PyTorch fetches a step's batch before its dispatch, where this is
        # called: the profiler starts a step early to see that fetch.
        lead = backends.get(window.backend).profiler_lead
        opening = window.state == "pending" and step + lead >= window.start
        closing = window.state == "active" and step >= window.stop
        if opening and not self._budget_allows(step + lead):
            return None
        if not (opening or closing):
            return None
        began = time.perf_counter()
        previous = None
        try:
            if window.owns_profiler:
                previous = window.wait_previous()
            if opening:
                window.begin()
            if window.state == "active" and step >= window.stop:
                window.finish()
        except Exception as error:  # pylint: disable=broad-except
            window.error = f"Tracing failed: {type(error).__name__}: {error}"
            window.state = "done"
        if window.state == "done":
            self.end_fit()
        return began, time.perf_counter(), previous

    def end_fit(self):
        """Ends the fit's window, if one is open. A window that the fit
        did not reach waits for the next fit."""
        window, self.window = self.window, None
        fit, self._fit = self._fit, None
        if window is not None and window.state == "pending":
            if window.purpose == PURPOSE_DEVICE_BUSY and self._budget is not None:
                # Too short a run so far: say so, with the figures.
                if fit is not None:
                    self._budget.plan(fit[0].upcoming_step(), time.perf_counter())
                self._busy_note = self._budget.note()
                self._note_changed = True
            return
        if window is None:
            return
        window.finish()
        if window.purpose == PURPOSE_DEVICE_BUSY:
            self._busy_done = True
            self._busy_note, self._note_changed = None, True
        elif window.owns_profiler:
            self._own_window_done = True
        self._finished.append(window)

    def stop(self):
        """Stops any profiler we started, without digesting."""
        window, self.window = self.window, None
        if window is not None:
            window.finish()

    def digest(self, accounting):
        """Writes finished windows' digests into `devicecost/trace`, and
        what it says of a default window not opened yet (`device_busy`)."""
        if not self._finished and not self._note_changed:
            return
        self._note_changed = False
        windows, self._finished = self._finished, []
        ours = {entry["step"]: entry for entry in accounting.watched_steps()}
        for window in windows:
            entry = window.document()
            if window.purpose == PURPOSE_DEVICE_BUSY:
                # Nobody asked for these files: the digest is what we keep.
                entry["trace_deleted"] = _delete_capture(entry)
                if entry.get("error"):
                    # Nobody asked for the window either: one that traced
                    # no step (the fit ended first) is tried again in a
                    # later fit, and not reported.
                    self._busy_done = False
                    continue
            # Our own numbers for the same steps, to set beside the trace's.
            entry["recorded_steps"] = [
                ours[step] for step in range(window.start, window.stop) if step in ours
            ]
            self._entries.append(entry)
        del self._entries[:-_MAX_WINDOWS]
        document = {"windows": list(self._entries)}
        if self._busy_note is not None:
            document["device_busy"] = dict(self._busy_note)
        accounting.write_document(metadata.TAG_TRACE, document)


def _delete_capture(entry):
    """Deletes the files of a digested window (its capture directory, and
    the plugin directories above it if that leaves them empty). Returns
    whether it was deleted."""
    path = entry.get("trace_file")
    if not path:
        return False
    capture_dir = os.path.dirname(path)
    run_dir = os.path.abspath(entry["profile_run_dir"])
    # Only ever below the run's own plugins directory.
    plugins = os.path.join(run_dir, "plugins") + os.sep
    if not os.path.abspath(capture_dir).startswith(plugins):
        return False
    try:
        shutil.rmtree(capture_dir)
    except OSError:
        return False
    for directory in (os.path.dirname(capture_dir), plugins.rstrip(os.sep)):
        try:
            os.rmdir(directory)  # only when empty
        except OSError:
            break
    entry.pop("trace_file", None)
    return True
