"""Distributed fits: every process recorded, the processes lined up by step,
the straggler named with its cause (`tb_devicecost.analysis.workers`).

The first tests build the runs of a job by hand, with figures worked out
here from the step times; the others run real jobs on this machine's CPU,
each process a child of its own (`distributed_fits.py`, outputs to files,
every child stopped by the test): a JAX job with `jax.distributed` (gloo
collectives on 127.0.0.1) and `keras.distribution.DataParallel`, a PyTorch
DistributedDataParallel loop recorded by `StepRecorder`, and a
`tf.distribute.MirroredStrategy` fit over two logical CPUs.
"""

import json
import math
import os

import numpy as np
import pytest

from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.analysis import jobs
from tb_devicecost.analysis import record as run_records
from tb_devicecost.analysis import workers
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.reading import reader

from tests.support import distributed_runs
from tests.support.documents import job_record


# The real JAX jobs' delay of the slowed process per batch, and steps
# (the session's `jax_job`, shared with browser/test_workers.py).
DELAY_MS = distributed_runs.JAX_JOB_DELAY_MS
STEPS = distributed_runs.JAX_JOB_STEPS


# Runs built by hand.


def by_group(report):
    return {group["group"]: group for group in report["workers"]}


def test_a_process_slow_to_fetch_is_the_straggler_with_its_cause():
    # Process 2 fetches for 10 ms, then computes 2 ms; processes 0 and 1
    # have their batch at once and wait 10 ms in the all-reduce: 12 ms each.
    n = 10
    records = [
        job_record("job/process_0/train", 0, 3, [0.0] * n, [12.0] * n, [0.0] * n),
        job_record("job/process_1/train", 1, 3, [0.0] * n, [12.0] * n, [0.0] * n),
        job_record("job/process_2/train", 2, 3, [10.0] * n, [2.0] * n, [0.0] * n),
    ]
    report = words.build_report(records)
    group = by_group(report)["job/train"]
    assert group["process_count"] == 3
    assert group["aligned_steps"] == n  # the warm-up step is left out
    assert group["straggler"] == "job/process_2/train"
    assert group["straggler_index"] == 2
    # 10 + 10 ms of waiting per step out of 3 x 12 ms of steps.
    assert group["straggler_share"] == pytest.approx(20 / 36)
    assert group["skew_ms"]["p50"] == pytest.approx(10.0)
    assert group["skew_ms"]["p90"] == pytest.approx(10.0)
    runs = {entry["process_index"]: entry for entry in group["runs"]}
    assert runs[0]["wait_ms"]["p50"] == pytest.approx(10.0)
    assert runs[0]["wait_share"] == pytest.approx(10 / 12)
    assert runs[2]["wait_ms"]["p50"] == 0
    assert runs[2]["late_steps"] == n and runs[0]["late_steps"] == 0
    assert group["cause"] == "input_bound"
    finding = group["finding"]
    assert finding["id"] == "straggler" and finding["severity"] == "high"
    assert finding["process_index"] == 2 and finding["cause"] == "input_bound"
    assert finding["skew_ms"] == {"p50": pytest.approx(10.0), "p90": pytest.approx(10.0)}
    assert "Process 2 (job/process_2/train)" in finding["message"]
    assert formatting.fmt_share(20 / 36) in finding["message"]
    assert "input_bound" in finding["message"]
    # The straggler's own fix (its input pipeline) is part of the fix.
    assert "prefetch" in finding["fix"]
    # On time, every step would take its 2 ms of compute: 6x.
    assert finding["expected"]["step_ms"] == pytest.approx(2.0)
    assert finding["expected"]["speedup"] == pytest.approx(6.0)
    # Said once per job: only the straggler's run carries the finding;
    # every process's run names its job (issue 25, item 6).
    for run in report["runs"]:
        stragglers = [item for item in run["findings"] if item["id"] == "straggler"]
        assert stragglers == ([finding] if run["run"] == "job/process_2/train" else [])
        assert run["job"] == "job/train"
    json.dumps(report, allow_nan=False)


def test_host_overhead_after_a_step_delays_the_next_step():
    # Process 1 spends 8 ms after each step (logging, a checkpoint): the
    # others wait for it inside their next step's compute.
    n = 12
    records = [
        job_record("j/process_0/train", 0, 2, [0.0] * n, [2.0] + [10.0] * (n - 1), [0.0] * n),
        job_record("j/process_1/train", 1, 2, [0.0] * n, [2.0] * n, [8.0] * n),
    ]
    group = by_group(words.build_report(records))["j/train"]
    assert group["straggler_index"] == 1
    assert group["cause"] == "host_overhead_bound"
    # The first aligned step follows the warm-up step (no host overhead
    # before it): 11 of the 12 steps wait 8 ms.
    assert group["skew_ms"]["p50"] == pytest.approx(8.0)
    assert group["runs"][0]["wait_ms"]["mean"] == pytest.approx(8.0 * 11 / 12)
    # Sampled series (every third step kept, as TensorBoard may): the
    # step's own host overhead stands in for the one before it.
    keep = np.arange(0, n + 1, 3)
    for record in records:
        for key, values in record["series"].items():
            record["series"][key] = values[keep]
    group = by_group(words.build_report(records))["j/train"]
    assert group["aligned_steps"] == len(keep) - 1
    assert group["straggler_index"] == 1
    assert group["skew_ms"]["p50"] == pytest.approx(8.0)


def test_processes_that_keep_pace_have_no_straggler():
    # Arrivals 0.1 ms apart, either process last in turn.
    n = 20
    jitter = [0.1 if step % 2 else 0.0 for step in range(n)]
    records = [
        job_record("even/process_0/train", 0, 2, jitter, [5.0] * n, [0.0] * n),
        job_record("even/process_1/train", 1, 2, jitter[1:] + [0.1], [5.0] * n, [0.0] * n),
    ]
    report = words.build_report(records)
    group = by_group(report)["even/train"]
    assert group["straggler"] is None and group["finding"] is None
    assert group["cause"] is None and group["straggler_share"] is None
    assert group["skew_ms"]["p90"] == pytest.approx(0.1)
    assert not any(item["id"] == "straggler" for run in report["runs"] for item in run["findings"])
    assert "No straggler" in console.render(report)
    assert "No straggler" in markdown.render(report)


def test_steps_are_aligned_by_global_step_and_clocks_compared_on_one_host():
    n = 10
    # Process 1 kept only every other step (a sampled series), started each
    # step 1 ms after process 0 and took 1 ms longer.
    start0 = 1_700_000_000.0 + np.arange(n + 1) * 0.05
    records = [
        job_record("a/process_0/train", 0, 2, [0.0] * n, [4.0] * n, [0.0] * n, start=start0),
        job_record("a/process_1/train", 1, 2, [0.0] * n, [5.0] * n, [0.0] * n,
                   start=start0 + 0.001),
    ]
    keep = np.arange(0, n + 1, 2)
    for key, values in records[1]["series"].items():
        records[1]["series"][key] = values[keep]
    group = by_group(words.build_report(records))["a/train"]
    assert group["aligned_steps"] == len(keep) - 1  # the warm-up step 0 is left out
    assert group["series"]["step"] == list(range(2, n + 1, 2))
    assert group["same_host"] is True
    assert group["start_spread_ms"]["p50"] == pytest.approx(1.0, abs=1e-3)
    # Ends: 4 ms after its start for process 0, 5 ms after a start 1 ms later.
    assert group["end_spread_ms"]["p50"] == pytest.approx(2.0, abs=1e-3)
    # Another host's clock is not compared.
    records[1]["info"]["hostname"] = "node-b"
    group = by_group(words.build_report(records))["a/train"]
    assert group["same_host"] is False
    assert group["start_spread_ms"] == {"p50": None, "p90": None, "mean": None}
    assert group["skew_ms"]["p50"] == 0


def test_each_process_device_busy_share_side_by_side():
    n = 4
    records = [
        job_record("b/process_0/train", 0, 2, [0.0] * n, [9.0] * n, [0.0] * n),
        job_record("b/process_1/train", 1, 2, [6.0] * n, [3.0] * n, [0.0] * n),
    ]
    group = by_group(words.build_report(records))["b/train"]
    assert group["device_busy_spread"] is None  # no trace window
    runs = [{"run": "b/process_0/train", "device_busy_fraction": 0.3, "device_compute_ms": 1.2},
            {"run": "b/process_1/train", "device_busy_fraction": 0.9, "device_compute_ms": 3.0}]
    [group] = words.worker_groups([run_records.read_run(item) for item in records], runs)
    assert [entry["device_busy_fraction"] for entry in group["runs"]] == [0.3, 0.9]
    # The spread is of the device's compute per step, relative: (3 - 1.2) / 3.
    assert group["device_busy_spread"] == pytest.approx(0.6)


def test_which_runs_form_a_job():
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [
        job_record("x/process_0/train", 0, 3, *good),
        job_record("x/process_1/train", 1, 3, *good),
        # The index in the name and in the run info disagree: not lined up.
        job_record("x/process_7/train", 2, 3, *good),
        # One process alone is not a job.
        dict(job_record("solo/train", 0, 1, *good)),
    ]
    report = words.build_report(records)
    groups = by_group(report)
    assert list(groups) == ["x/train"]
    # Process 2's run is there, under the wrong directory: named, not
    # "not recorded" (issue 25, item 4).
    assert groups["x/train"]["missing_processes"] == []
    assert [item["run"] for item in groups["x/train"]["unaligned"]] == ["x/process_7/train"]
    assert [entry["run"] for entry in groups["x/train"]["runs"]] == [
        "x/process_0/train", "x/process_1/train"]
    solo = {run["run"]: run for run in report["runs"]}["solo/train"]
    assert solo["distribution"] is None


def test_damaged_steps_are_left_out_of_the_alignment():
    n = 6
    records = [
        job_record("d/process_0/train", 0, 2, [0.0] * n, [float("nan")] + [9.0] * (n - 1), [0.0] * n),
        job_record("d/process_1/train", 1, 2, [6.0] * n, [3.0] * n, [-1.0] + [0.0] * (n - 1)),
    ]
    group = by_group(words.build_report(records))["d/train"]
    # Step 1 is damaged in both: steps 2..6 remain.
    assert group["aligned_steps"] == n - 1
    assert group["straggler_index"] == 1
    json.dumps(group, allow_nan=False)


def test_a_run_name_made_of_markup_is_text_in_the_renderers():
    n = 4
    name = "<b>x</b>/process_1/train"
    records = [
        job_record("<b>x</b>/process_0/train", 0, 2, [0.0] * n, [9.0] * n, [0.0] * n),
        job_record(name, 1, 2, [6.0] * n, [3.0] * n, [0.0] * n),
    ]
    text = markdown.render(words.build_report(records))
    assert "<b>" not in text.replace("`<b>x</b>", "")


# Real jobs.


@pytest.mark.slow
def test_jax_each_process_records_its_own_run(jax_job):
    records = jax_job["records"]
    assert sorted(records) == [
        "even/process_0/train", "even/process_1/train",
        "slow/process_0/train", "slow/process_1/train",
    ]
    runs = {run["run"]: run for run in jax_job["report"]["runs"]}
    for job in ("slow", "even"):
        for index, facts in jax_job["facts"][job].items():
            name = f"{job}/process_{index}/train"
            info = records[name].info
            assert info["process_index"] == index
            assert info["process_count"] == 2
            assert info["local_devices"] == facts["local_devices"]
            assert info["device_count"] == facts["device_count"] == 2
            assert info["distribution_strategy"] == "DataParallel"
            assert (info["global_batch"], info["per_process_batch"],
                    info["per_replica_batch"]) == (64, 32, 32)
            distribution = runs[name]["distribution"]
            # Each process feeds 32 samples; the step sees the global 64.
            assert distribution["replicas"] == 2
            assert distribution["global_batch"] == 64
            assert distribution["per_process_batch"] == 32
            assert distribution["per_replica_batch"] == 32
            assert runs[name]["steps"] == facts["steps"] == STEPS
            # Where its step ran: its own device, not the other process's.
            assert runs[name]["devices_used"] == [facts["local_devices"][0].upper()]


@pytest.mark.slow
def test_jax_the_slowed_process_is_the_straggler_and_input_bound(jax_job):
    report = jax_job["report"]
    group = by_group(report)["slow/train"]
    assert group["aligned_steps"] == STEPS - 1
    assert group["straggler"] == "slow/process_1/train"
    assert group["cause"] == "input_bound"
    assert group["straggler_share"] >= workers.STRAGGLER_MODERATE
    runs = {run["run"]: run for run in report["runs"]}
    assert runs["slow/process_1/train"]["steady_verdict"] == "input_bound"
    # Process 0 waits inside its step: its compute holds the wait, and is
    # longer than the straggler's, whose batch came late.
    waiting = {entry["process_index"]: entry for entry in group["runs"]}[0]
    assert waiting["wait_ms"]["mean"] > 0.1 * DELAY_MS
    assert runs["slow/process_0/train"]["compute_ms"]["mean"] >= waiting["wait_ms"]["mean"]
    assert (runs["slow/process_0/train"]["compute_ms"]["mean"]
            > runs["slow/process_1/train"]["compute_ms"]["mean"])
    assert runs["slow/process_0/train"]["data_wait_ms"]["mean"] < 0.1 * DELAY_MS
    # Both processes run at the straggler's pace. The typical step: on a
    # busy machine one process's mean takes a descheduled step or two more,
    # and its p50 can sit a few ms off the other's (44.5 against 40.3 ms once
    # in a whole-suite run); a process not held to the straggler's pace would
    # step in a few ms.
    steps = [runs[f"slow/process_{i}/train"]["step_ms"]["p50"] for i in (0, 1)]
    assert steps[0] == pytest.approx(steps[1], rel=0.2)
    assert min(steps) >= 0.9 * DELAY_MS
    # The straggler finding is said once, on the straggler's run; the
    # process that waits for it is waiting_for_others.
    ids = {name: [item["id"] for item in runs[name]["findings"]]
           for name in ("slow/process_0/train", "slow/process_1/train")}
    assert ids["slow/process_1/train"].count("straggler") == 1
    assert "straggler" not in ids["slow/process_0/train"]
    # (Its verdict may be warmup_dominated: a short fit on a busy machine.)
    assert runs["slow/process_0/train"]["steady_verdict"] == "waiting_for_others"
    # One host: the step starts are compared on its clock.
    assert group["same_host"] is True
    assert group["start_spread_ms"]["p50"] is not None


@pytest.mark.slow
def test_jax_without_a_delay_there_is_no_straggler(jax_job):
    report = jax_job["report"]
    group = by_group(report)["even/train"]
    assert group["aligned_steps"] == STEPS - 1
    assert group["straggler"] is None
    for run in report["runs"]:
        if run["run"].startswith("even/"):
            assert "straggler" not in [item["id"] for item in run["findings"]]


@pytest.mark.slow
def test_jax_report_prints_the_processes(jax_job):
    text = console.render(jax_job["report"])
    assert "PROCESSES of slow/train: 2" in text
    assert "straggler: process 1" in text
    assert "PROCESSES of even/train: 2" in text


@pytest.mark.slow
def test_torch_ddp_processes_recorded_by_step_recorder(tmp_path):
    logdir = str(tmp_path / "logs")
    facts = distributed_runs.run_job("torch", os.path.join(logdir, "ddp"), delay_ms=DELAY_MS,
                                     steps=STEPS)
    assert [facts[rank]["process_index"] for rank in (0, 1)] == [0, 1]
    records = reader.read_runs(reader.local_provider(logdir))
    assert [record.run for record in records] == ["ddp/process_0", "ddp/process_1"]
    for record in records:
        assert record.info["loop"] == "custom"
        assert record.info["process_count"] == 2
        assert record.info["distributed"] == "torch.distributed (gloo)"
    report = words.build_report(records)
    group = by_group(report)["ddp"]
    assert group["straggler"] == "ddp/process_1"
    assert group["cause"] == "input_bound"
    # A synchronous loop: rank 0 waits the whole delay inside its backward
    # pass's all-reduce, at every step.
    waiting = {entry["process_index"]: entry for entry in group["runs"]}[0]
    assert waiting["wait_ms"]["p50"] == pytest.approx(DELAY_MS, rel=0.25)
    assert group["skew_ms"]["p50"] == pytest.approx(DELAY_MS, rel=0.25)
    runs = {run["run"]: run for run in report["runs"]}
    # Each rank steps on its own 32 samples: 64 in all.
    assert runs["ddp/process_0"]["distribution"]["per_process_batch"] == 32
    assert runs["ddp/process_0"]["distribution"]["global_batch"] == 64


@pytest.mark.slow
def test_mirrored_strategy_records_replicas_and_the_per_replica_batch(tmp_path):
    logdir = str(tmp_path / "logs")
    facts = distributed_runs.run_single("mirrored", os.path.join(logdir, "mirrored"))
    records = reader.read_runs(reader.local_provider(logdir))
    # One process: the usual layout, no process directory.
    assert [record.run for record in records] == ["mirrored/train"]
    info = records[0].info
    assert info["distribution_strategy"] == "MirroredStrategy"
    assert info["replicas"] == facts["replicas"] == 2
    assert info["process_count"] == 1
    assert info["local_devices"] == facts["devices"]
    assert (info["global_batch"], info["per_process_batch"], info["per_replica_batch"]) == (64, 64, 32)
    run = words.build_report(records)["runs"][0]
    assert run["batch_size"] == facts["global_batch"] == 64
    assert run["distribution"]["per_replica_batch"] == 32
    assert run["distribution"]["global_batch"] == 64
    assert math.isfinite(run["step_ms"]["p50"])


@pytest.mark.parametrize("damage", [
    {"series": {"step": "abc"}},
    {"series": {"step": np.arange(5), "data_wait_ms": np.ones((5, 2))}},
    {"series": {"step": [[1, 2]], "data_wait_ms": [1], "compute_ms": [1], "host_overhead_ms": [1]}},
    {"series": None},
    {"info": {"process_index": "1", "process_count": 2.7, "hostname": ["a"]}},
    {"info": {"process_index": -1, "process_count": 1e300}},
])
def test_damaged_documents_of_one_process_cost_only_the_alignment(damage):
    n = 5
    records = [
        job_record("z/process_0/train", 0, 2, [0.0] * n, [9.0] * n, [0.0] * n),
        job_record("z/process_1/train", 1, 2, [6.0] * n, [3.0] * n, [0.0] * n),
    ]
    records[1] = dict(records[1], **{key: (dict(records[1][key], **value)
                                           if isinstance(value, dict) and key == "info"
                                           else value)
                                     for key, value in damage.items()})
    report = words.build_report(records)
    json.dumps(report, allow_nan=False)
    for group in report["workers"]:
        assert group["straggler"] is None or group["aligned_steps"] > 0


def test_a_straggler_whose_own_verdict_is_not_its_stall_is_late_by_its_stall():
    # Process 2 waits 1.5 ms for each batch of a 12 ms step: compute-bound by
    # its own verdict (13% input share is moderate), yet 3 ms of every
    # aligned step (2 x 1.5) is lost to it.
    n = 10
    records = [
        job_record(f"m/process_{index}/train", index, 3, [0.0] * n, [12.0] * n, [0.0] * n)
        for index in (0, 1)
    ] + [job_record("m/process_2/train", 2, 3, [1.5] * n, [10.5] * n, [0.0] * n)]
    report = words.build_report(records)
    group = by_group(report)["m/train"]
    runs = {run["run"]: run for run in report["runs"]}
    assert runs["m/process_2/train"]["steady_verdict"] == "compute_bound"
    assert group["straggler_index"] == 2
    assert group["straggler_share"] == pytest.approx(3.0 / 36)
    assert group["cause"] == "input_bound"
    assert "its own verdict: compute_bound" in group["finding"]["message"]
    assert "prefetch" in group["finding"]["fix"]


def test_run_info_splits_the_batch_only_under_a_strategy_of_several():
    from tb_devicecost.backends import processes
    from tb_devicecost.recording import run_info

    info = {"process_count": 2, "replicas": 4, "distribution_strategy": "DataParallel"}
    assert run_info.batch_info(64, info) == {
        "batch_size": 64, "global_batch": 64, "per_process_batch": 32, "per_replica_batch": 16}
    assert run_info.batch_info(30, dict(info, replicas=4))["per_replica_batch"] == 7.5
    single = {"process_count": 1, "replicas": 1, "distribution_strategy": None}
    assert run_info.batch_info(32, single) == {"batch_size": 32}
    # One process: its runs stay where a single process writes them.
    assert run_info.process_run_dir("logs/a", {"process_index": 0, "process_count": 1}) == "logs/a"
    assert run_info.process_run_dir("logs/a", {"process_index": 3, "process_count": 4}) == os.path.join(
        "logs/a", "process_3")
    # No distributed library initialized in this process.
    assert processes.process_info()["process_count"] == 1


# Hostile layouts (issue 25).


@pytest.mark.parametrize("count", [10**6, 10**8, 10**12])
def test_a_huge_process_count_is_summarised_as_ranges(count):
    # Item 1: the missing processes are ranges bounded by the runs present,
    # never `range(count)`.
    n = 4
    records = [
        job_record("huge/process_0/train", 0, count, [0.0] * n, [3.0] * n, [0.0] * n),
        job_record("huge/process_1/train", 1, count, [0.0] * n, [3.0] * n, [0.0] * n),
    ]
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["process_count"] == count
    assert group["missing_processes"] == [[2, count - 1]]
    assert group["missing_count"] == count - 2
    assert len(json.dumps(report)) < 100_000
    for text in (console.render(report), markdown.render(report)):
        assert len(text) < 20_000
        assert formatting.fmt_count(count - 1) in text


def test_runs_that_do_not_fit_their_job_are_named_not_dropped():
    # Item 4: `process_1` and `process_01` both say process 1; a real
    # process 2 renamed `process_7`; an index beyond the count.
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [
        job_record("y/process_0/train", 0, 4, *good),
        job_record("y/process_01/train", 1, 4, *good),
        job_record("y/process_1/train", 1, 4, *good),
        job_record("y/process_7/train", 2, 4, *good),
        job_record("y/process_9/train", 9, 4, *good),
    ]
    report = words.build_report(records)
    [group] = report["workers"]
    assert [entry["run"] for entry in group["runs"]] == ["y/process_0/train", "y/process_1/train"]
    unaligned = {item["run"]: item for item in group["unaligned"]}
    assert set(unaligned) == {"y/process_01/train", "y/process_7/train", "y/process_9/train"}
    assert unaligned["y/process_7/train"]["claimed_index"] == 2
    assert "y/process_1/train" in unaligned["y/process_01/train"]["reason"]
    # Only process 3 has no run at all.
    assert group["missing_processes"] == [[3, 3]]
    text = console.render(report)
    for name in unaligned:
        assert name in text
    assert "process 2" not in common_missing(text)


def common_missing(text):
    return "\n".join(line for line in text.splitlines() if "Not recorded" in line)


def test_no_aligned_steps_never_claims_balance():
    # Item 4: steps that share no global step: nothing is lined up, so
    # nothing can be said to keep pace.
    n = 6
    records = [
        job_record("s/process_0/train", 0, 2, [0.0] * n, [3.0] * n, [0.0] * n),
        job_record("s/process_1/train", 1, 2, [9.0] * n, [3.0] * n, [0.0] * n,
                   steps=np.arange(100, 100 + n + 1)),
    ]
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["aligned_steps"] == 0 and group["straggler"] is None
    assert group["problems"] and "no global step" in group["problems"][-1]
    for text in (console.render(report), markdown.render(report)):
        assert "keep pace" not in text
        assert "no steps were lined up" in text


def test_a_straggler_of_200_processes_is_said_once():
    # Item 6: the finding is in the straggler's run only, not 200 times.
    n, count = 5, 200
    records = [
        job_record(f"big/process_{index}/train", index, count,
                   [8.0 if index == 7 else 0.0] * n, [10.0] * n, [0.0] * n)
        for index in range(count)
    ]
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["straggler_index"] == 7
    carrying = [run["run"] for run in report["runs"]
                if any(item["id"] == "straggler" for item in run["findings"])]
    assert carrying == ["big/process_7/train"]
    assert {run["job"] for run in report["runs"]} == {"big/train"}
    text = console.render(report)
    assert text.count(group["finding"]["message"][:60]) <= 1
    # Said once, as its headline (the message behind --verbose, issue 23).
    assert " ".join(text.split()).count("Process 7 holds the others back") == 1


def test_the_runs_of_a_job_are_typed():
    # The layout of the test above, as `jobs.group_runs` returns it.
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [
        job_record("y/process_0/train", 0, 4, *good),
        job_record("y/process_01/train", 1, 4, *good),
        job_record("y/process_1/train", 1, 4, *good),
        job_record("y/process_7/train", 2, 4, *good),
        job_record("y/process_9/train", 9, 4, *good),
    ]
    data = [run_records.read_run(item) for item in records]
    [(group, job)] = jobs.group_runs(data, {item["run"]: item for item in records}).items()
    assert group == "y/train" and isinstance(job, jobs.JobRuns)
    assert job.count == 4
    assert [(index, run.run) for index, run in job.members] == [
        (0, "y/process_0/train"), (1, "y/process_1/train")]
    assert [(item.run, item.process_index, item.claimed_index) for item in job.unaligned] == [
        ("y/process_01/train", 1, 1), ("y/process_7/train", 7, 2), ("y/process_9/train", 9, None)]
    assert all(isinstance(item, jobs.Unaligned) for item in job.unaligned)
    [typed] = workers.build_workers(data, [{"run": item["run"]} for item in records])
    assert typed.missing_processes == ((3, 3),) and typed.missing_count == 1
    assert typed.unaligned == job.unaligned
    assert typed.straggler is None


# Issue 35, item 9: the job's words follow the data.


def test_a_process_index_of_minus_one_is_said_as_it_is():
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [job_record("q/process_0/train", 0, 2, *good),
               job_record("q/process_1/train", -1, 2, *good)]
    [group] = words.build_report(records)["workers"]
    [item] = group["unaligned"]
    assert "gives process index -1, which is no process's place" in item["reason"], item


def test_processes_whose_counts_disagree_are_said():
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [job_record(f"c/process_{index}/train", index, count, *good)
               for index, count in ((0, 2), (1, 4), (2, 3))]
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["process_count"] == 4
    [said] = [problem for problem in group["problems"] if "disagree on the job's size" in problem]
    assert "says 2" in said and "says 3" in said and "says 4" in said and "taken as 4" in said


def test_a_process_with_run_info_but_no_step_is_not_said_unrecorded():
    n = 4
    good = [0.0] * n, [3.0] * n, [0.0] * n
    records = [job_record(f"e/process_{index}/train", index, 3, *good) for index in (0, 1)]
    records.append({"run": "e/process_2/train", "info": {"process_index": 2, "process_count": 3}})
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["missing_processes"] == []
    [item] = group["unaligned"]
    assert item["run"] == "e/process_2/train" and "it is not reported" in item["reason"]
    text = console.render(report)
    assert "process 2" not in common_missing(text)


def test_a_straggler_over_three_aligned_steps_is_noted_as_short():
    records = [
        job_record("t/process_0/train", 0, 2, [0.0] * 10, [3.0] * 10, [0.0] * 10),
        job_record("t/process_1/train", 1, 2, [9.0] * 3, [3.0] * 3, [0.0] * 3),
    ]
    report = words.build_report(records)
    [group] = report["workers"]
    assert group["aligned_steps"] == 3 and group["straggler"] == "t/process_1/train"
    assert "only 3 steps of the processes line up" in group["finding"]["message"]
