"""`fit_end`: a fit is whole only when its closing aggregate says so (issue 35)."""

import numpy as np

from tb_devicecost import words
from tb_devicecost.analysis import fit_end

from tests.support.documents import make_aggregate

INFO = {"fit_id": "f2", "recording_id": "r1", "backend": "test", "batch_size": 32}


def aggregate(**identity):
    document = make_aggregate(1.0, 5.0, 0.5)
    document.update(identity)
    return document


def series(count):
    return {"step": np.arange(count, dtype=np.float64),
            "wall_time": 1.7e9 + np.arange(count) * 0.01,
            "data_wait_ms": np.ones(count), "compute_ms": np.full(count, 5.0),
            "host_overhead_ms": np.full(count, 0.5), "batch_size": np.full(count, 32.0),
            "warmup": np.r_[1.0, np.zeros(count - 1)]}


def run_of(aggregate_document, info=INFO, rows=150):
    record = {"run": "a/train", "info": info, "aggregate": aggregate_document,
              "series": series(rows)}
    [run] = words.build_report([record])["runs"]
    return run


def test_closed_by_its_own_fit_is_whole():
    run = run_of(aggregate(fit_id="f2", recording_id="r1", closed=True))
    assert run["status"] == "complete" and run["fit_end"]["closed"] is True
    assert not [f for f in run["findings"] if f["id"] == "incomplete_run"]


def test_a_complete_status_without_the_closed_marker_is_not_whole():
    run = run_of(aggregate(fit_id="f2", recording_id="r1", closed=False, status="running"))
    assert run["status"] == "running"
    [found] = [f for f in run["findings"] if f["id"] == "incomplete_run"]
    assert "not closed" in found["headline"] and "150 steps reached the disk" in found["headline"]


def test_an_earlier_fit_of_the_same_recording_still_counts_but_does_not_close():
    run = run_of(aggregate(fit_id="f1", recording_id="r1", closed=True))
    assert run["source"] == "aggregate" and run["status"] == "running"
    assert run["fit_end"]["own_aggregate"] is True


def test_another_recording_s_aggregate_is_not_the_run_s():
    # A script run again into one log_dir, killed before its first
    # aggregate: the first script's complete aggregate is not its figures.
    run = run_of(aggregate(fit_id="f0", recording_id="r0", closed=True))
    assert run["source"] == "series" and run["status"] == "running"
    assert any("another recording's" in problem for problem in run["problems"])


def test_recording_stopped_says_why_and_where():
    document = aggregate(fit_id="f2", recording_id="r1", closed=True, status="interrupted",
                         error="OSError: [Errno 28] No space left on device")
    document["steps"] = 1024
    run = run_of(document, rows=1000)
    [found] = [f for f in run["findings"] if f["id"] == "incomplete_run"]
    assert found["headline"].startswith("Recording stopped: No space left on device at step 1,024")
    assert "Report again once the fit has finished" not in found["fix"]


def test_data_without_an_identity_keeps_its_status():
    run = run_of(make_aggregate(1.0, 5.0, 0.5), info={"backend": "test"})
    assert run["status"] == "complete" and run["fit_end"] is None


def test_short_reason():
    assert fit_end.short_reason("OSError: [Errno 28] No space left on device") == (
        "No space left on device")
    assert fit_end.short_reason("RuntimeError: boom") == "RuntimeError: boom"
    assert fit_end.short_reason("") is None
