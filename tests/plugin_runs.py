"""A log directory of real short fits for the plugin, server and browser tests."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# A run name that would run script if it were ever inserted as HTML.
XSS_RUN_DIR = "<img src=x onerror=alert(1)>"


def make_plugin_logdir(logdir):
    """Writes three runs into `logdir` and returns their run names.

    `cpu/train` is fed by a cached, prefetched pipeline and holds a real
    profiler trace of steps 3 to 5; `slow/train` waits on a Python pipeline (10 ms a batch);
    the third run has a name made of HTML.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    import tb_devicecost

    rng = np.random.default_rng(0)
    x = rng.random((640, 100), dtype=np.float32)
    y = rng.integers(0, 10, 640)

    def model():
        network = keras.Sequential(
            [keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
        )
        network.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return network

    fast = tf.data.Dataset.from_tensor_slices((x, y)).batch(32).cache().prefetch(tf.data.AUTOTUNE)

    def sleep(a, b):
        time.sleep(0.01)
        return a, b

    # Long enough that its steady state outweighs its warm-up.
    slow = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .batch(16)
        .map(lambda a, b: tf.py_function(sleep, [a, b], [tf.float32, tf.int64]))
        # `py_function` loses the shapes that Keras traces its step for.
        .map(lambda a, b: (tf.ensure_shape(a, (None, 100)), tf.ensure_shape(b, (None,))))
    )
    cpu_dir = os.path.join(logdir, "cpu")
    model().fit(
        fast,
        epochs=2,
        verbose=0,
        callbacks=[
            tb_devicecost.DeviceCostCallback(cpu_dir),
            keras.callbacks.TensorBoard(cpu_dir, profile_batch=(3, 5)),
        ],
    )
    model().fit(
        slow, epochs=2, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, "slow"))],
    )
    model().fit(
        fast, epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(os.path.join(logdir, XSS_RUN_DIR))],
    )
    return ["cpu/train", "slow/train", f"{XSS_RUN_DIR}/train"]


def free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_tensorboard(logdir, expected_runs):
    """Starts a real `tensorboard` on a free port; returns (process, url).

    Waits until the Device Cost tab is listed and `expected_runs` runs are
    served (the default Rust loader reads the logdir in the background).
    """
    import json
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", logdir,
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(url + "/data/plugins_listing", timeout=5) as response:
                listing = json.load(response)
            if listing.get("devicecost", {}).get("enabled"):
                with urllib.request.urlopen(url + "/data/plugin/devicecost/runs", timeout=10) as response:
                    if len(json.load(response)["runs"]) >= expected_runs:
                        return process, url
        except (urllib.error.URLError, ConnectionError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(
                "TensorBoard did not serve the runs in time: "
                + process.stderr.read().decode(errors="replace")[-2000:]
            )
        time.sleep(0.5)


def stop_tensorboard(process):
    import subprocess

    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
