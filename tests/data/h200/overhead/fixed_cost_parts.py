"""Where DeviceCostCallback's once-a-fit time goes: the training thread's
CPU time (`time.thread_time_ns`) inside each of its once-a-fit hooks and
the functions they call, per fit, over 600-step fits of the seeds' MLP
with a new callback each (a probe for issue 36; README.md here). Times
are inclusive (a function's callees are in its figure). No test reads it.

Usage (from the checkout's root): KERAS_BACKEND=jax python3
    tests/data/h200/overhead/fixed_cost_parts.py [FITS]
"""

import collections
import importlib
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models  # noqa: E402
import tb_devicecost  # noqa: E402

_R, _B = "tb_devicecost.recording", "tb_devicecost.backends"
PARTS = (
    f"{_R}.callback:DeviceCostCallback.__init__",
    f"{_R}.callback:DeviceCostCallback.on_train_begin",
    f"{_R}.callback:DeviceCostCallback._gather_run_info",
    f"{_R}.callback:DeviceCostCallback._create_accounting",
    f"{_R}.accounting:StepAccounting.begin_session",
    f"{_R}.accounting:StepAccounting._write_info",
    f"{_R}.sigterm:SigtermChain.track",
    f"{_R}.callback:DeviceCostCallback._after_first_async_step",
    f"{_R}.fetch_floor:FetchFloor.start_python",
    f"{_R}.callback:DeviceCostCallback.on_epoch_end",
    f"{_B}.asynchronous:AsyncSteps._drain",
    f"{_B}.asynchronous:AsyncSteps._settle_lean",
    f"{_B}.asynchronous:AsyncSteps._write",
    f"{_R}.callback:DeviceCostCallback.on_train_end",
    f"{_R}.accounting:StepAccounting.end_session",
    f"{_R}.accounting:StepAccounting.flush",
    f"{_R}.accounting:StepAccounting._flush_rows",
    f"{_R}.aggregate:RunAggregate.add_rows",
    f"{_R}.aggregate:RunAggregate.document",
    "tb_devicecost.format.writer:SummaryWriter.write_steps",
    "tb_devicecost.format.writer:SummaryWriter.write_json",
    f"{_R}.sigterm:SigtermChain.untrack",
)


def main(fits=16, warm=4, steps=600):
    totals, calls, on = collections.defaultdict(int), collections.Counter(), [False]

    def wrap(spec):
        module, qualified = spec.split(":")
        owner = importlib.import_module(module)
        *path, name = qualified.split(".")
        for part in path:
            owner = getattr(owner, part)
        function, key = getattr(owner, name), f"{module.rsplit('.', 1)[-1]}.{qualified}"

        def timed(*args, **kwargs):
            began = time.thread_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                if on[0]:
                    totals[key] += time.thread_time_ns() - began
                    calls[key] += 1

        setattr(owner, name, timed)

    for spec in PARTS:
        wrap(spec)
    x, y = models.data("mlp", steps * 32)
    model = models.build("mlp")
    model.fit(x[:50 * 32], y[:50 * 32], batch_size=32, verbose=0)  # compiles
    scratch, seconds = tempfile.mkdtemp(), []
    for index in range(fits):
        on[0] = index >= warm
        callback = tb_devicecost.DeviceCostCallback(
            os.path.join(scratch, str(index)), device_busy=False)
        started = time.perf_counter()
        model.fit(x, y, batch_size=32, verbose=0, shuffle=False, callbacks=[callback])
        seconds.append(time.perf_counter() - started)
    counted = fits - warm
    print(f"{counted} fits of {steps} steps, median fit "
          f"{sorted(seconds[warm:])[counted // 2] * 1e3:.1f} ms; training thread CPU per fit:")
    for key, total in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{total / 1e6 / counted:8.3f} ms {calls[key] / counted:5.1f} calls  {key}")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:2]])
