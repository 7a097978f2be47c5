"""The analysis end to end on typed objects (issue 24), on runs recorded on
two H100s (`tests/data/h100x2`, `benchmarks/gpu_distributed.py`).

`record.read_run` is the only reader of a `RunRecord`: a process's place in
its job (`ProcessClaim`), its distribution (`Distribution`), its steady
steps (`ProcessSteps`) and its model (`ModelSignature`) come in its
`RunData`; `verdicts.judge(RunData)` returns a `Verdict` of `Finding`s;
`workers.build_workers` takes `RunData`s. Every expected figure here is one
the recording wrote (the run info, `results.json`), never one computed by
the code under test.
"""

import dataclasses
import json
import os

import pytest

from tb_devicecost import analysis
from tb_devicecost.analysis import record as run_records
from tb_devicecost.analysis import report
from tb_devicecost.analysis import run_figures
from tb_devicecost.analysis import verdicts
from tb_devicecost.analysis import workers
from tb_devicecost.analysis.run_data import Distribution
from tb_devicecost.analysis.run_data import ModelSignature
from tb_devicecost.analysis.run_data import ProcessClaim
from tb_devicecost.reading import reader

from tests.support import paths

DATA = os.path.join(paths.DATA, "h100x2", "rounds15", "mlp")


@pytest.fixture(scope="module")
def records():
    return {
        record.run: record
        for record in reader.read_runs(reader.local_provider(os.path.join(DATA, "runs")))
    }


@pytest.fixture(scope="module")
def recorded():
    """`results.json`: what the recording's own analysis said, per case."""
    with open(os.path.join(DATA, "results.json"), encoding="utf-8") as file:
        return {case["case"]: case for case in json.load(file)["cases"]}


@pytest.fixture(scope="module")
def run_data(records):
    return {name: run_records.read_run(record) for name, record in records.items()}


def test_a_process_place_distribution_and_model_come_in_its_run_data(run_data, records):
    for name, run in run_data.items():
        info = records[name].info
        case, process, _ = name.split("/")
        assert run.process == ProcessClaim(
            group=f"{case}/train", directory_index=info["process_index"],
            index=info["process_index"], count=info["process_count"],
            hostname=info["hostname"],
        )
        assert run.process.lined_up
        assert process == f"process_{info['process_index']}"
        assert run.distribution == Distribution(
            strategy="DataParallel", process_index=info["process_index"], process_count=2,
            local_devices=info["local_devices"], device_count=2, replicas=2,
            per_process_batch=32, global_batch=64, per_replica_batch=32,
        )
        assert run.model == ModelSignature("jax", 14218, "float32")
        # Its steady steps: the recorded steps but the warm-up step 0.
        assert len(run.steps.step) == len(records[name].series["step"]) - 1


def test_record_level_questions_agree_with_the_run_data(records, run_data):
    record = records["mlp_slowed/process_1/train"]
    assert run_records.process_of(record) == ("mlp_slowed/train", 1, 2)
    assert sorted(other.run for other in run_records.same_group(records.values(), record)) == [
        "mlp_slowed/process_0/train", "mlp_slowed/process_1/train"]
    # Their series were read: none is missing for the job's alignment.
    assert run_records.without_series(records.values()) == []
    solo = dataclasses.replace(record, info=dict(record.info, process_count=1))
    assert run_records.process_of(solo) is None
    assert run_records.read_run(solo).process is None


@pytest.mark.parametrize("case", ["mlp_balanced", "mlp_slowed"])
def test_judge_returns_a_typed_verdict(run_data, recorded, case):
    for process in recorded[case]["processes"]:
        run = run_data[f"{case}/{process['run']}"]
        verdict = verdicts.judge(run)
        assert isinstance(verdict, verdicts.Verdict)
        # The process's own verdict: a process waiting for the straggler
        # gets `waiting_for_others` only from its job (`workers`).
        own = process["own_verdict"] or process["steady_verdict"]
        assert verdict.steady_verdict == own
        assert verdict.verdict == own
        first = verdict.findings[0]
        assert isinstance(first, verdicts.Finding)
        assert first.id == own
        assert verdict.finding(own) is first
        assert first.severity in verdicts.SEVERITIES
        if own == "latency_bound":
            # The share it judged: the device's busy share of the traced steps.
            assert first.share == pytest.approx(process["device_busy_fraction"])


def test_findings_are_frozen_and_carry_no_words(run_data):
    verdict = verdicts.judge(run_data["mlp_balanced/process_0/train"])
    finding = verdict.findings[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.severity = "info"
    names = {field.name for field in dataclasses.fields(verdicts.Finding)}
    assert not names & {"headline", "message", "fix"}


def test_the_figures_give_the_recorded_device_compute(run_data, recorded):
    for case in ("mlp_balanced", "mlp_slowed"):
        for process in recorded[case]["processes"]:
            figures = run_figures.run_figures(run_data[f"{case}/{process['run']}"])
            assert figures.device_compute_ms == pytest.approx(process["device_compute_ms"])
            assert figures.step.p50 == pytest.approx(process["step_ms_p50"])


def test_the_run_object_words_the_typed_findings(run_data):
    run = run_data["mlp_slowed/process_1/train"]
    result = report.run_object(run)
    verdict = verdicts.judge(run)
    assert [finding["id"] for finding in result["findings"]] == [
        finding.id for finding in verdict.findings]
    assert [finding["severity"] for finding in result["findings"]] == [
        finding.severity for finding in verdict.findings]
    assert result["verdict"] == "input_bound"
    assert list(result["findings"][0]) == [
        "id", "severity", "headline", "message", "fix", "expected"]
    assert result["distribution"]["global_batch"] == 64
    assert result["parameters"] == 14218


def test_workers_take_run_data(run_data, recorded):
    runs = [report.run_object(run) for run in run_data.values()]
    groups = {group["group"]: group
              for group in workers.build_workers(list(run_data.values()), runs)}
    assert sorted(groups) == ["mlp_balanced/train", "mlp_slowed/train"]
    for case in ("mlp_balanced", "mlp_slowed"):
        group, expected = groups[f"{case}/train"], recorded[case]
        assert group["straggler_index"] == expected["straggler_index"]
        assert group["cause"] == expected["cause"]
        assert group["aligned_steps"] == expected["aligned_steps"]
        assert group["same_host"] is True


def test_the_report_is_the_same_through_the_typed_path(records, recorded):
    report_ = analysis.build_report(list(records.values()))
    waiting = {
        run["run"]: run["verdict"] for run in report_["runs"]
    }
    for case, expected in recorded.items():
        for process in expected["processes"]:
            assert waiting[f"{case}/{process['run']}"] == process["verdict"]
