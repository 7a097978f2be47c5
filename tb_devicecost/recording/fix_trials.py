"""The fits of `try_fixes`: a baseline, then each change, interleaved.

Each change is an ordinary run of `DeviceCostCallback` under
`log_dir/tried/<change>` (the baseline's `log_dir/tried/baseline`), every
fit of it one session of that run, on a fresh model from `build_model` and
a fresh object from `data()` (`trial_inputs.py` changes only that object,
or a copy). The run info says what was tried (`tried`: the change, what it
set, whether it keeps the training's arithmetic) and, after each fit, each
fit's own steady figures (`fits`): the aggregate is cumulative over a
run's sessions, so a fit's figures are the differences of its totals.
The fits run in rounds of baseline, changes, the changes again in reverse,
baseline (A B B A), repeated while the budget lasts, so a drift of the
machine during the trials falls on baseline and changes alike, and the
baseline's fits measure the noise. What the figures mean is the
analysis's (`analysis/tried.py`); which changes to try, the caller's.
"""

import gc
import os
import time
import weakref

import keras

from tb_devicecost import backends
from tb_devicecost.format import backend_facts
from tb_devicecost.recording import run_info
from tb_devicecost.recording import trial_inputs
from tb_devicecost.recording.callback import DeviceCostCallback

# A fit's steps when `steps` is not given: enough for a steady mean.
DEFAULT_STEPS = 100
_MIN_STEPS = 8
BASELINE = "baseline"


class TrialArgumentError(ValueError):
    """An invalid argument of `try_fixes` (a `ValueError`): the command line
    tells it from an error raised by the user's own model or data."""


class _TrialCallback(DeviceCostCallback):
    """`DeviceCostCallback` of one change's run: each fit on a new model,
    its run info saying what was tried and each fit's figures."""

    def __init__(self, log_dir, mark, device_busy=False):
        super().__init__(log_dir, device_busy=device_busy)
        self.mark = dict(mark, fits=[])
        self._round = 0
        self._totals = (0.0, 0, 0.0)
        self._started = None
        # The baseline's samples a step, for a change that keeps the batch
        # but whose steps carry no batch size (TensorFlow's executions of
        # `steps_per_execution` steps).
        self.batch_hint = None

    def _note_model(self):
        # Every fit of a trial is on a fresh model from `build_model`: not the
        # mix of two models the callback warns about.
        self._model_ref = None
        super()._note_model()

    def _gather_run_info(self, backend):
        return dict(super()._gather_run_info(backend), tried=self.mark)

    def begin(self, round_index):
        self._round = round_index
        self._started = time.perf_counter()

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        try:
            self._record_fit()
        except Exception:  # pylint: disable=broad-except
            pass  # A fit's figures missing is said by the analysis; never stop.

    def _record_fit(self):
        accounting = self._train
        if accounting is None or not accounting.enabled:
            return
        wall_s = time.perf_counter() - self._started if self._started else None
        aggregate = accounting.aggregate("complete")
        step = (aggregate.get("components") or {}).get("step") or {}
        totals = (float(step.get("sum_ms") or 0.0), int(step.get("count") or 0),
                  float(aggregate.get("samples") or 0.0))
        sum_ms, count, samples = (now - before for now, before in zip(totals, self._totals))
        self._totals = totals
        if samples <= 0 and count and self.batch_hint and self.mark["keeps_arithmetic"]:
            samples = count * self.batch_hint
        self.mark["fits"].append({
            "round": self._round,
            "steady_steps": count,
            "mean_step_ms": sum_ms / count if count else None,
            "samples_per_s": samples / sum_ms * 1e3 if sum_ms > 0 else None,
            "wall_s": wall_s,
        })
        accounting.update_info({"tried": self.mark})
        accounting.end_session()  # Closes the file the update opened.


class FixTrials:
    """The fits of one `try_fixes` call (`tb_devicecost.try_fixes` wires
    them to the baseline's findings).

    Args:
        build_model: Function of no arguments returning a compiled
            `keras.Model`; called once per fit.
        data: Function of no arguments returning what `fit` takes; called
            once per fit.
        log_dir: Directory of the trials; the runs go under `log_dir/tried`.
        batch_size: The batch size of arrays data (for other data, its own).
        steps: Steps per fit, warm-up included, or `None`.
        budget_s: Seconds the trials may take, the baseline's first fit
            aside.
    """

    def __init__(self, build_model, data, log_dir, batch_size=None, steps=None, budget_s=120):
        self.backend = keras.backend.backend()
        if self.backend not in backends.NAMES:
            raise TrialArgumentError(
                "`try_fixes` runs on the tensorflow, jax and torch backends. "
                f"Received: backend={self.backend!r}")
        for name, value in (("build_model", build_model), ("data", data)):
            if not callable(value):
                raise TrialArgumentError(
                    f"`{name}` must be a function of no arguments (a new "
                    f"{'compiled keras.Model' if name == 'build_model' else 'input for fit'} "
                    f"each call). Received: {name}={value!r}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)
                                  or steps < _MIN_STEPS):
            raise TrialArgumentError(
                f"`steps` must be None or an integer of at least {_MIN_STEPS}, e.g. "
                f"100. Received: steps={steps!r}")
        if batch_size is not None and (isinstance(batch_size, bool)
                                       or not isinstance(batch_size, int) or batch_size < 1):
            raise TrialArgumentError(
                "`batch_size` must be None or a positive integer, e.g. 32. "
                f"Received: batch_size={batch_size!r}")
        if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0:
            raise TrialArgumentError(
                "`budget_s` must be a positive number of seconds, e.g. 120. "
                f"Received: budget_s={budget_s!r}")
        if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
            raise TrialArgumentError(
                "`log_dir` must be a non-empty path, e.g. 'logs/try'. "
                f"Received: log_dir={log_dir!r}")
        self.root = os.path.join(os.fspath(log_dir), "tried")
        if os.path.exists(self.root):
            raise TrialArgumentError(
                f"`log_dir` already holds trials ({self.root!r}): their runs would mix "
                f"with these. Choose another `log_dir` or delete it. Received: "
                f"log_dir={os.fspath(log_dir)!r}")
        self.build_model, self.data = build_model, data
        self.batch_size = batch_size or 32
        self.steps = steps or DEFAULT_STEPS
        self.budget_s = float(budget_s)
        self.name = os.path.basename(os.path.normpath(os.path.abspath(os.fspath(log_dir))))
        sample = data()
        self.kind = trial_inputs.kind_of(sample)
        self.importable = run_info.importable()
        self._sample = sample
        self._callbacks = {}
        self._cached = None
        self._batch_hint = None
        # Every model built: a change sets its own settings on a model, so
        # one `build_model` returned twice (the user's) is refused.
        self._models = weakref.WeakSet()
        self.on_accelerator = False
        self.available = {}

    def run_dir(self, change):
        return os.path.join(self.root, change)

    def _callback(self, change, what):
        if change not in self._callbacks:
            mark = {
                "name": self.name,
                "change": change,
                "what": what,
                "baseline": BASELINE,
                "pipeline": self.kind,
                "keeps_arithmetic": change not in ("batch_size",),
                "ceiling": change in ("input_free", "empty_step"),
                # tf.data is tried (and advised) only where TensorFlow is
                # importable in this process.
                "tf_data": bool(self.importable.get("tensorflow"))
                and backend_facts.of(self.backend).tf_data,
            }
            # The baseline's first fit reads the findings: on an
            # accelerator it may trace a device-busy window.
            self._callbacks[change] = _TrialCallback(
                self.run_dir(change), mark, device_busy="auto" if change == BASELINE else False)
        return self._callbacks[change]

    def run_baseline(self):
        """The baseline's first fit (round 0), whose findings say what to
        try; returns its run directory."""
        self._fit(BASELINE, "the data and model as given", 0)
        self.available = trial_inputs.applicable(
            self.kind, self._sample, self.backend, self.on_accelerator, self.importable)
        return self.run_dir(BASELINE)

    def run(self, changes):
        """Rounds of baseline, `changes`, `changes` reversed, baseline, while
        the budget lasts (at least one). Returns `{change: run_dir}` of the
        changes that ran; a change whose fit raised is left out, said in
        `failed`."""
        self.failed = {
            change: trial_inputs.not_tried(change, self.kind, self.backend)
            for change in changes if change not in self.available
        }
        changes = [change for change in changes if change in self.available]
        started = time.perf_counter()
        round_index, round_s = 0, None
        while True:
            round_index += 1
            begun = time.perf_counter()
            order = [BASELINE] + changes + changes[::-1] + [BASELINE]
            for change in order:
                if change in self.failed:
                    continue
                try:
                    self._fit(change, self.available.get(change, ""), round_index)
                except trial_inputs.TrialDataError as error:
                    self.failed[change] = str(error)
                except Exception as error:  # pylint: disable=broad-except
                    # A change the model or data cannot take (a PyDataset
                    # that cannot be copied, XLA refusing an op) is reported,
                    # never the end of the trials.
                    if change == BASELINE:
                        raise
                    self.failed[change] = f"{type(error).__name__}: {error}"[:300]
            round_s = time.perf_counter() - begun
            spent = time.perf_counter() - started
            if spent + round_s > self.budget_s:
                break
        return {change: self.run_dir(change) for change in changes if change not in self.failed}

    failed = {}

    def _fit(self, change, what, round_index):
        callback = self._callback(change, what)
        callback.batch_hint = self._batch_hint
        callback.begin(round_index)
        data = self._sample if round_index == 0 else self.data()
        scope = None
        if change == "device":
            scope = backends.get(self.backend).device_scope("cpu:0")
        if change in ("input_free", "empty_step", "data_on_device") and self._cached is None:
            self._cached = trial_inputs.cached_batches(self.kind, data, self.batch_size)
        with keras.device(scope) if scope else _Nothing():
            model = self.build_model()
            if not isinstance(model, keras.Model) or not model.compiled:
                raise TrialArgumentError(
                    "`build_model` must return a compiled keras.Model (call "
                    f"`model.compile(...)` before returning it). Received: {model!r}")
            if model in self._models:
                raise TrialArgumentError(
                    "`build_model` must return a new compiled keras.Model each call: "
                    "the trials change settings of the model they fit, never yours. "
                    f"Received the same model twice: {model.name!r}")
            self._models.add(model)
            if change == "empty_step":
                model = trial_inputs.empty_model(self._cached) or model
            elif change == "steps_per_execution":
                model.steps_per_execution = trial_inputs.STEPS_PER_EXECUTION
            elif change == "jit_compile":
                model.jit_compile = True
            x, y, arguments = trial_inputs.fit_arguments(
                change, self.kind, data, self.batch_size,
                trial_inputs.steps_of_fit(change, self.steps), self.backend,
                cached=self._cached)
            arguments.setdefault("shuffle", False)
            model.fit(x, y, epochs=1, verbose=0, callbacks=[callback], **arguments)
        if change == BASELINE and round_index == 0:
            self.on_accelerator = bool(getattr(callback, "_accelerated", False))
            first = callback.mark["fits"][-1] if callback.mark["fits"] else {}
            if first.get("samples_per_s") and first.get("mean_step_ms"):
                self._batch_hint = first["samples_per_s"] * first["mean_step_ms"] / 1e3

    def close(self):
        """Lets go of the trials' models, callbacks and data, and collects
        the cycles among them now: a TensorFlow iterator freed only when
        the interpreter ends (a `PyDataset`'s, through `from_generator`)
        waits there forever for a Python thread that can no longer run."""
        self._callbacks.clear()
        self._cached = None
        self._sample = None
        gc.collect()


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
