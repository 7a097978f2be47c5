"""StepRecorder: the custom-loop API, under a fake clock."""

import numpy as np
import pytest

from tb_devicecost import StepRecorder
from tb_devicecost import words
from tb_devicecost.reading import reader

from tests.support.clock import FakeClock


def read_back(logdir):
    return {record.run: record for record in reader.read_runs(reader.local_provider(str(logdir)))}


def test_custom_loop_api_times_fetch_and_compute(tmp_path):
    clock = FakeClock()
    recorder = StepRecorder(tmp_path / "custom", clock=clock)

    def batches():
        for _ in range(6):
            clock.advance(4.0)  # the pipeline producing a batch
            yield np.zeros((16, 3))

    for batch in recorder.timed(batches()):
        clock.advance(0.5)  # user code between fetch and step: host overhead
        with recorder.compute():
            clock.advance(7.0)
    recorder.close()

    record = read_back(tmp_path)["custom"]
    np.testing.assert_allclose(record.series["data_wait_ms"], 4.0, rtol=1e-5)
    np.testing.assert_allclose(record.series["compute_ms"], 7.0, rtol=1e-5)
    np.testing.assert_allclose(record.series["host_overhead_ms"], 0.5, rtol=1e-4)
    np.testing.assert_array_equal(record.series["batch_size"], 16)
    assert record.aggregate["warmup"]["steps"] == [0]


def test_a_custom_loop_says_its_measuring_cost_was_not_recorded(tmp_path):
    # Nothing times our own code around a custom loop's steps: no figure,
    # rather than a cost of 0 µs.
    recorder = StepRecorder(tmp_path / "custom", clock=FakeClock())
    for _ in range(3):
        with recorder.compute(batch_size=8):
            pass
    recorder.close()
    record = read_back(tmp_path)["custom"]
    assert record.aggregate["self_ms"] is None
    result = words.analyze_run(record)
    assert result["self_us_per_step"] is None
    assert "not recorded" in result["self_cost_text"]


def test_compute_without_timed_starts_each_step_itself(tmp_path):
    clock = FakeClock()
    recorder = StepRecorder(tmp_path / "custom", clock=clock)
    for _ in range(5):
        with recorder.compute(batch_size=8):
            clock.advance(3.0)
        clock.advance(1.0)  # the loop around the step: host overhead
    recorder.close()
    record = read_back(tmp_path)["custom"]
    np.testing.assert_allclose(record.series["data_wait_ms"], 0.0)
    np.testing.assert_allclose(record.series["compute_ms"], 3.0, rtol=1e-5)
    # The last step ends at `close()`, one host-overhead period later.
    np.testing.assert_allclose(record.series["host_overhead_ms"], 1.0, rtol=1e-4)


def test_the_custom_loop_surface_is_timed_compute_and_close():
    public = {name for name in dir(StepRecorder) if not name.startswith("_")}
    assert public == {"timed", "compute", "close", "enabled"}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"run_dir": ""}, "`run_dir` must be a non-empty path"),
        ({"run_dir": "x", "flush_steps": 0}, r"Received: flush_steps=0"),
    ],
)
def test_invalid_arguments_say_what_was_received(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StepRecorder(**kwargs)
