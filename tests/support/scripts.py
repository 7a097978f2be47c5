"""The scripts that fit on one Keras backend, run in a process of their own."""

import json
import os
import subprocess
import sys

from tb_devicecost.reading import reader


def run_backend_script(script, backend, logdir, *arguments):
    """Runs `tests/support/<script> BACKEND LOGDIR` in a process of its own
    (Keras fixes its backend at import); returns its facts (the JSON object
    it printed last) and the runs it recorded, by name."""
    completed = subprocess.run(
        # `-X faulthandler`: a crash in native code leaves its stack in stderr.
        [sys.executable, "-X", "faulthandler",
         os.path.join(os.path.dirname(__file__), script), backend, str(logdir), *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, KERAS_BACKEND=backend),
    )
    assert completed.returncode == 0, (
        f"{script} {backend} exited with {completed.returncode}: {completed.stderr[-3000:]}")
    facts = json.loads(completed.stdout.strip().splitlines()[-1])
    records = {
        record.run: record
        for record in reader.read_runs(reader.local_provider(str(logdir)))
    }
    return facts, records
