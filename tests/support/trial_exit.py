"""`try_fixes` with worker threads tried on the demo's Python-input
`PyDataset` (the CNN fed images augmented in Python), on TensorFlow, then
the process ends: `python trial_exit.py LOGDIR`. Prints `done` once
`try_fixes` has returned; the test checks that the process then exits."""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from demo import tried  # noqa: E402

import tb_devicecost  # noqa: E402

build, data, _, _, _ = tried._scenario("python_input")  # pylint: disable=protected-access
tb_devicecost.try_fixes(build, data, log_dir=sys.argv[1], steps=8, budget_s=1,
                        changes=["workers"])
print("done", flush=True)
