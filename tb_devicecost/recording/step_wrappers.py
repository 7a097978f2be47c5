"""The recording between Keras's hooks, the same on every backend.

`StepRecording` is the part of `DeviceCostCallback` that runs while steps
run: it installs the backend's timed step function (`Backend.wrap_step`)
in place of Keras's, receives the clock reads around Keras's callback list
(`backends/keras_loop.py`), and probes between steps (placement, the fetch
floor, trace windows) with their time kept out of the records. What
differs per backend is asked of `self._backend` (`backends/base.py`); the
callback's hooks and lifecycle stay in `callback.py`.
"""

import time

from tb_devicecost.backends import keras_loop
from tb_devicecost.backends import placement
from tb_devicecost.recording import run_info
from tb_devicecost.recording.step_rows import RECORD_COMPUTED

# The fetch floor is sampled while training, under the same load as the
# real fetches: 15 samples one a step from the first fetched batch on,
# then one every `FLOOR_SAMPLE_EVERY` steps at most, and only while those
# take at most `fetch_floor.BUDGET` (0.2%) of the fit's time; their time
# is kept out of the records.
FLOOR_SAMPLE_EVERY = 50


class StepRecording:
    """Mixin of `DeviceCostCallback`: its state between hooks (accounting,
    `_backend`, `_traces`, `_async`, ...) is set up by the callback."""

    # Wrapping the step function.

    def _wrap(self, attribute, role):
        original = getattr(self._model, attribute)
        if original is None or getattr(original, "_devicecost_wrapper", False):
            return
        self._original_functions[attribute] = original
        # The timed step function measures our own time (`self_ms`).
        self._accounting_for(role).self_time.measured = True
        if self._backend.asynchronous and not self._backend.guards_step:
            wrapper = _guarded(
                self, original, lambda call: self._backend.wrap_step(self, call, role))
        else:
            # JAX's wrapper guards itself; TensorFlow's reads Keras's
            # function itself (its traced steps): both are handed the
            # function as it is.
            wrapper = self._backend.wrap_step(self, original, role)
        wrapper._devicecost_wrapper = True
        setattr(self._model, attribute, wrapper)

    def _unwrap(self, attribute):
        original = self._original_functions.pop(attribute, None)
        current = getattr(self._model, attribute, None)
        # A `compile()` in between replaced the function: leave the new one.
        if original is not None and getattr(current, "_devicecost_wrapper", False):
            setattr(self._model, attribute, original)

    # Clock reads around Keras's callback list (`backends/keras_loop.py`).

    def _install_loop_clock(self):
        if self._loop is not None:
            self._loop.uninstall()
            self._loop = None
        callbacks = keras_loop.callback_list()
        if callbacks is None:
            return  # Called outside Keras's loop: our own hooks read the clock.
        self._loop = keras_loop.LoopClock(callbacks, self)
        # Only a loop that fetches before the batch-begin hooks (PyTorch)
        # needs the clock around them. The loop stands in for our own batch
        # hooks (the batch's index; the probes between steps in
        # `loop_results`).
        self._loop.install(batch_bounds=self._backend.fetches_before_batch_begin)
        self._hooks_on_worker = {
            role: keras_loop.hooks_on_worker(callbacks, role) for role in ("train", "test")
        }

    def _uninstall_loop_clock(self):
        if self._loop is not None:
            self._loop.uninstall()
            self._loop = None

    def _stop_if_failed_on_worker(self):
        """Training thread: stops the recording where a failure of ours on
        Keras's worker was kept for it (`loop_failed`); whether it did."""
        if self._failed_on_worker is None:
            return False
        self._disable(self._failed_on_worker)
        return True

    def loop_results(self, role, batch, now):
        # Subscripts, not `dict.get`: calls on Keras's worker, once a step,
        # where it holds the GIL (the loop clock sets both roles).
        on_worker = self._hooks_on_worker[role]
        if role == "train" and self._traces.window is None and self._in_fit:
            # `_results`' usual cases, without its frame (once a step, on
            # Keras's worker where it holds the GIL): a training step's
            # report, where no trace window needs its marker.
            asynchronous = self._async  # Read once: the training thread may replace it.
            if "train" in asynchronous:
                steps = asynchronous["train"]
                # `AsyncSteps.completed`, without its frame.
                if on_worker:
                    steps.done[batch] = now
                else:
                    steps.exact_done[batch] = now
                own = steps.accounting.self_time
            else:
                # `end_compute`, inline: the record's compute end.
                train = self._train
                if train.record is not None:
                    train.record[RECORD_COMPUTED] = now
                own = train.self_time
        else:
            own = self._results(role, batch, now, in_hook=False)
        if own is not None:
            # Our part of the loop's batch-end call, from its clock read on
            # (`aggregate.SelfTime`): on Keras's worker thread, or on the
            # training thread where the hooks run there.
            if on_worker:
                own.worker_s += time.perf_counter() - now
            else:
                own.training_thread_s += time.perf_counter() - now
        if not self._backend.asynchronous:
            # After our own time: the probes' is kept out of the steps apart.
            if role == "train" and self._steps_to_probe > 1 and self._pending_batch is None:
                # `_probe_after_step`'s usual case, without its frame: no
                # probe due, a training step counted down.
                self._steps_to_probe -= 1
            else:
                self._probe_after_step(role)

    def loop_epoch_begin(self, role, now):
        self._fetch_started = now

    def loop_failed(self, error, on_worker=False):
        if on_worker:
            # The training thread stops the recording at its next clock
            # read, not in the middle of recording a step.
            self._failed_on_worker = error
            return
        self._disable(error)

    def _results(self, loop_role, batch, now, in_hook):
        """The step's logs are Python numbers: its work is complete.

        `loop_role` is the loop's (`"train"` or `"test"`); the run's role
        for a test step is validation's or evaluation's. Returns the
        `SelfTime` of the run it recorded into, or `None`.
        """
        role = "train" if loop_role == "train" else self._test_role
        if role is None:
            return None
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
            return steps.accounting.self_time
        if role == "train":
            if not self._in_fit:
                return None
            self._train.end_compute(now=now)
            if self._traces.window is not None:
                self._traces.window.after_step()
            return self._train.self_time
        accounting = self._accounting_for(role)
        accounting.end_compute(now=now)
        return accounting.self_time

    def _probe_after_step(self, loop_role):
        """The probes that follow a synchronous step (`_probe_between_steps`):
        after the first fetched batch, then the fetch floor's samples when
        due (training counts its steps down)."""
        role = "train" if loop_role == "train" else self._test_role
        if role is None or role in self._async:
            return
        if role == "train":
            if not self._in_fit:
                return
            if self._pending_batch is not None or self._steps_to_probe == 1:
                self._probe_between_steps()
            elif self._steps_to_probe > 1:
                self._steps_to_probe -= 1
        elif self._test_probe_due(role):
            self._probe_between_steps(self._accounting_for(role), role)

    # Probing between steps, kept out of the records.

    def _probe_between_steps(self, accounting=None, role="train"):
        """Placement and the fetch floor after the first fetched batch,
        fetch-floor samples after some later steps (synchronous steps).

        Their time is kept out of the step being recorded.
        """
        accounting = accounting or self._train
        started = time.perf_counter()
        try:
            data, self._pending_batch = self._pending_batch, None
            floor = self._floors.get(role)
            if data is not None:
                if role == "train" and not self._placement_written:
                    self._placement_written = True
                    document = self._placement_document(data)
                    accounting.write_placement(document)
                    self._accelerated = on_accelerator(document)
                    self._placement_of_train = document
                self._place_evaluation(role, accounting)
                if role == "train":
                    self._traces.found_device(self._accelerated)
                if floor is not None:
                    floor.start(data, self._model.distribute_strategy)
                    accounting.set_fetch_floor(floor.milliseconds())
                accounting.update_info(
                    run_info.batch_info(placement.batch_size(data), self._run_info)
                )
                if role == "train":
                    # A validation's first batch leaves training's count.
                    self._steps_to_probe = _probe_in(floor)
            elif floor is not None and (role == "train" or floor.spreading):
                # Validation's and evaluation's floors take their first
                # samples only; training's later ones too, on a budget.
                if floor.sample_if_due():
                    accounting.set_fetch_floor(floor.milliseconds())
                if role == "train":
                    self._steps_to_probe = _probe_in(floor)
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)
        accounting.exclude(time.perf_counter() - started)

    def _test_probe_due(self, role):
        """Whether a validation or evaluation step is followed by a probe:
        its first fetched batch is pending, or its fetch floor has first
        samples left to take, one a step (training counts its steps)."""
        if self._pending_batch is not None:
            return True
        floor = self._floors.get(role)
        return floor is not None and floor.spreading

    def _place_evaluation(self, role, accounting):
        """A validation or evaluation run's placement: the train run's (the
        same model's variables, captured at its first step), written once
        per run with where it was measured, so that the run shows its
        device too."""
        document = self._placement_of_train
        if role == "train" or document is None or role in self._placed_roles:
            return
        self._placed_roles.add(role)
        accounting.write_placement(dict(document, measured_in="train"))

    def _placement_document(self, data):
        model = self._model
        step, self._first_step_placement = self._first_step_placement, None
        return self._backend.placement_document(
            model.variables,
            getattr(getattr(model, "optimizer", None), "variables", []),
            data,
            step,
        )

    def _before_traced_step(self, step):
        """Opens or closes the trace window before train step `step`, once
        the step before is complete; the time it took past that completion
        is kept out of the records (`profiling.TraceSchedule.before_async_step`)."""
        transition = self._traces.before_async_step(step)
        if transition is not None:
            began, ended, previous = transition
            self._pending_excluded += ended - max(began, previous or began)
        return transition

    def _input_state_asked(self, role, batch, state):
        """After an asynchronous step: the first step's probes, where they
        still wait for its batch and the fit's state (`_needs_batch`).
        Returns whether to ask again after the next step: once it says
        no, the timed step stops asking (`_needs_batch` turns true only
        before a step function is wrapped)."""
        if not self._needs_batch.get(role, False):
            return False
        self._after_first_async_step(role, batch, state)
        return True

    def _after_first_async_step(self, role, batch, state):
        """Placement and the fetch floor, once the first step is dispatched
        (its device work overlaps them); their time is kept out of the next
        step."""
        started = time.perf_counter()
        self._needs_batch[role] = False
        accounting = self._accounting_for(role)
        try:
            if role == "train":
                if self._compiles is not None:
                    self._compiles.armed = True
                if not self._placement_written:
                    self._placement_written = True
                    variables, optimizer_variables = self._backend.fit_variables(
                        self._model, state
                    )
                    document = self._backend.placement_document(
                        variables, optimizer_variables, batch
                    )
                    accounting.write_placement(document)
                    self._accelerated = on_accelerator(document)
                    self._placement_of_train = document
                self._traces.found_device(self._accelerated)
            self._place_evaluation(role, accounting)
            floor = self._floors.get(role)
            if floor is not None and floor.start_python(batch, self._backend.handover()):
                floor.stop()
                accounting.set_fetch_floor(floor.milliseconds())
            accounting.update_info(
                run_info.batch_info(placement.batch_size(batch), self._run_info)
            )
        except Exception as error:  # pylint: disable=broad-except
            self._disable(error)
        self._pending_excluded += time.perf_counter() - started

    def _note_retraces(self, attribute, accounting):
        self._backend.note_retraces(self, attribute, accounting)

    def _accounting_for(self, role):
        return {
            "train": self._train,
            "validation": self._validation,
            "evaluation": self._evaluation,
        }[role]


class _Call:
    """Keras's step function, called by the timed one: remembers whether
    it was called, what it returned, and whether the error was its own.
    One per wrapper, reset each step (a step function does not call
    itself)."""

    __slots__ = ("function", "called", "result", "raised")

    def __init__(self, function):
        self.function = function
        self.reset()

    def reset(self):
        self.called = self.raised = False
        self.result = None

    def __call__(self, *args, **kwargs):
        self.called = True
        try:
            self.result = self.function(*args, **kwargs)
        except BaseException:
            self.raised = True
            raise
        return self.result


def _guarded(callback, original, wrap_step):
    """The backend's timed step function (`wrap_step(call)`), such that a
    failure of ours never breaks the step: the model's own errors pass
    through unchanged; ours switch the callback off (one warning) and the
    step's result, or Keras's own call where the step had not run yet, goes
    back to Keras. (What runs inside Keras's call, the timed iterator, does
    not raise: it only reads clocks and asks `is_ready`.)"""
    call = _Call(original)
    timed = wrap_step(call)

    def step(*args, **kwargs):
        if not callback._enabled:
            return original(*args, **kwargs)
        call.reset()
        try:
            return timed(*args, **kwargs)
        except Exception as error:  # pylint: disable=broad-except
            if call.raised:
                raise  # The model's own error, as without the callback.
            callback._disable(error)
            return call.result if call.called else original(*args, **kwargs)

    return step


def _probe_in(floor):
    """Steps until the next probe between training steps: the next one
    while the floor's first samples are taken one a step, else
    `FLOOR_SAMPLE_EVERY`; none (0) without a running floor to sample."""
    if floor is None or not floor.running:
        return 0
    return 1 if floor.spreading else FLOOR_SAMPLE_EVERY


def on_accelerator(document):
    """Whether a placement document puts the model's variables on a device
    other than the CPU (a `keras.device("cpu")` scope keeps them there even
    where a GPU is visible)."""
    variables = document.get("variables") or {}
    return any(not str(device).upper().startswith("CPU") for device in variables)
