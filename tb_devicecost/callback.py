"""`DeviceCostCallback`: per-step cost accounting for `model.fit`."""

import atexit
import collections
import inspect
import os
import time
import warnings
import weakref

import keras

from tb_devicecost import metadata
from tb_devicecost import placement
from tb_devicecost import profiling
from tb_devicecost import recorder as recorder_module
from tb_devicecost import run_info

# The fetch floor is sampled while training, under the same load as the
# real fetches: a few samples after the first step, then one every
# `_FLOOR_SAMPLE_EVERY` steps (about 0.2% of the steps' time, kept out of
# the records), keeping the latest `_FLOOR_SAMPLES`.
_FLOOR_WARM_BATCHES = 3
_FLOOR_FIRST_SAMPLES = 15
_FLOOR_SAMPLE_EVERY = 50
_FLOOR_SAMPLES = 101
# A trace records every op; longer windows make traces too large to open
# (and our digest of them too large to keep).
_MAX_TRACED_STEPS = 1000


class DeviceCostCallback(keras.callbacks.Callback):
    """Records where each training step's time goes, for TensorBoard.

    For every step of `fit` it records how long the step waited for its
    batch (data wait), how long the step itself took until its results were
    on the host (compute), and the rest of the time until the next step
    (host overhead: the Keras loop, other callbacks, logging). The first step
    of each `fit` holds tracing and compilation and is recorded as warm-up.
    It also records, once, where the ops of the first step and the model's
    variables were placed, which op types ran on the CPU, how many edges
    copy data between devices, and how many bytes each batch carries.

    Summaries go to `log_dir/train` and `log_dir/validation`, the layout of
    `keras.callbacks.TensorBoard`, so both can share one `log_dir`. Open them
    with `tensorboard --logdir` on the parent directory (the "Device Cost"
    tab) or `tb-devicecost report`.

    Recording never interrupts training: if anything goes wrong while
    recording, the callback warns once and switches itself off. One instance
    can be reused across `fit` calls; its global step keeps increasing.

    Only the TensorFlow backend is measured for now; on other backends the
    callback warns and records nothing.

    Args:
        log_dir: Directory of the run, e.g. `"logs/gpu"`.
        capture_placement: Whether to capture the device placement of the
            first training step's ops (TensorFlow only; it costs a little
            extra time in the warm-up step). Defaults to `True`.
        flush_steps: Number of steps buffered before they are written to
            disk. Defaults to `256`.
        profile_steps: Optional `(start, stop)` pair of global steps (at
            most 1000 apart) to capture a profiler trace of, into
            `log_dir/train` where the Profile tab finds it. Each traced step
            carries the profiler's step marker, and the trace is digested
            into our own breakdown of those steps (which the Profile tab
            cannot give for CPU runs). When
            `keras.callbacks.TensorBoard(profile_batch=...)` traces the same
            fit, its trace is used instead of starting a second profiler.
            Defaults to `None` (no trace).

    Example:

    ```python
    model.fit(
        dataset,
        epochs=3,
        validation_data=validation_dataset,
        callbacks=[tb_devicecost.DeviceCostCallback("logs/cpu")],
    )
    ```
    """

    def __init__(
        self, log_dir, capture_placement=True, flush_steps=256, profile_steps=None
    ):
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
            raise ValueError(
                "`log_dir` must be a non-empty path, e.g. 'logs/gpu'. "
                f"Received: log_dir={log_dir!r}"
            )
        if not isinstance(capture_placement, bool):
            raise ValueError(
                "`capture_placement` must be True or False. "
                f"Received: capture_placement={capture_placement!r}"
            )
        if (
            isinstance(flush_steps, bool)
            or not isinstance(flush_steps, int)
            or flush_steps < 1
        ):
            raise ValueError(
                "`flush_steps` must be a positive integer, e.g. 256. "
                f"Received: flush_steps={flush_steps!r}"
            )
        if profile_steps is not None and not (
            isinstance(profile_steps, (tuple, list))
            and len(profile_steps) == 2
            and all(
                isinstance(step, int) and not isinstance(step, bool)
                for step in profile_steps
            )
            and 0 <= profile_steps[0] < profile_steps[1]
            and profile_steps[1] - profile_steps[0] <= _MAX_TRACED_STEPS
        ):
            raise ValueError(
                "`profile_steps` must be None or a (start, stop) pair of "
                "global steps with 0 <= start < stop and at most "
                f"{_MAX_TRACED_STEPS} steps between them, e.g. (10, 15): a "
                "trace records every op, so a window of a few steps is enough. "
                f"Received: profile_steps={profile_steps!r}"
            )
        self.log_dir = os.fspath(log_dir)
        self.profile_steps = None if profile_steps is None else tuple(profile_steps)
        self.capture_placement = capture_placement
        self.flush_steps = flush_steps
        # Lazily created, so constructing the callback writes nothing.
        self._train = None
        self._validation = None
        self._enabled = True
        self._in_fit = False
        self._validation_started = False
        self._original_functions = {}
        self._first_batch = None
        self._first_step_placement = None
        self._first_step_pending = False
        self._placement_written = False
        self._steps_to_probe = 1
        self._floor_iterator = None
        self._floor_samples = collections.deque(maxlen=_FLOOR_SAMPLES)
        self._spe = 1
        self._run_info = {}
        self._registered_exit = False
        self._window = None
        self._windows_to_digest = []
        self._trace_entries = []
        self._own_window_done = False
        self._said_external_trace = False

    # Hooks. Each is guarded: an error here must not reach `fit`.

    def on_train_begin(self, logs=None):
        if not self._enabled:
            return
        try:
            if self._in_fit:
                # The previous fit ended without `on_train_end` (it raised).
                self._end_fit(status="interrupted")
            backend = keras.backend.backend()
            if backend != "tensorflow":
                self._disable(
                    f"the {backend!r} backend is not measured yet (only "
                    "'tensorflow' is); set KERAS_BACKEND=tensorflow to record"
                )
                return
            self._create_recorders()
            self._register_exit_handler()
            self._in_fit = True
            self._validation_started = False
            self._run_info = dict(
                run_info.machine_info(),
                **run_info.keras_model_info(self._model, backend),
            )
            self._spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
            self._run_info["fetch_in_graph"] = self._spe > 1
            self._run_info["steps_per_record"] = self._spe
            self._train.begin_session(self._run_info)
            self._first_batch = None
            self._steps_to_probe = 1
            self._floor_iterator = None
            self._first_step_pending = True
            self._window = self._trace_window()
            if self._window is not None:
                self._train.watch_steps(range(self._window.start, self._window.stop))
            self._wrap("train_function", self._train, first_step_probes=True)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_train_batch_end(self, batch, logs=None):
        # The hot path: Keras has just copied the step's logs to the host,
        # so the step's device work is complete.
        if self._in_fit:
            self._train.end_compute()
            if self._window is not None:
                self._window.after_step()
            self._steps_to_probe -= 1
            if self._steps_to_probe <= 0:
                self._probe_between_steps()

    def on_test_begin(self, logs=None):
        if not self._enabled or self._validation is None:
            return
        try:
            if self._in_fit:
                self._train.boundary()
            if not (self._in_fit and self._validation_started):
                self._validation.begin_session(self._run_info)
                self._validation_started = True
            self._wrap("test_function", self._validation, first_step_probes=False)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_test_batch_end(self, batch, logs=None):
        if self._validation is not None:
            self._validation.end_compute()

    def on_test_end(self, logs=None):
        if self._validation is None:
            return
        try:
            self._validation.boundary()
            self._unwrap("test_function")
            if not self._in_fit:
                self._validation.flush()
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_epoch_end(self, epoch, logs=None):
        if not self._enabled or self._train is None:
            return
        try:
            self._train.boundary()
            self._digest_windows()
            self._train.flush()
            if self._validation_started:
                self._validation.flush()
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_train_end(self, logs=None):
        if self._in_fit:
            self._end_fit(status="complete")

    # Wrapping the compiled step.

    def _wrap(self, attribute, recorder, first_step_probes):
        original = getattr(self._model, attribute)
        if original is None or getattr(original, "_devicecost_wrapper", False):
            return
        self._original_functions[attribute] = original
        if self._spe > 1:
            wrapper = self._execution_wrapper(original, recorder)
        else:
            wrapper = self._step_wrapper(original, recorder, first_step_probes)
        wrapper._devicecost_wrapper = True
        setattr(self._model, attribute, wrapper)

    def _unwrap(self, attribute):
        original = self._original_functions.pop(attribute, None)
        current = getattr(self._model, attribute, None)
        # A `compile()` in between replaced the function: leave the new one.
        if original is not None and getattr(current, "_devicecost_wrapper", False):
            setattr(self._model, attribute, original)

    def _step_wrapper(self, original, recorder, first_step_probes):
        """Fetches the batch itself, so the fetch is timed apart.

        Keras runs the same compiled one-step function on a batch passed in
        a list as on one fetched inside the graph.
        """

        def timed_step_function(iterator):
            if not recorder.enabled:
                return original(iterator)
            if first_step_probes and self._window is not None:
                self._advance_window(recorder)
            recorder.begin_step()
            try:
                data = next(iterator)
            except BaseException as error:
                recorder.abort_step()
                self._on_exception(error)
                raise
            recorder.end_fetch(recorder_module.leading_dimension(data))
            try:
                if first_step_probes and self._first_step_pending:
                    return self._run_first_step(original, data)
                return original((data,))
            except BaseException as error:
                self._on_exception(error)
                raise

        return timed_step_function

    def _execution_wrapper(self, original, recorder):
        """With `steps_per_execution > 1` the fetch stays inside the graph:
        one record per execution, its data wait inside compute."""

        def timed_execution_function(iterator):
            if not recorder.enabled:
                return original(iterator)
            if recorder is self._train and self._window is not None:
                self._advance_window(recorder)
            recorder.begin_step()
            try:
                return original(iterator)
            except BaseException as error:
                recorder.abort_step()
                self._on_exception(error)
                raise

        return timed_execution_function

    def _run_first_step(self, original, data):
        self._first_step_pending = False
        self._first_batch = data
        # Once per callback: later fits reuse the instantiated function,
        # which no longer reports its placement.
        if (
            self._placement_written
            or not self.capture_placement
            or self._model.run_eagerly
        ):
            return original((data,))
        try:
            result, self._first_step_placement = placement.capture_step_placement(
                lambda: original((data,))
            )
        except Exception as error:  # pylint: disable=broad-except
            self._first_step_placement = {"error": f"{type(error).__name__}: {error}"}
            result = original((data,))
        return result

    def _probe_between_steps(self):
        """Placement after the first step, fetch-floor samples after others.

        Their time is kept out of the step being recorded.
        """
        started = time.perf_counter()
        self._steps_to_probe = _FLOOR_SAMPLE_EVERY
        try:
            if self._first_batch is not None:
                data, self._first_batch = self._first_batch, None
                if not self._placement_written:
                    self._placement_written = True
                    self._train.write_placement(self._placement_document(data))
                self._start_fetch_floor(data)
                self._train.update_info(
                    {
                        "batch_size": recorder_module.leading_dimension(data),
                        "fetch_floor_ms": self._fetch_floor_ms(),
                    }
                )
            elif self._floor_iterator is not None:
                self._sample_fetch_floor(1)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)
        self._train.exclude(time.perf_counter() - started)

    def _placement_document(self, data):
        import tensorflow as tf

        model = self._model
        devices = placement.list_devices(tf)
        document = {
            "devices": devices,
            "accelerator_visible": any(
                device["kind"] != "CPU" for device in devices["physical"]
            ),
            "variables": placement.variable_devices(model.variables),
            "optimizer_variables": placement.variable_devices(
                getattr(getattr(model, "optimizer", None), "variables", [])
            ),
            "input_bytes_per_step": placement.input_bytes(data),
            "input_devices": sorted(
                {
                    placement.short_device_name(getattr(tensor, "device", ""))
                    for tensor in tf.nest.flatten(data)
                }
            ),
        }
        step = self._first_step_placement
        self._first_step_placement = None
        if step is None:
            document["step_ops_captured"] = False
        elif "error" in step:
            document["step_ops_captured"] = False
            document["capture_error"] = step["error"]
        else:
            document["step_ops_captured"] = True
            document.update(step)
        return document

    def _start_fetch_floor(self, data):
        """Opens an iterator whose batches are always ready: `next()` on it
        costs what handing over a prefetched batch costs. An eager fetch has
        this fixed cost even when the pipeline is far ahead; data wait above
        the floor is real starvation.
        """
        import tensorflow as tf

        try:
            # Fresh batches assembled in the background, as a prefetched
            # pipeline hands them over (reusing one tensor would be cheaper).
            dataset = (
                tf.data.Dataset.from_tensors(data)
                .repeat()
                .unbatch()
                .batch(recorder_module.leading_dimension(data), drop_remainder=True)
                .prefetch(2)
            )
            strategy = self._model.distribute_strategy
            self._floor_iterator = iter(
                strategy.experimental_distribute_dataset(dataset)
            )
            for _ in range(_FLOOR_WARM_BATCHES):
                next(self._floor_iterator)
        except Exception:  # pylint: disable=broad-except
            self._floor_iterator = None  # e.g. per-replica batches: optional
            return
        self._sample_fetch_floor(_FLOOR_FIRST_SAMPLES)

    def _sample_fetch_floor(self, count):
        for _ in range(count):
            started = time.perf_counter()
            next(self._floor_iterator)
            self._floor_samples.append(time.perf_counter() - started)
        self._train.set_fetch_floor(self._fetch_floor_ms())

    def _fetch_floor_ms(self):
        if not self._floor_samples:
            return None
        ordered = sorted(self._floor_samples)
        return ordered[len(ordered) // 2] * 1e3

    # Profiler trace windows.

    def _trace_window(self):
        """The window to trace in this fit, if any."""
        first_step = self._train.upcoming_step()
        external = profiling.keras_tensorboard_window(
            _sibling_callbacks(), first_step
        )
        if external is not None:
            if not self._said_external_trace:
                self._said_external_trace = True
                warnings.warn(
                    "DeviceCostCallback: keras.callbacks.TensorBoard("
                    "profile_batch=...) traces this fit, so no second profiler "
                    "is started: its trace is marked and digested instead.",
                    stacklevel=3,
                )
            return external
        if self.profile_steps is None or self._own_window_done:
            return None
        start, stop = self.profile_steps
        if stop <= first_step:
            return None
        return profiling.TraceWindow(start, stop, self._train.run_dir)

    def _advance_window(self, recorder):
        """Starts or stops the profiler before a step, outside its time."""
        started = time.perf_counter()
        window = self._window
        try:
            window.before_step(recorder.upcoming_step())
        except Exception as error:  # pylint: disable=broad-except
            window.error = f"Tracing failed: {type(error).__name__}: {error}"
            window.state = "done"
        if window.state == "done":
            self._retire_window()
        recorder.exclude(time.perf_counter() - started)

    def _retire_window(self):
        window, self._window = self._window, None
        if window is None:
            return
        window.finish()
        if window.owns_profiler:
            self._own_window_done = True
        self._windows_to_digest.append(window)

    def _digest_windows(self):
        """Reads finished windows' traces into the `devicecost/trace` document."""
        if not self._windows_to_digest:
            return
        windows, self._windows_to_digest = self._windows_to_digest, []
        ours = {entry["step"]: entry for entry in self._train.watched_steps()}
        for window in windows:
            entry = window.document()
            # Our own numbers for the same steps, to set beside the trace's.
            entry["recorded_steps"] = [
                ours[step] for step in range(window.start, window.stop) if step in ours
            ]
            self._trace_entries.append(entry)
        # A few windows per run are useful; keep the document small.
        del self._trace_entries[:-20]
        self._train.write_document(
            metadata.TAG_TRACE, {"windows": list(self._trace_entries)}
        )

    # Lifecycle and failure handling.

    def _create_recorders(self):
        if self._train is None:
            self._train = recorder_module.StepRecorder(
                os.path.join(self.log_dir, "train"), flush_steps=self.flush_steps
            )
            self._validation = recorder_module.StepRecorder(
                os.path.join(self.log_dir, "validation"),
                flush_steps=self.flush_steps,
            )

    def _register_exit_handler(self):
        if not self._registered_exit:
            # A weak reference: the handler must not keep the model alive.
            atexit.register(_close_at_exit, weakref.ref(self))
            self._registered_exit = True

    def _end_fit(self, status):
        self._in_fit = False
        self._first_batch = None
        self._floor_iterator = None
        if self._train is not None:
            self._train.boundary()
            self._retire_window()
            try:
                self._digest_windows()
            except Exception as error:  # pylint: disable=broad-except
                self._disable(error)
        self._unwrap("train_function")
        self._unwrap("test_function")
        for recorder in (self._train, self._validation):
            if recorder is not None:
                recorder.end_session(status=status)

    def _on_exception(self, error):
        """The step raised: end of data is normal, anything else ends the fit."""
        if isinstance(error, StopIteration) or type(error).__name__ == "OutOfRangeError":
            return
        if self._in_fit:
            try:
                self._end_fit(status="interrupted")
            except Exception:  # pylint: disable=broad-except
                pass

    def _disable(self, error):
        if not self._enabled:
            return
        self._enabled = False
        reason = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        warnings.warn(
            f"DeviceCostCallback stopped recording into {self.log_dir!r}: "
            f"{reason}. Training goes on unaffected.",
            RuntimeWarning,
            stacklevel=2,
        )
        self._in_fit = False
        self._floor_iterator = None
        try:
            self._unwrap("train_function")
            self._unwrap("test_function")
            if self._window is not None:
                # Never leave a profiler running behind the user's back.
                window, self._window = self._window, None
                window.finish()
            for recorder in (self._train, self._validation):
                if recorder is not None:
                    recorder.end_session()
        except Exception:  # pylint: disable=broad-except
            pass


def _close_at_exit(reference):
    callback = reference()
    if callback is not None and callback._in_fit:
        callback._end_fit(status="interrupted")


def _sibling_callbacks():
    """The callbacks of the `fit` being run, found from the call stack.

    Keras gives a callback no handle on its siblings; the `CallbackList`
    calling `on_train_begin` is on the stack. Returns `[]` when not found.
    """
    frame = inspect.currentframe()
    try:
        while frame is not None:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, keras.callbacks.CallbackList):
                return list(candidate.callbacks)
            frame = frame.f_back
    finally:
        del frame
    return []
