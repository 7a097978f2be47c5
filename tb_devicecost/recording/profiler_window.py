"""One profiler trace window: capture, step markers, and our digest of it.

A window covers global steps `[start, stop)`. Either we start and stop the
backend's profiler around it (`Backend.profiler()`, in each backend's
module), or `keras.callbacks.TensorBoard(profile_batch=...)`
already traces the fit and we use its capture. Each step in the window
carries a step marker with its global step number, and after the window
its trace is read back and digested (`tb_devicecost.traces.trace`,
`tb_devicecost.traces.torch_trace`):

- TensorFlow: `tf.profiler.experimental` writes
  `<run>/plugins/profile/<capture>/<host>.xplane.pb`; the marker
  (`train`, `step_num`) spans the step, from its fetch until its results
  are on the host.
- JAX: `jax.profiler.start_trace` (without its Python tracer, like
  TensorFlow's default) writes the same layout; the marker is
  `jax.profiler.StepTraceAnnotation("train", step_num=...)` around the
  step's dispatch, its fetch marked `devicecost_fetch` inside.
- PyTorch: `torch.profiler.profile` (CPU, and CUDA where available)
  exports a Chrome trace to
  `<run>/plugins/devicecost_torch/<capture>/<host>.pt.trace.json.gz`; the
  marker is `record_function("ProfilerStep#<step>")` around the dispatch.

On JAX and PyTorch the step is dispatched asynchronously, so its
completion is marked too (`devicecost_done`), where Keras reads the step's
results on its worker threads. The profiler starts before the window's
first step is dispatched (on PyTorch before the step before, whose
dispatch is followed by the first step's fetch) and stops before the step
after the window is dispatched, each time once Keras has reported every
step dispatched so far complete: its start and stop then fall between
steps, and their time is kept out of our records
(`profiling.TraceSchedule`, which chooses the windows).
"""

import os
import threading
import time

from tb_devicecost import backends
from tb_devicecost.traces import torch_trace
from tb_devicecost.traces import trace as trace_module

SOURCE_DEVICECOST = "tb_devicecost"
SOURCE_KERAS_TENSORBOARD = "keras.callbacks.TensorBoard"
PURPOSE_PROFILE_STEPS = "profile_steps"
PURPOSE_DEVICE_BUSY = "device_busy"
PURPOSE_KERAS_TENSORBOARD = "keras_tensorboard"
FORMAT_XPLANE = trace_module.FORMAT_XPLANE
# How long opening or closing a window waits for Keras to report the step
# before complete (as long as the device takes to finish it); past that the
# profiler starts or stops anyway.
_COMPLETION_TIMEOUT_S = 30.0


class _FetchMarked:
    """Hands out the batches of `iterator`, each fetch in a marker."""

    def __init__(self, iterator, marker):
        self._iterator = iterator
        self._marker = marker

    def __iter__(self):
        return self

    def __next__(self):
        with self._marker():
            return next(self._iterator)


class ProfilerWindow:
    """One traced window of steps, from pending to digested.

    Args:
        start: First global step traced.
        stop: Global step after the last one traced.
        profile_dir: The run directory the trace is written into (ours, or
            the Keras TensorBoard callback's `train` directory).
        source: Who starts the profiler: `SOURCE_DEVICECOST` (we do) or
            `SOURCE_KERAS_TENSORBOARD` (it does; we only mark steps).
        backend: The Keras backend: `"tensorflow"`, `"jax"` or `"torch"`.
        purpose: Why the window is traced: `PURPOSE_PROFILE_STEPS` (the
            user asked; the trace is kept), `PURPOSE_DEVICE_BUSY` (the
            default window of an accelerator run; its files are deleted
            once digested) or `PURPOSE_KERAS_TENSORBOARD`.
    """

    def __init__(
        self,
        start,
        stop,
        profile_dir,
        source=SOURCE_DEVICECOST,
        backend="tensorflow",
        purpose=PURPOSE_PROFILE_STEPS,
    ):
        self.start = start
        self.stop = stop
        self.profile_dir = profile_dir
        self.source = source
        self.backend = backend
        self.purpose = purpose
        self.state = "pending"
        self.error = None
        self._opened_at = None
        self._marker = None
        self._profiler = None
        # Asynchronous dispatch: the global step of each dispatched step not
        # yet reported complete, by the key Keras reports it with, and when
        # the latest report came.
        self._outstanding = {}
        self._last_done = None
        self._completion = threading.Condition()

    @property
    def owns_profiler(self):
        return self.source == SOURCE_DEVICECOST

    @property
    def asynchronous(self):
        return backends.get(self.backend).asynchronous

    @property
    def profiler(self):
        if self._profiler is None:
            self._profiler = backends.get(self.backend).profiler()
        return self._profiler

    def marks(self, step):
        """Whether `step` is traced and marked now."""
        return self.state == "active" and self.start <= step < self.stop

    # Synchronous dispatch (TensorFlow): one call before each step.

    def before_step(self, step):
        """Starts or stops the profiler as `step` begins; opens its marker."""
        if self.state == "pending" and step >= self.start:
            self.begin()
            if self.state != "active":
                return
        if self.state == "active" and step >= self.stop:
            self.finish()
        if self.state == "active":
            self._marker = self.profiler.marker(step)
            self._marker.__enter__()

    def after_step(self):
        """Closes the step's marker once its results are on the host."""
        if self._marker is not None:
            marker, self._marker = self._marker, None
            marker.__exit__(None, None, None)

    def begin(self):
        """Opens the window, starting our profiler; an error ends it."""
        if self.state != "pending":
            return
        self._opened_at = time.time()
        if self.owns_profiler:
            try:
                self.profiler.start(self.profile_dir)
            except Exception as error:  # pylint: disable=broad-except
                # Most often another profiler is already running.
                self.error = f"Could not start the profiler: {type(error).__name__}: {error}"
                self.state = "done"
                return
        self.state = "active"

    # Asynchronous dispatch (JAX, PyTorch).

    def step_marker(self, step):
        """The entered marker of `step`'s dispatch, or `None` when `step`
        is not traced; `close_marker` ends it."""
        if not self.marks(step):
            return None
        marker = self.profiler.marker(step)
        marker.__enter__()
        return marker

    @staticmethod
    def close_marker(marker):
        marker.__exit__(None, None, None)

    def marked_fetches(self, iterator):
        """`iterator` with each fetch marked, where the backend needs it."""
        if not getattr(self.profiler, "marks_fetches", False):
            return iterator
        return _FetchMarked(iterator, self.profiler.fetch_marker)

    def dispatched(self, key, step):
        """Main thread: the step `step` was dispatched; Keras reports its
        completion as `key` (its batch index in the epoch). Only the steps
        from just before the window on are followed."""
        if step < self.start - 2:
            return
        with self._completion:
            self._outstanding[key] = step

    def completed(self, key):
        """A worker thread of Keras (or the main thread when some callback
        is not `async_safe`): the step reported as `key` has its results
        on the host. Marks a traced step's completion."""
        step = self._outstanding.get(key)
        if step is None:
            return
        now = time.perf_counter()
        if self.marks(step):
            done = self.profiler.done_marker(step)
            done.__enter__()
            done.__exit__(None, None, None)
        with self._completion:
            self._outstanding.pop(key, None)
            self._last_done = now if self._last_done is None else max(self._last_done, now)
            self._completion.notify_all()

    def wait_previous(self, timeout=_COMPLETION_TIMEOUT_S):
        """Waits until every step dispatched so far is reported complete
        (Keras's workers may report them out of order).

        Keras hands a step's completion to its workers once the step's
        function returned, so this is called before the next step only.

        Returns:
            When the last of them completed (`time.perf_counter`), or
            `None` when none was followed or the wait timed out.
        """
        deadline = time.monotonic() + timeout
        with self._completion:
            while self._outstanding:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._completion.wait(left)
            return self._last_done

    def finish(self):
        """Ends the window (stopping our profiler); safe to call twice."""
        self.after_step()
        if self.state != "active":
            return
        self.state = "done"
        if self.owns_profiler:
            try:
                self.profiler.stop()
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
            "purpose": self.purpose,
            "backend": self.backend,
            "trace_format": self.profiler.format,
            "profile_run_dir": os.path.abspath(self.profile_dir),
        }
        if self.error:
            entry["error"] = self.error
            return entry
        steps = range(self.start, self.stop)
        if self.profiler.format == torch_trace.FORMAT:
            path = self.profiler.path
            if not path or not os.path.exists(path):
                entry["error"] = (
                    "No trace was found under "
                    f"{torch_trace.trace_dir(self.profile_dir)} after the window: "
                    "the profiler wrote nothing."
                )
                return entry
            entry["trace_file"] = os.path.abspath(path)
            entry["trace_bytes"] = os.path.getsize(path)
            try:
                digest = torch_trace.digest(torch_trace.load(path), steps=steps)
            except trace_module.TraceError as error:
                entry["error"] = str(error)
                return entry
        else:
            # Allow for clock granularity between our timestamp and the file's.
            capture = trace_module.newest_capture(self.profile_dir, after=(self._opened_at or 0) - 2)
            if capture is None:
                entry["error"] = (
                    f"No trace was found under {self.profile_dir}/plugins/profile "
                    "after the window: the profiler wrote nothing."
                )
                return entry
            path, entry["capture"], entry["host"] = capture
            entry["trace_file"] = os.path.abspath(path)
            entry["trace_bytes"] = os.path.getsize(path)
            try:
                digest = trace_module.digest_xspace(
                    trace_module.load_xspace(path), steps=steps, asynchronous=self.asynchronous
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


def keras_tensorboard_window(callbacks, first_step, backend="tensorflow"):
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
            return ProfilerWindow(
                first_step + start - 1,
                first_step + stop,
                callback._train_dir,
                source=SOURCE_KERAS_TENSORBOARD,
                backend=backend,
                purpose=PURPOSE_KERAS_TENSORBOARD,
            )
    return None
