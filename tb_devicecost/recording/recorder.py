"""`StepRecorder`: the step accounting of `DeviceCostCallback` for custom loops."""

import contextlib

from tb_devicecost.backends import placement
from tb_devicecost.backends import processes
from tb_devicecost.recording import accounting
from tb_devicecost.recording import run_info


class StepRecorder:
    """Records how long each step of a custom training loop waited for data
    and computed.

    The custom-loop counterpart of `DeviceCostCallback`, with the same
    accounting and the same summaries: each step's time splits into data
    wait (fetching the batch, timed by `timed()`), compute (the block under
    `compute()`, which should end once the step's results are on the host)
    and host overhead (everything else until the next step starts). The
    first step is warm-up. Summaries go to `run_dir` as a TensorBoard run,
    in batches; memory does not grow with the number of steps.

    There is no fetch floor in a custom loop (the cost of handing over a
    batch that is already there), so the report judges its data wait
    conservatively.

    If recording fails (a full disk, a bad path), the recorder warns once
    and switches itself off; the training loop is never interrupted.

    In a multi-process job (`torch.distributed` or `jax.distributed`
    initialized before the recorder is created) every process records into
    `run_dir/process_<index>`, with its index and the process count in the
    run info, so the report can line the processes' steps up and name the
    one that holds the others back (`docs/SCALE.md`).

    Args:
        run_dir: Directory of the TensorBoard run to write into.
        flush_steps: Number of steps buffered before they are written
            (and at most 5 seconds apart). Defaults to `4096`.
        clock: Function returning seconds from a monotonic clock, for tests.
            Defaults to `time.perf_counter`.

    Example:

    ```python
    recorder = tb_devicecost.StepRecorder("logs/custom")
    for epoch in range(3):
        for x, y in recorder.timed(dataset):
            with recorder.compute(batch_size=len(x)):
                loss = train_step(x, y)
                float(loss)  # wait for the device, so compute is complete
    recorder.close()
    ```
    """

    def __init__(self, run_dir, flush_steps=accounting.FLUSH_STEPS, clock=None):
        self._process = processes.process_info()
        self._accounting = accounting.StepAccounting(
            run_info.process_run_dir(run_dir, self._process),
            flush_steps=flush_steps,
            clock=clock,
        )
        self._started = False

    @property
    def enabled(self):
        """False once a recording failure switched the recorder off."""
        return self._accounting.enabled

    def _start(self):
        if not self._started:
            self._started = True
            self._accounting.begin_session(dict(self._process, loop="custom"))
            self._accounting.begin_span()

    def timed(self, iterable):
        """Yields the elements of `iterable`, timing each fetch as data wait.

        The step of each element ends when the next one is requested; the
        last one ends when the iterable is exhausted, and the epoch's
        steps are then written.
        """
        self._start()
        run = self._accounting
        iterator = iter(iterable)
        while True:
            run.begin_step()
            try:
                element = next(iterator)
            except StopIteration:
                run.abort_step()
                break
            run.end_fetch(batch_size=placement.batch_size(element))
            yield element
        run.boundary()
        run.flush()

    @contextlib.contextmanager
    def compute(self, batch_size=None):
        """Times the block as the step's compute.

        Args:
            batch_size: Number of samples in the step, for samples/s.
                Defaults to the leading dimension of the batch seen by
                `timed()`.
        """
        self._start()
        run = self._accounting
        if not run.step_open or run.step_computed:
            # Used without `timed()`: the step starts here, with no data wait.
            run.begin_step()
        else:
            run.begin_compute()
        yield
        run.end_compute(batch_size=batch_size)

    def close(self):
        """Writes the steps recorded so far and closes the run's file."""
        self._accounting.end_span()
        self._accounting.end_session()
