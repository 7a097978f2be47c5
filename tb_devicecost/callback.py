"""`DeviceCostCallback`: per-step cost accounting for `model.fit`."""

import atexit
import os
import time
import warnings
import weakref

import keras

from tb_devicecost import accounting
from tb_devicecost import fetch_floor
from tb_devicecost import input_kind
from tb_devicecost import placement
from tb_devicecost import profiling
from tb_devicecost import run_info
from tb_devicecost.backends import asynchronous as async_steps
from tb_devicecost.backends import devices as backends
from tb_devicecost.backends import jax as jax_backend
from tb_devicecost.backends import keras_loop
from tb_devicecost.backends import tensorflow as tensorflow_backend
from tb_devicecost.backends import torch as torch_backend

# The fetch floor is sampled while training, under the same load as the
# real fetches: a few samples after the first fetched batch, then one every
# `_FLOOR_SAMPLE_EVERY` steps (about 0.2% of the steps' time, kept out of
# the records).
_FLOOR_SAMPLE_EVERY = 50
# A trace records every op; longer windows make traces too large to open
# (and our digest of them too large to keep).
_MAX_TRACED_STEPS = 1000


class DeviceCostCallback(keras.callbacks.Callback):
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
            disk. Defaults to `256`.
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
        flush_steps=256,
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
        self._pending_batch = None
        self._needs_batch = {}
        self._warm_again = {}
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
        # JAX and PyTorch: steps timed under asynchronous dispatch, per role.
        self._backend = None
        self._async = {}
        self._compiles = None
        self._fetch_started = None
        self._pending_excluded = 0.0
        # Clock reads where Keras's loop calls its callback list (so the
        # order of the user's callbacks does not matter), and whether that
        # list runs the batch-end hooks on a worker thread, per role.
        self._loop = None
        self._hooks_on_worker = {}
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
            backend = keras.backend.backend()
            if backend not in ("tensorflow", "jax", "torch"):
                self._disable(
                    f"the {backend!r} backend is not measured (tensorflow, jax "
                    "and torch are)"
                )
                return
            self._backend = backend
            self._note_model()
            self._create_recorders()
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
            if backend != "tensorflow":
                self._begin_async_fit()
                return
            self._traces.begin_fit(self._train, keras_loop.sibling_callbacks())
            self._epoch_iterator = keras_loop.caller_local(
                "epoch_iterator", keras_loop.epoch_iterator_class()
            )
            self._wrap("train_function", self._train, "train")
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_epoch_begin(self, epoch, logs=None):
        # PyTorch: the first fetch of an epoch starts with the epoch's
        # iterator, outside any step (as on TensorFlow).
        if self._loop is None:
            self._fetch_started = None

    def on_train_batch_begin(self, batch, logs=None):
        if self._loop is None:
            self._batch_begin = batch
            if self._backend == "torch":
                self._fetched_at = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        # The hot path. With the loop clock installed, the step's clock
        # reads happened around the callback list; here only the fetch
        # floor's samples (TensorFlow).
        if self._loop is None:
            self._results("train", batch, time.perf_counter(), in_hook=True)
        elif self._in_fit and "train" not in self._async:
            if self._pending_batch is not None or self._steps_to_probe == 1:
                self._probe_between_steps()
            elif self._steps_to_probe > 1:
                self._steps_to_probe -= 1

    # Clock reads around Keras's callback list (`backends/keras_loop.py`).

    def _install_loop_clock(self):
        if self._loop is not None:
            self._loop.uninstall()
            self._loop = None
        callbacks = keras_loop.callback_list()
        if callbacks is None:
            return  # Called outside Keras's loop: our own hooks read the clock.
        self._loop = keras_loop.LoopClock(callbacks, self)
        self._loop.install()
        self._hooks_on_worker = {
            role: keras_loop.hooks_on_worker(callbacks, role) for role in ("train", "test")
        }

    def _uninstall_loop_clock(self):
        if self._loop is not None:
            self._loop.uninstall()
            self._loop = None

    def loop_batch_begin(self, role, batch, now):
        self._batch_begin = batch
        steps = self._async.get("train" if role == "train" else self._test_role)
        if steps is not None:
            # PyTorch's loop fetched the batch just before.
            self._fetched_at = now
            steps.poll(now)

    def loop_results(self, role, batch, now):
        self._results(role, batch, now, in_hook=False)

    def loop_batch_end(self, role, now):
        # PyTorch's loop fetches the next batch after this.
        self._fetch_started = now

    def loop_epoch_begin(self, role, now):
        self._fetch_started = now

    def _results(self, loop_role, batch, now, in_hook):
        """The step's logs are Python numbers: its work is complete.

        `loop_role` is the loop's (`"train"` or `"test"`); the run's role
        for a test step is validation's or evaluation's.
        """
        role = "train" if loop_role == "train" else self._test_role
        if role is None:
            return
        steps = self._async.get(role)
        if steps is not None:
            # On a worker thread when every callback is async-safe; on the
            # training thread, which waited for the step, the read is exact.
            exact = not in_hook and not self._hooks_on_worker.get(loop_role, True)
            steps.completed(batch, now, exact=exact)
            window = self._traces.window if role == "train" else None
            if window is not None:
                # The step's completion marker, while a window is traced.
                window.completed(batch)
            return
        if role == "train":
            if not self._in_fit:
                return
            self._train.end_compute(now=now)
            if self._traces.window is not None:
                self._traces.window.after_step()
            if in_hook:
                if self._pending_batch is not None or self._steps_to_probe == 1:
                    self._probe_between_steps()
                elif self._steps_to_probe > 1:
                    self._steps_to_probe -= 1
            return
        recorder = self._recorder_for(role)
        recorder.end_compute(now=now)
        if in_hook and self._pending_batch is not None:
            self._probe_between_steps(recorder, role)

    def on_test_begin(self, logs=None):
        if not self._enabled:
            return
        try:
            if self._in_fit:
                recorder, role = self._validation, "validation"
                if self._backend == "tensorflow":
                    # Under asynchronous dispatch the train steps still in
                    # Keras's worker are written at the epoch's end.
                    self._train.boundary()
                if not self._validation_started:
                    recorder.begin_session(self._run_info)
                    self._validation_started = True
            else:
                # `model.evaluate` with the callback: its own run.
                self._note_model()
                self._create_recorders()
                self._register_exit_handler()
                recorder, role = self._evaluation, "evaluation"
                self._install_loop_clock()
                self._backend = keras.backend.backend()
                self._run_info = self._gather_run_info(self._backend)
                self._spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
                self._floors.setdefault("evaluation", fetch_floor.FetchFloor())
                self._needs_batch["evaluation"] = True
                recorder.begin_session(self._run_info)
            recorder.begin_span()
            self._test_role = role
            if self._backend in ("jax", "torch"):
                self._async[role] = async_steps.AsyncSteps(recorder)
                self._fetch_started = None
                self._wrap_async("test_function", role)
                return
            self._test_epoch_iterator = keras_loop.caller_local(
                "epoch_iterator", keras_loop.epoch_iterator_class()
            )
            self._wrap("test_function", recorder, role)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_test_batch_begin(self, batch, logs=None):
        if self._loop is None:
            self._batch_begin = batch
            if self._backend == "torch":
                self._fetched_at = time.perf_counter()

    def on_test_batch_end(self, batch, logs=None):
        role = self._test_role
        if self._loop is None:
            self._results("test", batch, time.perf_counter(), in_hook=True)
        elif role is not None and role not in self._async and self._pending_batch is not None:
            self._probe_between_steps(self._recorder_for(role), role)

    def on_test_end(self, logs=None):
        role, self._test_role = self._test_role, None
        if role is None:
            return
        try:
            recorder = self._recorder_for(role)
            steps = self._async.pop(role, None)
            if steps is not None:
                steps.boundary()
            recorder.boundary()
            self._note_retraces("test_function", recorder)
            recorder.end_span()
            self._unwrap("test_function")
            if role == "evaluation":
                self._uninstall_loop_clock()
                recorder.end_session(status="complete")
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
        if not self._enabled or self._train is None or not self._in_fit:
            return
        try:
            if "train" in self._async:
                # Keras has waited for its worker: every step completed.
                self._async["train"].boundary()
            self._train.boundary()
            self._note_retraces("train_function", self._train)
            self._traces.digest(self._train)
            self._train.flush()
            if self._validation_started:
                self._validation.flush()
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)

    def on_train_end(self, logs=None):
        if self._in_fit:
            self._end_fit(status="complete")

    # Wrapping the compiled step.

    def _wrap(self, attribute, recorder, role):
        original = getattr(self._model, attribute)
        if original is None or getattr(original, "_devicecost_wrapper", False):
            return
        self._original_functions[attribute] = original
        self._tracing[attribute] = tensorflow_backend.TracingCounter(original)
        if self._spe > 1:
            wrapper = self._execution_wrapper(original, recorder, role)
        else:
            wrapper = self._step_wrapper(original, recorder, role)
        wrapper._devicecost_wrapper = True
        setattr(self._model, attribute, wrapper)

    def _unwrap(self, attribute):
        original = self._original_functions.pop(attribute, None)
        current = getattr(self._model, attribute, None)
        # A `compile()` in between replaced the function: leave the new one.
        if original is not None and getattr(current, "_devicecost_wrapper", False):
            setattr(self._model, attribute, original)

    def _step_wrapper(self, original, recorder, role):
        """Fetches the batch itself, so the fetch is timed apart.

        Keras's own first call traces the step for the dataset's element
        spec (batch dimension `None`), with the fetch inside its graph; that
        call is left as it is (it is the warm-up step). Later calls fetch
        the batch eagerly and hand it to the same traced one-step function,
        which serves any batch shape the trace covers, so nothing is traced
        again. At the end of the data the iterator goes to Keras's graph as
        without the callback, so whatever that call does it still does.
        """
        tracing = self._tracing[_function_of(role)]
        step = tensorflow_backend.BatchStep(original)
        # A wrapper serves one dataset (one fit, or one evaluation): whether
        # Keras traced the step for its element spec is asked once.
        keras_traced = False

        def timed_step_function(iterator):
            nonlocal keras_traced
            if not recorder.enabled:
                return original(iterator)
            if role == "train" and self._traces.window is not None:
                self._traces.before_step(recorder)
            if not keras_traced:
                if not tensorflow_backend.traced_by_keras(original, iterator):
                    return self._first_call(original, iterator, recorder, role)
                keras_traced = True
            recorder.begin_step()
            try:
                data = next(iterator)
            except StopIteration:
                recorder.abort_step()
                return original(iterator)
            except BaseException as error:
                recorder.abort_step()
                self._on_exception(error)
                raise
            recorder.end_fetch(placement.batch_size(data))
            if self._warm_again.pop(role, False):
                # The traced one-step function runs on its own for the first
                # time: TensorFlow instantiates it, a one-off cost.
                recorder.extend_warmup()
            try:
                result = step(data)
            except BaseException as error:
                self._on_exception(error)
                raise
            if tracing.changed():
                tracing.note_step(recorder.upcoming_step() - 1)
                step.forget()
            if self._needs_batch.get(role):
                self._needs_batch[role] = False
                self._pending_batch = data
            return result

        return timed_step_function

    def _first_call(self, original, iterator, recorder, role):
        """Keras's own first call: traces the step; its fetch stays inside."""
        recorder.begin_step()
        recorder.end_fetch()
        capture = (
            role == "train"
            and self.capture_placement
            and not self._placement_written
            and not self._model.run_eagerly
        )
        try:
            if capture:
                result, self._first_step_placement = placement.capture_step_placement(
                    lambda: original(iterator)
                )
            else:
                result = original(iterator)
        except BaseException as error:
            recorder.abort_step()
            self._on_exception(error)
            raise
        finally:
            tensorflow_backend.note_traced_by_keras(original, iterator)
            self._warm_again[role] = True
            self._tracing[_function_of(role)].reset()
        return result

    def _execution_wrapper(self, original, recorder, role):
        """With `steps_per_execution > 1` the fetch stays inside the graph:
        one record per execution, its data wait inside compute, written as
        the steps the execution ran."""

        noted = False

        def timed_execution_function(iterator):
            nonlocal noted
            if not recorder.enabled:
                return original(iterator)
            if role == "train" and self._traces.window is not None:
                self._traces.before_step(recorder)
            begin = self._batch_begin
            recorder.begin_step()
            try:
                result = original(iterator)
            except BaseException as error:
                recorder.abort_step()
                self._on_exception(error)
                raise
            if not noted:
                noted = True
                tensorflow_backend.note_traced_by_keras(original, iterator)
            recorder.set_steps(self._executed_steps(role, begin))
            return result

        return timed_execution_function

    def _executed_steps(self, role, begin):
        """How many steps the execution just run took.

        Training counts the optimizer's iterations (exact, whatever the
        data); evaluation counts the batches left in the epoch when their
        number is known.
        """
        if role == "train":
            optimizer = getattr(self._model, "optimizer", None)
            iterations = getattr(optimizer, "iterations", None)
            if iterations is not None:
                now = int(iterations.numpy())
                last, self._iterations = self._iterations, now
                if last is not None:
                    return now - last
            epoch_iterator = self._epoch_iterator
        else:
            epoch_iterator = self._test_epoch_iterator
        batches = getattr(epoch_iterator, "num_batches", None)
        if isinstance(batches, int) and batches > 0 and isinstance(begin, int):
            return max(0, min(self._spe, batches - begin))
        return self._spe

    def _probe_between_steps(self, recorder=None, role="train"):
        """Placement and the fetch floor after the first fetched batch,
        fetch-floor samples after some later steps.

        Their time is kept out of the step being recorded.
        """
        recorder = recorder or self._train
        started = time.perf_counter()
        try:
            data, self._pending_batch = self._pending_batch, None
            floor = self._floors.get(role)
            if data is not None:
                if role == "train" and not self._placement_written:
                    self._placement_written = True
                    document = self._placement_document(data)
                    recorder.write_placement(document)
                    self._accelerated = _on_accelerator(document)
                if role == "train":
                    self._traces.found_device(self._accelerated)
                if floor is not None:
                    floor.start(data, self._model.distribute_strategy)
                recorder.update_info(
                    run_info.batch_info(placement.batch_size(data), self._run_info)
                )
                self._steps_to_probe = _FLOOR_SAMPLE_EVERY if role == "train" else 0
            elif floor is not None and floor.running:
                floor.sample(1)
                self._steps_to_probe = _FLOOR_SAMPLE_EVERY
            if floor is not None:
                recorder.set_fetch_floor(floor.milliseconds())
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)
        recorder.exclude(time.perf_counter() - started)

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
            "input_devices": placement.input_devices(data),
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

    def _note_retraces(self, attribute, recorder):
        if self._backend == "jax" and attribute == "train_function":
            compiles = self._compiles
            if compiles is not None:
                recorder.set_retraces(
                    compiles.count,
                    compiles.steps,
                    source="jax.monitoring backend compile events",
                    seconds=compiles.seconds,
                )
            return
        tracing = self._tracing.get(attribute)
        if tracing is not None and tracing.known:
            recorder.set_retraces(tracing.retraces, tracing.steps)

    def _gather_run_info(self, backend):
        info = dict(
            run_info.machine_info(), **run_info.keras_model_info(self._model, backend)
        )
        spe = int(getattr(self._model, "steps_per_execution", 1) or 1)
        # Records are per step: an execution of N steps is written as N. On
        # TensorFlow the fetch then stays in the graph; JAX fetches in Python.
        info["fetch_in_graph"] = spe > 1 and backend == "tensorflow"
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
        self._model_ref = weakref.ref(self._model)

    # Asynchronous dispatch: the JAX and PyTorch backends.

    def _begin_async_fit(self):
        self._traces.begin_fit(self._train, keras_loop.sibling_callbacks(), backend=self._backend)
        if self._backend == "jax" and self._compiles is None:
            self._compiles = backends.CompileEvents()
        self._async = {"train": async_steps.AsyncSteps(self._train)}
        self._fetch_started = None
        self._wrap_async("train_function", "train")

    def _wrap_async(self, attribute, role):
        original = getattr(self._model, attribute)
        if original is None or getattr(original, "_devicecost_wrapper", False):
            return
        self._original_functions[attribute] = original
        steps = self._async[role]
        clock = time.perf_counter
        callback = self

        if self._backend == "jax":

            proxy = async_steps.TimedIterator(clock, steps.poll)

            def timed_jax(state, iterator):
                window = callback._traces.window if role == "train" else None
                marker = None
                if window is not None:
                    # Before the fetch: the window's start or stop lands
                    # between steps.
                    callback._before_traced_step(steps.upcoming_step)
                    window = callback._traces.window
                if window is not None:
                    marker = window.step_marker(steps.upcoming_step)
                    if marker is not None:
                        iterator = window.marked_fetches(iterator)
                proxy.reset(iterator)
                first = callback._needs_batch.get(role, False)
                compiles = callback._compiles
                if compiles is not None and role == "train":
                    compiles.step = steps.upcoming_step
                try:
                    result = original(state, proxy)
                finally:
                    if compiles is not None:
                        compiles.step = None
                    if marker is not None:
                        window.close_marker(marker)
                traced, count = steps.upcoming_step, proxy.count
                if proxy.count:
                    steps.dispatched(
                        callback._batch_begin + callback._spe - 1,
                        proxy.start,
                        proxy.fetched,
                        steps=proxy.count,
                        batch_size=placement.batch_size(proxy.first),
                        excluded=callback._take_excluded(),
                        probe=jax_backend.completion_probe(result[0]),
                    )
                if first and proxy.first is not None:
                    # The input state was donated to the step: read the new one.
                    callback._after_first_async_step(role, proxy.first, result[1])
                proxy.reset(None)  # Holds no batch between steps.
                if window is not None and count:
                    window.dispatched(callback._batch_begin + callback._spe - 1, traced)
                return result

            wrapper = timed_jax
        else:

            completions = torch_backend.Completions(clock)

            def timed_torch(data):
                dispatch = clock()
                fetched = callback._fetched_at or dispatch
                start = callback._fetch_started or fetched
                start = min(start, fetched)
                window = callback._traces.window if role == "train" else None
                if window is not None:
                    transition = callback._before_traced_step(steps.upcoming_step)
                    if transition is not None:
                        # The window opened or closed after this step's
                        # fetch: the step is timed as if fetched after it.
                        began, ended, previous = transition
                        wait = fetched - max(start, start if previous is None else previous)
                        start, fetched = ended - max(0.0, wait), ended
                        dispatch = max(dispatch, ended)
                    window = callback._traces.window
                batch = data[0] if isinstance(data, list) and data else data
                marker = None
                traced = steps.upcoming_step
                if window is not None:
                    marker = window.step_marker(traced)
                try:
                    result = original(data)
                finally:
                    if marker is not None:
                        window.close_marker(marker)
                timer, done = completions.source(result, clock())
                steps.dispatched(
                    callback._batch_begin,
                    start,
                    fetched,
                    dispatch,
                    batch_size=placement.batch_size(batch),
                    excluded=callback._take_excluded(),
                    timer=timer,
                    done=done,
                )
                if callback._needs_batch.get(role, False):
                    callback._after_first_async_step(role, batch, None)
                if window is not None:
                    window.dispatched(callback._batch_begin, traced)
                callback._fetched_at = None
                if callback._loop is None:
                    callback._fetch_started = clock()
                return result

            wrapper = timed_torch
        wrapper._devicecost_wrapper = True
        setattr(self._model, attribute, wrapper)

    def _before_traced_step(self, step):
        """Opens or closes the trace window before train step `step`, once
        the step before is complete; the time it took past that completion
        is kept out of the records (`profiling.TraceSchedule.before_async_step`)."""
        transition = self._traces.before_async_step(step)
        if transition is not None:
            began, ended, previous = transition
            self._pending_excluded += ended - max(began, previous or began)
        return transition

    def _take_excluded(self):
        excluded, self._pending_excluded = self._pending_excluded, 0.0
        return excluded

    def _after_first_async_step(self, role, batch, state):
        """Placement and the fetch floor, once the first step is dispatched
        (its device work overlaps them); their time is kept out of the next
        step."""
        started = time.perf_counter()
        self._needs_batch[role] = False
        recorder = self._recorder_for(role)
        try:
            if role == "train":
                if self._compiles is not None:
                    self._compiles.armed = True
                if not self._placement_written:
                    self._placement_written = True
                    if state is not None:  # JAX: the fit holds variables as state
                        variables = list(state[0]) + list(state[1])
                        optimizer_variables = list(state[2])
                    else:
                        variables = self._model.variables
                        optimizer = getattr(self._model, "optimizer", None)
                        optimizer_variables = getattr(optimizer, "variables", [])
                    document = backends.placement_document(
                        self._backend, variables, optimizer_variables, batch
                    )
                    recorder.write_placement(document)
                    self._accelerated = _on_accelerator(document)
                self._traces.found_device(self._accelerated)
            floor = self._floors.get(role)
            if floor is not None and floor.start_python(
                batch, backends.handover(self._backend)
            ):
                floor.stop()
                recorder.set_fetch_floor(floor.milliseconds())
            recorder.update_info(
                run_info.batch_info(placement.batch_size(batch), self._run_info)
            )
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)
        self._pending_excluded += time.perf_counter() - started

    def _recorder_for(self, role):
        return {
            "train": self._train,
            "validation": self._validation,
            "evaluation": self._evaluation,
        }[role]

    # Lifecycle and failure handling.

    def _create_recorders(self):
        if self._train is None:
            # Each process of a distributed fit records its own runs, under
            # `log_dir/process_<index>` (docs/FORMAT.md, "Processes").
            self._process = run_info.process_info()
            base = run_info.process_run_dir(self.log_dir, self._process)
            self._train = accounting.StepAccounting(
                os.path.join(base, "train"), flush_steps=self.flush_steps
            )
            self._validation = accounting.StepAccounting(
                os.path.join(base, "validation"),
                flush_steps=self.flush_steps,
            )
            self._evaluation = accounting.StepAccounting(
                os.path.join(base, "evaluation"),
                flush_steps=self.flush_steps,
            )

    def _register_exit_handler(self):
        if not self._registered_exit:
            # A weak reference: the handler must not keep the model alive.
            atexit.register(_close_at_exit, weakref.ref(self))
            self._registered_exit = True
            # A recording failure in any run stops them all, with one
            # warning (ours): the recorders do not warn themselves.
            for recorder in (self._train, self._validation, self._evaluation):
                recorder.on_failure = self._disable

    def _end_fit(self, status):
        self._in_fit = False
        self._pending_batch = None
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
        self._unwrap("train_function")
        self._unwrap("test_function")
        self._uninstall_loop_clock()
        for recorder in (self._train, self._validation):
            if recorder is not None:
                recorder.end_span()
                recorder.end_session(status=status)

    def _on_exception(self, error):
        """The step raised: end of data is normal, anything else ends the fit."""
        import tensorflow as tf

        if isinstance(error, (StopIteration, tf.errors.OutOfRangeError)):
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
        for floor in self._floors.values():
            floor.stop()
        try:
            self._unwrap("train_function")
            self._unwrap("test_function")
            self._uninstall_loop_clock()
            # Never leave a profiler running behind the user's back.
            self._traces.stop()
            for recorder in (self._train, self._validation, self._evaluation):
                if recorder is not None:
                    recorder.stop(status="interrupted")
        except Exception:  # pylint: disable=broad-except
            pass


def _on_accelerator(document):
    """Whether a placement document puts the model's variables on a device
    other than the CPU (a `keras.device("cpu")` scope keeps them there even
    where a GPU is visible)."""
    variables = document.get("variables") or {}
    return any(not str(device).upper().startswith("CPU") for device in variables)


def _close_at_exit(reference):
    callback = reference()
    if callback is not None and callback._in_fit:
        callback._end_fit(status="interrupted")


def _function_of(role):
    """The model attribute holding the step function of a run's role."""
    return "train_function" if role == "train" else "test_function"
