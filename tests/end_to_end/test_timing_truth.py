"""Every part of a step against a known, injected cost, on every backend.

`truth_fits.py` trains each case in a process of its own per backend (Keras
fixes its backend at import), on the CPU: input that sleeps (releasing the
GIL) and input that runs pure Python (holding it) through a `PyDataset`, a
generator, `tf.py_function` and a `torch.utils.data.DataLoader`; a user's
callback of 40 ms of Python before ours, after ours, and in
`on_train_batch_begin`; training and validation fed by Python on threads;
a model whose compute is timed by a clock outside the fit; and a mix of
all three. The expectations are the injected costs and outside clocks,
never the code under test.

These assertions hold whatever else the machine runs (the suite is run
beside two busy loops, one per core): the injected cost is found in the
part it was injected into (at least 70% of it at p50: a loaded machine
only adds to it), the other parts did not take it (under half of it),
the verdict names the cause, and the parts add up to each step. How close
each part comes to the injected cost (within 15% or 1 ms) is measured on a
quiet machine by `benchmarks/truth_matrix.py` (docs/PERFORMANCE.md) and
checked on the runs recorded on an H100 (`test_gpu_truth.py`).
"""

import numpy as np
import pytest

from tb_devicecost import words

from tests.support.scripts import run_backend_script


# Real fits, jobs or a browser: left out of `make test ARGS="-m 'not slow'"`.
pytestmark = pytest.mark.slow

SCRIPT = "truth_fits.py"
# The part an injected cost went into holds at least this share of it at
# p50; any other part holds less than `LEAK` of it (a busy machine slows
# PyTorch's own CPU step several times over: 1.8 ms quiet, up to 8 ms).
FOUND = 0.7
LEAK = 0.5
BACKENDS = ("tensorflow", "jax", "torch")
INPUT_CASES = ("sleep_input", "python_input", "generator", "py_function", "dataloader")
HOST_CASES = ("callback_before", "callback_after", "batch_begin_callback")


@pytest.fixture(scope="module", params=BACKENDS)
def truth(request, tmp_path_factory):
    backend = request.param
    logdir = tmp_path_factory.mktemp(f"truth-{backend}")
    facts, records = run_backend_script(SCRIPT, backend, logdir)
    report = words.build_report(list(records.values()))
    runs = {
        run["run"].split("/")[0]: run for run in report["runs"] if run["run"].endswith("/train")
    }
    return backend, facts, records, runs


def found(measured, injected):
    return measured >= FOUND * injected


def cases(facts, names):
    return [name for name in names if name in facts["cases"]]


def test_every_case_ran(truth):
    backend, facts, _, runs = truth
    assert facts["backend"] == backend
    assert set(facts["cases"]) <= set(runs)
    assert len(cases(facts, INPUT_CASES)) >= 3


def test_injected_input_is_data_wait(truth):
    backend, facts, _, runs = truth
    wrong = []
    for name in cases(facts, INPUT_CASES):
        injected = facts["cases"][name]["data_ms"]
        run = runs[name]
        wait, compute = run["data_wait_ms"]["p50"], run["compute_ms"]["p50"]
        if backend == "tensorflow" and name != "sleep_input":
            # tf.data runs this Python on its own threads, ahead of the
            # step: the input sets the pace, but the training thread then
            # waits for the GIL inside its step as well as for the batch,
            # and no clock read of ours can tell those waits apart, so
            # the split (and the verdict) can go either way (docs/FORMAT.md,
            # "Python input on other threads"). What holds: the steps keep
            # the input's pace. Their mean, not their median: the batches
            # tf.data made ahead come as short steps among long ones, and
            # beside a busy core more than half of the steps were short
            # (13 ms at p50 against 20 injected) while the pace held.
            if not found(run["step_ms"]["mean"], injected):
                wrong.append((name, "step", run["step_ms"]))
            continue
        if not found(wait, injected) or compute > LEAK * injected:
            wrong.append((name, "wait", wait, "compute", compute))
        if run["steady_verdict"] != "input_bound":
            wrong.append((name, run["steady_verdict"]))
    assert not wrong


# JAX and PyTorch: TensorFlow runs a PyDataset's threads inside tf.data
# (docs/FORMAT.md, "Python input on other threads").
@pytest.mark.parametrize("truth", ["jax", "torch"], indirect=True)
def test_python_on_the_input_s_threads_is_data_wait_not_compute(truth):
    """A `PyDataset` on four threads of the process, 40 ms of Python a
    batch (`truth_fits.THREADS_PYTHON_MS`; at 20 ms PyTorch's read
    `compute_bound` once): the training thread waits for the GIL those
    threads hold to dispatch its step and between steps, while the device
    idles. That wait is the input's, so the step's compute stays the
    model's (the same model timed outside the fit on arrays, which bounds
    it from above), and the verdict is not `compute_bound`. Before the
    dispatch was metered on JAX: compute 4.1 ms at p50 against 0.3 ms
    outside, `compute_bound` in 2 of 3 runs. Quiet, the verdict is
    `input_bound` (benchmarks/truth_matrix.py); beside two busy loops the
    loop's waits for a core are host overhead, rightly, and turned
    PyTorch's `host_overhead_bound` once in 6 runs."""
    _, facts, _, runs = truth
    fact, run = facts["cases"]["python_threads"], runs["python_threads"]
    # Outside, Keras's loop is in the step too, and no input thread runs.
    # Inside, the thread holding the GIL takes a core from PyTorch's own
    # intra-op threads: on this 2-core machine the step's compute really
    # runs longer, up to 2.7x the outside step at p50 in 8 runs here (5.4
    # to 9.1 ms against 3.2 to 5.9 ms, the same before and after
    # 7c1ccfc; 2.0x + 1 ms failed in CI), and 3.5x on a busy day (8.9 ms
    # against 2.6 ms, PyTorch: 3.0x + 1 ms failed). The GIL wait this test
    # guards against read 9.5x and more when it was compute (JAX 4.1 ms
    # against 0.3 ms; PyTorch 62 ms of a 6.5 ms step on an H100 host), which
    # 5x + 1 ms still fails. The outside step is the larger of the two timed
    # before and after the fit (`truth_fits.py`): a machine that turns busy
    # during the fit slows both.
    assert run["compute_ms"]["p50"] < 5.0 * fact["outside_step_ms"] + 1.0, (
        run["compute_ms"], run["shares"], fact)
    assert run["steady_verdict"] != "compute_bound", run["steady_verdict"]


@pytest.mark.parametrize("truth", ["jax", "torch"], indirect=True)
def test_validation_s_own_threaded_input_is_its_data_wait(truth):
    """Validation fed by Python on four threads of the process, training by
    arrays: validation's steps wait for the GIL those threads hold, and
    that is its data wait, not host overhead (metered on the training
    thread for the GIL)."""
    _, facts, records, _ = truth
    assert "validation_threads" in facts["cases"]
    [run] = words.build_report([records["validation_threads/validation"]])["runs"]
    # Four threads hand batches over in bursts, so the typical step's
    # host overhead against the mean step. Before validation's pipeline was
    # read (quiet machine): host overhead p50 5.1 ms against a mean step of
    # 14.4 ms, `host_overhead_bound`; now 0.07-0.16 ms, `input_bound`. A
    # machine busy with other work adds long waits for a core to the loop
    # (host overhead, rightly: the verdict then turned `host_overhead_bound`
    # once in 13 runs beside the whole suite and two busy loops), not to the
    # typical step; the verdict is measured quiet (benchmarks/truth_matrix.py).
    host = run["host_overhead_ms"]["p50"]
    assert host < 0.25 * run["step_ms"]["mean"], (run["host_overhead_ms"], run["step_ms"])


@pytest.mark.parametrize("name", HOST_CASES)
def test_a_users_callback_is_host_overhead_wherever_it_is_listed(truth, name):
    _, facts, _, runs = truth
    injected = facts["cases"][name]["host_ms"]
    run = runs[name]
    # 40 ms a step (`truth_fits.HOST_MS`): a busy machine slows PyTorch's
    # own ~3 ms CPU step to 11 ms and more, which 20 ms left too close to
    # the bound on what leaks into compute (half the callback).
    assert found(run["host_overhead_ms"]["p50"], injected), (name, run["host_overhead_ms"])
    assert run["compute_ms"]["p50"] < LEAK * injected, (name, run["compute_ms"], run["host_overhead_ms"])
    assert run["data_wait_ms"]["p50"] < LEAK * injected, (name, run["data_wait_ms"])
    assert run["steady_verdict"] == "host_overhead_bound", name


def test_compute_is_the_step_timed_outside(truth):
    _, facts, records, runs = truth
    run, fact = runs["compute"], facts["cases"]["compute"]
    # The same model, timed by a clock outside fits without the callback;
    # the margin holds on a machine busy with other work.
    assert 0.33 < run["compute_ms"]["p50"] / fact["outside_step_ms"] < 3.0
    assert run["shares"]["compute"] > 0.5
    assert run["steady_verdict"] == "compute_bound"
    # The fit's accounted time lies within the fit timed from outside
    # (which also holds Keras's set-up before the first hook), and holds
    # every step.
    wall = records["compute/train"].aggregate["wall_ms"]
    assert wall["steps"] + wall["warmup"] <= wall["total"] <= fact["fit_s"] * 1e3


def test_a_mix_of_input_host_and_compute(truth):
    backend, facts, _, runs = truth
    run, fact = runs["mix"], facts["cases"]["mix"]
    assert found(run["host_overhead_ms"]["p50"], fact["host_ms"]), run["host_overhead_ms"]
    assert 0.33 < run["compute_ms"]["p50"] / fact["outside_step_ms"] < 3.0
    wait = run["data_wait_ms"]["p50"]
    if backend == "tensorflow":
        # Keras prefetches a PyDataset into tf.data: the input's sleep runs
        # while the step and the callback do, and only what is left waits.
        hidden = fact["outside_step_ms"] + fact["host_ms"]
        assert wait <= max(0.0, fact["data_ms"] - 0.5 * hidden) + 1.0, run["data_wait_ms"]
    else:
        assert found(wait, fact["data_ms"]), run["data_wait_ms"]
        assert run["steady_verdict"] == "input_bound"


def test_the_parts_add_up_to_each_step_and_none_exceeds_it(truth):
    _, facts, records, _ = truth
    for name in facts["cases"]:
        series = records[f"{name}/train"].series
        parts = [series[key] for key in ("data_wait_ms", "compute_ms", "host_overhead_ms")]
        step = sum(parts)
        assert (step > 0).all(), name
        for part in parts:
            assert (part >= 0).all() and (part <= step + 1e-9).all(), name
        wall = records[f"{name}/train"].aggregate["wall_ms"]
        accounted = wall["steps"] + wall["warmup"] + wall["between_steps"] + wall["measurement"]
        assert accounted == pytest.approx(wall["total"], rel=1e-9)
        assert np.isclose(wall["steps"] + wall["warmup"], step.sum(), rtol=1e-6), name


def test_the_asynchronous_backends_say_which_side_set_the_pace(truth):
    backend, _, _, runs = truth
    if backend == "tensorflow":
        assert runs["compute"]["pace"] is None
        return
    # A sleeping input leaves the device idle: the training thread sets it.
    assert runs["sleep_input"]["pace"]["set_by"] == "training_thread"
    pace = runs["compute"]["pace"]
    assert pace["device_steps"] + pace["host_steps"] == runs["compute"]["steps"]
