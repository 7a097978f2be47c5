"""The PyTorch backend: when a dispatched step is complete, without waiting.

Keras's PyTorch loop fetches each batch from its `DataLoader` before the
step's batch-begin hooks and hands it to `train_function(data)`; the step
is timed around that call (`TorchBackend.wrap_step`).

On the CPU a PyTorch step runs on the training thread, so it is complete
when the step function returns. On CUDA it returns once its kernels are
queued: a CUDA event recorded after them gets the GPU's timestamp of their
completion, read later (`query()`, never `synchronize()`). GPU timestamps
are put on the training thread's clock by one reference event, recorded on
an idle GPU at the fit's first step (its warm-up).
"""

import os
import time

from tb_devicecost.backends import placement
from tb_devicecost.traces import torch_trace
from tb_devicecost.backends import base
from tb_devicecost.backends import gil_wait


class Completions:
    """Completion times of PyTorch steps, on `clock`.

    The per-step work is what the step cannot do without: on CUDA, one
    event recorded on the stream the fit runs on (read once, at the first
    step, with the reference event); whether the steps run on CUDA is
    read once too, from the first step's outputs. Events whose time was
    read are recorded again (`_free`): creating and destroying one per step
    cost the training thread more than recording it (issue 36).

    Args:
        clock: Function returning seconds (`time.perf_counter`).
    """

    def __init__(self, clock):
        self._clock = clock
        self._reference = None
        self._reference_at = None
        # `None` until a step's outputs hold a tensor; then whether on CUDA.
        self.cuda = None
        self._stream = None
        self._record = None
        self._free = []

    def source(self, logs, returned):
        """`(timer, done)` for `dispatched`: a function giving the CUDA
        completion time (`None` until complete), or the time the step
        returned when it ran on the CPU."""
        if self.cuda is None:
            tensor = next(
                (value for value in placement.leaves(logs) if hasattr(value, "is_cuda")), None
            )
            if tensor is None:
                return None, returned
            self.cuda = bool(tensor.is_cuda)
            if self.cuda:
                self._calibrate()
        if not self.cuda:
            return None, returned
        free = self._free
        event = free.pop() if free else self._new_event()
        self._record(event, self._stream)
        reference, at = self._reference, self._reference_at
        done = None

        def timer():
            nonlocal done
            if done is None and event.query():
                done = at + reference.elapsed_time(event) / 1e3
                # Read, once: the event may be recorded again.
                free.append(event)
            return done

        return timer, None

    def _new_event(self):
        import torch

        return torch.cuda.Event(enable_timing=True)

    def _calibrate(self):
        # Once, in the warm-up step: an idle GPU reaches the reference
        # event as soon as it is recorded.
        import torch

        self._stream = torch.cuda.current_stream()
        # `Event.record` asks for the current stream each call; the fit's
        # steps run on this one.
        self._record = getattr(
            getattr(torch._C, "_CudaEventBase", None), "record", torch.cuda.Event.record
        )
        torch.cuda.synchronize()
        reference = self._new_event()
        before = self._clock()
        reference.record(self._stream)
        reference.synchronize()
        self._reference_at = (before + self._clock()) / 2
        self._reference = reference


class TorchBackend(base.Backend):
    """PyTorch: steps dispatched asynchronously (on CUDA), Keras's loop
    fetching each batch from its `DataLoader` before the batch-begin hooks;
    complete at the step's return on the CPU or at a CUDA event
    (`Completions`)."""

    name = "torch"
    asynchronous = True
    # `timed_torch` keeps a failure of ours from the step itself: three
    # frames fewer a step than the generic guard (`step_wrappers._guarded`).
    guards_step = True
    fetches_before_batch_begin = True
    window_cost_s = 0.23
    # The profiler starts a step before the window to see its first fetch.
    profiler_lead = 1

    def wrap_step(self, callback, original, role):
        """Times each step around Keras's call on the fetched batch: the
        fetch from the loop's clock reads around the batch-begin hooks, the
        completion from `Completions`."""
        steps = callback._async[role]
        clock = time.perf_counter
        completions = Completions(clock)
        # A CPU step runs on this thread and may wait for the GIL; known
        # after the first step. A CUDA step returns once queued, but where
        # the pipeline's own threads hold the GIL its launches wait for it
        # while the GPU idles: metered too, as data wait.
        meter, on_cpu = gil_wait.GilWait(after_release=steps.held_is_input), None
        # Keras's workers, idle between batch-end calls: not read then.
        meter.pool = callback._loop
        metered_on_gpu = steps.held_is_input
        # Where the pipeline's own threads hold the GIL, the loop waits for
        # it between steps too (Keras's hooks, the batch-begin ones): metered
        # from a step's return to the next one's dispatch.
        between = gil_wait.WaitBetweenSteps(meter, steps) if steps.held_is_input else None

        own, batch_size = steps.accounting.self_time, placement.batch_size
        sequences = placement.BATCH_SEQUENCES
        dispatched_call = steps.dispatched_call
        # The input state is read after the first step (`_needs_batch`):
        # once it was not asked for, it is not asked again this fit.
        input_asked = True

        def timed_torch(data):
            nonlocal on_cpu, input_asked
            if not callback._enabled:
                return original(data)
            try:
                entered = dispatch = clock()
                fetched = callback._fetched_at or dispatch
                start = callback._fetch_started or fetched
                if start > fetched:
                    start = fetched
                held_between = 0.0
                if between is not None:
                    # The fetch is asleep on the pipeline's queue: data wait
                    # already.
                    held_between = max(0.0, between.until(dispatch) - (fetched - start))
                window = callback._traces.window if role == "train" else None
                if window is not None:
                    transition = callback._before_traced_step(steps.upcoming_step)
                    if transition is not None:
                        # The window opened or closed after this step's
                        # fetch: the step is timed as if fetched after it.
                        began, ended, previous = transition
                        wait = fetched - max(start, start if previous is None else previous)
                        start, fetched = ended - max(0.0, wait), ended
                        dispatch = max(dispatch, ended)
                        entered = ended
                    window = callback._traces.window
                batch = data[0] if isinstance(data, list) and data else data
                marker = None
                traced = steps.upcoming_step
                if window is not None:
                    marker = window.step_marker(traced)
                called = clock()
                metered = meter.start(called) if on_cpu is not False or metered_on_gpu else None
            except Exception as error:  # pylint: disable=broad-except
                callback._disable(error)
                return original(data)
            try:
                result = original(data)
            finally:
                if marker is not None:
                    base.close_marker(callback, window, marker)
            try:
                returned = clock()
                if completions.cuda is False:
                    timer, done = None, returned  # `completions.source`'s, no frame.
                else:
                    timer, done = completions.source(result, returned)
                on_cpu = done is not None
                held = 0.0
                if done is not None and metered is not None:
                    held = meter.stop(metered, returned)
                elif metered_on_gpu:
                    # A CUDA step's launch sleeps only for the GIL.
                    held = meter.stop(metered, returned, asleep_is_gil=True)
                if between is not None:
                    between.returned(returned)
                # `placement.batch_size`'s usual case, and the time kept out,
                # read here as the JAX step does: no frame for either a step.
                try:
                    # The usual `(x, y)` or `[x, y]` of tensors.
                    size = (batch[0].shape[0] if batch.__class__ in sequences
                            else batch_size(batch))
                except (TypeError, LookupError, AttributeError):
                    size = batch_size(batch)
                excluded = callback._pending_excluded
                if excluded:
                    callback._pending_excluded = 0.0
                # Positional: cheaper to bind than keywords, once a step.
                dispatched_call(callback._batch_begin, start, fetched, dispatch, size, excluded,
                                timer, done, held, held_between)
                # Our own time: this function's outside Keras's call, before
                # the first step's probes (kept out apart; `aggregate.SelfTime`).
                own.training_thread_s += called - entered + clock() - returned
                if input_asked:
                    input_asked = callback._input_state_asked(role, batch, None)
                if window is not None:
                    window.dispatched(callback._batch_begin, traced)
                callback._fetched_at = None
                if callback._loop is None:
                    callback._fetch_started = clock()
            except Exception as error:  # pylint: disable=broad-except
                callback._disable(error)
            return result

        return timed_torch

    def list_devices(self):
        import torch

        physical = [{"name": "CPU:0", "kind": "CPU"}]
        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                properties = torch.cuda.get_device_properties(index)
                physical.append(
                    {
                        "name": f"GPU:{index}",
                        "kind": "GPU",
                        "model": properties.name,
                        "memory_bytes": int(properties.total_memory),
                    }
                )
        return {"physical": physical, "logical": list(physical)}

    def profiler(self):
        return _TorchProfiler()

    def prepare_profiler(self):
        warm_up_profiler()

    def device_counts(self):
        import torch

        return {
            "cpu": 1,
            "gpu": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        }

    def device_scope(self, device):
        # Variables made under `cpu:0` are copies of the tensors made on
        # `cpu`, which then receive no gradients; `cpu` is the same device.
        return "cpu" if device == "cpu:0" else device


class _TorchProfiler:
    """`torch.profiler` (CPU, and CUDA where available), exporting a Chrome
    trace to `<run>/plugins/devicecost_torch/<capture>/<host>.pt.trace.json.gz`."""

    format = torch_trace.FORMAT

    def __init__(self):
        import torch

        self._torch = torch
        self._profile = None
        self.path = None

    def start(self, run_dir):
        torch = self._torch
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # Keras reads each step's results on a worker thread, where the
        # completion marker is; by default only the thread that starts the
        # profiler is recorded. `trace_only` skips building Python objects
        # of the events when the profiler stops (we export the trace only).
        config = None
        for options in ({"profile_all_threads": True, "trace_only": True}, {"profile_all_threads": True}):
            try:
                config = torch._C._profiler._ExperimentalConfig(**options)
                break
            except (AttributeError, TypeError):
                continue
        profile = torch.profiler.profile(activities=activities, experimental_config=config)
        profile.start()
        self._profile = profile
        self.path = torch_trace.new_trace_path(run_dir, time.time())

    def stop(self):
        profile, self._profile = self._profile, None
        if profile is None:
            return
        profile.stop()
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        profile.export_chrome_trace(self.path)

    def marker(self, step):
        return self._torch.profiler.record_function(f"{torch_trace.MARKER_PREFIX}{step}")

    # The DataLoader marks its own fetches, outside the step's dispatch.
    marks_fetches = False

    def done_marker(self, step):
        return self._torch.profiler.record_function(f"{torch_trace.DONE_PREFIX}{step}")


_WARM = []


def warm_up_profiler():
    """Starts and stops `torch.profiler` once per process, as the fit
    begins: the first start takes about a second (Kineto's set-up), later
    ones under a millisecond. Keras's TensorBoard callback does the same."""
    if _WARM:
        return
    _WARM.append(True)
    try:
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        profile = torch.profiler.profile(activities=activities)
        profile.start()
        profile.stop()
    except Exception:  # pylint: disable=broad-except
        pass
