"""The TensorFlow backend: running Keras's traced step on a batch fetched
apart, without changing what Keras traces.

Keras's `train_function` on TensorFlow fetches inside its graph. The
callback lets Keras's own first call (per element spec) trace the step,
then fetches each batch eagerly and hands it to the same traced one-step
function (`BatchStep`), counting traces as TensorFlow does
(`TracingCounter`) so a retrace is evidence, not a guess. The step's
results are on the host when it returns: its completion is read where
Keras's loop hands back its logs. `TensorFlowBackend` is this backend's
`base.Backend`.
"""

import collections
import time
import weakref

from tb_devicecost.backends import base
from tb_devicecost.backends import devices as devices_module
from tb_devicecost.backends import placement
from tb_devicecost.traces import trace as trace_module

# The step functions that Keras has already called (and so traced) itself,
# each with the element specs of the iterators it was called on. Module-wide:
# a new callback on a model whose function Keras traced for the same data
# fetches eagerly from its first step. Data of another element spec (a later
# fit on dicts instead of lists, other dtypes or shapes) goes to Keras first
# again: fetched eagerly, its first batch would make TensorFlow trace the step
# for that batch's static shape, which Keras never does (a per-output loss is
# weighed by the batch's static size, a partial batch then retraces).
_TRACED_BY_KERAS = weakref.WeakKeyDictionary()


def _element_spec(iterator):
    return getattr(iterator, "element_spec", None)


def traced_by_keras(function, iterator):
    """Whether Keras called `function` on an iterator of this one's spec."""
    try:
        return _element_spec(iterator) in _TRACED_BY_KERAS.get(function, ())
    except Exception:  # pylint: disable=broad-except
        return False  # Specs that do not compare: Keras's path is safe.


def note_traced_by_keras(function, iterator):
    specs = _TRACED_BY_KERAS.setdefault(function, [])
    spec = _element_spec(iterator)
    try:
        if spec in specs:
            return
    except Exception:  # pylint: disable=broad-except
        return
    specs.append(spec)


class BatchStep:
    """Runs Keras's traced one-step function on a batch, as Keras would.

    `original((batch,))` makes Keras call its `tf.function` on the batch,
    whose trace (for the dataset's element spec, batch dimension `None`)
    serves every batch. Once `get_concrete_function` finds that trace
    without tracing, later batches go to the `tf.function` itself: the same
    graph, the same variables, no new trace, and the same dispatch by type
    (tens of microseconds) that Keras's own `train_function` pays for its
    iterator every step. Calling the trace directly would skip it and make
    a fit with the callback about 10% faster than the user's own fit
    (issue 36): the figures would then describe another fit.
    """

    def __init__(self, original):
        self._original = original
        self._function = None
        self._concrete = None
        self._usable = True
        for cell in getattr(original, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            wrapped = getattr(value, "__wrapped__", None)
            # Keras's `_autoconvert_optionals` wrapper around `one_step_on_data`.
            if getattr(wrapped, "__name__", "") == "one_step_on_data" and hasattr(
                wrapped, "get_concrete_function"
            ):
                self._function = wrapped
        if self._function is None:
            self._usable = False

    def __call__(self, batch):
        if self._concrete is not None:
            return self._function(batch)
        before = self._tracing_count()
        result = self._original((batch,))
        if self._usable and self._tracing_count() == before:
            self._resolve(batch)
        return result

    def forget(self):
        """A retrace happened: the trace to call may have changed."""
        self._concrete = None

    def _tracing_count(self):
        function = self._function
        return function.experimental_get_tracing_count() if function is not None else 0

    def _resolve(self, batch):
        import tensorflow as tf

        leaves = tf.nest.flatten(batch)
        if any(isinstance(leaf, tf.experimental.Optional) for leaf in leaves):
            # Keras converts Optionals before the call: keep its path.
            self._usable = False
            return
        before = self._tracing_count()
        try:
            concrete = self._function.get_concrete_function(batch)
        except Exception:  # pylint: disable=broad-except
            self._usable = False
            return
        if self._tracing_count() != before:  # Never expected; stop trying.
            self._usable = False
            return
        self._concrete = concrete


class TracingCounter:
    """Counts traces of the `tf.function`s behind a Keras step function.

    Keras's `train_function` is a plain Python function whose closure holds
    its `tf.function`s (the step on an iterator and the step on a batch).
    Their tracing count is TensorFlow's own evidence of a retrace.
    """

    def __init__(self, function):
        self._functions = []
        for cell in getattr(function, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # An empty cell.
                continue
            # A tf.function, or Keras's wrapper around one (`functools.wraps`).
            for candidate in (value, getattr(value, "__wrapped__", None)):
                if hasattr(candidate, "experimental_get_tracing_count"):
                    self._functions.append(candidate)
                    break
        self._baseline = None
        self._last = None
        self.retraces = 0
        self.steps = collections.deque(maxlen=100)

    @property
    def known(self):
        return bool(self._functions) and self._baseline is not None

    def _count(self):
        return sum(f.experimental_get_tracing_count() for f in self._functions)

    def reset(self):
        """Takes the count after Keras's own first call as the baseline."""
        if self._functions:
            self._baseline = self._last = self._count()

    def changed(self):
        """Whether a trace happened since the last call."""
        if self._last is None:
            if self._functions and self._baseline is None:
                self.reset()
            return False
        count = self._count()
        if count == self._last:
            return False
        self.retraces += count - self._last
        self._last = count
        return True

    def note_step(self, step):
        self.steps.append(step)


class TensorFlowBackend(base.Backend):
    """TensorFlow: the step's results are on the host when it returns.

    With `steps_per_execution=1` each batch is fetched eagerly and handed
    to the one-step function Keras traced (`BatchStep`), so the fetch is
    timed apart; with more the fetch stays inside Keras's graph and one
    record covers an execution.
    """

    name = "tensorflow"

    def wrap_step(self, callback, original, role):
        callback._tracing[_function_of(role)] = TracingCounter(original)
        accounting = callback._accounting_for(role)
        if callback._spe > 1:
            return _execution_wrapper(callback, original, accounting, role)
        return _step_wrapper(callback, original, accounting, role)

    def fetch_in_graph(self, steps_per_execution):
        # Keras's multi-step function fetches inside its graph.
        return steps_per_execution > 1

    def end_of_data(self, error):
        import tensorflow as tf

        return isinstance(error, (StopIteration, tf.errors.OutOfRangeError))

    def list_devices(self):
        """Physical and logical devices, with the model name where known."""
        import tensorflow as tf

        physical = []
        for device in tf.config.list_physical_devices():
            entry = {"name": placement.short_device_name(device.name), "kind": device.device_type}
            if device.device_type != "CPU":
                try:
                    details = tf.config.experimental.get_device_details(device)
                    entry["model"] = details.get("device_name")
                    if "compute_capability" in details:
                        entry["compute_capability"] = list(details["compute_capability"])
                except Exception:  # pylint: disable=broad-except
                    pass
            physical.append(entry)
        logical = [
            {"name": placement.short_device_name(device.name), "kind": device.device_type}
            for device in tf.config.list_logical_devices()
        ]
        return {"physical": physical, "logical": logical}

    def placement_document(self, variables, optimizer_variables, batch, step_ops=None):
        """The `devicecost/placement` document, with the first step's ops
        and copies (`step_ops`, from `placement.capture_step_placement`;
        `None` when not captured)."""
        devices = self.list_devices()
        document = {
            "devices": devices,
            "accelerator_visible": any(
                device["kind"] != "CPU" for device in devices["physical"]
            ),
            "variables": devices_module.variable_devices(variables),
            "optimizer_variables": devices_module.variable_devices(optimizer_variables),
            "input_bytes_per_step": placement.input_bytes(batch),
            "input_devices": devices_module.input_devices(batch),
        }
        if step_ops is None:
            document["step_ops_captured"] = False
        elif "error" in step_ops:
            document["step_ops_captured"] = False
            document["capture_error"] = step_ops["error"]
        else:
            document["step_ops_captured"] = True
            document.update(step_ops)
        return document

    def profiler(self):
        return _Profiler()

    def device_counts(self):
        import tensorflow as tf

        return {
            "cpu": len(tf.config.list_logical_devices("CPU")),
            "gpu": len(tf.config.list_logical_devices("GPU")),
        }


class _Profiler:
    """`tf.profiler.experimental`, writing
    `<run>/plugins/profile/<capture>/<host>.xplane.pb`; the marker spans the
    step, from its fetch until its results are on the host."""

    format = trace_module.FORMAT_XPLANE

    def start(self, run_dir):
        import tensorflow as tf

        tf.profiler.experimental.start(run_dir)

    def stop(self):
        import tensorflow as tf

        tf.profiler.experimental.stop()

    def marker(self, step):
        import tensorflow as tf

        return tf.profiler.experimental.Trace(trace_module.MARKER_NAME, step_num=step, _r=1)


def _function_of(role):
    """The model attribute holding the step function of a run's role."""
    return "train_function" if role == "train" else "test_function"


def _step_wrapper(callback, original, accounting, role):
    """Fetches the batch itself, so the fetch is timed apart.

    Keras's own first call traces the step for the dataset's element
    spec (batch dimension `None`), with the fetch inside its graph; that
    call is left as it is (it is the warm-up step). Later calls fetch
    the batch eagerly and hand it to the same traced one-step function,
    which serves any batch shape the trace covers, so nothing is traced
    again. At the end of the data the iterator goes to Keras's graph as
    without the callback, so whatever that call does it still does.
    """
    tracing = callback._tracing[_function_of(role)]
    step = BatchStep(original)
    # A wrapper serves one dataset (one fit, or one evaluation): whether
    # Keras traced the step for its element spec is asked once.
    keras_traced = False
    clock, own = time.perf_counter, accounting.self_time

    def timed_step_function(iterator):
        nonlocal keras_traced
        if not accounting.enabled:
            return original(iterator)
        # Our own time is this function's outside the fetch and Keras's
        # step: four clock reads more than the step's own (`self_time`).
        entered = clock()
        if role == "train" and callback._traces.window is not None:
            callback._traces.before_step(accounting)
            entered = clock()  # A window's start or stop is kept out apart.
        if not keras_traced:
            if not traced_by_keras(original, iterator):
                return _first_call(callback, original, iterator, accounting, role)
            keras_traced = True
        wrote = accounting.begin_step(now=entered)
        before_next = clock()
        try:
            data = next(iterator)
        except StopIteration:
            accounting.abort_step()
            return original(iterator)
        except BaseException as error:
            accounting.abort_step()
            callback._on_exception(error)
            raise
        fetched = clock()
        accounting.end_fetch(placement.batch_size(data), now=fetched)
        if callback._warm_again.pop(role, False):
            # The traced one-step function runs on its own for the first
            # time: TensorFlow instantiates it, a one-off cost.
            accounting.extend_warmup()
        called = clock()
        try:
            result = step(data)
        except BaseException as error:
            callback._on_exception(error)
            raise
        returned = clock()
        if tracing.changed():
            tracing.note_step(accounting.upcoming_step() - 1)
            step.forget()
        if callback._needs_batch.get(role):
            callback._needs_batch[role] = False
            callback._pending_batch = data
        own.training_thread_s += (
            before_next - entered - wrote + called - fetched + clock() - returned)
        return result

    return timed_step_function


def _first_call(callback, original, iterator, accounting, role):
    """Keras's own first call: traces the step; its fetch stays inside."""
    accounting.begin_step()
    accounting.end_fetch()
    capture = (
        role == "train"
        and callback.capture_placement
        and not callback._placement_written
        and not callback._model.run_eagerly
    )
    try:
        if capture:
            result, callback._first_step_placement = placement.capture_step_placement(
                lambda: original(iterator)
            )
        else:
            result = original(iterator)
    except BaseException as error:
        accounting.abort_step()
        callback._on_exception(error)
        raise
    finally:
        note_traced_by_keras(original, iterator)
        callback._warm_again[role] = True
        callback._tracing[_function_of(role)].reset()
    return result


def _execution_wrapper(callback, original, accounting, role):
    """With `steps_per_execution > 1` the fetch stays inside the graph:
    one record per execution, its data wait inside compute, written as
    the steps the execution ran."""

    noted = False
    clock, own = time.perf_counter, accounting.self_time

    def timed_execution_function(iterator):
        nonlocal noted
        if not accounting.enabled:
            return original(iterator)
        if role == "train" and callback._traces.window is not None:
            callback._traces.before_step(accounting)
        begin = callback._batch_begin
        entered = clock()
        wrote = accounting.begin_step(now=entered)
        called = clock()
        try:
            result = original(iterator)
        except BaseException as error:
            accounting.abort_step()
            callback._on_exception(error)
            raise
        returned = clock()
        if not noted:
            noted = True
            note_traced_by_keras(original, iterator)
        accounting.set_steps(_executed_steps(callback, role, begin))
        own.training_thread_s += called - entered - wrote + clock() - returned
        return result

    return timed_execution_function


def _executed_steps(callback, role, begin):
    """How many steps the execution just run took.

    Training counts the optimizer's iterations (exact, whatever the
    data); evaluation counts the batches left in the epoch when their
    number is known.
    """
    if role == "train":
        optimizer = getattr(callback._model, "optimizer", None)
        iterations = getattr(optimizer, "iterations", None)
        if iterations is not None:
            now = int(iterations.numpy())
            last, callback._iterations = callback._iterations, now
            if last is not None:
                return now - last
        epoch_iterator = callback._epoch_iterator
    else:
        epoch_iterator = callback._test_epoch_iterator
    batches = getattr(epoch_iterator, "num_batches", None)
    if isinstance(batches, int) and batches > 0 and isinstance(begin, int):
        return max(0, min(callback._spe, batches - begin))
    return callback._spe
