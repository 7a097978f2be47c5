"""A process mostly waiting for another inside the collective is
`waiting_for_others`, not `compute_bound` (`tb_devicecost.analysis.waiting`).

The jobs are built by hand (`job_record`, `tests/support/documents.py`):
per-step data wait, compute and host overhead per process, as the reader
hands them over.
"""

import json

import pytest

from tb_devicecost import words
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import markdown

from tests.support.documents import job_record


N = 60  # steps: enough that the 500 ms warm-up step does not dominate


def _job(trace=None):
    """Process 2 fetches for 20 ms then computes 1 ms; processes 0 and 1
    have their batch at once and wait 20 ms in the all-reduce."""
    records = [
        job_record("job/process_0/train", 0, 3, [0.0] * N, [21.0] * N, [0.0] * N),
        job_record("job/process_1/train", 1, 3, [0.0] * N, [21.0] * N, [0.0] * N),
        job_record("job/process_2/train", 2, 3, [20.0] * N, [1.0] * N, [0.0] * N),
    ]
    if trace is not None:
        records[0]["trace"] = trace
    return records


def _runs(report):
    return {run["run"]: run for run in report["runs"]}


def test_the_processes_that_wait_for_the_straggler_are_waiting_for_others():
    report = words.build_report(_job())
    runs = _runs(report)
    for name in ("job/process_0/train", "job/process_1/train"):
        run = runs[name]
        assert run["verdict"] == run["steady_verdict"] == "waiting_for_others"
        # Its own verdict is kept, its compute advice is not given.
        assert run["own_verdict"] == "compute_bound"
        ids = [finding["id"] for finding in run["findings"]]
        assert ids[0] == "waiting_for_others"
        assert "compute_bound" not in ids and "latency_bound" not in ids
        # The straggler finding is said once, on the straggler's own run.
        assert "straggler" not in ids
        finding = run["findings"][0]
        assert finding["waits_for"] == 2
        assert finding["wait_ms"]["p50"] == pytest.approx(20.0)
        assert finding["wait_share"] == pytest.approx(20 / 21)
        assert "process 2" in finding["message"] and "jit_compile" not in finding["fix"]
    # The straggler keeps its own cause and fix.
    straggler = runs["job/process_2/train"]
    assert straggler["verdict"] == "input_bound"
    assert "waiting_for_others" not in [finding["id"] for finding in straggler["findings"]]
    [group] = report["workers"]
    verdicts = {entry["process_index"]: entry["steady_verdict"] for entry in group["runs"]}
    assert verdicts == {0: "waiting_for_others", 1: "waiting_for_others", 2: "input_bound"}
    json.dumps(report, allow_nan=False)
    assert "waiting_for_others" in console.render(report)
    assert "waiting_for_others" in markdown.render(report)


def test_a_process_waiting_a_little_keeps_its_own_verdict():
    # Process 1 is 4 ms late to a 12 ms step: the others wait a third of it.
    records = [
        job_record("small/process_0/train", 0, 2, [0.0] * N, [12.0] * N, [0.0] * N),
        job_record("small/process_1/train", 1, 2, [4.0] * N, [8.0] * N, [0.0] * N),
    ]
    runs = _runs(words.build_report(records))
    assert runs["small/process_0/train"]["steady_verdict"] == "compute_bound"


def test_balanced_processes_wait_for_nobody():
    records = [
        job_record(f"even/process_{i}/train", i, 2, [0.0] * N, [5.0] * N, [0.0] * N)
        for i in range(2)
    ]
    report = words.build_report(records)
    assert all(run["steady_verdict"] == "compute_bound" for run in report["runs"])


def test_the_trace_time_in_collectives_is_quoted_as_evidence():
    window = {
        "start_step": 3, "stop_step": 6, "purpose": "device_busy", "has_device_plane": True,
        "summary": {"device_busy_fraction": 0.04, "device_communication_fraction": 0.93,
                    "device_memory_fraction": 0.01, "device_idle_fraction": 0.02},
        "devices": [{"device": "/device:GPU:0", "compute_fraction": 0.04,
                     "communication_fraction": 0.93, "memory_fraction": 0.01,
                     "idle_fraction": 0.02}],
        "device_busy_fraction": 0.04,
    }
    report = words.build_report(_job(trace={"windows": [window]}))
    finding = _runs(report)["job/process_0/train"]["findings"][0]
    assert finding["communication_fraction"] == pytest.approx(0.93)
    assert "93% of each traced step in collectives" in finding["message"]
    [group] = report["workers"]
    entry = group["runs"][0]
    assert entry["device_split"]["communication"] == pytest.approx(0.93)
    assert entry["device_figures"][0]["device"] == "/device:GPU:0"
