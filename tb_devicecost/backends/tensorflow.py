"""The TensorFlow backend: Keras's traced step, its fetch timed apart
inside the same graph.

Keras's `train_function` on TensorFlow fetches inside its graph. The
callback calls a `tf.function` of the same body with the fetch between
two `tf.timestamp` ops (`FetchTimedStep`), so a fit with the callback runs
the user's graph and the same eager operations a step, and counts traces
as TensorFlow does (`TracingCounter`) so a retrace is evidence, not a
guess. The step's results are on the host when it returns: its completion
is read where Keras's loop hands back its logs. `TensorFlowBackend` is
this backend's `base.Backend`.
"""

import collections
import functools
import time

from tb_devicecost.backends import base
from tb_devicecost.backends import devices as devices_module
from tb_devicecost.backends import keras_loop
from tb_devicecost.backends import placement
from tb_devicecost.traces import trace as trace_module

# A trace of Keras's step runs its Python (77 ms for one dense layer on
# this project's CPU, where steps of the seeds' MLP take 1.2 ms): a shorter
# call cannot have retraced, so the tracing count is read only after calls
# this long. Shorter steps save its four calls a step; on longer ones the
# read is under 0.1% of the step.
TRACE_MIN_S = 5e-3


class FetchTimedStep:
    """Keras's step on its iterator, the fetch timed inside the graph.

    Keras's `train_function` on TensorFlow (one step an execution) calls a
    `tf.function` that fetches the batch and runs the step on it, then
    reads the optional it returns (`has_value`, `get_value`). This class
    makes the same calls on a `tf.function` of the same body, with two
    `tf.timestamp` ops around the fetch: the same graph, the same
    variables, the same trace for the dataset's element spec (batch
    dimension `None`), the same eager operations a step. Fetching the
    batch eagerly instead skipped the optional's two operations and ran
    fits with the callback at x0.83 of the user's own fit on this machine
    (issue 36): the figures described another fit.

    The fetch's two timestamps and the batch's size go into a queue of
    the graph's own, read once per write (`fill`), not returned: a second
    output cost a call about 20 µs on this project's CPU, a constant's as
    much, the enqueue about 3 (issue 36, docs/PERFORMANCE.md). The wait is
    taken at the read: the ops a queue of three components does without
    (a subtraction, a cast, a stack) cost 2-8 µs of wall a call here.

    With `with_batch=True` the call also returns the batch (a trace of
    its own, once per model and element spec), for the probes of the
    first step, and its figures as outputs.
    """

    def __init__(self, one_step_on_data, run_eagerly):
        import tensorflow as tf

        with tf.init_scope():
            # Unbounded; emptied at every write (`fill`), every few seconds.
            # A step's fetch began and ended (seconds), its batch's size.
            queue = tf.queue.FIFOQueue(
                -1, [tf.float64, tf.float64, tf.int32], shapes=[[], [], []])
        self._queue = queue

        def body(with_batch):
            @tf.autograph.experimental.do_not_convert
            def fetch_timed_step_on_iterator(iterator):
                data, began, ended = stamped_get_next(tf, iterator)
                size = _leading_size(tf, data)
                outputs = tf.experimental.Optional.from_value(one_step_on_data(data))
                if with_batch:
                    return outputs, tf.stack([ended - began, tf.cast(size, tf.float64)]), data
                queue.enqueue((began, ended, size))
                return outputs

            # The iterator is the only argument, as in Keras's function: a
            # Python argument more cost 100-300 µs a call to bind here.
            return (fetch_timed_step_on_iterator if run_eagerly else
                    tf.function(fetch_timed_step_on_iterator, reduce_retracing=True))

        self._functions = (body(False), body(True))
        # The steady steps' function: the wrapper calls it, a frame less.
        self.steady = self._functions[0]
        # The records of the steady steps whose figures are in the queue,
        # in call order (`None`: recorded nowhere), for every wrapper of
        # it; `fill` sets their `fields` (`StepAccounting.RECORD_*`).
        self.pending = []
        self.fields = None
        self._eager = run_eagerly
        # The traces of the function of steady steps (without the batch):
        # Keras's one-step function is traced only inside it, so a retrace
        # of Keras's is one of it too. Read once a step: one count, not
        # three, and TensorFlow's own method, without a frame of ours.
        self.steady_tracing_count = (
            _no_traces if run_eagerly else self._functions[0].experimental_get_tracing_count)

    def tracing_count(self):
        if self._eager:
            return 0
        return sum(function.experimental_get_tracing_count() for function in self._functions)

    def __call__(self, iterator, with_batch=False):
        """`(outputs, fetch seconds, batch size or None, batch or None)`;
        raises `StopIteration` where Keras's function would."""
        if with_batch:
            outputs, figures, batch = self._functions[True](iterator)
            # `_numpy`: `numpy()` less a copy of the array and a frame.
            wait_s, size = figures._numpy().tolist()  # pylint: disable=protected-access
        else:
            self.fill()  # The queue then holds this call's figures alone.
            outputs, batch = self._functions[False](iterator), None
            [(wait_s, size)] = self._taken()[:1] or [(0.0, -1)]
        if not outputs.has_value():
            raise StopIteration
        return outputs.get_value(), wait_s, (int(size) if size >= 0 else None), (
            _on_replicas(batch, iterator) if with_batch else None)

    def fill(self):
        """Sets each pending steady step's fetch end and batch size from
        its figures in the queue, and empties both: before the records
        become rows (`StepAccounting.before_settle`), and before a wrapper
        of a new fit or pass starts."""
        figures = self._taken()
        pending = self.pending
        if not pending:
            return
        # In call order. A step that raised after its enqueue ended its
        # fit; its figures, the last, have no record and are left out.
        fetched_at, compute_start_at, batch_at = self.fields
        for record, (wait_s, size) in zip(pending, figures):
            if record is not None:
                record[fetched_at] = record[compute_start_at] = record[fetched_at] + wait_s
                if size >= 0:
                    record[batch_at] = int(size)
        del pending[:]

    def _taken(self):
        """Every step's figures in the queue, as `[(seconds, size), ...]`."""
        queue = self._queue
        count = int(queue.size())
        if not count:
            return []
        began, ended, sizes = queue.dequeue_many(count)
        return list(zip((ended.numpy() - began.numpy()).tolist(), sizes.numpy().tolist()))


def _no_traces():
    return 0


def _on_replicas(batch, iterator):
    """The batch as a distributed iterator placed it: a `tf.function`
    returns every replica's part on the first replica's device, and the
    probes read where the input went (one-off, the first step's)."""
    import tensorflow as tf

    devices = getattr(getattr(getattr(iterator, "_strategy", None), "extended", None),
                      "worker_devices", None)
    if not devices:
        return batch

    def place(leaf):
        parts = getattr(leaf, "values", None)
        if not isinstance(parts, tuple) or len(parts) != len(devices):
            return leaf
        moved = []
        for part, device in zip(parts, devices):
            with tf.device(device):
                moved.append(tf.identity(part))
        return type(leaf)(tuple(moved))

    try:
        return tf.nest.map_structure(place, batch)
    except Exception:  # pylint: disable=broad-except
        return batch


def stamped_get_next(tf, iterator):
    """`(batch, began, ended)` inside a graph: `iterator.get_next()` between
    two `tf.timestamp` ops that wait for it (float64 scalars of seconds)."""
    began = tf.timestamp()
    with tf.control_dependencies([began]):
        data = iterator.get_next()
    with tf.control_dependencies(tf.nest.flatten(data, expand_composites=True)):
        return data, began, tf.timestamp()


def timed_get_next(tf, iterator):
    """`(batch, seconds)` inside a graph: `stamped_get_next`'s, subtracted."""
    data, began, ended = stamped_get_next(tf, iterator)
    return data, ended - began


@functools.lru_cache(maxsize=1)
def timed_fetch():
    """A `tf.function` of an iterator returning the seconds its `get_next`
    took, timed as `FetchTimedStep` times the step's fetch: the fetch
    floor's sample, like with like. One for the process, so a later fit on
    batches of the same spec reuses its trace."""
    import tensorflow as tf

    @tf.autograph.experimental.do_not_convert
    def fetch_seconds(iterator):
        return timed_get_next(tf, iterator)[1]

    return tf.function(fetch_seconds, reduce_retracing=True)


def _leading_size(tf, data):
    """The batch's samples (per-replica parts summed) as an int32 scalar of
    the graph, or -1 where its first leaf has no leading dimension."""
    first = tf.nest.flatten(data)[0]
    parts = getattr(first, "values", None)
    parts = parts if isinstance(parts, tuple) else (first,)
    sizes = []
    for part in parts:
        if not isinstance(part, tf.Tensor) or part.shape.rank in (None, 0):
            return tf.constant(-1, tf.int32)
        sizes.append(tf.shape(part)[0])
    # One part, the usual case: no op more.
    return sizes[0] if len(sizes) == 1 else tf.add_n(sizes)


def fetch_timed_step(original, model):
    """The `FetchTimedStep` of Keras's step function `original`, or `None`
    where it holds no one-step function (another Keras). Kept on the
    function itself, so a later fit with a new callback reuses its traces
    and the trace lives as long as Keras's function."""
    step = getattr(original, "_tb_devicecost_step", None)
    if step is None:
        one_step = keras_loop.one_step_on_data(original)
        if one_step is None:
            return None
        step = FetchTimedStep(one_step, bool(getattr(model, "run_eagerly", False)))
        try:
            original._tb_devicecost_step = step
        except AttributeError:
            pass
    return step


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

    With `steps_per_execution=1` the step runs through `FetchTimedStep`,
    the fetch timed apart inside the graph; with more the fetch stays
    inside Keras's graph, untimed, and one record covers an execution.
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

    def fetch_timed_in_graph(self, steps_per_execution):
        # `FetchTimedStep`: Keras's graph, the fetch between two timestamps.
        return steps_per_execution == 1

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
    """Runs Keras's step through `FetchTimedStep`, so the fetch is timed
    apart inside the same graph.

    The first call of a fit (per role) traces where Keras's own first call
    would, captures the first step's op placement (training) and returns
    the batch for the probes between steps. Iterators that are not
    `tf.data`'s (Keras then iterates in Python), or a Keras whose function
    holds no one-step function, go to Keras's own function, the fetch
    inside the step.
    """
    import tensorflow as tf

    tracing = callback._tracing[_function_of(role)]
    step = fetch_timed_step(original, callback._model)
    iterators = (tf.data.Iterator, tf.distribute.DistributedIterator)
    first, last_with_batch, steady_traces = True, None, None
    clock, own = time.perf_counter, accounting.self_time
    train, schedule = role == "train", callback._traces
    steady_function = pending_step = None
    if step is not None:
        steady_function, pending_step = step.steady, step.pending.append
        # A pass before's figures into its records, then this one's rows wait for theirs.
        step.fields = (accounting.RECORD_FETCHED, accounting.RECORD_COMPUTE_START,
                       accounting.RECORD_BATCH)
        if accounting.before_settle is not None:
            accounting.before_settle()
        step.fill()
        accounting.before_settle = step.fill

    def timed_step_function(iterator):
        nonlocal first, steady_traces
        if not accounting.enabled:
            return original(iterator)
        # Our own time is this function's outside Keras's step: the clock
        # reads, the step's figures and the bookkeeping (`self_time`).
        entered = clock()
        if train and schedule.window is not None:
            schedule.before_step(accounting)
            entered = clock()  # A window's start or stop is kept out apart.
        if step is None or not isinstance(iterator, iterators):
            if first:
                first = False
                # The run says its fetch is inside compute after all.
                accounting.update_info({"fetch_in_graph": True, "fetch_timed_in_graph": False})
            return _fetch_inside(callback, original, iterator, accounting)
        # Once a call without the batch was traced, no call of this wrapper
        # traces again: `_needs_batch` turns true only before a wrapper is
        # made, at a fit's or an evaluation's start.
        if last_with_batch is not False:
            with_batch = bool(callback._needs_batch.get(role))
            if first or with_batch != last_with_batch:
                return _traced_call(iterator, with_batch)
        wrote = accounting.begin_step(now=entered)
        called = clock()
        try:
            # `FetchTimedStep.__call__`'s steady case, inline: a frame less.
            outputs = steady_function(iterator)
            if not outputs.has_value():
                raise StopIteration
            result = outputs.get_value()
        except BaseException as error:
            accounting.abort_step()
            callback._on_exception(error)
            raise
        returned = clock()
        # The step's record (`None` where the recording just stopped): its
        # fetch began at its start, and ended that fetch's seconds later,
        # which the graph queued (`FetchTimedStep.fill`, at the write).
        pending_step(accounting.record)
        if returned - called >= TRACE_MIN_S:
            traces = step.steady_tracing_count()
            if traces != steady_traces:
                steady_traces = traces
                if tracing.changed():
                    tracing.note_step(accounting.upcoming_step() - 1)
        own.training_thread_s += called - entered - wrote + clock() - returned
        return result

    def _traced_call(iterator, with_batch):
        """A call that may trace: the fit's first, or the first after the
        batch was asked for or given (each its own trace, once per model
        and element spec). Warm-up where it traced."""
        nonlocal first, last_with_batch, steady_traces
        capture = (
            first
            and role == "train"
            and callback.capture_placement
            and not callback._placement_written
            and not callback._model.run_eagerly
        )
        traces = step.tracing_count()
        started = clock()
        started += accounting.begin_step(now=started)
        try:
            if capture:
                called, callback._first_step_placement = placement.capture_step_placement(
                    lambda: step(iterator, with_batch))
            else:
                called = step(iterator, with_batch)
        except BaseException as error:
            accounting.abort_step()
            callback._on_exception(error)
            raise
        finally:
            first, last_with_batch = False, with_batch
        result, wait_s, size, batch = called
        accounting.end_fetch(size, now=started + wait_s)
        if step.tracing_count() != traces:
            accounting.extend_warmup()
        if with_batch:
            callback._needs_batch[role] = False
            callback._pending_batch = batch
        tracing.reset()
        steady_traces = step.steady_tracing_count()
        return result

    return timed_step_function


def _fetch_inside(callback, original, iterator, accounting):
    """Keras's own function: the fetch stays inside the step."""
    accounting.begin_step()
    accounting.end_fetch()
    try:
        return original(iterator)
    except BaseException as error:
        accounting.abort_step()
        callback._on_exception(error)
        raise


def _execution_wrapper(callback, original, accounting, role):
    """With `steps_per_execution > 1` the fetch stays inside the graph:
    one record per execution, its data wait inside compute, written as
    the steps the execution ran."""

    clock, own = time.perf_counter, accounting.self_time

    def timed_execution_function(iterator):
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
