"""Where Keras's own loop is: every use of Keras internals, in one module.

A callback's hooks run in the order of the user's callback list, so a
clock read in our own `on_train_batch_end` counts every callback listed
before ours as part of the step. The step's boundaries are therefore read
where Keras's loop calls its `CallbackList`, around all the callbacks:

    loop ─► CallbackList.on_train_batch_begin ─► [user hooks] ─► train_function
         ─► CallbackList.on_train_batch_end ─► (worker thread when every
             callback is async-safe) pythonify_logs ─► [user hooks]

`LoopClock` wraps those methods on the one `CallbackList` instance of a
`fit` (or `evaluate`), never on the class, and puts them back at the end.
Keras hands a callback neither that list nor the epoch iterator: both are
found in the calling frames (`keras/src/trainers/*` and
`keras/src/backend/*/trainer.py` hold them as locals).

The step functions Keras builds hold its one-step function in their
closures: TensorFlow's `one_step_on_data` (`one_step_on_data`), JAX's
jitted step (`keras_step_of`), which the backends call themselves.
"""

import collections
import sys
import threading
import time

from keras.src.callbacks.callback_list import CallbackList
from keras.src.utils import python_utils

# Roles of a step and the `CallbackList` methods around its batches.
_BATCH_METHODS = {
    "train": ("on_train_batch_begin", "on_train_batch_end", "_on_train_batch_end"),
    "test": ("on_test_batch_begin", "on_test_batch_end", "_on_test_batch_end"),
}
# A callback's batch hooks per role and end, with the legacy aliases
# Keras's own `Callback.on_train_batch_*` call.
_HOOKS = {
    ("train", "begin"): ("on_train_batch_begin", "on_batch_begin"),
    ("train", "end"): ("on_train_batch_end", "on_batch_end"),
    ("test", "begin"): ("on_test_batch_begin",),
    ("test", "end"): ("on_test_batch_end",),
}


def hooked(callbacks, names, skip):
    """The callbacks of `callbacks` whose hook `names[0]` does something:
    all but `skip` and those where every hook of `names` is Keras's own
    no-op (marked `_is_default`, as `CallbackList` itself tells them
    apart). Calling a no-op does nothing, so leaving it out changes no
    fit; `History`'s batch hooks are such no-ops, two frames a step each
    on the training thread and on Keras's worker."""
    return tuple(
        callback for callback in callbacks
        if callback is not skip
        and not all(getattr(getattr(callback, name, None), "_is_default", False) is True
                    for name in names)
    )


def callback_list():
    """The `CallbackList` of the `fit` or `evaluate` being run (the `self`
    of its `on_train_begin` or `on_test_begin` on the stack), or `None`."""
    return caller_local("self", CallbackList)


def sibling_callbacks():
    """The callbacks of the `fit` being run (`[]` when not found)."""
    found = callback_list()
    return list(found.callbacks) if found is not None else []


def epoch_iterator_class():
    from keras.src.trainers import epoch_iterator

    return epoch_iterator.EpochIterator


def caller_local(name, kind):
    """The local variable `name` of type `kind` in a calling frame, or None.

    Keras hands a callback neither the epoch iterator nor the number of
    batches of an evaluation; `fit` and `evaluate` hold it as a local.
    """
    # The walk starts at the caller and never reads this frame's own
    # locals: `f_locals` caches a snapshot in the frame, and a snapshot
    # holding `frame` itself is a reference cycle that keeps Keras's frames,
    # and the TensorFlow iterators in their locals, alive until the garbage
    # collector runs. In a forked `PyDataset` worker that collection frees
    # them without TensorFlow's threads and the worker dies of SIGSEGV
    # (issue 33).
    frame = sys._getframe(1)  # pylint: disable=protected-access
    try:
        while frame is not None:
            candidate = frame.f_locals.get(name)
            if isinstance(candidate, kind):
                return candidate
            frame = frame.f_back
        return None
    finally:
        frame = candidate = None


def hooks_on_worker(callbacks, role):
    """Whether Keras runs `role`'s batch-end hooks on a worker thread (every
    callback async-safe, on a backend that allows it)."""
    attribute = "_async_train" if role == "train" else "_async_test"
    return bool(getattr(callbacks, attribute, False))


class LoopClock:
    """Clock reads around Keras's batch hooks, whatever the callbacks' order.

    `listener` receives, per role (`"train"` or `"test"`) and with
    `time.perf_counter` readings:

    - `loop_results(role, batch, now)`: the step's logs are Python numbers,
      before any batch-end hook (the main thread, or Keras's worker thread);
    - `loop_epoch_begin(now)`: the epoch's hooks ran; its first fetch
      follows (the same after `on_test_begin`, with role `"test"`);
    - `loop_failed(error, on_worker)`: one of the above raised; Keras's own
      call goes on (a failure of the recording never breaks the loop).
      `on_worker`: it was `loop_results` on Keras's worker thread, while
      the training thread may be recording a step.

    With `batch_bounds` (a loop that fetches before the batch-begin hooks:
    PyTorch's), two readings a step are written to the listener's
    attributes, not passed to a method of it (a frame less each, once a
    step): `listener._fetched_at` as the loop asks for the batch-begin
    hooks, before any of them (the batch was fetched just before), and
    `listener._fetch_started` once every batch-end hook has run or been
    handed to the worker (the next fetch follows).

    The loop stands in for the listener's own batch hooks, which it does
    not call (they have nothing left to do once the loop's clock reads
    bound the step: a frame less a step on the training thread, and one on
    Keras's worker, which holds the GIL meanwhile): before each batch's
    begin hooks it sets `listener._batch_begin` to the batch's index, and
    after a failure kept from the worker (`loop_failed(error,
    on_worker=True)`) it passes it on to `loop_failed(error)` on the
    training thread, where it stops the recording between steps. Every
    other callback's hooks run as Keras runs them, but for Keras's own
    no-ops (`hooked`).

    Args:
        callbacks: The `CallbackList` of the fit or evaluation.
        listener: The object told of each reading.
        clock: Function returning seconds. Defaults to `time.perf_counter`.
    """

    def __init__(self, callbacks, listener, clock=time.perf_counter):
        self.callbacks = callbacks
        self._listener = listener
        self._clock = clock
        self._installed = []
        # A failure on Keras's worker, for the training thread's next batch.
        self._worker_error = None
        # Keras's batch-end calls handed to its worker threads, and those
        # finished there by worker ident (each worker counts its own, so
        # workers running calls at once lose no count; the pool's threads
        # live as long as the fit, so no other thread takes an ident): while
        # the two agree the workers are idle, so a step cannot wait for them
        # (`gil_wait.GilWait.pool`). Counted with `batch_bounds` only, where
        # the loop stands in for the handing.
        self.submitted = 0
        # A `defaultdict`: a worker's count goes up without a `dict.get`.
        self.finished = collections.defaultdict(int)

    def install(self, roles=("train", "test"), batch_bounds=True):
        """Wraps the list's batch methods of `roles` (once each).

        Args:
            roles: The roles whose batch hooks are wrapped.
            batch_bounds: Whether to read the clock before the batch-begin
                hooks and after the batch-end ones (`_fetched_at`,
                `_fetch_started`). A loop that fetches inside its step
                function (JAX, TensorFlow) needs neither: the step's own
                clock reads bound it, and two fewer calls a step are a
                measurable part of the callback's cost.
        """
        for role in roles:
            begin, end, end_inner = _BATCH_METHODS[role]
            if end_inner in self._installed:
                continue
            self._wrap(begin, self._begin_standing_in(role, batch_bounds))
            if batch_bounds:
                self._wrap(end, self._end_standing_in(role))
            self._wrap(end_inner, self._results_wrapper(role, counted=batch_bounds))
        if "on_epoch_begin" not in self._installed:
            self._wrap("on_epoch_begin", self._after_wrapper(None))
            self._wrap("on_test_begin", self._after_wrapper("test"))

    def uninstall(self):
        """Puts Keras's own methods back."""
        for name in self._installed:
            self.callbacks.__dict__.pop(name, None)
        self._installed = []

    def _wrap(self, name, make):
        original = getattr(self.callbacks, name)
        setattr(self.callbacks, name, make(original))
        self._installed.append(name)

    def _begin_standing_in(self, role, read_clock):
        """Keras's batch-begin method without the listener's hook, whose
        part it does: the batch's index, and a failure kept from the
        worker."""
        clock, listener, callbacks = self._clock, self._listener, self.callbacks
        skip = listener
        train = role == "train"
        names = _HOOKS[role, "begin"]

        def make(original):
            # The callbacks whose hook does something, listed at the first
            # batch, once every `on_*_begin` hook has run: Keras hands no
            # callback its `CallbackList`, so none changes it in a fit.
            calling = None

            def on_batch_begin(batch, logs=None):
                nonlocal calling
                if self._worker_error is not None:
                    error, self._worker_error = self._worker_error, None
                    listener.loop_failed(error)
                listener._batch_begin = batch  # pylint: disable=protected-access
                if read_clock:
                    # The batch was fetched just before.
                    listener._fetched_at = clock()  # pylint: disable=protected-access
                # What Keras's own method does, by name, without ours and
                # without no-ops (`hooked`). Its loop passes no logs to the
                # batch-begin hooks: the empty dict `pythonify_logs` would
                # make, without its calls.
                if calling is None:
                    calling = hooked(callbacks.callbacks, names, skip)
                if not calling:
                    return
                logs = python_utils.pythonify_logs(logs) if logs else {}
                if train:
                    for callback in calling:
                        callback.on_train_batch_begin(batch, logs=logs)
                else:
                    for callback in calling:
                        callback.on_test_batch_begin(batch, logs=logs)

            return on_batch_begin

        return make

    def _end_standing_in(self, role):
        """Keras's batch-end method, as Keras runs it, then the clock read
        where the next fetch starts (`listener._fetch_started`)."""
        clock, listener, callbacks = self._clock, self._listener, self.callbacks
        train = role == "train"

        def make(original):
            if not hasattr(callbacks, "_async_dispatch"):
                # Another Keras: its own method, a frame more.
                def on_batch_end(batch, logs=None):
                    original(batch, logs)
                    listener._fetch_started = clock()  # pylint: disable=protected-access

                return on_batch_end

            # What `CallbackList.on_{train,test}_batch_end` does, without
            # its frame: to the worker where every callback is async-safe.
            # pylint: disable=protected-access
            def on_batch_end(batch, logs=None):
                if train:
                    if callbacks._async_train:
                        self.submitted += 1
                        callbacks._async_dispatch(callbacks._on_train_batch_end, batch, logs)
                    else:
                        callbacks._on_train_batch_end(batch, logs)
                elif callbacks._async_test:
                    self.submitted += 1
                    callbacks._async_dispatch(callbacks._on_test_batch_end, batch, logs)
                else:
                    callbacks._on_test_batch_end(batch, logs)
                listener._fetch_started = clock()

            return on_batch_end

        return make

    def _results_wrapper(self, role, counted):
        clock, listener = self._clock, self._listener
        callbacks, skip = self.callbacks, listener
        train = role == "train"
        # The loop clock is installed by the training thread.
        get_ident = threading.get_ident
        training_thread = get_ident()
        finished = self.finished
        names = _HOOKS[role, "end"]

        def make(original):
            # As in `_begin_standing_in`; set on whichever thread runs it.
            calling = None

            def results(batch, logs=None):
                nonlocal calling
                # What Keras's `_on_{train,test}_batch_end` does, with the
                # clock read between converting the logs (which waits for
                # the step) and the first callback: converting them twice
                # would hold the GIL twice as long on Keras's worker.
                logs = python_utils.pythonify_logs(logs)
                try:
                    listener.loop_results(role, batch, clock())
                except Exception as error:  # pylint: disable=broad-except
                    on_worker = get_ident() != training_thread
                    if on_worker:
                        self._worker_error = error
                    listener.loop_failed(error, on_worker=on_worker)
                # The hooks by name, as Keras's own loop calls them (through
                # `getattr` each callback would cost a call more a step),
                # without no-ops (`hooked`).
                if calling is None:
                    calling = hooked(callbacks.callbacks, names, skip)
                if train:
                    for callback in calling:
                        callback.on_train_batch_end(batch, logs=logs)
                else:
                    for callback in calling:
                        callback.on_test_batch_end(batch, logs=logs)
                if counted:
                    thread = get_ident()
                    if thread != training_thread:
                        finished[thread] += 1

            return results

        return make

    def _after_wrapper(self, role):
        clock, listener = self._clock, self._listener

        def make(original):
            def after(*args, **kwargs):
                result = original(*args, **kwargs)
                try:
                    listener.loop_epoch_begin(role, clock())
                except Exception as error:  # pylint: disable=broad-except
                    listener.loop_failed(error)
                return result

            return after

        return make


def one_step_on_data(original):
    """Keras's one-step function in the closure of its TensorFlow
    `train_function` (or `test_function`): `_autoconvert_optionals` around
    the `tf.function` (or the plain function, when the model runs
    eagerly), or `None`."""
    for cell in getattr(original, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # An empty cell.
            continue
        wrapped = getattr(value, "__wrapped__", None)
        if getattr(wrapped, "__name__", "") == "one_step_on_data":
            return value
    return None


def keras_step_of(original):
    """Keras's step function inside its one-step JAX `train_function` (or
    `test_function`), or `None`.

    For one step an execution, Keras's JAX function is
    `iterator_step(state, iterator)`, returning
    `step_function(state, next(iterator))` (`JAXTrainer._make_function`).
    The JAX step fetches the batch itself, so it calls that step on it: the
    same jitted call, without the frame, the one-batch iterator and the
    `next()` around it. Any other function (several steps an execution,
    another Keras, a wrapper) gives `None`, and is called with an iterator.
    """
    code = getattr(original, "__code__", None)
    closure = getattr(original, "__closure__", None)
    if code is None or not closure or code.co_freevars != ("step_function",):
        return None
    try:
        step = closure[0].cell_contents
    except ValueError:  # An empty cell.
        return None
    return step if callable(step) else None
