"""Shared fixtures: log directories made by real fits and by hand.

TensorFlow is configured here, at import time, with two logical CPU devices
(so a layer can be pinned to `/CPU:1`). That must happen before TensorFlow
initialises its devices, and it holds for the whole test process.

The builders these fixtures use, and the tests import, are in `support/`.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# PyTorch's CPU ops run on GNU OpenMP threads, which spin while they wait
# for work. `make test` runs two test processes on a 2-core machine, and
# there the spinning took the core the other process needed: the quick
# demo on PyTorch beside one busy core took 168 s of wall and 179 s of CPU,
# 36 s and 36 s with the threads sleeping as they wait. Every process the
# tests start inherits it; the computation is the same.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from tb_devicecost.reading import reader  # noqa: E402

from tests.support import devices  # noqa: E402
from tests.support import distributed_runs  # noqa: E402
from tests.support import event_files  # noqa: E402
from tests.support import fits  # noqa: E402

devices.two_logical_cpus()


# Real fits.


@pytest.fixture(scope="session")
def fit_logdir(tmp_path_factory):
    """A log directory with three runs of real fits (TensorFlow, CPU).

    `compute/train`: cached and prefetched data, two Dense(1024) layers,
    batch 256. `pinned/train`: a layer with its variable and ops on `/CPU:1`.
    `input/train`: a `tf.py_function` sleeping INPUT_SLEEP_S per batch of 32,
    no prefetch.
    """
    logdir = str(tmp_path_factory.mktemp("fits") / "logs")
    fits.fit_runs(logdir)
    return logdir


@pytest.fixture(scope="session")
def jax_job(tmp_path_factory):
    """The two-process JAX job (`support.distributed_runs.jax_jobs`), once
    with process 1 slowed (`slow`) and once without (`even`), run once for
    `analysis/test_workers.py` and `browser/test_workers.py`: `logdir`,
    `facts` by job, `records` by run and the `report`."""
    from tb_devicecost import words

    logdir = str(tmp_path_factory.mktemp("jax_jobs"))
    facts = distributed_runs.jax_jobs(logdir)
    records = reader.read_runs(reader.local_provider(logdir))
    return {"logdir": logdir, "facts": facts,
            "records": {record.run: record for record in records},
            "report": words.build_report(records)}


@pytest.fixture(scope="session")
def fit_records(fit_logdir):
    """`RunRecord`s of `fit_logdir`, by run name."""
    records = reader.read_runs(reader.local_provider(fit_logdir))
    return {record.run: record for record in records}


# Hand-made data.


@pytest.fixture(scope="session")
def edge_logdir(tmp_path_factory):
    """Hand-made runs for bad input, each named after its defect
    (`support.event_files.write_edge_runs`)."""
    return event_files.write_edge_runs(str(tmp_path_factory.mktemp("edge") / "logs"))


# The order of the test files.


def pytest_collection_modifyitems(items):
    """Files with a slow test first, the others after, each in its order.

    `make test` gives a file at a time to each of two processes, in this
    order (`--no-loadscope-reorder`; pytest-xdist's own order puts the
    files of most tests first, which left the files of a few long tests,
    a demo or a fuzz, running alone at the end). Long files first, then the
    many quick ones filling both processes, end together.
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # Stable: each keeps its order.
