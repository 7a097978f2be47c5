"""Profiler trace windows: capture, step markers, and our digest of them.

A window covers global steps `[start, stop)`. Either we start and stop
TensorFlow's profiler around it (the trace lands in the run directory, where
the Profile tab finds it), or `keras.callbacks.TensorBoard(profile_batch=...)`
already traces the fit and we use its capture. Either way each step in the
window is wrapped in the profiler's step marker (`train`, with the global
step number), and after the window its trace is read back and digested
(`tb_devicecost.trace`).
"""

import os
import time
import warnings

from tb_devicecost import metadata
from tb_devicecost import trace as trace_module

SOURCE_DEVICECOST = "tb_devicecost"
SOURCE_KERAS_TENSORBOARD = "keras.callbacks.TensorBoard"


class TraceWindow:
    """One traced window of steps, from pending to digested.

    Args:
        start: First global step traced.
        stop: Global step after the last one traced.
        profile_dir: The run directory the trace is written into (ours, or
            the Keras TensorBoard callback's `train` directory).
        source: Who starts the profiler: `SOURCE_DEVICECOST` (we do) or
            `SOURCE_KERAS_TENSORBOARD` (it does; we only mark steps).
    """

    def __init__(self, start, stop, profile_dir, source=SOURCE_DEVICECOST):
        self.start = start
        self.stop = stop
        self.profile_dir = profile_dir
        self.source = source
        self.state = "pending"
        self.error = None
        self._opened_at = None
        self._marker = None

    @property
    def owns_profiler(self):
        return self.source == SOURCE_DEVICECOST

    def before_step(self, step):
        """Starts or stops the profiler as `step` begins; opens its marker."""
        import tensorflow as tf

        if self.state == "pending" and step >= self.start:
            self._opened_at = time.time()
            if self.owns_profiler:
                try:
                    tf.profiler.experimental.start(self.profile_dir)
                except Exception as error:  # pylint: disable=broad-except
                    # Most often another profiler is already running.
                    self.error = f"Could not start the profiler: {type(error).__name__}: {error}"
                    self.state = "done"
                    return
            self.state = "active"
        if self.state == "active" and step >= self.stop:
            self.finish()
        if self.state == "active":
            self._marker = tf.profiler.experimental.Trace(
                trace_module.MARKER_NAME, step_num=step, _r=1
            )
            self._marker.__enter__()

    def after_step(self):
        """Closes the step's marker once its results are on the host."""
        if self._marker is not None:
            marker, self._marker = self._marker, None
            marker.__exit__(None, None, None)

    def finish(self):
        """Ends the window (stopping our profiler); safe to call twice."""
        self.after_step()
        if self.state != "active":
            return
        self.state = "done"
        if self.owns_profiler:
            import tensorflow as tf

            try:
                tf.profiler.experimental.stop()
            except Exception as error:  # pylint: disable=broad-except
                self.error = f"Could not stop the profiler: {type(error).__name__}: {error}"

    def document(self):
        """The window's entry in the `devicecost/trace` document.

        Reads and digests the capture; a missing or unreadable trace gives
        an entry whose `error` says why, never an exception.
        """
        entry = {
            "start_step": self.start,
            "stop_step": self.stop,
            "source": self.source,
            "profile_run_dir": os.path.abspath(self.profile_dir),
        }
        if self.error:
            entry["error"] = self.error
            return entry
        # Allow for clock granularity between our timestamp and the file's.
        capture = trace_module.newest_capture(self.profile_dir, after=(self._opened_at or 0) - 2)
        if capture is None:
            entry["error"] = (
                f"No trace was found under {self.profile_dir}/plugins/profile "
                "after the window: the profiler wrote nothing."
            )
            return entry
        path, entry["capture"], entry["host"] = capture
        entry["trace_bytes"] = os.path.getsize(path)
        try:
            digest = trace_module.digest_xspace(
                trace_module.load_xspace(path), steps=range(self.start, self.stop)
            )
        except trace_module.TraceError as error:
            entry["error"] = str(error)
            return entry
        entry.update(digest)
        if "device_busy_fraction" in digest["summary"]:
            entry["device_busy_fraction"] = digest["summary"]["device_busy_fraction"]
        if not digest["steps"]:
            entry["error"] = (
                "The trace holds no step markers for these steps, so it cannot "
                "be cut into steps."
            )
        return entry


def keras_tensorboard_window(callbacks, first_step):
    """The window traced by a `keras.callbacks.TensorBoard` among `callbacks`.

    Keras counts batches from 1 in each fit and traces batches
    `start..stop`; in our global steps that is
    `[first_step + start - 1, first_step + stop)`.
    """
    import keras

    for callback in callbacks:
        if not isinstance(callback, keras.callbacks.TensorBoard):
            continue
        start = getattr(callback, "_start_batch", 0)
        stop = getattr(callback, "_stop_batch", 0)
        if getattr(callback, "_should_trace", False) and start > 0:
            return TraceWindow(
                first_step + start - 1,
                first_step + stop,
                callback._train_dir,
                source=SOURCE_KERAS_TENSORBOARD,
            )
    return None


# Windows kept in the `devicecost/trace` document: a few per run are useful.
_MAX_WINDOWS = 20


class TraceSchedule:
    """Which steps of a run are traced, and the digest of each window.

    One per callback. At most one window of its own is traced (the
    `profile_steps` one), plus the window of any
    `keras.callbacks.TensorBoard(profile_batch=...)` in the same fit, whose
    trace is used instead of starting a second profiler.

    Args:
        profile_steps: `(start, stop)` global steps to trace, or `None`.
    """

    def __init__(self, profile_steps):
        self.profile_steps = profile_steps
        self.window = None
        self._finished = []
        self._entries = []
        self._own_window_done = False
        self._said_external = False

    def begin_fit(self, accounting, callbacks):
        """Chooses the window of the fit that starts now, if any."""
        first_step = accounting.upcoming_step()
        self.window = self._window_for(first_step, callbacks, accounting.run_dir)
        if self.window is not None:
            accounting.watch_steps(range(self.window.start, self.window.stop))

    def _window_for(self, first_step, callbacks, run_dir):
        external = keras_tensorboard_window(callbacks, first_step)
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
            return None
        start, stop = self.profile_steps
        if stop <= first_step:
            return None
        return TraceWindow(start, stop, run_dir)

    def before_step(self, accounting):
        """Starts or stops the profiler before a step, outside its time."""
        started = time.perf_counter()
        window = self.window
        try:
            window.before_step(accounting.upcoming_step())
        except Exception as error:  # pylint: disable=broad-except
            window.error = f"Tracing failed: {type(error).__name__}: {error}"
            window.state = "done"
        if window.state == "done":
            self.end_fit()
        accounting.exclude(time.perf_counter() - started)

    def end_fit(self):
        """Ends the fit's window, if one is open."""
        window, self.window = self.window, None
        if window is None:
            return
        window.finish()
        if window.owns_profiler:
            self._own_window_done = True
        self._finished.append(window)

    def stop(self):
        """Stops any profiler we started, without digesting."""
        window, self.window = self.window, None
        if window is not None:
            window.finish()

    def digest(self, accounting):
        """Writes finished windows' digests into `devicecost/trace`."""
        if not self._finished:
            return
        windows, self._finished = self._finished, []
        ours = {entry["step"]: entry for entry in accounting.watched_steps()}
        for window in windows:
            entry = window.document()
            # Our own numbers for the same steps, to set beside the trace's.
            entry["recorded_steps"] = [
                ours[step] for step in range(window.start, window.stop) if step in ours
            ]
            self._entries.append(entry)
        del self._entries[:-_MAX_WINDOWS]
        accounting.write_document(metadata.TAG_TRACE, {"windows": list(self._entries)})
