"""The full demo, what `python -m demo` runs: the quick demo's fits at full
size, and stopped by `kill` (SIGTERM).

The quick demo (`test_demo.py`) tells every scenario's story; what full
size changes is planned steps only (`test_quick_is_clearly_less_work`:
the same fits, more steps each). Of the stories, the warm-up one is the
one a fit's length decides (warm-up is a share of the fit), so it is the
one trained here at full size: the other scenarios' verdicts are their
steady steps', which full size only makes longer (about 60 s more of
CPU, 7% of `make test`'s, for no story of their own).
"""

import os
import signal

import pytest

from demo import __main__ as demo_main
from demo import scenarios

from tests.support.demo_runs import served_demo, verdicts


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow


# The scenarios the full demo runs but `fixes`, whose full size (two models,
# a larger budget) is the quick one's code over minutes more;
# `test_the_full_demo_runs_every_scenario_and_tries_fixes_on_two_models`
# checks what it would run.
FULL_SCENARIOS = [name for name in demo_main.SCENARIO_NAMES if name != "fixes"]
# The one trained here at full size (see the module's docstring).
TRAINED = ["warmup"]


@pytest.fixture(scope="module")
def full_demo(tmp_path_factory):
    """The full demo's warm-up scenario, stopped by `kill` (SIGTERM)."""
    return served_demo(tmp_path_factory, ["--scenarios", ",".join(TRAINED)], signal.SIGTERM)


def test_full_demo_tells_the_same_warmup_story(full_demo):
    """The verdicts the quick demo's warm-up runs get
    (`scenarios.EXPECTED_VERDICTS`, asserted of the quick one in
    `test_demo.py`), from fits of the full demo's size."""
    runs = full_demo["runs"]
    expected = {name: verdict for name, verdict in scenarios.EXPECTED_VERDICTS.items()
                if name.split("/")[0] in TRAINED}
    assert verdicts(runs) == expected and len(expected) == 2
    # The long fit at full size: 160,000 samples at batch 32.
    assert runs["warmup/long-cpu0/train"]["steps"] == 5000, runs["warmup/long-cpu0/train"]["steps"]


def _planned_steps(logdir, quick, monkeypatch):
    """`{run: steps}` of every fit the full demo's scenarios make, `quick`
    or not: each scenario runs with its fits (and the sweep) replaced by a
    count of the steps they were asked for."""
    import numpy as np
    import tensorflow as tf

    planned = {}

    def count(model, data, directory, device, epochs=1, verbose=0, **kwargs):
        if isinstance(data, np.ndarray):  # `fit`'s own default batch: 32.
            batches = -(-len(data) // kwargs.get("batch_size", 32))
        elif isinstance(data, tf.data.Dataset):
            batches = int(data.cardinality())
            assert batches >= 0, directory  # Every pipeline says its length.
        else:
            batches = len(data)
        planned[directory] = epochs * batches

    def sweep(build, x, y, batch_sizes, devices, log_dir, steps, **kwargs):
        for batch_size in batch_sizes:
            planned[f"{log_dir}/b{batch_size}"] = steps

    def shards(directory, images, labels, shards=4):
        # Unwritten: the pipeline says its length (`assert_cardinality`),
        # and encoding the full demo's images to PNG took 5 s.
        return [os.path.join(directory, f"images-{shard}.tfrecord") for shard in range(shards)]

    monkeypatch.setattr(scenarios, "_fit", count)
    monkeypatch.setattr(scenarios, "_write_tfrecords", shards)
    monkeypatch.setattr(scenarios.tb_devicecost, "sweep", sweep)
    for name in FULL_SCENARIOS:
        if name in scenarios.SCENARIOS:
            scenarios.SCENARIOS[name](str(logdir), "/CPU:0", quick)
        else:
            scenarios.ALL_DEVICE_SCENARIOS[name](str(logdir), ["/CPU:0"], quick)
    return {run.replace(str(logdir), ""): steps for run, steps in planned.items()}


def test_quick_is_clearly_less_work(tmp_path, monkeypatch):
    """`--quick` asks each of the full demo's fits for fewer steps or as
    many, and for under 0.6 of the steps in all (its speed is a
    benchmark's; here no fit runs)."""
    quick = _planned_steps(tmp_path / "quick", True, monkeypatch)
    full = _planned_steps(tmp_path / "full", False, monkeypatch)
    assert sorted(quick) == sorted(full) and len(full) > 10, sorted(full)
    assert all(quick[run] <= full[run] for run in full), (quick, full)
    assert sum(quick.values()) < 0.6 * sum(full.values()), (quick, full)


def test_the_full_demo_runs_every_scenario_and_tries_fixes_on_two_models():
    """What `python -m demo` runs without options, `fixes` included (the
    full demo above leaves it out): the fixes tried on the small MLP at
    batch 10 and on the CNN fed by Python, with a larger budget than the
    quick demo's single MLP at batch 32."""
    from demo import tried

    assert demo_main.parse_args([]).scenarios == list(demo_main.SCENARIO_NAMES)
    assert set(FULL_SCENARIOS) | {"fixes"} == set(demo_main.SCENARIO_NAMES)
    assert set(demo_main.SCENARIO_NAMES) == (
        set(scenarios.SCENARIOS) | set(scenarios.ALL_DEVICE_SCENARIOS) | {"fixes"})
    (full, full_budget), (quick, quick_budget) = demo_main.FIXES_TRIED[False], demo_main.FIXES_TRIED[True]
    assert full == ("mlp_b10", "python_input") and quick == ("mlp_b32",)
    assert set(full + quick) == set(tried.SCENARIOS)
    assert full_budget > quick_budget > 0


def test_sigterm_stops_the_demo_and_its_tensorboard(full_demo):
    assert full_demo["url"] == f"http://127.0.0.1:{full_demo['port']}/#devicecost"
    assert full_demo["served"] == set(full_demo["runs"])
    assert len(full_demo["tensorboards"]) == 1, full_demo["tensorboards"]
    assert not full_demo["outlived"], "TensorBoard outlived the demo"
    assert full_demo["returncode"] == 128 + signal.SIGTERM
