"""Our own time inside the steps (`aggregate.SelfTime`, the aggregate's
`self_ms`), in real fits: recorded, and an injected cost of ours found."""

import time

import numpy as np
import pytest

import keras

import tb_devicecost
from tb_devicecost import words
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting as accounting_module

from tests.support.analyzed import finding_of

# Steps long enough (tens of ms on a small machine) that our own few
# hundred microseconds stay under 5% of each, however busy the machine.
_BATCH = 256


def _fit(logdir, epochs=3):
    rng = np.random.default_rng(0)
    x = rng.random((_BATCH * 12, 512), dtype=np.float32)
    y = rng.random((_BATCH * 12, 1), dtype=np.float32)
    model = keras.Sequential([
        keras.Input((512,)),
        keras.layers.Dense(1024, activation="relu"),
        keras.layers.Dense(1024, activation="relu"),
        keras.layers.Dense(1),
    ])
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=_BATCH, epochs=epochs, verbose=0,
              callbacks=[tb_devicecost.DeviceCostCallback(logdir)])
    [record] = [r for r in reader.read_runs(reader.local_provider(logdir))
                if r.run == "train"]
    return record


def _spinning(seconds):
    """`StepAccounting.begin_step`, which the timed step function calls
    before each step's call, made to busy-wait `seconds` first: a cost of
    ours."""
    original = accounting_module.StepAccounting.begin_step

    def begin_step(self, *args, **kwargs):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        return original(self, *args, **kwargs)

    return begin_step


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _fit(str(tmp_path_factory.mktemp("plain")))


def test_a_fit_records_its_own_time_positive_and_below_the_step(plain):
    aggregate = plain.aggregate
    self_ms = aggregate["self_ms"]["training_thread"]
    per_step_ms = self_ms / aggregate["steps"]
    assert per_step_ms > 0
    assert per_step_ms < aggregate["components"]["step"]["mean_ms"]
    # TensorFlow runs no batch-end hook on Keras's worker thread.
    assert aggregate["self_ms"]["worker"] == 0


def test_without_an_injected_cost_the_verdict_is_not_uncertain(plain):
    result = words.analyze_run(plain)
    assert result["step_ms"]["mean"] >= 1.0
    assert result["self_us_per_step"] == pytest.approx(
        plain.aggregate["self_ms"]["training_thread"] * 1e3 / plain.aggregate["steps"])
    assert result["self_share"] < 0.05
    assert finding_of(result, "measuring_cost") is None
    assert result["verdict_uncertain"] is False


def test_an_injected_cost_of_ours_is_recorded_and_marks_the_verdict(plain, tmp_path, monkeypatch):
    # A quarter of the step as measured without it, at least 2 ms: the
    # share it adds stays far above 5% however slow the machine is.
    mean_ms = plain.aggregate["components"]["step"]["mean_ms"]
    injected_s = max(2e-3, 0.25 * mean_ms / 1e3)
    monkeypatch.setattr(accounting_module.StepAccounting, "begin_step", _spinning(injected_s))
    record = _fit(str(tmp_path / "spun"))
    aggregate = record.aggregate
    # Every step but the first two (the calls that trace: with the batch
    # for the first step's probes, then without) spun inside our own time
    # (the traced calls spin too, outside it).
    spun_steps = aggregate["steps"] - 2
    assert aggregate["self_ms"]["training_thread"] >= 0.8 * injected_s * 1e3 * spun_steps
    result = words.analyze_run(record)
    assert result["self_us_per_step"] >= 0.8 * injected_s * 1e6 * spun_steps / aggregate["steps"]
    finding = finding_of(result, "measuring_cost")
    assert finding is not None
    assert result["verdict_uncertain"] is True
    assert "so the split between its parts is uncertain" in finding["headline"]


def test_our_time_at_epoch_ends_is_recorded_with_an_injected_cost(plain, tmp_path, monkeypatch):
    """Our hooks' time between the steps (`self_ms.between_steps`): a real
    fit's is positive and below its time between steps; made to spin a
    known time at each epoch's end, it holds that time, and the line says
    its share of the fit."""
    wall = plain.aggregate["wall_ms"]
    between_ms = plain.aggregate["self_ms"]["between_steps"]
    assert 0 < between_ms < wall["between_steps"] + wall["measurement"]
    original = accounting_module.StepAccounting.flush_due
    injected_s = 0.05

    def flush_due(self, *args, **kwargs):
        end = time.perf_counter() + injected_s
        while time.perf_counter() < end:
            pass
        return original(self, *args, **kwargs)

    monkeypatch.setattr(accounting_module.StepAccounting, "flush_due", flush_due)
    epochs = 3
    record = _fit(str(tmp_path / "spun"), epochs=epochs)
    spun_ms = record.aggregate["self_ms"]["between_steps"]
    # The train run's flush at each epoch's end spun, inside our hook.
    assert spun_ms >= epochs * injected_s * 1e3
    assert spun_ms < record.aggregate["wall_ms"]["total"]
    result = words.analyze_run(record)
    assert result["between_steps_self_share"] == pytest.approx(
        spun_ms / record.aggregate["wall_ms"]["total"])
    assert result["self_cost_text"].endswith(" of the fit at epoch ends.")


def test_a_tensorflow_fit_runs_keras_s_own_path_and_says_nothing_else(plain):
    """The fetch is timed inside Keras's graph (`FetchTimedStep`): the run
    says so, and its self-cost line no longer says the callback fetched
    each batch itself (what runs recorded before that say, skipping two of
    Keras's operations a step: `tests/words/test_measuring.py`)."""
    assert plain.info["fetch_timed_in_graph"] is True
    assert plain.info["fetch_in_graph"] is False
    result = words.analyze_run(plain)
    assert result["self_cost_text"].startswith("Measuring took ")
    assert "fetched each batch itself" not in result["self_cost_text"]
    # The data wait comes from the graph's timestamps: measured, not zero.
    assert plain.aggregate["components"]["data_wait"]["p50_ms"] > 0
