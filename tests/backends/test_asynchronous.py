"""Step accounting under asynchronous dispatch (JAX, PyTorch), timestamps given.

Each step is given as the moments (ms) its fetch started, its batch was
there (and dispatched), and its results were on the host, as the callback's
main thread and Keras's worker thread see them; the rows read back.
"""

import numpy as np
import pytest

from tb_devicecost.backends import asynchronous
from tb_devicecost.backends.asynchronous import AsyncSteps
from tb_devicecost.backends.timed_iterator import TimedIterator
from tb_devicecost.reading import reader
from tb_devicecost.recording import accounting


class _Output:
    """Stands in for a step's output array: `is_ready()` calls `ready`."""

    def __init__(self, ready):
        self.is_ready = ready


def output(ready):
    """A probe as the JAX backend hands it over, a weak reference to one of
    the step's outputs (here a function returning it for as long as the
    test holds it), whose `is_ready()` calls `ready`."""
    held = _Output(ready)
    return lambda: held


def record(tmp_path, steps, completion_order=None):
    """Feeds `(start, fetched, done)` ms triples; returns the series."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    for key, (start, fetched, _) in enumerate(steps):
        timing.dispatched(key, start / 1e3, fetched / 1e3, batch_size=32)
    for key in completion_order or range(len(steps)):
        timing.completed(key, now=steps[key][2] / 1e3)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    return record.series


def test_a_fetch_overlapping_the_previous_step_costs_nothing(tmp_path):
    """The device is busy with step 0 while step 1's batch is fetched:
    step 1 is all compute, from step 0's completion to its own."""
    series = record(tmp_path, [(0, 1, 10), (2, 4, 20), (5, 7, 30)])
    np.testing.assert_allclose(series["compute_ms"][1:], [10, 10], rtol=1e-5)
    np.testing.assert_allclose(series["data_wait_ms"][1:], [0, 0], atol=1e-6)
    np.testing.assert_allclose(series["host_overhead_ms"][1:], [0, 0], atol=1e-6)


def test_a_fetch_after_the_previous_completion_is_data_wait(tmp_path):
    """The pipeline is late: the device idles from step 0's completion
    (10 ms) until step 1's batch arrives (18 ms)."""
    series = record(tmp_path, [(0, 1, 10), (9, 18, 21)])
    assert series["data_wait_ms"][1] == pytest.approx(8.0)
    assert series["compute_ms"][1] == pytest.approx(3.0)
    assert series["host_overhead_ms"][1] == pytest.approx(0.0, abs=1e-6)


def test_python_between_steps_is_host_overhead(tmp_path):
    """The loop starts step 1's fetch 4 ms after step 0 completed."""
    series = record(tmp_path, [(0, 1, 10), (14, 15, 20)])
    assert series["host_overhead_ms"][1] == pytest.approx(4.0)
    assert series["data_wait_ms"][1] == pytest.approx(1.0)
    assert series["compute_ms"][1] == pytest.approx(5.0)


def synchronous(tmp_path, steps, held_is_input):
    """Feeds synchronous steps `(start, fetched, done, held, held_between)`
    (ms, as PyTorch on the CPU); returns the series."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    timing.held_is_input = held_is_input
    for key, (start, fetched, done, held, between) in enumerate(steps):
        timing.dispatched(key, start / 1e3, fetched / 1e3, batch_size=32, done=done / 1e3,
                          held=held / 1e3, held_between=between / 1e3)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    return record.series


@pytest.mark.parametrize("held_is_input", [True, False])
def test_a_wait_for_the_gil_goes_where_its_holders_belong(tmp_path, held_is_input):
    """Step 1: the loop runs 6 ms after step 0 (4 of them waiting for the
    GIL), fetches for 1 ms, and computes for 7 ms of which 3 waiting for
    the GIL. Where the input's own threads held it (a threaded
    `PyDataset`), those 7 ms are data wait; else (the user's threads) host
    overhead. Never compute, and never more than the loop's own time is
    moved out of host overhead."""
    steps = [(0, 1, 10, 0, 0), (16, 17, 24, 3, 4), (30, 31, 38, 0, 9)]
    series = synchronous(tmp_path / str(held_is_input), steps, held_is_input)
    assert series["compute_ms"][1] == pytest.approx(4.0)
    assert series["compute_ms"][2] == pytest.approx(7.0)
    if held_is_input:
        assert series["data_wait_ms"][1] == pytest.approx(1.0 + 3.0 + 4.0)
        assert series["host_overhead_ms"][1] == pytest.approx(2.0)
        # 9 ms metered between, but the loop ran only 6: 6 move.
        assert series["data_wait_ms"][2] == pytest.approx(1.0 + 6.0)
        assert series["host_overhead_ms"][2] == pytest.approx(0.0, abs=1e-6)
    else:
        assert series["data_wait_ms"][1] == pytest.approx(1.0)
        assert series["host_overhead_ms"][1] == pytest.approx(6.0 + 3.0)
        assert series["host_overhead_ms"][2] == pytest.approx(6.0)


def test_a_wait_for_the_gil_while_the_device_was_busy_is_not_its_idle_time(tmp_path):
    """Asynchronous steps fed by the pipeline's threads: step 1 is
    dispatched at 12 ms, its dispatch waiting 6 ms for the GIL, while the
    device works on step 0 until 15 ms. Only the 3 ms of that wait after
    15 ms left the device idle: data wait; the rest of step 1, until its
    completion at 30 ms, is compute."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    timing.held_is_input = True
    timing.dispatched(0, 0.0, 1e-3, batch_size=32, done=15e-3)
    timing.dispatched(1, 11e-3, 12e-3, batch_size=32, done=30e-3, held=6e-3)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    series = record.series
    assert series["data_wait_ms"][1] == pytest.approx(3.0)
    assert series["compute_ms"][1] == pytest.approx(12.0)
    assert series["host_overhead_ms"][1] == pytest.approx(0.0, abs=1e-6)


def test_completions_seen_out_of_order_still_give_rows_in_order(tmp_path):
    """Keras's worker threads may report step 2 before step 1."""
    steps = [(0, 1, 10), (2, 4, 20), (5, 7, 30)]
    in_order = record(tmp_path / "a", steps)
    shuffled = record(tmp_path / "b", steps, completion_order=[0, 2, 1])
    for column in ("data_wait_ms", "compute_ms", "host_overhead_ms"):
        np.testing.assert_allclose(in_order[column], shuffled[column])


def test_the_parts_add_up_to_the_time_between_completions(tmp_path):
    rng = np.random.default_rng(0)
    steps, now = [], 0.0
    for _ in range(50):
        start = now + rng.uniform(0, 2)
        fetched = start + rng.uniform(0, 3)
        now = max(fetched, now) + rng.uniform(0.5, 4)
        steps.append((start, fetched, now))
    series = record(tmp_path, steps)
    total = series["data_wait_ms"] + series["compute_ms"] + series["host_overhead_ms"]
    # Step 0 starts at its own fetch; each later one at the completion before.
    assert total.sum() == pytest.approx(steps[-1][2] - steps[0][0], rel=1e-5)


def test_steps_found_complete_by_one_read_share_its_time(tmp_path):
    """Steps 1 and 2 are dispatched at 4 and 6 ms and found complete by one
    read at 30 ms, before any step was measured closely: no step lasts
    0 ms; the two share the 20 ms since step 0's completion, and the
    parts still add up to the time between completions."""
    series = record(tmp_path, [(0, 1, 10), (2, 4, 30), (5, 6, 30)])
    total = series["data_wait_ms"] + series["compute_ms"] + series["host_overhead_ms"]
    assert (total > 0).all()
    np.testing.assert_allclose(total[1:], [10, 10], rtol=1e-5)
    assert total.sum() == pytest.approx(30.0, rel=1e-5)


def test_steps_found_complete_just_after_the_one_before_them_still_take_time(tmp_path):
    """Seen in a JAX fit fed by a threaded `PyDataset`: steps 1 to 3 were
    dispatched at 5 to 7 ms, behind step 0, which polls found pending at
    29.9 ms and complete at 30 ms, with steps 1 to 3: all four completed
    within those 0.1 ms. Each step takes its share of them, none 0 ms."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    pending = iter([False, True, True, True, True])
    for key, (start, fetched) in enumerate([(0, 1), (4, 5), (5, 6), (6, 7)]):
        timing.dispatched(key, start / 1e3, fetched / 1e3, batch_size=32,
                          probe=output(lambda: next(pending)), returned=fetched / 1e3)
    timing.poll(29.9e-3)
    timing.poll(30.0e-3)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    total = sum(record.series[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    assert (total[1:] > 0.01).all(), total
    assert total.sum() == pytest.approx(30.0, rel=1e-5)


def test_steps_crowded_after_a_pending_poll_each_take_time(tmp_path):
    """Seen in a JAX fit fed by Python threads on a busy machine: steps 0 to
    4 were measured closely at 1 ms each. Then a poll at 20 ms finds step 5
    pending, and steps 5 to 9 (dispatched at 10 to 14 ms) all complete
    within the next 0.8 ms, less than the half duration apart that each
    would be given. None of them lasts 0 ms, and none completes before the
    poll that found step 5 pending."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    for key in range(5):
        start = key * 1e-3
        timing.dispatched(key, start, start, batch_size=32, returned=start)
        timing.poll(start)  # nothing pending: no probe yet
        timing.completed(key, now=start + 1e-3, exact=True)
    pending = {key: True for key in range(5, 10)}
    for key in range(5, 10):
        start = 5e-3 + (key - 5) * 1e-3 + 5e-3
        timing.dispatched(key, start, start, batch_size=32,
                          probe=output(lambda key=key: not pending[key]), returned=start)
    timing.poll(20e-3)
    for key, done in zip(range(5, 10), (20.3e-3, 20.35e-3, 20.4e-3, 20.6e-3, 20.8e-3)):
        pending[key] = False
        timing.completed(key, now=done)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    total = sum(record.series[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    assert (total[6:] > 0.01).all(), total
    assert total[:6].sum() >= 20.0 - 1e-4, total
    assert total.sum() == pytest.approx(20.8, rel=1e-5)


def test_a_step_that_compiled_keeps_its_compilation(tmp_path):
    """Step 0's dispatching call returns 500 ms after it began (JAX compiled
    the step there); a read 1 ms later finds it complete. The steps after
    it were measured closely at 0.1 ms each: step 0 is not placed by their
    duration, which would leave its compilation out of every part."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    ready = output(lambda: True)  # a probe that finds the step complete
    timing.dispatched(0, 0.0, 0.001, probe=ready, returned=0.501)
    timing.poll(0.502)
    now = 0.502
    for key in range(1, 6):
        timing.dispatched(key, now, now, probe=ready, returned=now + 0.00005)
        now += 0.0001
        timing.poll(now)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    series = record.series
    step0 = series["data_wait_ms"][0] + series["compute_ms"][0] + series["host_overhead_ms"][0]
    assert step0 >= 500.0
    np.testing.assert_allclose(series["compute_ms"][1:], 0.1, rtol=1e-3)


def late_reports(tmp_path, steps, poll_every=1):
    """A fit of `steps` steps whose batches each take 40 ms of Python on the
    training thread, keeping Keras's worker from the GIL for the whole
    fetch; the device takes 6 ms a step. The training thread polls before
    and after the fetches of one step in `poll_every`; the worker reports
    each step at the end of the next fetch, and the last one while the
    training thread waits for it at the boundary, 6 ms after its dispatch.
    Returns the series."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    timing.poll_every = poll_every
    clock = [0.0]
    start = 0.0
    for key in range(steps):
        fetched = start + 0.040
        if key % poll_every == 0:
            clock[0] = start
            timing.poll(start)
            clock[0] = fetched
            timing.poll(fetched)
        done = fetched + 0.006  # when the device completes it
        timing.dispatched(
            key, start, fetched, batch_size=32, probe=output(lambda done=done: clock[0] >= done)
        )
        if key < steps - 1:
            timing.completed(key, now=fetched + 0.041)
        start = fetched + 0.001
    timing.completed(steps - 1, now=start - 0.001 + 0.006)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    return record.series


def test_a_completion_no_read_saw_is_placed_by_the_step_before_a_boundary(tmp_path):
    """`late_reports`: the training thread's polls find each step pending
    as the next fetch starts and complete as it ends, and the worker's
    report comes just as late; the step before the boundary gives the
    device's 6 ms. The rest of each 41 ms step is the device waiting for
    the next batch."""
    series = late_reports(tmp_path, 5)
    np.testing.assert_allclose(series["compute_ms"][1:], 6.0, rtol=1e-3)
    np.testing.assert_allclose(series["data_wait_ms"][1:4], 35.0, rtol=1e-3)


def test_without_a_prompt_report_the_upper_bounds_stand(tmp_path):
    """The same fit, but the last batch is a partial one (another step,
    maybe a new compilation): nothing measured the device's duration, so
    each completion stays at the last moment it can have happened."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    start = 0.0
    for key in range(5):
        fetched = start + 0.040
        timing.dispatched(key, start, fetched, batch_size=32 if key < 4 else 8)
        timing.completed(key, now=fetched + 0.041 if key < 4 else fetched + 0.006)
        start = fetched + 0.001
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    np.testing.assert_allclose(record.series["compute_ms"][1:4], 41.0, rtol=1e-3)


def test_an_execution_of_several_steps_is_written_as_its_steps_in_order(tmp_path):
    """A group mixes one-step dispatches with an execution of 4 steps
    (`steps_per_execution`), and its last step never completes (it raised):
    every completed step gets a row, in order, the execution's 20 ms shared
    by its 4 steps, and the step that never completed gets none."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    # (start, fetched, done or None, steps), ms.
    plan = [(0, 1, 10, 1), (2, 3, 30, 4), (4, 5, 40, 1), (6, 7, None, 1)]
    for key, (start, fetched, _, steps) in enumerate(plan):
        timing.dispatched(key, start / 1e3, fetched / 1e3, steps=steps, batch_size=32)
    for key, (_, _, done, _) in enumerate(plan):
        if done is not None:
            timing.completed(key, now=done / 1e3)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    series = record.series
    assert len(series["compute_ms"]) == 6
    np.testing.assert_allclose(series["compute_ms"][1:], [5, 5, 5, 5, 10], rtol=1e-5)
    np.testing.assert_allclose(series["data_wait_ms"][1:], [0] * 5, atol=1e-6)


def test_polls_in_one_step_in_eight_give_the_same_parts(tmp_path):
    """The same fit, 16 steps, with the training thread's polls in one
    step's fetch in eight (as on a GPU, `TimedIterator`): the steps not
    polled keep the worker's late report and are placed as the polled
    ones nearest them: 6 ms of compute, the rest data wait."""
    series = late_reports(tmp_path, 16, poll_every=8)
    np.testing.assert_allclose(series["compute_ms"][1:], 6.0, rtol=1e-3)
    np.testing.assert_allclose(series["data_wait_ms"][1:15], 35.0, rtol=1e-3)


def test_a_step_the_worker_read_complete_is_not_asked_again(tmp_path):
    """A poll after Keras's worker read a step complete takes the worker's
    reading as it is: the step's probe is not called, and it is no longer
    polled for."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    asked = []
    timing.dispatched(0, 0.000, 0.001, batch_size=32, probe=output(lambda: asked.append(0)))
    timing.dispatched(1, 0.002, 0.003, batch_size=32, probe=output(lambda: asked.append(1)))
    timing.completed(0, now=0.004)
    timing.poll(0.005)
    assert asked == [1]  # Step 0 was not asked; step 1 was, and is pending.
    assert timing.unready == 1
    timing.completed(1, now=0.006)
    timing.boundary()
    run.end_session()


def test_one_question_settles_every_step_when_the_newest_is_complete(tmp_path):
    """Steps complete in order: a poll that finds the newest of four
    pending steps complete asks nothing else, and each of the four gets
    that poll as its completion's upper bound (their parts end there)."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    asked = []
    for key in range(4):
        timing.dispatched(key, key * 1e-3, key * 1e-3 + 0.5e-3, batch_size=32,
                          probe=output(lambda key=key: asked.append(key) or True))
    timing.poll(10e-3)
    assert asked == [3]
    assert timing.unready == 0
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    total = sum(record.series[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    assert total.sum() == pytest.approx(10.0, rel=1e-5)
    assert (total > 0).all()


def test_a_pending_newest_step_has_the_oldest_pending_found_by_halving(tmp_path):
    """Steps 0 and 1 are complete, steps 2 and 3 pending at a poll at
    10 ms: the newest is asked, then the oldest pending found by halving
    (step 1 complete, so step 0 too, unasked; step 2 pending); a second
    poll at 12 ms finds them complete. Step 2's completion lies between the
    two polls, and steps 0 and 1 end by the first."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    asked, ready = [], {0: True, 1: True, 2: False, 3: False}
    for key in range(4):
        timing.dispatched(key, key * 1e-3, key * 1e-3 + 0.5e-3, batch_size=32,
                          probe=output(lambda key=key: asked.append(key) or ready[key]))
    timing.poll(10e-3)
    assert asked == [3, 1, 2]
    assert timing.unready == 2
    ready.update({2: True, 3: True})
    timing.poll(12e-3)
    assert asked == [3, 1, 2, 3]
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    total = sum(record.series[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    ends = np.cumsum(total)
    assert ends[1] <= 10.0 + 1e-6
    assert 10.0 - 1e-6 <= ends[2] <= 12.0 + 1e-6
    assert ends[3] == pytest.approx(12.0, rel=1e-5)


def test_the_polls_bound_the_steps_they_asked_about(tmp_path):
    """What three polls found, set into the bounds of six pending steps
    (numbered from 10): the first poll found steps 10 and 11 complete at
    1 s and step 12 pending; the second found 12 pending again at 2 s; the
    third found 12 to 14 complete and 15 pending at 3 s. Step 11 was read
    complete by Keras's worker at 0.5 s, before the first poll, so was not
    asked (no bound from it); step 13's report came after the third poll.
    Each found-complete step's upper bound is its poll's time; each pending
    step's lower bound is the last poll that found it so, also where it had
    none (step 15's NaN)."""
    timing = AsyncSteps(accounting.StepAccounting(tmp_path / "run"))
    timing._first = 10
    timing._polls = [(1.0, 10, 12, 12), (2.0, 12, 12, 12), (3.0, 12, 15, 15)]
    nan = float("nan")
    table = np.full((6, asynchronous._WIDTH), nan)
    lower, upper = asynchronous._LOWER, asynchronous._UPPER
    table[:, lower] = [0.1, 0.2, 0.3, 0.4, 0.5, nan]  # Each step's return.
    reported = np.array([nan, 0.5, nan, 3.5, nan, nan])
    timing._settle_polls(table, reported)
    np.testing.assert_array_equal(table[:, upper], [1.0, nan, 3.0, 3.0, 3.0, nan])
    np.testing.assert_array_equal(table[:, lower], [0.1, 0.2, 2.0, 0.4, 0.5, 3.0])


def _mixed_fit(tmp_path, name, lean):
    """Eight steps, 2 ms apart, each complete 1.5 ms after its dispatch,
    which Keras's worker reports before the next step starts; polls after
    steps 2 and 5 ask only about the steps not reported yet. With
    `lean`, steps 1-3 and 5-7 are added as the usual JAX step adds them
    (`lean_lane`), the others whole (`dispatched`): the two kinds of row
    interleave, and a poll asks about both."""
    run = accounting.StepAccounting(tmp_path / name)
    run.begin_session()
    timing = AsyncSteps(run)
    timing.probed = True
    add_row, add_probe = timing.lean_lane()
    asked = []
    for key in range(8):
        start = key * 2e-3
        fetched, returned = start + 0.2e-3, start + 0.4e-3
        probe = output(lambda key=key: asked.append(key) or key < 2)
        if lean and key % 4:
            add_row((key, start, fetched, 32, 0.0, returned))
            add_probe(probe)
        else:
            timing.dispatched(key, start, fetched, batch_size=32, probe=probe, returned=returned)
        if key in (2, 5):
            timing.poll(start + 0.5e-3)
        timing.completed(key, now=start + 1.7e-3)
    assert timing.upcoming_step == 8
    timing.boundary()
    run.end_session()
    return asked


def test_lean_rows_read_back_as_the_same_steps_given_whole(tmp_path):
    """The usual JAX step's rows, two list appends a step, become the same
    rows as the same steps given whole, in order, with the polls asking
    the same steps across both kinds (the newest, then by halving)."""
    asked_whole = _mixed_fit(tmp_path, "whole", lean=False)
    asked_lean = _mixed_fit(tmp_path, "lean", lean=True)
    # Each poll asked the newest step only: the halving found the steps
    # before it reported by the worker, by their keys.
    assert asked_whole == [2, 5]
    assert asked_lean == asked_whole
    runs = {run.run: run.series for run in reader.read_runs(reader.local_provider(str(tmp_path)))}
    whole, lean = runs["whole"], runs["lean"]
    for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"):
        np.testing.assert_array_equal(lean[part], whole[part])
    total = sum(whole[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    assert len(total) == 8
    # Each step ends 2 ms after the one before (the worker's reports).
    np.testing.assert_allclose(total[1:], 2.0, rtol=1e-4)


def test_the_lean_lane_drains_when_a_write_is_due_and_keeps_its_time_out(tmp_path):
    """`lean_due`, asked by the usual JAX step at its poll turns or once its
    start passed the write's due time: not due, it drains nothing and
    returns 0; due, the steps complete so far become rows and are written
    (a fit killed then keeps them), and it returns the drain's seconds,
    which the lane keeps out of the next step, leaving nothing for a
    later row to take."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    timing.probed = True
    add_row, add_probe = timing.lean_lane()
    for key in range(4):
        add_row((key, key * 1e-3, key * 1e-3 + 0.2e-3, 32, 0.0, key * 1e-3 + 0.4e-3))
        add_probe(None)
    for key in range(3):  # The fourth step is still running.
        timing.completed(key, now=key * 1e-3 + 0.9e-3)
    run.write_due_s = 10.0
    assert timing.lean_due(start=3e-3) == 0.0
    assert timing.upcoming_step == 4 and len(timing.lean) == 4 * len(asynchronous.LEAN_FIELDS)
    run.write_due_s = 2e-3  # A write is due.
    drained = timing.lean_due(start=3e-3)
    assert drained > 0.0
    assert not timing.lean and timing.upcoming_step == 4
    assert timing._drained_s == 0.0  # Handed to the lane, not left for a row.
    [written] = reader.read_runs(reader.local_provider(str(tmp_path)))
    assert len(written.series["compute_ms"]) == 3


class _Steps:
    """What `TimedIterator` polls: the times it polled, always a step pending."""

    def __init__(self, poll_every):
        self.polled = []
        self.unready = [object()]
        self.poll_every = poll_every

    def poll(self, now):
        self.polled.append(now)

    def next_poll_in(self):
        return self.poll_every


@pytest.mark.parametrize("poll_every, polled_calls", [(1, [1, 2, 3, 4, 5, 6]), (3, [3, 6])])
def test_the_fetch_polls_only_in_one_call_in_poll_every(poll_every, polled_calls):
    """Each call of the step function fetches once; a call polls before and
    after its fetch, in one call in `poll_every`."""
    assert fetches_polled(poll_every, fetch_s=[10e-6] * 6) == polled_calls


def fetches_polled(poll_every, fetch_s):
    """The calls (numbered from 1) whose fetch polled, each call fetching
    once, for `fetch_s[i]` seconds."""
    now = [0.0]
    steps = _Steps(poll_every)
    proxy = TimedIterator(lambda: now[0], steps)
    polled_in = []

    def batches(call):
        now[0] += fetch_s[call - 1]
        yield call

    for call in range(1, len(fetch_s) + 1):
        proxy.reset(batches(call))
        before = len(steps.polled)
        assert next(proxy) == call
        now[0] += 1e-6
        if len(steps.polled) > before:
            assert len(steps.polled) - before == 2
            polled_in.append(call)
    return polled_in


def test_a_fit_s_first_turns_to_poll_come_sooner(tmp_path):
    """The first `first_polls` turns come one call in `first_poll_every`
    (a short fit still has steps measured closely), then one in
    `poll_every`; an input polled every call stays at every call."""
    run = accounting.StepAccounting(tmp_path / "run")
    timing = AsyncSteps(run)
    timing.poll_every, timing.first_poll_every, timing.first_polls = 32, 8, 3
    assert [timing.next_poll_in() for _ in range(6)] == [8, 8, 8, 32, 32, 32]
    timing.poll_every, timing.first_polls = 1, 2
    assert [timing.next_poll_in() for _ in range(3)] == [1, 1, 1]


def test_a_call_after_a_slow_fetch_polls():
    """A fetch longer than `SLOW_FETCH_S` may have held the GIL throughout,
    keeping Keras's worker from reporting: the next call polls, whatever
    its number."""
    fast, slow = 10e-6, 20e-3
    assert fetches_polled(8, [fast, slow, fast, fast, slow, slow, fast, fast, fast]) == [3, 6, 7, 8]


def test_a_step_whose_output_keras_let_go_of_is_not_asked(tmp_path):
    """The probe is weak: once Keras let go of a step's output (it converted
    it), a poll takes no reading of that step and stops polling for it; the
    worker's report bounds it."""
    run = accounting.StepAccounting(tmp_path / "run")
    run.begin_session()
    timing = AsyncSteps(run)
    asked = []
    timing.dispatched(0, 0.000, 0.001, batch_size=32, probe=lambda: None)
    timing.dispatched(1, 0.002, 0.003, batch_size=32, probe=output(lambda: asked.append(1)))
    timing.poll(0.005)
    assert asked == [1]  # Step 0's output is gone: only step 1 was asked.
    assert timing.unready == 1
    timing.completed(0, now=0.004)
    timing.completed(1, now=0.006)
    timing.boundary()
    run.end_session()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    total = sum(record.series[part] for part in ("data_wait_ms", "compute_ms", "host_overhead_ms"))
    assert total.sum() == pytest.approx(6.0, rel=1e-5)


def test_the_jax_probe_keeps_no_output_alive():
    """Keras frees a step's outputs where and when it lets go of them, as
    without the callback: the JAX backend's probe holds them weakly (an
    array freed on the training thread holds it for microseconds)."""
    import gc

    import jax.numpy as jnp

    from tb_devicecost.backends import jax as jax_backend

    logs = {"loss": jnp.ones(()) + 1.0, "mae": jnp.ones(()) * 2.0}
    probe_of = jax_backend.CompletionProbe()
    probes = [probe_of(logs), jax_backend.completion_probe([logs["mae"]])]
    assert [probe().is_ready() for probe in probes] == [True, True]
    del logs
    gc.collect()
    assert [probe() for probe in probes] == [None, None]

