"""`Backend`: what the recording asks of each Keras backend.

The callback, the trace windows, the trace budget and the batch sweep hold
no backend names: they ask the `Backend` of `keras.backend.backend()`
(`backends.get`), which `backends/tensorflow.py`, `backends/jax.py` and
`backends/torch.py` each implement.
"""

from tb_devicecost.backends import devices
from tb_devicecost.format import backend_facts


class Backend:
    """One Keras backend, as the recording needs it.

    Attributes:
        name: The Keras backend's name, as `keras.backend.backend()` gives
            it and as runs and trace documents record it.
        asynchronous: Whether a step returns before its work is complete
            (JAX, PyTorch): its steps are timed by
            `backends.asynchronous.AsyncSteps`, and a trace window follows
            their completions. `False` (TensorFlow): the step's results are
            on the host when the step function returns.
        fetches_before_batch_begin: Whether Keras's loop fetches a batch
            before the step's batch-begin hooks (PyTorch's `DataLoader`
            loop), so the batch is fetched once the hook runs.
        window_cost_s: The expected one-off cost, in seconds, of a default
            device-busy trace window (`trace_budget`).
        profiler_lead: How many steps before a window's first step the
            profiler starts (PyTorch fetches a step's batch before its
            dispatch, so it starts a step early to see that fetch).
        guards_step: Whether `wrap_step`'s function itself keeps a failure
            of ours from the step (it stops the recording, and the model's
            own errors pass unchanged); otherwise the recording wraps it in
            a generic guard (`step_wrappers._guarded`).
    """

    name = None
    asynchronous = False
    fetches_before_batch_begin = False
    window_cost_s = 0.09
    profiler_lead = 0
    guards_step = False

    @property
    def facts(self):
        """What the analysis and its words know of this backend, the same
        `format.backend_facts.BackendFacts` they read for its runs: what it
        supports, the input loaders advice names."""
        return backend_facts.of(self.name)

    # Steps and their recording.

    def wrap_step(self, callback, original, role):
        """Returns the timed replacement of the step function `original`.

        Args:
            callback: The `DeviceCostCallback` recording the run (its
                step accounting, trace schedule and state between steps).
            original: Keras's `train_function` or `test_function`.
            role: `"train"`, `"validation"` or `"evaluation"`.
        """
        raise NotImplementedError

    def fetch_in_graph(self, steps_per_execution):
        """Whether the fetch stays inside the step's graph (so its data
        wait is inside compute) at this `steps_per_execution`."""
        return False

    def fetch_timed_in_graph(self, steps_per_execution):
        """Whether the fetch runs inside Keras's graph, as without the
        callback, and is timed there (TensorFlow, one step an execution)."""
        return False

    def compile_events(self):
        """A counter of the backend's compilations (`CompileEvents` on JAX),
        or `None` where retraces are counted per step function."""
        return None

    def note_retraces(self, callback, attribute, accounting):
        """Writes the retraces of the step function `attribute` seen so far."""
        tracing = callback._tracing.get(attribute)  # pylint: disable=protected-access
        if tracing is not None and tracing.known:
            accounting.set_retraces(tracing.retraces, tracing.steps)

    def end_of_data(self, error):
        """Whether an error raised by a step is the end of the data."""
        return isinstance(error, StopIteration)

    # Devices and placement.

    def list_devices(self):
        """Physical devices: `{"physical": [...], "logical": [...]}`."""
        raise NotImplementedError

    def placement_document(self, variables, optimizer_variables, batch, step_ops=None):
        """The `devicecost/placement` document, after the first step.

        Args:
            variables, optimizer_variables: The model's and the optimizer's
                variables, or (on JAX, where a fit holds them as state) the
                arrays of that state.
            batch: The first batch.
            step_ops: The first step's ops and copies, where the backend
                can capture them (TensorFlow), else `None`.
        """
        return devices.placement_document(
            self.name, self.list_devices(), variables, optimizer_variables, batch
        )

    def fit_variables(self, model, state):
        """The model's and the optimizer's variables after a fit's first
        step, given the step's output `state` (`None` where the backend
        passes none).

        Returns:
            `(variables, optimizer_variables)`.
        """
        optimizer = getattr(model, "optimizer", None)
        return model.variables, getattr(optimizer, "variables", [])

    def handover(self):
        """What Keras's loop does to hand a ready batch to the step."""
        return lambda batch: batch

    # Trace windows.

    def profiler(self):
        """A new profiler: `start(run_dir)`, `stop()`, `marker(step)`,
        `format`, and on asynchronous backends `marks_fetches` and
        `done_marker(step)` (and `fetch_marker()` where it marks fetches)."""
        raise NotImplementedError

    def prepare_profiler(self):
        """Called as a fit with a window of our own begins."""

    # The batch sweep.

    def device_counts(self):
        """How many CPU and GPU devices `keras.device` can use:
        `{"cpu": n, "gpu": n}`."""
        raise NotImplementedError

    def device_scope(self, device):
        """The `keras.device` name a sweep fits on, for `cpu:0` / `gpu:1`."""
        return device


def close_marker(callback, window, marker):
    """Closes a step's trace marker after the step's dispatch (JAX and
    PyTorch); a failure of ours stops the recording, never the step."""
    try:
        window.close_marker(marker)
    except Exception as error:  # pylint: disable=broad-except
        callback._disable(error)
