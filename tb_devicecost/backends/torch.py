"""The PyTorch backend: when a dispatched step is complete, without waiting.

On the CPU a PyTorch step runs on the training thread, so it is complete
when the step function returns. On CUDA it returns once its kernels are
queued: a CUDA event recorded after them gets the GPU's timestamp of their
completion, read later (`query()`, never `synchronize()`). GPU timestamps
are put on the training thread's clock by one reference event, recorded on
an idle GPU at the fit's first step (its warm-up).
"""

from tb_devicecost.backends.jax import _leaves


class Completions:
    """Completion times of PyTorch steps, on `clock`.

    Args:
        clock: Function returning seconds (`time.perf_counter`).
    """

    def __init__(self, clock):
        self._clock = clock
        self._reference = None
        self._reference_at = None

    def source(self, logs, returned):
        """`(timer, done)` for `dispatched`: a function giving the CUDA
        completion time (`None` until complete), or the time the step
        returned when it ran on the CPU."""
        tensor = next(
            (value for value in _leaves(logs) if hasattr(value, "is_cuda")), None
        )
        if tensor is None or not tensor.is_cuda:
            return None, returned
        import torch

        if self._reference is None:
            self._calibrate(torch)
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        reference, at = self._reference, self._reference_at

        def timer():
            if not event.query():
                return None
            return at + reference.elapsed_time(event) / 1e3

        return timer, None

    def _calibrate(self, torch):
        # Once, in the warm-up step: an idle GPU reaches the reference
        # event as soon as it is recorded.
        torch.cuda.synchronize()
        reference = torch.cuda.Event(enable_timing=True)
        before = self._clock()
        reference.record()
        reference.synchronize()
        self._reference_at = (before + self._clock()) / 2
        self._reference = reference
