"""PyTorch's CUDA completions (`backends/torch.py`, `Completions`): an
event is recorded again only once its time was read, so no two pending
steps ever share one (issue 36 recycles them instead of creating one a
step).

CI has no CUDA: the events, the stream and the reference event here are
stand-ins with the interface `Completions` uses (`record`, `query`,
`elapsed_time`); the real ones are exercised on an H100 by
`benchmarks/gpu_backends.py` and the recorded runs under `tests/data/h100*`.
"""

from tb_devicecost.backends import torch as torch_backend


class _Event:
    def __init__(self):
        self.recorded = 0
        self.ready = False
        self.at_ms = None

    def query(self):
        return self.ready


class _Reference:
    def elapsed_time(self, event):
        return event.at_ms


class _Tensor:
    shape, dtype = (), "float32"
    is_cuda = True


class _Completions(torch_backend.Completions):
    """`Completions` on stand-in events: no CUDA needed."""

    def __init__(self):
        super().__init__(clock=lambda: 0.0)
        self.made = []

    def _new_event(self):
        self.made.append(_Event())
        return self.made[-1]

    def _calibrate(self):
        self._stream = "stream"
        self._record = lambda event, stream: setattr(event, "recorded", event.recorded + 1)
        self._reference, self._reference_at = _Reference(), 10.0


def _step(completions):
    timer, done = completions.source({"loss": _Tensor()}, returned=1.0)
    assert done is None
    return timer


def test_an_event_is_recorded_again_only_once_read():
    completions = _Completions()
    first, second = _step(completions), _step(completions)
    assert len(completions.made) == 2  # Neither read yet: two events.
    assert first() is None
    event = completions.made[0]
    event.ready, event.at_ms = True, 250.0
    assert first() == 10.25 and first() == 10.25  # Read once, however often asked.
    third = _step(completions)
    assert len(completions.made) == 2 and event.recorded == 2  # The read one, again.
    event.ready = False
    assert third() is None and second() is None
    assert completions._free == []


def test_steps_on_the_cpu_complete_when_they_return():
    completions = _Completions()

    class _CpuTensor(_Tensor):
        is_cuda = False

    assert completions.source({"loss": _CpuTensor()}, returned=3.0) == (None, 3.0)
    assert completions.source({"loss": _Tensor()}, returned=4.0) == (None, 4.0)  # Read once.
    assert completions.made == []
