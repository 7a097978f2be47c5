"""What the tests share that is not a fixture: builders of hand-made
documents, records and event files, a fake clock, paths, the scripts that
fit in a process of their own, and the browser tests' page helpers.

The scripts (`*_fits.py`) run as `python tests/support/<script> BACKEND
LOGDIR` and import their neighbours (`backend_models`, `sweep_models`) by
their plain names; the tests import everything here as `tests.support.*`.
"""
