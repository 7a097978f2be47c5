"""The words a user reads first (`words/phrases.py`, issue 23): every
finding's headline is one plain sentence of at most 25 words with a number,
and no internal name. The other test files assert finding ids and numbers;
the sentences are tested here, in one place."""

import os
import re

import pytest

from tb_devicecost import words
from tb_devicecost.words import phrases
from tb_devicecost.reading import reader

from tests.support import paths


DATA = paths.DATA
# Recorded on NVIDIA H100s: JAX and PyTorch runs, single and multi-process.
RECORDED = ("h100", "h100_demo", "h100_traced", "h100_truth", "h100x2", "h100x4")


def check_headline(headline, where):
    assert isinstance(headline, str) and headline, where
    assert phrases.words(headline) <= phrases.MAX_HEADLINE_WORDS, (where, headline)
    assert re.search(r"\d", headline), (where, headline)
    assert headline.endswith("."), (where, headline)
    for term in phrases.JARGON:
        assert not re.search(r"\b" + re.escape(term) + r"\b", headline, re.I), (
            where, term, headline)


def _findings(report):
    for run in report["runs"]:
        for finding in run["findings"]:
            yield run["run"], finding
    for group in report["workers"]:
        if group.get("finding"):
            yield group["group"], group["finding"]


@pytest.fixture(scope="module")
def recorded_reports():
    return {
        name: words.build_report(
            reader.read_runs(reader.local_provider(os.path.join(DATA, name))))
        for name in RECORDED
    }


def test_every_recorded_finding_has_a_plain_headline(recorded_reports):
    seen, backends = set(), set()
    for name, report in recorded_reports.items():
        for run in report["runs"]:
            backends.add(run["backend"])
        for run, finding in _findings(report):
            check_headline(finding["headline"], (name, run, finding["id"]))
            # The evidence is kept whole beside it (JSON keeps everything).
            assert finding["message"], (name, run, finding["id"])
            seen.add(finding["id"])
    assert {"jax", "torch"} <= backends
    assert {
        "input_bound", "compute_bound", "latency_bound", "host_overhead_bound",
        "warmup_dominated", "small_batch", "straggler", "waiting_for_others",
    } <= seen


def test_a_tensorflow_fit_has_plain_headlines(fit_records):
    report = words.build_report(list(fit_records.values()))
    assert {run["backend"] for run in report["runs"]} == {"tensorflow"}
    for run, finding in _findings(report):
        check_headline(finding["headline"], (run, finding["id"]))


def test_the_headline_quotes_the_numbers_of_its_run(recorded_reports):
    from tb_devicecost.analysis.formatting import fmt_ms

    for report in recorded_reports.values():
        for run in report["runs"]:
            for finding in run["findings"]:
                if finding["id"] == "input_bound":
                    assert fmt_ms(run["starved_data_wait_ms"]) in finding["headline"]
                    assert fmt_ms(run["step_ms"]["mean"]) in finding["headline"]
                if finding["id"] == "host_overhead_bound":
                    assert fmt_ms(run["host_overhead_ms"]["mean"]) in finding["headline"]


# Every wording, also those no recorded run has, at small and large figures.
CASES = {
    "no_steps": lambda: phrases.no_steps(),
    "input_bound_high": lambda: phrases.input_bound("high", 30.04, 41.6),
    "input_bound_moderate": lambda: phrases.input_bound("moderate", 0.158, 1.25),
    "no_fetch_floor": lambda: phrases.no_fetch_floor(0.5, 0.07),
    "input_stalls": lambda: phrases.input_stalls(120.0),
    "host_high": lambda: phrases.host_overhead_bound("high", 12.5, 20.0),
    "host_moderate": lambda: phrases.host_overhead_bound("moderate", 0.5, 10.0),
    "latency_bound": lambda: phrases.latency_bound("GPU:0", 0.066, 1.25),
    "compute_bound": lambda: phrases.compute_bound(7.09, 7.1),
    "compute_in_graph": lambda: phrases.compute_bound(7.09, 7.1, fetch_in_graph=True),
    "warmup_one": lambda: phrases.warmup(1, 607.0, 0.41, True),
    "warmup_two": lambda: phrases.warmup(2, 12345.0, 0.93, False),
    "incomplete_running": lambda: phrases.incomplete_run("running", 12),
    "incomplete_interrupted": lambda: phrases.incomplete_run("interrupted", 1),
    "fetch_in_graph": lambda: phrases.fetch_in_graph(8),
    "retracing": lambda: phrases.retracing(3),
    "stalls": lambda: phrases.stalls(14, 10.0),
    "cpu_ops_off": lambda: phrases.cpu_ops_off_accelerator(1234),
    "cpu_ops_on": lambda: phrases.cpu_ops_on_accelerator_run(3, 120, "GPU:0"),
    "cross_device_copies": lambda: phrases.cross_device_copies(4),
    "small_batch": lambda: phrases.small_batch(32, 2.4),
    "measuring_cost": lambda: phrases.measuring_cost(0.072),
    "straggler": lambda: phrases.straggler(1, 0.45),
    "waiting_for_others": lambda: phrases.waiting_for_others(0, 0.6, 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_wording_is_a_plain_headline(case):
    check_headline(CASES[case](), case)


def test_the_words_of_the_issue():
    assert phrases.input_bound("high", 30.0, 42.0) == (
        "Input-bound: on average each step waits 30.0 ms of its 42.0 ms for data.")
    assert phrases.warmup(1, 607.0, 0.41, True).startswith("Warm-up (the first step,")
    assert "1 step." in phrases.incomplete_run("running", 1)
