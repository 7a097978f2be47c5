"""What our own measuring took of a step: the run object's figures, the
`measuring_cost` finding above 5% of the step, the line of every report,
and data recorded before it was (`words/measuring.py`)."""

import json
import os

import pytest

from tb_devicecost import cli
from tb_devicecost import words
from tb_devicecost.analysis import thresholds
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.reading import reader

from tests.support import paths
from tests.support.analyzed import assert_json_clean, finding_of
from tests.support.documents import make_aggregate, make_record


def _run(self_ms, worker_ms=None, step_ms=(0.2, 1.6, 0.2), backend="jax", steps_per_record=1,
         between_steps_ms=None, wall_ms=None):
    """A run of 100 steady steps and a warm-up one, each steady step
    `sum(step_ms)` ms, whose aggregate says our own time was `self_ms` in
    all (`None`: not recorded), `between_steps_ms` of it between the steps
    of a fit spanning `wall_ms`."""
    aggregate = make_aggregate(*step_ms)
    if self_ms is not None:
        aggregate["self_ms"] = {"training_thread": self_ms, "worker": worker_ms}
        if between_steps_ms is not None:
            aggregate["self_ms"]["between_steps"] = between_steps_ms
    if wall_ms is not None:
        aggregate["wall_ms"] = {"total": wall_ms, "steps": 202.0, "warmup": 10.0,
                                "between_steps": wall_ms - 212.0, "measurement": 0.0}
    return make_record("cpu/train", aggregate=aggregate,
                       info={"backend": backend, "steps_per_record": steps_per_record})


def _report(*records):
    return words.build_report(list(records))


def test_each_run_says_what_measuring_took_of_a_step():
    # 101 steps (a warm-up and 100 steady ones) of 2 ms; 20.2 ms of ours.
    result = words.analyze_run(_run(20.2, worker_ms=5.05))
    assert result["self_us_per_step"] == pytest.approx(200.0)
    assert result["worker_self_us_per_step"] == pytest.approx(50.0)
    assert result["self_share"] == pytest.approx(0.1)
    assert result["self_cost_text"] == "Measuring took 200 µs a step, 10% of the step."
    assert_json_clean(result)


def test_our_time_between_steps_is_said_as_a_share_of_the_fit():
    """Each epoch's end (and validation's start and end) costs a fit
    outside its steps: the line says that share of the fit's wall time."""
    # 21 ms of our hooks between the steps of a fit of 250 ms.
    result = words.analyze_run(_run(20.2, between_steps_ms=21.0, wall_ms=250.0))
    assert result["between_steps_self_share"] == pytest.approx(21.0 / 250.0)
    assert result["self_cost_text"] == (
        "Measuring took 200 µs a step, 10% of the step, and 8.4% of the fit at epoch ends.")
    tiny = words.analyze_run(_run(20.2, between_steps_ms=0.1, wall_ms=250.0))
    assert tiny["self_cost_text"].endswith(", and under 0.1% of the fit at epoch ends.")
    # Recorded before it was, or no fit's wall time: the line as before.
    for run in (_run(20.2, wall_ms=250.0), _run(20.2, between_steps_ms=21.0)):
        result = words.analyze_run(run)
        assert result["between_steps_self_share"] is None
        assert result["self_cost_text"] == "Measuring took 200 µs a step, 10% of the step."
    assert_json_clean(result)


def test_a_tensorflow_fit_that_fetched_its_own_batches_says_it_skipped_keras_s_checks():
    """On TensorFlow with one step an execution the callback fetches each
    batch itself: the fit it measured skips two small operations of
    Keras's loop a step, and the run says so (issue 36); with several
    steps an execution, and on the other backends, Keras's loop is kept."""
    fetched = words.analyze_run(_run(20.2, backend="tensorflow"))["self_cost_text"]
    assert fetched.startswith("Measuring took 200 µs a step, 10% of the step. ")
    assert "fetched each batch itself" in fetched and "may run faster than" in fetched
    for backend, steps_per_record in (("tensorflow", 4), ("jax", 1), ("torch", 1)):
        text = words.analyze_run(_run(20.2, backend=backend, steps_per_record=steps_per_record))
        assert "fetched each batch" not in text["self_cost_text"], backend


def test_above_five_percent_of_the_step_the_verdict_is_uncertain():
    # 6% and 4% of a 2 ms step: 120 and 80 µs a step over 101 steps.
    above = words.analyze_run(_run(0.12 * 101))
    below = words.analyze_run(_run(0.08 * 101))
    assert thresholds.MEASURING_SHARE_MAX == 0.05
    finding = finding_of(above, "measuring_cost")
    assert finding is not None and finding["severity"] == "moderate"
    assert finding["headline"] == (
        "Measuring took 6% of each step, so the split between its parts is uncertain "
        "by about that much.")
    assert "120 µs a step" in finding["message"]
    assert above["verdict_uncertain"] is True
    # The verdict itself stands; it is marked, not replaced.
    assert above["verdict"] == below["verdict"] == "compute_bound"
    assert finding_of(below, "measuring_cost") is None
    assert below["verdict_uncertain"] is False


def test_the_reports_show_it_in_one_line():
    report = _report(_run(0.12 * 101))
    text = console.render(report)
    assert "\n  Measuring took 120 µs a step, 6% of the step.\n" in text
    assert "measuring_cost" in text
    assert "\nMeasuring took 120 µs a step, 6% of the step.\n" in markdown.render(report)
    document = json.loads(json.dumps(report))
    [run] = document["runs"]
    assert run["self_us_per_step"] == pytest.approx(120.0)
    assert run["verdict_uncertain"] is True


def test_a_run_recorded_before_it_reads_not_recorded():
    result = words.analyze_run(_run(None))
    assert result["self_us_per_step"] is None
    assert result["self_share"] is None
    assert result["verdict_uncertain"] is False
    assert "not recorded" in result["self_cost_text"]
    # The text and Markdown reports of such data stay as they were.
    report = _report(_run(None))
    assert "Measuring" not in console.render(report)
    assert "Measuring" not in markdown.render(report)


@pytest.mark.parametrize("name", ["h100", "h100x2", "h200_threads"])
def test_recorded_data_that_predates_it_reads_without_error(name, capsys):
    records = reader.read_runs(reader.local_provider(os.path.join(paths.DATA, name)))
    report = words.build_report(records)
    assert report["runs"]
    for run in report["runs"]:
        assert run["self_us_per_step"] is None
        assert run["verdict_uncertain"] is False
        assert "not recorded" in run["self_cost_text"]
    assert cli.main(["report", os.path.join(paths.DATA, name)]) == 0
    assert "Measuring took" not in capsys.readouterr().out
