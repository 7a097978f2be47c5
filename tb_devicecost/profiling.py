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
            self._marker = tf.profiler.experimental.Trace("train", step_num=step, _r=1)
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
