"""Trace windows on real CPU fits: capture, step markers, digest, reuse."""

import glob
import gzip
import json
import os
import time
import urllib.request

import keras
import numpy as np
import pytest
import tensorflow as tf

import tb_devicecost
from tb_devicecost.reading import reader
from tb_devicecost.recording import profiling
from demo import serve
from tb_devicecost.traces import trace


def model():
    network = keras.Sequential(
        [keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    network.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return network


def data(samples=640):
    rng = np.random.default_rng(0)
    return rng.random((samples, 100), dtype=np.float32), rng.integers(0, 10, samples)


def input_bound_dataset():
    def sleep(a, b):
        # Long enough that the wait dominates even when tf.data overlaps
        # part of it with the step on a busy machine.
        time.sleep(0.01)
        return a, b

    return (
        tf.data.Dataset.from_tensor_slices(data())
        .batch(32)
        .map(lambda a, b: tf.py_function(sleep, [a, b], [tf.float32, tf.int64]))
        # `py_function` loses the shapes that Keras traces its step for.
        .map(lambda a, b: (tf.ensure_shape(a, (None, 100)), tf.ensure_shape(b, (None,))))
    )


def ready_dataset():
    return tf.data.Dataset.from_tensor_slices(data()).batch(32).cache().prefetch(tf.data.AUTOTUNE)


def captures(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "plugins", "profile", "*", "*.xplane.pb")))


def window_of(logdir, run):
    [record] = [r for r in reader.read_runs(reader.local_provider(str(logdir))) if r.run == run]
    [window] = record.trace["windows"]
    return window


@pytest.fixture(scope="module")
def traced_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("traced")
    model().fit(
        input_bound_dataset(), epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(logdir / "slow", profile_steps=(5, 10))],
    )
    model().fit(
        ready_dataset(), epochs=2, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(logdir / "ready", profile_steps=(5, 10))],
    )
    return logdir


def test_trace_lands_where_the_profile_tab_looks(traced_logdir):
    [path] = captures(traced_logdir / "slow" / "train")
    capture_dir = os.path.dirname(path)
    assert os.path.basename(os.path.dirname(capture_dir)) == "profile"
    window = window_of(traced_logdir, "slow/train")
    assert (window["start_step"], window["stop_step"]) == (5, 10)
    assert window["capture"] == os.path.basename(capture_dir)
    assert window["source"] == profiling.SOURCE_DEVICECOST
    assert window["trace_bytes"] == os.path.getsize(path)
    assert window["trace_file"] == path
    assert (window["backend"], window["trace_format"]) == ("tensorflow", "xplane")
    # TensorFlow runs each step synchronously: its marker spans it.
    assert window["step_cut"] == trace.CUT_MARKER


def test_trace_holds_our_step_markers_with_their_numbers(traced_logdir):
    [path] = captures(traced_logdir / "slow" / "train")
    markers = trace._step_markers(trace.load_xspace(path))
    assert sorted(markers) == [5, 6, 7, 8, 9]


def test_digest_puts_an_input_bound_step_in_input_work(traced_logdir):
    window = window_of(traced_logdir, "slow/train")
    assert [step["step"] for step in window["steps"]] == [5, 6, 7, 8, 9]
    assert window["summary"]["input_wait_fraction"] > 0.5
    # Our own numbers for the same steps travel with the digest.
    assert [step["step"] for step in window["recorded_steps"]] == [5, 6, 7, 8, 9]
    ours = np.mean([step["data_wait_ms"] for step in window["recorded_steps"]])
    assert ours > 2.0


def test_digest_of_a_ready_pipeline_is_not_input_work(traced_logdir):
    window = window_of(traced_logdir, "ready/train")
    assert len(window["steps"]) == 5
    assert window["summary"]["input_wait_fraction"] < 0.5
    # The traced steps were timed as usual: nothing missing from the series.
    [record] = [r for r in reader.read_runs(reader.local_provider(str(traced_logdir))) if r.run == "ready/train"]
    assert list(record.series["step"]) == list(range(40))


@pytest.mark.slow
def test_keras_tensorboard_trace_is_reused_not_doubled(tmp_path):
    log_dir = tmp_path / "shared"
    # The warning says that the requested window is not the one traced.
    with pytest.warns(
        UserWarning,
        match=r"no second profiler is started.*profile_steps=\(5, 10\) window is dropped: steps 2 to 5",
    ):
        model().fit(
            input_bound_dataset(), epochs=1, verbose=0,
            callbacks=[
                tb_devicecost.DeviceCostCallback(log_dir, profile_steps=(5, 10)),
                keras.callbacks.TensorBoard(log_dir, profile_batch=(3, 6)),
            ],
        )
    assert len(captures(log_dir / "train")) == 1
    window = window_of(tmp_path, "shared/train")
    assert window["source"] == profiling.SOURCE_KERAS_TENSORBOARD
    # Keras traces batches 3..6 (1-based): our global steps 2..5.
    assert (window["start_step"], window["stop_step"]) == (2, 6)
    assert [step["step"] for step in window["steps"]] == [2, 3, 4, 5]


def test_an_unreadable_trace_is_reported_not_raised(tmp_path):
    run_dir = tmp_path / "run"
    capture = run_dir / "plugins" / "profile" / "2026_01_01_00_00_00"
    capture.mkdir(parents=True)
    (capture / "host.xplane.pb").write_bytes(b"\x00\xffgarbage\xff" * 40)
    window = profiling.ProfilerWindow(5, 10, str(run_dir))
    document = window.document()
    assert "not a valid XSpace" in document["error"] or "no planes" in document["error"]
    assert document["capture"] == "2026_01_01_00_00_00"


def test_window_outside_the_fit_traces_nothing(tmp_path):
    model().fit(
        ready_dataset(), epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(tmp_path / "late", profile_steps=(500, 510))],
    )
    assert captures(tmp_path / "late" / "train") == []


@pytest.mark.parametrize("steps", [(5,), (10, 5), (-1, 3), (1.5, 3), "5,10", (True, 3), (0, 1001)])
def test_invalid_profile_steps_are_refused(steps):
    with pytest.raises(ValueError, match="`profile_steps` must be None or a"):
        tb_devicecost.DeviceCostCallback("logs", profile_steps=steps)


@pytest.mark.slow
def test_running_tensorboard_lists_the_capture(traced_logdir):
    process, url = serve.start_tensorboard(str(traced_logdir), expected_runs=2)
    try:
        with urllib.request.urlopen(url + "/data/plugin/profile/runs", timeout=60) as response:
            body = response.read()
        # The profile plugin gzips its answers whatever the request asked.
        runs = json.loads(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
        capture = window_of(traced_logdir, "slow/train")["capture"]
        assert f"slow/train/{capture}" in runs
        with urllib.request.urlopen(url + "/data/plugin/devicecost/run?run=slow/train", timeout=60) as response:
            detail = json.load(response)
        [window] = detail["trace_windows"]
        assert window["url"].startswith("../../../?")
        assert f"run=slow%2Ftrain%2F{capture}" in window["url"]
    finally:
        serve.stop_tensorboard(process)


def test_a_recording_failure_mid_window_stops_the_profiler(tmp_path, monkeypatch):
    from tb_devicecost.format import writer as writer_module

    calls = {"n": 0}
    original = writer_module.SummaryWriter.write_steps

    def fail_once_traced(self, rows):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return original(self, rows)

    monkeypatch.setattr(writer_module.SummaryWriter, "write_steps", fail_once_traced)
    with pytest.warns(RuntimeWarning, match="disk full"):
        model().fit(
            ready_dataset(), epochs=2, verbose=0,
            callbacks=[tb_devicecost.DeviceCostCallback(tmp_path / "broken", flush_steps=8, profile_steps=(4, 30))],
        )
    # The profiler was stopped: another one can start.
    tf.profiler.experimental.start(str(tmp_path / "after"))
    tf.profiler.experimental.stop()
    assert captures(tmp_path / "after")


@pytest.mark.slow
def test_a_window_the_first_fit_does_not_reach_is_traced_in_the_next(tmp_path):
    callback = tb_devicecost.DeviceCostCallback(tmp_path / "later", profile_steps=(25, 28))
    network = model()
    network.fit(ready_dataset(), epochs=1, verbose=0, callbacks=[callback])  # steps 0-19
    assert captures(tmp_path / "later" / "train") == []
    network.fit(ready_dataset(), epochs=1, verbose=0, callbacks=[callback])  # steps 20-39
    assert len(captures(tmp_path / "later" / "train")) == 1
    window = window_of(tmp_path, "later/train")
    assert [step["step"] for step in window["steps"]] == [25, 26, 27]


# The default device-busy window. CI has no accelerator, so `"auto"` is
# checked to stay off on the CPU, and `True` (any device) runs the same
# window on the CPU; the H100 runs in tests/end_to_end/test_gpu_runs.py show it on a GPU.


@pytest.mark.slow
def test_a_cpu_run_is_not_traced_by_default(tmp_path):
    x, y = data(32 * 40)
    model().fit(x, y, batch_size=32, verbose=0,
                callbacks=[tb_devicecost.DeviceCostCallback(str(tmp_path))])
    assert not os.path.exists(os.path.join(tmp_path, "train", "plugins"))
    [record] = [r for r in reader.read_runs(reader.local_provider(str(tmp_path))) if r.run == "train"]
    assert record.trace is None


@pytest.mark.slow
def test_the_device_busy_window_is_digested_then_its_files_deleted(tmp_path):
    x, y = data(32 * 40)
    model().fit(x, y, batch_size=32, verbose=0,
                callbacks=[tb_devicecost.DeviceCostCallback(str(tmp_path), device_busy=True)])
    # Nobody asked for the trace: no capture is left for the Profile tab.
    assert not os.path.exists(os.path.join(tmp_path, "train", "plugins"))
    window = window_of(tmp_path, "train")
    assert window["purpose"] == "device_busy"
    assert (window["start_step"], window["stop_step"]) == (10, 20)
    assert window["trace_deleted"] is True
    assert "trace_file" not in window
    assert [step["step"] for step in window["steps"]] == list(range(10, 20))
    assert [step["step"] for step in window["recorded_steps"]] == list(range(10, 20))


@pytest.mark.slow
def test_the_device_busy_window_waits_for_a_fit_long_enough(tmp_path):
    callback = tb_devicecost.DeviceCostCallback(str(tmp_path), device_busy=True)
    network = model()
    x, y = data(32 * 40)
    network.fit(x[: 32 * 8], y[: 32 * 8], batch_size=32, verbose=0, callbacks=[callback])
    network.fit(x, y, batch_size=32, verbose=0, callbacks=[callback])
    network.fit(x, y, batch_size=32, verbose=0, callbacks=[callback])
    # Steps 0-7 are the first fit; the second starts at step 8: its window
    # is steps 18-27, and the third fit traces nothing more (once a run).
    window = window_of(tmp_path, "train")
    assert (window["start_step"], window["stop_step"]) == (18, 28)


@pytest.mark.slow
def test_asked_for_windows_replace_the_device_busy_window(tmp_path):
    x, y = data(32 * 40)
    model().fit(x, y, batch_size=32, verbose=0, callbacks=[
        tb_devicecost.DeviceCostCallback(str(tmp_path), device_busy=True, profile_steps=(3, 5))])
    window = window_of(tmp_path, "train")
    assert window["purpose"] == "profile_steps"
    assert len(captures(os.path.join(tmp_path, "train"))) == 1  # kept


@pytest.mark.parametrize("value", ["on", 1, 0, None, "True"])
def test_invalid_device_busy_is_refused(value):
    with pytest.raises(ValueError, match="`device_busy` must be 'auto', True or False"):
        tb_devicecost.DeviceCostCallback("logs", device_busy=value)
