"""Profiler trace windows: capture, step markers, and our digest of them.

A window covers global steps `[start, stop)`. Either we start and stop the
backend's profiler around it, or `keras.callbacks.TensorBoard(profile_batch=...)`
already traces the fit and we use its capture. Each step in the window
carries a step marker with its global step number, and after the window
its trace is read back and digested (`tb_devicecost.trace`,
`tb_devicecost.torch_trace`):

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
steps, and their time is kept out of our records.
"""

import os
import shutil
import threading
import time
import warnings

from tb_devicecost import metadata
from tb_devicecost import torch_trace
from tb_devicecost import trace as trace_module
from tb_devicecost import trace_budget

SOURCE_DEVICECOST = "tb_devicecost"
SOURCE_KERAS_TENSORBOARD = "keras.callbacks.TensorBoard"
PURPOSE_PROFILE_STEPS = "profile_steps"
PURPOSE_DEVICE_BUSY = "device_busy"
PURPOSE_KERAS_TENSORBOARD = "keras_tensorboard"
# The default window of a run whose step runs on an accelerator: at most
# this many steps, starting at least this many steps into the fit (past its
# warm-up), and only once the run has trained long enough to carry its cost
# (`trace_budget`: at most 1% of the run's wall time).
DEVICE_BUSY_OFFSET = 10
DEVICE_BUSY_STEPS = 10
FORMAT_XPLANE = "xplane"
ASYNCHRONOUS_BACKENDS = ("jax", "torch")
# How long opening or closing a window waits for Keras to report the step
# before complete (as long as the device takes to finish it); past that the
# profiler starts or stops anyway.
_COMPLETION_TIMEOUT_S = 30.0


class _TensorFlowProfiler:
    format = FORMAT_XPLANE

    def start(self, run_dir):
        import tensorflow as tf

        tf.profiler.experimental.start(run_dir)

    def stop(self):
        import tensorflow as tf

        tf.profiler.experimental.stop()

    def marker(self, step):
        import tensorflow as tf

        return tf.profiler.experimental.Trace(trace_module.MARKER_NAME, step_num=step, _r=1)


class _JaxProfiler:
    format = FORMAT_XPLANE

    def __init__(self):
        import jax

        self._profiler = jax.profiler

    def start(self, run_dir):
        options_type = getattr(self._profiler, "ProfileOptions", None)
        if options_type is None:  # JAX before ProfileOptions
            self._profiler.start_trace(run_dir)
            return
        options = options_type()
        # JAX traces every Python call by default, which slows the host
        # several times over; TensorFlow's profiler does not.
        options.python_tracer_level = 0
        self._profiler.start_trace(run_dir, profiler_options=options)

    def stop(self):
        self._profiler.stop_trace()

    def marker(self, step):
        return self._profiler.StepTraceAnnotation(trace_module.MARKER_NAME, step_num=step)

    marks_fetches = True

    def fetch_marker(self):
        return self._profiler.TraceAnnotation(trace_module.FETCH_MARKER_NAME)

    def done_marker(self, step):
        return self._profiler.TraceAnnotation(trace_module.DONE_MARKER_NAME, step_num=step)


class _TorchProfiler:
    format = torch_trace.FORMAT

    def __init__(self):
        import torch

        self._torch = torch
        self._profile = None
        self.path = None

    def start(self, run_dir):
        torch = self._torch
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # Keras reads each step's results on a worker thread, where the
        # completion marker is; by default only the thread that starts the
        # profiler is recorded. `trace_only` skips building Python objects
        # of the events when the profiler stops (we export the trace only).
        config = None
        for options in ({"profile_all_threads": True, "trace_only": True}, {"profile_all_threads": True}):
            try:
                config = torch._C._profiler._ExperimentalConfig(**options)
                break
            except (AttributeError, TypeError):
                continue
        profile = torch.profiler.profile(activities=activities, experimental_config=config)
        profile.start()
        self._profile = profile
        self.path = torch_trace.new_trace_path(run_dir, time.time())

    def stop(self):
        profile, self._profile = self._profile, None
        if profile is None:
            return
        profile.stop()
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        profile.export_chrome_trace(self.path)

    def marker(self, step):
        return self._torch.profiler.record_function(f"{torch_trace.MARKER_PREFIX}{step}")

    # The DataLoader marks its own fetches, outside the step's dispatch.
    marks_fetches = False

    def done_marker(self, step):
        return self._torch.profiler.record_function(f"{torch_trace.DONE_PREFIX}{step}")


_TORCH_WARM = []


def warm_up_torch_profiler():
    """Starts and stops `torch.profiler` once per process, as the fit
    begins: the first start takes about a second (Kineto's set-up), later
    ones under a millisecond. Keras's TensorBoard callback does the same."""
    if _TORCH_WARM:
        return
    _TORCH_WARM.append(True)
    try:
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profile = torch.profiler.profile(activities=activities)
        profile.start()
        profile.stop()
    except Exception:  # pylint: disable=broad-except
        pass


def _profiler_for(backend):
    if backend == "jax":
        return _JaxProfiler()
    if backend == "torch":
        return _TorchProfiler()
    return _TensorFlowProfiler()


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


class TraceWindow:
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
        return self.backend in ASYNCHRONOUS_BACKENDS

    @property
    def profiler(self):
        if self._profiler is None:
            self._profiler = _profiler_for(self.backend)
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
            return TraceWindow(
                first_step + start - 1,
                first_step + stop,
                callback._train_dir,
                source=SOURCE_KERAS_TENSORBOARD,
                backend=backend,
                purpose=PURPOSE_KERAS_TENSORBOARD,
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
        if window.backend == "torch" and window.owns_profiler and window.state == "pending":
            warm_up_torch_profiler()

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
        return TraceWindow(
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
        return TraceWindow(start, stop, run_dir, backend=backend)

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
        lead = 1 if window.backend == "torch" else 0
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
