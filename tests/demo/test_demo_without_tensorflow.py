"""The quick demo where TensorFlow is not installed, on JAX and PyTorch."""

import subprocess
import sys

import pytest

from tb_devicecost import words
from tb_devicecost.reading import reader

from tests.support.demo_runs import ENV, REPO, assert_not_highly_input_bound


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow


def _hide_tensorflow(directory):
    """A directory to put first on PYTHONPATH: importing `tensorflow` from
    it fails as if TensorFlow were not installed (the GPU machines this
    project borrows have JAX and PyTorch but no TensorFlow)."""
    package = directory / "tensorflow"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'tensorflow'\", name='tensorflow')\n"
    )
    return str(directory)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_demo_runs_without_tensorflow(backend, tmp_path):
    """Where TensorFlow is absent the demo runs on JAX or PyTorch: the
    `tf.data` pipelines become `keras.utils.PyDataset`s and arrays, the
    TensorFlow-only scenarios say why they are skipped, and the stories
    that carry over keep their verdicts."""
    logdir = tmp_path / "runs"
    env = dict(ENV, KERAS_BACKEND=backend, PYTHONPATH=_hide_tensorflow(tmp_path))
    completed = subprocess.run(
        [sys.executable, "-m", "demo", "--quick", "--no-serve", "--logdir", str(logdir),
         "--scenarios", "input_pipeline,warmup,placement,tfrecord"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert f"Backend: {backend}." in completed.stdout
    for skipped in ("placement: skipped", "tfrecord: skipped", "input_pipeline: skipped: the `tf_ops` variant"):
        assert skipped in completed.stdout
    report = words.build_report(reader.read_runs(reader.local_provider(str(logdir))))
    runs = {run["run"]: run for run in report["runs"]}
    assert sorted(runs) == [
        "input_pipeline/augment_in_model-cpu0/train",
        "input_pipeline/naive-cpu0/train",
        "input_pipeline/parallel_workers-cpu0/train",
        "warmup/long-cpu0/train",
        "warmup/short-cpu0/train",
    ]
    assert {run["backend"] for run in runs.values()} == {backend}
    naive = runs["input_pipeline/naive-cpu0/train"]
    in_model = runs["input_pipeline/augment_in_model-cpu0/train"]
    # The Python pipeline adds its wait to every step. (How many times as
    # long depends on the machine: a busy 2-core one slows PyTorch's
    # multi-threaded conv step more than the single-threaded Python, so
    # the step, not the wait, may then be the larger part; and the two runs'
    # steps are not compared, as a burst of load in one of them outweighs
    # the wait: 135 ms against 75 ms once.)
    wait = naive["data_wait_ms"]["mean"]
    assert wait > 10 * max(in_model["data_wait_ms"]["mean"], 0.1)
    if backend == "torch":
        # At least a finding, the verdict where the machine is quiet (a
        # busy one slows the conv step there: 0.76 of the step quiet, 0.17
        # beside two busy loops, against the in-model run's 0.02).
        assert naive["shares"]["data_wait"] > 3 * in_model["shares"]["data_wait"]
        assert "input_bound" in [finding["id"] for finding in naive["findings"]]
    # On JAX the conv step runs on XLA's threads while the next batch is
    # augmented in Python: no completion is bounded closely, and each is
    # placed at its upper bound, which counts part of the fetch as compute
    # (docs/FORMAT.md, "How a step is timed").
    assert_not_highly_input_bound(in_model)
    if backend == "jax":
        # JAX compiles the step in the first one (PyTorch runs it eagerly,
        # so its short fit is no warm-up story): longer than a steady step,
        # on a quiet machine or a busy one (how much of the fit it is
        # depends on both, and on JAX's compilation cache: a fresh clone's
        # first run read no warm-up finding at all).
        short = runs["warmup/short-cpu0/train"]
        assert short["warmup_ms"] > short["step_ms"]["mean"], short["warmup_ms"]
