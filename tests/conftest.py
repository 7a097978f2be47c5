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


# How `make test`'s two processes share the files.

# A process takes one unit at a time: a file, or the files named here
# together, which read a fixture each process would otherwise set up again
# (fits, a TensorBoard, Chromium: seconds of CPU each). By path or folder.
SHARED_UNITS = {
    # The browser package's fits, TensorBoard and Chromium, and the JAX job
    # (`jax_job`) that analysis/test_workers.py reads too.
    "tests/browser/": "browser",
    "tests/analysis/test_workers.py": "browser",
    # The TensorFlow fits of `fit_logdir` (and `fit_records`).
    "tests/analysis/test_compare.py": "fits",
    "tests/analysis/test_verdicts.py": "fits",
    "tests/cli/test_cli.py": "fits",
    "tests/recording/test_self_time.py": "fits",
    "tests/words/test_phrases.py": "fits",
    "tests/words/test_report.py": "fits",
}
# The fixtures of those units: a file that reads one and is not listed
# above stops the collection (`pytest_collection_modifyitems`).
SHARED_FIXTURES = {"jax_job": "browser", "browser": "browser", "tensorboard_url": "browser",
                   "fit_logdir": "fits", "fit_records": "fits"}


def unit_of(nodeid):
    """The unit of work of a test (its node id): its file's, or the shared
    one its file belongs to (`SHARED_UNITS`)."""
    path = nodeid.split("::", 1)[0]
    return next((unit for prefix, unit in SHARED_UNITS.items() if path.startswith(prefix)), path)


def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's file-by-file scheduling (`--dist loadfile`), a unit
    being `unit_of`'s."""
    from xdist.scheduler import LoadFileScheduling  # pylint: disable=import-outside-toplevel

    class SharedUnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    return SharedUnitScheduling(config, log)


def pytest_collection_modifyitems(items):
    """Units with a slow test first, the others after, each in its order;
    and the shared units checked against the fixtures their files read.

    `make test` gives its two processes a unit at a time, in this order
    (`--no-loadscope-reorder`: pytest-xdist's own order puts the units of
    most tests first, which left the files of a few long tests, a demo or a
    fuzz, running alone at the end). Long ones first, then the many quick
    ones filling both processes: they end together.
    """
    for item in items:
        for name in SHARED_FIXTURES.keys() & set(item.fixturenames):
            if unit_of(item.nodeid) != SHARED_FIXTURES[name]:
                raise pytest.UsageError(
                    f"{item.nodeid.split('::')[0]} reads the fixture {name!r}: add it to "
                    f"SHARED_UNITS in tests/conftest.py (unit {SHARED_FIXTURES[name]!r}), so "
                    "that make test sets it up once.")
    slow_units = {unit_of(item.nodeid) for item in items if item.get_closest_marker("slow")}
    # A stable sort: each group keeps its order.
    items.sort(key=lambda item: unit_of(item.nodeid) not in slow_units)
