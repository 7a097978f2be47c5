"""`DeviceCostCallback`: per-step cost accounting for `model.fit`."""

import atexit
import os
import time
import warnings
import weakref

import keras

from tb_devicecost import backends
from tb_devicecost.backends import asynchronous as async_steps
from tb_devicecost.backends import keras_loop
from tb_devicecost.backends import processes
from tb_devicecost.recording.accounting import FLUSH_STEPS, StepAccounting
from tb_devicecost.recording import fetch_floor
from tb_devicecost.recording import input_kind
from tb_devicecost.recording import profiling
from tb_devicecost.recording import run_info
from tb_devicecost.recording import step_wrappers

# A trace records every op; longer windows make traces too large to open
# (and our digest of them too large to keep).
_MAX_TRACED_STEPS = 1000


class DeviceCostCallback(step_wrappers.StepRecording, keras.callbacks.Callback):
    """Records where each training step's time goes, for TensorBoard.

    For every step of `fit` it records how long the step waited for its
    batch (data wait), how long the step itself took until its results were
    on the host (compute), and the rest of the time until the next step
    (host overhead: the Keras loop, other callbacks, logging). The start of
    each `fit` holds tracing and compilation and is recorded as warm-up; the
    fit's whole wall time is accounted for. It also records, once, where the
    model's variables were placed, how many bytes each batch carries and,
    on TensorFlow, where the ops of the first step ran and how many edges
    copy data between devices.

    It measures every Keras 3 backend without changing what training
    computes: on TensorFlow the step Keras traced runs on each batch as
    without the callback (same traces, bit-identical results); on JAX and
    PyTorch it adds no synchronisation (it is `async_safe`, and reads each
    step's completion where Keras's worker thread converts the logs).
    `docs/FORMAT.md` says how each part is timed on each backend.

    Summaries go to `log_dir/train`, `log_dir/validation` and (for
    `model.evaluate`) `log_dir/evaluation`, the layout of
    `keras.callbacks.TensorBoard`, so both can share one `log_dir`. Open them
    with `tensorboard --logdir` on the parent directory (the "Device Cost"
    tab) or `tb-devicecost report`. In a multi-process fit (`jax.distributed`
    with `keras.distribution.DataParallel`) every process records its own
    runs under `log_dir/process_<index>/`, and the report names the process
    that holds the others back (`docs/SCALE.md`).

    Recording never interrupts training: if anything goes wrong while
    recording, the callback warns once and switches itself off. One instance
    can be reused across `fit` calls of one model; its global step keeps
    increasing.

    Args:
        log_dir: Directory of the run, e.g. `"logs/gpu"`.
        capture_placement: Whether to capture the device placement of the
            first training step's ops (TensorFlow only; it costs a little
            extra time in the warm-up step). Defaults to `True`.
        flush_steps: Number of steps buffered before they are written to
            disk (and at most 5 seconds apart). Defaults to `4096`.
        profile_steps: Optional `(start, stop)` pair of global steps (at
            most 1000 apart) to capture a profiler trace of, into
            `log_dir/train`: on TensorFlow and JAX an `.xplane.pb` under
            `plugins/profile/`, where the Profile tab finds it; on PyTorch
            a `torch.profiler` Chrome trace under
            `plugins/devicecost_torch/`. Each traced step carries the
            profiler's step marker, and the trace is digested into our own
            breakdown of those steps (which the Profile tab cannot give for
            CPU runs). When `keras.callbacks.TensorBoard(profile_batch=...)`
            traces the same fit, its trace is used instead of starting a
            second profiler. Opening the trace in the Profile tab needs
            the `profile` extra (xprof). Defaults to `None` (no trace).
        device_busy: Whether to measure how busy the device is during a
            step (compute, collectives and copies apart), from a short
            trace: `"auto"` traces it when the step runs on an accelerator
            (GPU, TPU), once per run and only when the run can carry it:
            the trace costs 0.1-0.4 s once (docs/PERFORMANCE.md), so it
            opens once the run has trained 100 times that (about 9 s on
            JAX and TensorFlow, 23 s on PyTorch), at a power-of-two step,
            keeping its expected cost under 1% of the run's wall time; a
            shorter run is not traced, and its trace document says so.
            `True` traces 10 steps, 10 steps into the first fit long
            enough, on any device; `False` never traces. The trace is
            digested into the run's `devicecost/trace` document and its
            files are deleted; its cost is kept out of the recorded steps.
            It is skipped when `profile_steps` or
            `keras.callbacks.TensorBoard(profile_batch=...)` trace the run.
            Defaults to `"auto"`.

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
        self,
        log_dir,
        capture_placement=True,
        flush_steps=FLUSH_STEPS,
        profile_steps=None,
        device_busy="auto",
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
                "`flush_steps` must be a positive integer, e.g. 4096. "
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
        if not (isinstance(device_busy, bool) or device_busy == "auto"):
            raise ValueError(
                "`device_busy` must be 'auto', True or False. "
                f"Received: device_busy={device_busy!r}"
            )
        self.device_busy = device_busy
        self.log_dir = os.fspath(log_dir)
        self.profile_steps = None if profile_steps is None else tuple(profile_steps)
        self.capture_placement = capture_placement
        self.flush_steps = flush_steps
        # Lazily created, so constructing the callback writes nothing.
        self._train = None
        self._validation = None
        self._evaluation = None
        self._enabled = True
        self._in_fit = False
        self._validation_started = False
        self._test_role = None
        self._original_functions = {}
        self._tracing = {}
        self._model_ref = None
        self._first_step_placement = None
        self._placement_written = False
        # The train run's placement, written to the validation and
        # evaluation runs too (`_place_evaluation`).
        self._placement_of_train = None
        self._placed_roles = set()
        self._pending_batch = None
        self._needs_batch = {}
        self._floors = {}
        self._steps_to_probe = 0
        self._batch_begin = None
        self._iterations = None
        self._epoch_iterator = None
        self._test_epoch_iterator = None
        self._spe = 1
        self._run_info = {}
        self._process = {}
        self._registered_exit = False
        self._traces = profiling.TraceSchedule(self.profile_steps, device_busy)
        self._said_predict = False
        # The `backends.Backend` of the fit: all that differs per backend.
        self._backend = None
        # JAX and PyTorch: steps timed under asynchronous dispatch, per role.
        self._async = {}
        self._compiles = None
        self._fetch_started = None
        self._pending_excluded = 0.0
        # Clock reads where Keras's loop calls its callback list (so the
        # order of the user's callbacks does not matter), and whether that
        # list runs the batch-end hooks on a worker thread, per role.
        self._loop = None
        self._hooks_on_worker = {}
        # A failure of ours on Keras's worker thread, for the training
        # thread to act on (`loop_failed`).
        self._failed_on_worker = None
        self._fetched_at = None
        # Whether the model's variables live on an accelerator (after the
        # first step): where the step runs.
        self._accelerated = False
        # Keras runs batch-end hooks on a worker thread when every callback
        # allows it; ours only reads the clock there, so the training loop
        # keeps its asynchronous dispatch.
        self.async_safe = True

    # Hooks. Each is guarded: an error here must not reach `fit`.

    def on_train_begin(self, logs=None):
        if not self._enabled:
            return
        try:
            if self._in_fit:
                # The previous fit ended without `on_train_end` (it raised).
                self._end_fit(status="interrupted")
            self._backend = backend = self._measured_backend()
            if backend is None:
                return
            self._note_model()
            self._create_accounting()
            self._register_exit_handler()
            self._in_fit = True
            self._validation_started = False
            self._run_info = self._gather_run_info(backend)
            self._spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
            self._train.begin_session(self._run_info)
            self._train.begin_span()
            # Kept across fits: building and tearing down a ready pipeline
            # costs tens of milliseconds, more than a short fit's steps.
            for role in ("train", "validation"):
                self._floors.setdefault(role, fetch_floor.FetchFloor())
            self._needs_batch = {"train": True, "validation": True}
            self._pending_batch = None
            self._iterations = None
            self._steps_to_probe = 0
            self._install_loop_clock()
            if backend.asynchronous:
                self._begin_async_fit()
                return
            self._traces.begin_fit(
                self._train, keras_loop.sibling_callbacks(), backend=backend.name
            )
            self._epoch_iterator = keras_loop.caller_local(
                "epoch_iterator", keras_loop.epoch_iterator_class()
            )
            self._wrap("train_function", "train")
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_epoch_begin(self, epoch, logs=None):
        # PyTorch: the first fetch of an epoch starts with the epoch's
        # iterator, outside any step (as on TensorFlow).
        if self._loop is None:
            self._fetch_started = None

    # The batch hooks run only outside Keras's loop (or once the recording
    # stopped): in a fit the loop clock stands in for them, around every
    # callback's (`keras_loop.LoopClock`).

    def on_train_batch_begin(self, batch, logs=None):
        # The batch's index, whatever the callbacks' order: the step that
        # reads it runs after every batch-begin hook.
        self._batch_begin = batch
        if self._backend is not None and self._backend.fetches_before_batch_begin:
            self._fetched_at = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        try:
            self._results("train", batch, time.perf_counter(), in_hook=True)
            self._probe_after_step("train")
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_test_begin(self, logs=None):
        if not self._enabled:
            return
        began = time.perf_counter()
        try:
            if self._in_fit:
                accounting, role = self._validation, "validation"
                if not self._backend.asynchronous:
                    # Under asynchronous dispatch the train steps still in
                    # Keras's worker are written at the epoch's end.
                    self._train.boundary()
                if not self._validation_started:
                    accounting.begin_session(self._run_info)
                    self._validation_started = True
            else:
                # `model.evaluate` with the callback: its own run.
                self._note_model()
                self._create_accounting()
                self._register_exit_handler()
                accounting, role = self._evaluation, "evaluation"
                self._backend = self._measured_backend()
                if self._backend is None:
                    return
                self._install_loop_clock()
                self._run_info = self._gather_run_info(self._backend)
                self._spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
                self._floors.setdefault("evaluation", fetch_floor.FetchFloor())
                self._needs_batch["evaluation"] = True
                accounting.begin_session(self._run_info)
            accounting.begin_span()
            self._test_role = role
            if self._backend.asynchronous:
                steps = self._async[role] = async_steps.AsyncSteps(accounting)
                # Validation's pipeline is its own: a step's wait for the GIL
                # is data wait where its threads held it (`AsyncSteps`).
                steps.held_is_input = input_kind.runs_python_threads(input_kind.describe(
                    keras_loop.caller_local("epoch_iterator", keras_loop.epoch_iterator_class())))
                self._fetch_started = None
            else:
                self._test_epoch_iterator = keras_loop.caller_local(
                    "epoch_iterator", keras_loop.epoch_iterator_class()
                )
            self._wrap("test_function", role)
            self._between_steps(began)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    # An evaluation's batch begins as a training one does.
    on_test_batch_begin = on_train_batch_begin

    def on_test_batch_end(self, batch, logs=None):
        try:
            self._results("test", batch, time.perf_counter(), in_hook=True)
            self._probe_after_step("test")
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_test_end(self, logs=None):
        role, self._test_role = self._test_role, None
        # Keras's iterator, and the user's pipeline in it, are freed when
        # Keras lets go of them, as without the callback.
        self._test_epoch_iterator = None
        if role is None:
            return
        began = time.perf_counter()
        try:
            accounting = self._accounting_for(role)
            steps = self._async.pop(role, None)
            if steps is not None:
                steps.boundary()
            accounting.boundary()
            self._note_retraces("test_function", accounting)
            accounting.end_span()
            self._unwrap("test_function")
            self._between_steps(began)
            if role == "evaluation":
                self._uninstall_loop_clock()
                accounting.end_session(status="complete")
                floor = self._floors.get("evaluation")
                if floor is not None:
                    floor.release()
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_predict_begin(self, logs=None):
        if not self._said_predict:
            self._said_predict = True
            warnings.warn(
                "DeviceCostCallback records `fit` (train and validation steps) "
                "and `evaluate`; `predict` is not recorded.",
                stacklevel=2,
            )

    def on_epoch_end(self, epoch, logs=None):
        self._stop_if_failed_on_worker()
        if not self._enabled or self._train is None or not self._in_fit:
            return
        began = time.perf_counter()
        try:
            if "train" in self._async:
                # Keras has waited for its worker: every step completed.
                self._async["train"].boundary()
            self._train.boundary()
            self._note_retraces("train_function", self._train)
            self._traces.digest(self._train)
            self._train.flush_due()
            if self._validation_started:
                # Validation's passes are short: its first epoch's steps and
                # an aggregate go to disk then, as the train run's have.
                self._validation.flush_due(first=True)
            self._between_steps(began)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def _between_steps(self, began):
        """Adds our hook's time since `began` (a clock read) in a fit to the
        fit's own time between steps (`SelfTime.between_steps_s`)."""
        if self._in_fit and self._train is not None:
            self._train.self_time.between_steps_s += time.perf_counter() - began

    def on_train_end(self, logs=None):
        self._stop_if_failed_on_worker()
        if self._in_fit:
            self._end_fit(status="complete")

    def _measured_backend(self):
        """The `Backend` of Keras's backend, or `None` (and recording stops)
        for a backend that is not measured."""
        name = keras.backend.backend()
        if name not in backends.NAMES:
            self._disable(
                f"the {name!r} backend is not measured (tensorflow, jax "
                "and torch are)"
            )
            return None
        return backends.get(name)

    def _gather_run_info(self, backend):
        info = dict(
            run_info.machine_info(), **run_info.keras_model_info(self._model, backend.name)
        )
        spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
        # Records are per step: an execution of N steps is written as N. On
        # TensorFlow the fetch then stays in the graph; JAX fetches in Python.
        info["fetch_in_graph"] = backend.fetch_in_graph(spe)
        info["fetch_timed_in_graph"] = backend.fetch_timed_in_graph(spe)
        info["steps_per_record"] = 1
        info["input_pipeline"] = input_kind.describe(  # What fed it (input_kind.py).
            keras_loop.caller_local("epoch_iterator", keras_loop.epoch_iterator_class()))
        # The devices a strategy named stay; else those this process holds.
        info.update(
            (key, value) for key, value in self._process.items()
            if not (key == "local_devices" and value is None and "local_devices" in info)
        )
        return info

    def _note_model(self):
        """Warns once when the callback moves on to another model."""
        previous = self._model_ref() if self._model_ref is not None else None
        if previous is not None and previous is not self._model:
            warnings.warn(
                f"DeviceCostCallback was used with model {previous.name!r} and "
                f"now with model {self._model.name!r}: both are recorded into "
                f"the same runs under {self.log_dir!r}, so their steps mix. "
                "Use one callback, with its own `log_dir`, per model.",
                stacklevel=3,
            )
            self._placement_written = False
            self._placement_of_train = None
            self._placed_roles = set()
        self._model_ref = weakref.ref(self._model)

    # Asynchronous dispatch: the JAX and PyTorch backends.

    def _begin_async_fit(self):
        self._traces.begin_fit(
            self._train, keras_loop.sibling_callbacks(), backend=self._backend.name
        )
        if self._compiles is None:
            self._compiles = self._backend.compile_events()
        self._async = {"train": async_steps.AsyncSteps(self._train)}
        self._async["train"].held_is_input = input_kind.runs_python_threads(
            (self._run_info or {}).get("input_pipeline"))
        self._fetch_started = None
        self._wrap("train_function", "train")

    # Lifecycle and failure handling.

    def _create_accounting(self):
        if self._train is None:
            # Each process of a distributed fit records its own runs, under
            # `log_dir/process_<index>` (docs/FORMAT.md, "Processes").
            self._process = processes.process_info()
            base = run_info.process_run_dir(self.log_dir, self._process)
            self._train = StepAccounting(
                os.path.join(base, "train"), flush_steps=self.flush_steps
            )
            self._validation = StepAccounting(
                os.path.join(base, "validation"),
                flush_steps=self.flush_steps,
            )
            self._evaluation = StepAccounting(
                os.path.join(base, "evaluation"),
                flush_steps=self.flush_steps,
            )

    def _register_exit_handler(self):
        if not self._registered_exit:
            # A weak reference: the handler must not keep the model alive.
            atexit.register(_close_at_exit, weakref.ref(self), os.getpid())
            self._registered_exit = True
            # A recording failure in any run stops them all, with one
            # warning (ours): the accounting does not warn itself.
            for accounting in (self._train, self._validation, self._evaluation):
                accounting.on_failure = self._disable

    def _end_fit(self, status):
        self._in_fit = False
        self._pending_batch = None
        # Held past the fit, Keras's iterators kept the user's pipeline alive
        # as long as the callback: freed later in a garbage collection, a
        # running pipeline stalled whatever ran then (a later fit's first
        # step, for seconds).
        self._epoch_iterator = self._test_epoch_iterator = None
        if self._train is not None:
            for steps in self._async.values():
                steps.boundary()
            self._async = {}
            if self._compiles is not None:
                self._compiles.armed = False
            self._train.boundary()
            self._note_retraces("train_function", self._train)
            self._train.end_span()
            self._traces.end_fit()
            try:
                self._traces.digest(self._train)
            except Exception as error:  # pylint: disable=broad-except
                self._disable(error)
        self._test_role = None
        # The ready iterators go to the process's pool, for the next fit.
        for role in ("train", "validation"):
            if role in self._floors:
                self._floors[role].release()
        self._unwrap("train_function")
        self._unwrap("test_function")
        self._uninstall_loop_clock()
        for accounting in (self._train, self._validation):
            if accounting is not None:
                accounting.end_span()
                accounting.end_session(status=status)

    def _on_exception(self, error):
        """The step raised: end of data is normal, anything else ends the fit."""
        if self._backend.end_of_data(error):
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
        self._test_role = None
        self._pending_batch = self._epoch_iterator = self._test_epoch_iterator = None
        # The hooks Keras still calls find no steps to time.
        self._async = {}
        for floor in self._floors.values():
            floor.stop()
        try:
            self._unwrap("train_function")
            self._unwrap("test_function")
            self._uninstall_loop_clock()
            # Never leave a profiler running behind the user's back.
            self._traces.stop()
            for accounting in (self._train, self._validation, self._evaluation):
                if accounting is not None:
                    # Each run says why it stopped: one run's write error
                    # stops its siblings too.
                    accounting.stop(status="interrupted", error=reason)
        except Exception:  # pylint: disable=broad-except
            pass


def _close_at_exit(reference, pid):
    callback = reference()
    # A forked child that exits through `sys.exit` runs the parent's
    # `atexit` handlers: the fit is the parent's to close.
    if callback is not None and callback._in_fit and os.getpid() == pid:
        callback._end_fit(status="interrupted")

