"""The full demo, what `python -m demo` runs: the same story as the quick
one at full size, and stopped by `kill` (SIGTERM)."""

import signal

import pytest

from demo import __main__ as demo_main
from demo import scenarios

from tests.support.demo_runs import served_demo, verdicts


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow


# The full demo's scenarios run here: all but `fixes`, whose full size
# (two models, a larger budget) is the quick one's code over minutes more;
# `test_the_full_demo_runs_every_scenario_and_tries_fixes_on_two_models`
# checks what it would run.
FULL_SCENARIOS = [name for name in demo_main.SCENARIO_NAMES if name != "fixes"]


@pytest.fixture(scope="module")
def full_demo(tmp_path_factory):
    """The full demo's scenarios, stopped by `kill` (SIGTERM)."""
    return served_demo(tmp_path_factory, ["--scenarios", ",".join(FULL_SCENARIOS)], signal.SIGTERM)


def test_full_demo_tells_the_same_story(full_demo):
    """The same verdicts as the quick demo's (`scenarios.EXPECTED_VERDICTS`,
    asserted of the quick one in `test_demo.py`), every run one of its
    scenarios'."""
    runs = full_demo["runs"]
    assert verdicts(runs) == scenarios.EXPECTED_VERDICTS
    assert {name.split("/")[0] for name in runs} == set(FULL_SCENARIOS)


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
            if batches < 0:  # Read from files: counted by reading them.
                batches = int(data.reduce(0, lambda total, *_: total + 1))
        else:
            batches = len(data)
        planned[directory] = epochs * batches

    def sweep(build, x, y, batch_sizes, devices, log_dir, steps, **kwargs):
        for batch_size in batch_sizes:
            planned[f"{log_dir}/b{batch_size}"] = steps

    monkeypatch.setattr(scenarios, "_fit", count)
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
