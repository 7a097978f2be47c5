"""The JAX backend: when a dispatched step is complete, without waiting.

A JAX step returns once its work is queued. The usual step fetches its
batch here and calls Keras's step on it (`keras_loop.keras_step_of`); the
others go through Keras's `(state, iterator)` call, the fetches timed by
a `TimedIterator`. A step is complete when its outputs are ready
(`completion_probe`, asked without blocking);
`backends/asynchronous.py` turns that into the step's parts.
Recompilations are counted from `jax.monitoring`.
"""

import threading
import time
import weakref

from tb_devicecost.backends import base
from tb_devicecost.backends import gil_wait
from tb_devicecost.backends import keras_loop
from tb_devicecost.backends import placement
from tb_devicecost.backends import timed_iterator
from tb_devicecost.traces import trace as trace_module


def completion_probe(logs):
    """A weak reference to a JAX array among a step's logs, or `None`.

    The outputs of one execution become ready together, so any one of the
    step's logs says whether the step is complete (`is_ready`, which does
    not block). Weak, so that the array is freed when Keras lets go of it,
    on the thread that does, as without the callback.
    """
    if isinstance(logs, dict) and logs:
        # The usual case, a flat dict of metrics: no walk.
        value = next(iter(logs.values()))
        if hasattr(value, "is_ready"):
            return weakref.ref(value)
    for value in placement.leaves(logs):
        if hasattr(value, "is_ready"):
            return weakref.ref(value)
    return None


class CompletionProbe:
    """`completion_probe`, keeping the key of the step's logs that had one
    (`key`): from the second step on, the JAX step reads that key itself,
    one dict read, and calls this only where it found none there."""

    __slots__ = ("key",)

    def __init__(self):
        # The key of the logs' first array, once found.
        self.key = None

    def __call__(self, logs):
        if isinstance(logs, dict):
            for key, value in logs.items():
                if hasattr(value, "is_ready"):
                    self.key = key
                    return weakref.ref(value)
        return completion_probe(logs)


# Polls for completed steps happen in one step's fetch in this many
# (`timed_iterator.TimedIterator`), on every device: in a running fit a poll
# costs the training thread 6 to 10 µs on this project's CPU where a
# microbenchmark reads 0.3 (`is_ready()` alone 4 µs inside a running fit
# against 0.2-1.0 outside one), about 35 µs on an H200 host: one in 8 was
# 4.4 µs of the 13 µs the callback took a step there, one in 32 1.0
# (docs/PERFORMANCE.md). Steps no poll asked about are placed as the
# nearest asked ones are. A fit's first `FIRST_POLLS` turns come one in
# `FIRST_POLL_EVERY`, so a short fit has steps measured closely as before.
# A fit whose input runs Python on threads of its own polls every step
# (`wrap_step`).
POLL_EVERY = 32
FIRST_POLL_EVERY, FIRST_POLLS = 8, 8


def _sized_class(batch):
    """The class of `batch`'s first part where `len` of it is the batch's
    size (an array in an `(x, y)` sequence), else `None`."""
    if batch.__class__ not in placement.BATCH_SEQUENCES:
        return None
    shape = getattr(batch[0], "shape", None)
    return batch[0].__class__ if isinstance(shape, tuple) and shape else None


class JaxBackend(base.Backend):
    """JAX: steps dispatched asynchronously, complete when their outputs
    are ready (`completion_probe`); recompilations counted from
    `jax.monitoring` (`CompileEvents`)."""

    name = "jax"
    asynchronous = True

    # `timed_jax` keeps a failure of ours from the step itself: one frame
    # fewer a step than the generic guard (`step_wrappers._guarded`).
    guards_step = True

    def wrap_step(self, callback, original, role):
        """Times each step: the fetch here and Keras's step on the batch
        (the lean lane), or Keras's `(state, iterator)` call with the
        fetches timed by a `TimedIterator` (the general lane); the
        completion by its outputs' `is_ready`. A failure of ours switches
        the recording off (`callback._disable`); the model's own errors
        pass unchanged."""
        steps = callback._async[role]
        # Where the input's own Python threads hold the GIL, Keras's worker
        # reports late at any step: every step polls (and is metered).
        steps.poll_every = 1 if steps.held_is_input else POLL_EVERY
        steps.first_poll_every, steps.first_polls = FIRST_POLL_EVERY, FIRST_POLLS
        steps.probed = True  # Each step's probe kept: the lean lane appends every one.
        proxy = timed_iterator.TimedIterator(time.perf_counter, steps)
        # Where the pipeline's own threads hold the GIL, the training thread
        # waits for it to dispatch the step and between steps, while the
        # device idles: their data wait, metered (the meter costs about a
        # microsecond per thread, so only there).
        meter = gil_wait.GilWait(after_release=True) if steps.held_is_input else None
        if meter is not None and not meter.available:
            meter = None
        proxy.meter = meter
        between = None if meter is None else gil_wait.WaitBetweenSteps(meter, steps)
        # The hot path, once a step: names bound once, attributes read once.
        clock, batch_size = time.perf_counter, placement.batch_size
        dispatched = steps.dispatched
        add_row, add_probe = steps.lean_lane()
        sequences = placement.BATCH_SEQUENCES
        # The class of the batch's first part where `len` is its leading
        # dimension (an array), found at the first step: `len` for it, a
        # call fewer than `.shape[0]`.
        sized = None
        traces, train = callback._traces, role == "train"
        probe_of, ref = CompletionProbe(), weakref.ref
        own = steps.accounting.self_time
        # Fixed for the wrapper's fit: read once, not a step. The compile
        # events exist before the train step is wrapped (`_begin_async_fit`).
        compiles = callback._compiles if train else None
        last, single = callback._spe - 1, callback._spe == 1
        # The input state is read after the first step (`_needs_batch`):
        # once it was not asked for, it is not asked again this fit.
        input_asked = True
        # Calls of the lean lane to the next that polls and asks whether a
        # drain is due (`AsyncSteps.lean_due`); `due`, when a write is due,
        # as that call last read it: a step that starts later asks too.
        next_poll_in = steps.next_poll_in
        until, due = next_poll_in(), float("-inf")

        # The usual step takes the lean lane: no input threads to meter, one
        # step an execution, no trace window open, the fetch before not
        # slow. It fetches the batch itself, times the fetch and the call
        # of Keras's step on it (`keras_loop.keras_step_of`), and adds its
        # row and probe to two lists (`AsyncSteps.lean_lane`); one call in
        # `next_poll_in()` polls and asks whether a drain is due. Everything
        # else waits for the drain. What it leaves out, the general lane
        # does (`timed_step`).
        lean = between is None and single
        keras_step = keras_loop.keras_step_of(original) if lean else None
        slow_fetch_s = timed_iterator.SLOW_FETCH_S

        def timed_jax(state, iterator):
            nonlocal input_asked, until, due, sized
            if not callback._enabled:
                return original(state, iterator)
            # Our own time: this function's outside Keras's call, and the
            # polls around its fetch (`aggregate.SelfTime`).
            entered = clock()
            if not (lean and not proxy.slow and (traces.window is None or not train)):
                return timed_step(state, iterator, entered)
            until -= 1
            turn = until <= 0
            polled_s = 0.0
            if compiles is not None:
                compiles.dispatching = steps
            try:
                # Our own time before the call ends where the fetch starts.
                called = start = clock()
                if not turn:
                    first = next(iterator)  # As in Keras's call: StopIteration ends the epoch.
                    fetched = clock()
                else:
                    # This call's turn to poll, at the fetch's two clock
                    # reads, as the proxy polls: here, without its frames.
                    until = next_poll_in()
                    polled_s = proxy.poll_at(start)
                    first = next(iterator)
                    fetched = clock()
                    polled_s += proxy.poll_at(fetched)
                if fetched - start > slow_fetch_s:
                    proxy.slow = True  # The next call polls (the general lane).
                if keras_step is not None:
                    result = keras_step(state, first)
                else:
                    result = original(state, iter((first,)))
                # The execution is enqueued at the call's end, after any
                # compilation: the step completes no earlier.
                returned = clock()
            finally:
                if compiles is not None:
                    compiles.dispatching = None
            try:
                # The batch's size (`batch_size_and_probe`, inline: a frame a
                # step costs a host-bound GPU loop a microsecond).
                try:
                    if first.__class__ in sequences and first[0].__class__ is sized:
                        size = len(first[0])
                    else:
                        size = batch_size(first)
                        if sized is None:  # Asked once a fit (False: not an array).
                            sized = _sized_class(first) or False
                except (TypeError, LookupError, AttributeError):
                    size = batch_size(first)
                try:
                    probe = ref(result[0][probe_of.key])
                except (KeyError, TypeError):
                    probe = probe_of(result[0])
                excluded = callback._pending_excluded
                if excluded:
                    callback._pending_excluded = 0.0
                add_row((callback._batch_begin, start, fetched, size, excluded, returned))
                add_probe(probe)
                if turn or start >= due:
                    if proxy.error is not None:
                        error, proxy.error = proxy.error, None
                        raise error  # A poll's: the recording stops; Keras keeps `result`.
                    # A drain's time is kept out of the next step.
                    callback._pending_excluded += steps.lean_due(start)
                    due = steps.accounting.write_due_s
                # Before the probes of the first step: their time is kept
                # out of the steps apart (`_after_first_async_step`).
                own.training_thread_s += called - entered + clock() - returned + polled_s
                if input_asked:
                    # The input state was donated to the step: the new one.
                    input_asked = callback._input_state_asked(role, first, result[1])
            except Exception as error:  # pylint: disable=broad-except
                callback._disable(error)
            return result

        def batch_size_and_probe(first, result):
            """The step's batch size and a probe of its completion."""
            try:
                # The usual `(x, y)` of arrays.
                size = (first[0].shape[0] if first.__class__ in sequences
                        else batch_size(first))
            except (TypeError, LookupError, AttributeError):
                size = batch_size(first)
            # The key `probe_of` found, read here: one dict read.
            try:
                probe = ref(result[0][probe_of.key])
            except (KeyError, TypeError):
                probe = probe_of(result[0])
            return size, probe

        def timed_step(state, iterator, entered):
            """Every other step: through the `TimedIterator` proxy, which
            polls; with the trace window's markers, the input threads'
            metered GIL, several steps an execution."""
            nonlocal input_asked
            try:
                # From the step before's return to this call (its fetch is
                # metered apart, as data wait already).
                held_between = 0.0 if between is None else between.until(entered)
                window = traces.window if train else None
                marker = None
                if window is not None:
                    # Before the fetch: the window's start or stop lands
                    # between steps.
                    callback._before_traced_step(steps.upcoming_step)
                    window = traces.window
                    entered = clock()  # The window's start or stop is kept out apart.
                if window is not None:
                    marker = window.step_marker(steps.upcoming_step)
                    if marker is not None:
                        iterator = window.marked_fetches(iterator)
                if compiles is not None:
                    compiles.dispatching = steps
            except Exception as error:  # pylint: disable=broad-except
                callback._disable(error)
                return original(state, iterator)
            proxy.iterator, proxy.count = iterator, 0
            try:
                called = clock()
                result = original(state, proxy)
                returned = clock()
            finally:
                if compiles is not None:
                    compiles.dispatching = None
                if marker is not None:
                    base.close_marker(callback, window, marker)
            try:
                if proxy.error is not None:
                    error, proxy.error = proxy.error, None
                    raise error  # Ours: the recording stops; Keras keeps `result`.
                traced = steps.upcoming_step
                start, fetched = proxy.start, proxy.fetched
                count, first = proxy.count, proxy.first
                held = 0.0
                if meter is not None:
                    held = meter.stop(proxy.metered, returned)
                    between.returned(returned)
                key = callback._batch_begin + last
                if count:
                    size, probe = batch_size_and_probe(first, result)
                    excluded = callback._pending_excluded
                    if excluded:
                        callback._pending_excluded = 0.0
                    dispatched(
                        key, start, fetched, None, count, size, excluded, probe, None, None,
                        returned, held, held_between,
                    )
                # Holds no batch between steps.
                proxy.iterator = proxy.first = None
                # Before the probes of the first step: their time is kept
                # out of the steps apart (`_after_first_async_step`).
                own.training_thread_s += called - entered + clock() - returned + proxy.polled_s
                proxy.polled_s = 0.0
                if input_asked and first is not None:
                    input_asked = callback._input_state_asked(role, first, result[1])
                if window is not None and count:
                    window.dispatched(key, traced)
            except Exception as error:  # pylint: disable=broad-except
                proxy.reset(None)
                callback._disable(error)
            return result

        return timed_jax

    def compile_events(self):
        return CompileEvents()

    def note_retraces(self, callback, attribute, accounting):
        # A jitted step recompiles without retracing Keras's Python function:
        # JAX's own compile events are the evidence.
        if attribute != "train_function":
            super().note_retraces(callback, attribute, accounting)
            return
        compiles = callback._compiles
        if compiles is not None:
            accounting.set_retraces(
                compiles.count,
                compiles.steps,
                source="jax.monitoring backend compile events",
                seconds=compiles.seconds,
            )

    def list_devices(self):
        import jax

        physical = []
        # This process's devices: in a multi-process job `jax.devices()`
        # also lists the other processes' (docs/SCALE.md).
        for device in jax.local_devices():
            entry = {
                "name": f"{device.platform.upper()}:{device.id}",
                "kind": device.platform.upper(),
            }
            if device.platform != "cpu":
                entry["model"] = getattr(device, "device_kind", None)
                try:
                    stats = device.memory_stats() or {}
                    if "bytes_limit" in stats:
                        entry["memory_bytes"] = int(stats["bytes_limit"])
                except Exception:  # pylint: disable=broad-except
                    pass
            physical.append(entry)
        return {"physical": physical, "logical": list(physical)}

    def fit_variables(self, model, state):
        # A JAX fit holds the variables as its state (trainable,
        # non-trainable, optimizer, ...), donated to each step: the new
        # state's arrays are where the variables are.
        if state is None:
            return super().fit_variables(model, state)
        return list(state[0]) + list(state[1]), list(state[2])

    def handover(self):
        """JAX puts a batch on the default device (ahead of time on
        accelerators)."""
        import jax

        if jax.default_backend() != "cpu":
            return jax.device_put
        return lambda batch: batch

    def profiler(self):
        return _JaxProfiler()

    def device_counts(self):
        import jax

        counts = {}
        for kind in ("cpu", "gpu"):
            try:
                counts[kind] = len(jax.devices(kind))
            except RuntimeError:  # No such platform.
                counts[kind] = 0
        return counts


class _JaxProfiler:
    """`jax.profiler` without its Python tracer, like TensorFlow's default;
    writes `<run>/plugins/profile/<capture>/<host>.xplane.pb`."""

    format = trace_module.FORMAT_XPLANE

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


class CompileEvents:
    """Counts JAX's backend compilations, through `jax.monitoring`.

    One listener per process dispatches to every live instance; each counts
    only while it is armed (after a fit's warm-up) and a train step is being
    dispatched (`dispatching`: its `AsyncSteps`, whose `upcoming_step` it
    is; `None` between steps), so a retrace names the step and the seconds
    compiled. The step's number is read only where a compilation happened.
    """

    _EVENT = "/jax/core/compile/backend_compile_duration"
    _instances = weakref.WeakSet()
    _registered = False
    _lock = threading.Lock()

    def __init__(self):
        self.armed = False
        self.dispatching = None
        self.count = 0
        self.seconds = 0.0
        self.steps = []
        with CompileEvents._lock:
            CompileEvents._instances.add(self)
            if not CompileEvents._registered:
                import jax.monitoring

                jax.monitoring.register_event_duration_secs_listener(
                    CompileEvents._dispatch
                )
                CompileEvents._registered = True

    @classmethod
    def _dispatch(cls, event, duration, **kwargs):
        if event != cls._EVENT:
            return
        for instance in list(cls._instances):
            # Only compilations inside a step after its warm-up count.
            dispatching = instance.dispatching
            if instance.armed and dispatching is not None:
                instance.count += 1
                instance.seconds += duration
                instance.steps.append(dispatching.upcoming_step)
                del instance.steps[:-100]
