"""StepAccounting: step accounting under a fake clock, bounded memory, failures."""

import json
import os
import warnings

import numpy as np
import pytest

from tb_devicecost import metadata
from tb_devicecost import reader
from tb_devicecost import accounting

from support import FakeClock


def record_steps(recorder, clock, steps):
    """Drives the low-level API with (data_wait, compute, host) ms triples."""
    for data_wait, compute, host in steps:
        recorder.begin_step()
        clock.advance(data_wait)
        recorder.end_fetch(batch_size=32)
        clock.advance(compute)
        recorder.end_compute()
        clock.advance(host)
    recorder.boundary()


def read_back(run_dir, logdir):
    records = reader.read_runs(reader.local_provider(logdir))
    return {record.run: record for record in records}


def test_components_add_up_to_wall_time_and_read_back_exactly(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session({"backend": "test"})
    steps = [(500.0, 40.0, 2.0)] + [(3.0, 10.0, 1.0)] * 9 + [(5.0, 12.0, 1.5)] * 10
    record_steps(recorder, clock, steps)
    recorder.end_session()

    record = read_back(tmp_path / "run", tmp_path)["run"]
    series = record.series
    np.testing.assert_array_equal(series["step"], np.arange(len(steps)))
    expected = np.array(steps)
    np.testing.assert_allclose(series["data_wait_ms"], expected[:, 0], rtol=1e-5)
    np.testing.assert_allclose(series["compute_ms"], expected[:, 1], rtol=1e-5)
    np.testing.assert_allclose(series["host_overhead_ms"], expected[:, 2], rtol=1e-5)
    np.testing.assert_array_equal(series["batch_size"], np.full(len(steps), 32))

    aggregate = record.aggregate
    steady = expected[1:]
    assert aggregate["status"] == "complete"
    assert aggregate["steps"] == len(steps)
    assert aggregate["steady_steps"] == len(steps) - 1
    assert aggregate["warmup"] == {
        "count": 1,
        "sum_ms": pytest.approx(542.0),
        "max_ms": pytest.approx(542.0),
        "steps": [0],
    }
    components = aggregate["components"]
    for column, name in enumerate(metadata.COMPONENTS):
        assert components[name]["sum_ms"] == pytest.approx(steady[:, column].sum())
    assert components["step"]["sum_ms"] == pytest.approx(steady.sum())
    assert aggregate["samples"] == 32 * len(steady)
    assert aggregate["samples_per_s"] == pytest.approx(
        32 * len(steady) / (steady.sum() / 1e3)
    )
    assert record.info["backend"] == "test"


def test_percentiles_stay_within_one_percent_of_numpy(tmp_path):
    rng = np.random.default_rng(0)
    compute = rng.lognormal(mean=1.0, sigma=0.6, size=5000)
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session()
    record_steps(recorder, clock, [(0.0, 1.0, 0.0)] + [(0.5, c, 0.1) for c in compute])
    recorder.end_session()
    summary = recorder.aggregate()["components"]["compute"]
    for q in (50, 90, 99):
        # The order statistic the recorder estimates: the ceil(q * n)-th value.
        exact = np.percentile(compute, q, method="inverted_cdf")
        assert summary[f"p{q}_ms"] == pytest.approx(exact, rel=0.0101)


def test_memory_is_bounded_by_flush_steps(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=64, clock=clock)
    recorder.begin_session()
    largest = 0
    for _ in range(3000):
        recorder.begin_step()
        clock.advance(1.0)
        recorder.end_fetch()
        clock.advance(2.0)
        recorder.end_compute()
        largest = max(largest, len(recorder._rows))
    recorder.end_session()
    assert largest <= 64
    assert recorder.aggregate()["steps"] == 3000


def test_spikes_are_counted_against_the_running_median(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=16, clock=clock)
    recorder.begin_session()
    steps = [(1.0, 2.0, 0.1)] * 40
    steps[20] = (1.0, 2.0 * 25, 0.1)  # a retrace-sized step
    steps[33] = (1.0, 2.0 * 11, 0.1)
    record_steps(recorder, clock, [(0.0, 300.0, 0.0)] + steps)
    recorder.end_session()
    spikes = recorder.aggregate()["spikes"]
    assert spikes["count"] == 2
    assert spikes["steps"] == [21, 34]


def test_each_session_starts_with_a_warmup_step(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for _ in range(2):
        recorder.begin_session()
        record_steps(recorder, clock, [(0.0, 200.0, 0.0)] + [(1.0, 1.0, 1.0)] * 5)
    recorder.end_session()
    aggregate = recorder.aggregate()
    assert aggregate["warmup"]["steps"] == [0, 6]
    assert aggregate["steady_steps"] == 10
    assert aggregate["sessions"] == 2


def test_a_failing_writer_warns_once_and_switches_recording_off(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", flush_steps=4, clock=clock)
    recorder.begin_session()

    def broken(rows):
        raise OSError("disk full")

    recorder._writer.write_steps = broken
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 20)
        recorder.end_session()
    messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert len(messages) == 1
    assert "OSError: disk full" in messages[0]
    assert not recorder.enabled


def test_a_recorder_that_saw_nothing_writes_no_file(tmp_path):
    recorder = accounting.StepAccounting(tmp_path / "unused")
    recorder.end_session()
    assert not (tmp_path / "unused").exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"run_dir": ""}, "`run_dir` must be a non-empty path"),
        ({"run_dir": 3}, "Received: run_dir=3"),
        ({"run_dir": "x", "flush_steps": 0}, "Received: flush_steps=0"),
        ({"run_dir": "x", "flush_steps": True}, "`flush_steps` must be a positive"),
    ],
)
def test_invalid_arguments_say_what_was_received(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        accounting.StepAccounting(**kwargs)


def test_documents_carry_the_schema_version(tmp_path):
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    recorder.begin_session({"backend": "x"})
    recorder.write_placement({"ops": {"CPU:0": 3}})
    record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 3)
    recorder.end_session()
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.placement == {"ops": {"CPU:0": 3}, "schema": metadata.SCHEMA_VERSION}
    assert json.loads(json.dumps(record.aggregate)) == record.aggregate


def test_files_of_one_run_sort_in_the_order_they_were_written(tmp_path):
    """TensorBoard reads a run's event files in name order; a later file
    that sorted first would make the older data look newest."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for session in range(12):  # past 9 -> 10, where unpadded names misorder
        recorder.begin_session()
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 2)
        recorder.end_session()
    names = sorted(os.listdir(tmp_path / "run"))
    assert len(names) == 12
    record = read_back(tmp_path / "run", tmp_path)["run"]
    assert record.aggregate["sessions"] == 12
    assert record.aggregate["steps"] == 24


def test_the_warmup_flag_is_written_per_step(tmp_path):
    """Readers take warm-up from the data, never from "step 0 is warm-up"."""
    clock = FakeClock()
    recorder = accounting.StepAccounting(tmp_path / "run", clock=clock)
    for _ in range(2):  # two fits: each starts with a warm-up step
        recorder.begin_session()
        record_steps(recorder, clock, [(1.0, 1.0, 1.0)] * 3)
    recorder.end_session()
    record = read_back(tmp_path / "run", tmp_path)["run"]
    np.testing.assert_array_equal(record.series["warmup"], [1, 0, 0, 1, 0, 0])
