"""The TensorFlow backend: running Keras's traced step on a batch fetched
apart, without changing what Keras traces.

Keras's `train_function` on TensorFlow fetches inside its graph. The
callback lets Keras's own first call (per element spec) trace the step,
then fetches each batch eagerly and hands it to the same traced one-step
function (`BatchStep`), counting traces as TensorFlow does
(`TracingCounter`) so a retrace is evidence, not a guess.
"""

import collections
import weakref

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
    serves every batch; finding that trace by type costs tens of
    microseconds a call. After one such call the trace it used is known
    (`get_concrete_function` finds it without tracing), and later batches
    go to it directly: the same graph, the same variables, no new trace.
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
        concrete = self._concrete
        if concrete is not None:
            try:
                return concrete(batch)
            except TypeError:
                # The batch does not bind to the trace's signature (raised
                # before anything runs): let Keras choose, from now on.
                self._concrete, self._usable = None, False
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
