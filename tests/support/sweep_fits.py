"""A sweep on one Keras backend, in a process of its own: `python
sweep_fits.py BACKEND LOGDIR`. Two CPU devices (JAX: with
`XLA_FLAGS=--xla_force_host_platform_device_count=2`; PyTorch has one), two
batch sizes; prints what `sweep` returned, as JSON."""

import json
import os
import sys

BACKEND, LOGDIR = sys.argv[1], sys.argv[2]
os.environ["KERAS_BACKEND"] = BACKEND

import tb_devicecost  # noqa: E402
from sweep_models import build, data  # noqa: E402

x, y = data()
# PyTorch has one CPU device.
devices = ("cpu:0",) if BACKEND == "torch" else ("cpu:0", "cpu:1")
ran = tb_devicecost.sweep(
    build, x, y, batch_sizes=(8, 128), devices=devices,
    log_dir=os.path.join(LOGDIR, "sweep"), steps=6, your_batch_size=8,
)
print(json.dumps({"ran": ran}))
