"""The analysis end to end on typed objects (issue 24), on runs recorded on
two H100s (`tests/data/h100x2`, `benchmarks/gpu_distributed.py`).

`record.read_run` is the only reader of a `RunRecord`: a process's place in
its job (`ProcessClaim`), its distribution (`Distribution`), its steady
steps (`ProcessSteps`) and its model (`ModelSignature`) come in its
`RunData`; `verdicts.judge(RunData)` returns a `Verdict` of `Finding`s;
`workers.build_workers` takes `RunData`s and returns typed `Job`s, which
`words/report.py` alone writes as dicts. Every expected figure here is one
the recording wrote (the run info, `results.json`), never one computed by
the code under test.
"""

import dataclasses
import json
import os

import pytest

from tb_devicecost import words
from tb_devicecost.analysis import record as run_records
from tb_devicecost.analysis import run_figures
from tb_devicecost.analysis import verdicts
from tb_devicecost.analysis import waiting
from tb_devicecost.analysis import workers
from tb_devicecost.analysis.run_data import Distribution
from tb_devicecost.analysis.run_data import ModelSignature
from tb_devicecost.analysis.run_data import ProcessClaim
from tb_devicecost.reading import reader
from tb_devicecost.words import jobs as job_words
from tb_devicecost.words import report

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
        "id", "severity", "headline", "message", "fix", "change", "expected"]
    assert result["distribution"]["global_batch"] == 64
    assert result["parameters"] == 14218


def test_workers_take_run_data(run_data, recorded):
    runs = [report.run_object(run) for run in run_data.values()]
    jobs = {job.group: job for job in workers.build_workers(list(run_data.values()), runs)}
    assert sorted(jobs) == ["mlp_balanced/train", "mlp_slowed/train"]
    for case in ("mlp_balanced", "mlp_slowed"):
        job, expected = jobs[f"{case}/train"], recorded[case]
        assert isinstance(job, workers.Job)
        assert (job.straggler.process_index if job.straggler else None) == expected[
            "straggler_index"]
        assert (job.straggler.cause if job.straggler else None) == expected["cause"]
        assert job.aligned_steps == expected["aligned_steps"]
        assert job.same_host is True


def test_the_report_is_the_same_through_the_typed_path(records, recorded):
    report_ = words.build_report(list(records.values()))
    waiting = {
        run["run"]: run["verdict"] for run in report_["runs"]
    }
    for case, expected in recorded.items():
        for process in expected["processes"]:
            assert waiting[f"{case}/{process['run']}"] == process["verdict"]


# The jobs as typed results (`workers.Job`, `waiting.Waiting`), on two and
# four H100s: every expected figure is one `results.json` recorded.

JOBS = {
    "h100x2": os.path.join(paths.DATA, "h100x2", "rounds15", "mlp"),
    "h100x4": os.path.join(paths.DATA, "h100x4", "rounds30", "mlp"),
}


@pytest.fixture(scope="module", params=sorted(JOBS))
def job_case(request):
    """One recorded job directory: its `RunData`s, run objects and
    `results.json`'s cases."""
    directory = JOBS[request.param]
    records = reader.read_runs(reader.local_provider(os.path.join(directory, "runs")))
    data = [run_records.read_run(record) for record in records]
    with open(os.path.join(directory, "results.json"), encoding="utf-8") as file:
        results = json.load(file)
    return {
        "processes": results["processes"],
        "data": data,
        "runs": [report.run_object(run) for run in data],
        "cases": {case["case"]: case for case in results["cases"]},
    }


def test_a_job_is_typed_and_frozen(job_case):
    jobs = {job.group: job
            for job in workers.build_workers(job_case["data"], job_case["runs"])}
    count = job_case["processes"]
    for case, expected in job_case["cases"].items():
        job = jobs[f"{case}/train"]
        assert job.process_count == count
        assert job.missing_processes == () and job.missing_count == 0
        assert job.unaligned == () and job.problems == ()
        assert job.aligned_steps == expected["aligned_steps"]
        assert [entry.process_index for entry in job.processes] == list(range(count))
        assert [entry.run for entry in job.processes] == [
            f"{case}/{process['run']}" for process in expected["processes"]]
        assert all(isinstance(entry, workers.ProcessEntry) for entry in job.processes)
        assert job.skew_ms.p50 == pytest.approx(expected["skew_ms"]["p50"])
        assert job.skew_ms.p90 == pytest.approx(expected["skew_ms"]["p90"])
        assert job.device_busy_spread == pytest.approx(expected["device_busy_spread"])
        for entry, process in zip(job.processes, expected["processes"]):
            assert entry.wait_ms.p50 == pytest.approx(process["wait_ms_p50"])
            assert entry.wait_share == pytest.approx(process["wait_share"])
        # At most 1000 points of the skew, one per aligned step here.
        assert len(job.series.step) == len(job.series.skew_ms) == expected["aligned_steps"]
        with pytest.raises(dataclasses.FrozenInstanceError):
            job.straggler = None
        if expected["straggler_index"] is None:
            assert job.straggler is None
            continue
        straggler = job.straggler
        assert isinstance(straggler, workers.Straggler)
        assert straggler.process_index == expected["slowed_process"]
        assert straggler.run == f"{case}/process_{expected['slowed_process']}/train"
        assert straggler.cause == expected["cause"]
        assert straggler.share == pytest.approx(expected["straggler_share"])
        assert straggler.severity == "high"
        # Process 3 of four (1 of two) is slowed by its delay per batch:
        # what the others save were it on time is about that delay.
        assert straggler.saved_ms == pytest.approx(expected["delay_ms"], rel=0.1)


def test_the_group_object_is_written_from_the_typed_job(job_case):
    groups = {group["group"]: group
              for group in words.worker_groups(job_case["data"], job_case["runs"])}
    expected = job_case["cases"]["mlp_slowed"]
    group = groups["mlp_slowed/train"]
    assert list(group) == [
        "group", "process_count", "missing_processes", "missing_count", "unaligned",
        "problems", "aligned_steps", "runs", "straggler", "straggler_index",
        "straggler_share", "cause", "skew_ms", "start_spread_ms", "end_spread_ms",
        "same_host", "device_busy_spread", "series", "finding"]
    assert list(group["runs"][0]) == [
        "run", "process_index", "verdict", "steady_verdict", "step_ms", "shares", "device",
        "device_busy_fraction", "distribution", "samples_per_s", "wait_ms", "wait_share",
        "late_steps", "lost_share"]
    slowed = expected["slowed_process"]
    assert group["straggler_index"] == slowed and group["cause"] == expected["cause"]
    finding = group["finding"]
    assert list(finding) == [
        "id", "severity", "headline", "message", "fix", "expected", "process_index", "run",
        "share", "cause", "skew_ms"]
    assert finding["id"] == "straggler" and finding["process_index"] == slowed
    others = job_case["processes"] - 1
    assert finding["message"].startswith(
        f"Process {slowed} (mlp_slowed/process_{slowed}/train) holds the other "
        + ("process" if others == 1 else f"{others} processes") + " back: ")
    assert finding["expected"]["bound"] == "at_most"


def test_the_processes_waiting_for_the_straggler(job_case):
    groups = {group["group"]: group
              for group in words.worker_groups(job_case["data"], job_case["runs"])}
    runs = {run["run"]: run for run in job_case["runs"]}
    for case, expected in job_case["cases"].items():
        group = groups[f"{case}/train"]
        for entry, process in zip(group["runs"], expected["processes"]):
            found = waiting.find_waiting(entry, group, runs[entry["run"]])
            if process["verdict"] != waiting.VERDICT:
                assert found is None
                continue
            assert isinstance(found, waiting.Waiting)
            assert found.process_index == process["process_index"]
            assert found.waits_for == expected["straggler_index"]
            assert found.own_verdict == process["own_verdict"]
            assert found.wait_p50_ms == pytest.approx(process["wait_ms_p50"])
            assert found.wait_share == pytest.approx(process["wait_share"])
            assert found.communication_fraction == pytest.approx(
                process["device_split"]["communication"])
            headline, message, fix = job_words.waiting_for_others(found)
            assert headline.startswith(f"Process {process['process_index']} spends ")
            assert f"waiting for process {expected['straggler_index']}" in message
            assert f"Its own verdict, {process['own_verdict']}, is set aside" in message
