"""`tb_devicecost.words.report`: the run object and the report JSON.

Also that the analysis package stays pure: no Keras, TensorFlow or
TensorBoard.
"""

import ast
import glob
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tb_devicecost import analysis
from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader

from tests.support.analyzed import assert_json_clean, finding_of
from tests.support.documents import cpu_placement, gpu_placement, make_aggregate, make_record


def imports_of(path):
    """Modules a source file imports (`package.name` for `from package import name`)."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    return imported


def test_analysis_imports_neither_keras_tensorflow_nor_tensorboard():
    package = os.path.dirname(analysis.__file__)
    modules = {
        os.path.splitext(os.path.basename(path))[0]: imports_of(path)
        for path in glob.glob(os.path.join(package, "*.py"))
    }
    assert set(modules) == {
        "__init__", "device_split", "guards", "names", "run_data", "step_numbers", "placement_summary",
        "trace_windows", "sweep_marks", "record", "sweeps", "thresholds", "data_wait",
        "device_side", "estimates", "verdicts", "pairing",
        "compare", "waiting", "jobs", "workers", "predictions", "formatting",
        "process_steps", "run_figures", "fit_end", "tried", "interventions", "reasons"}
    for name, imported in modules.items():
        outside = {
            module for module in imported
            if not module.startswith(("tb_devicecost.analysis.",
                                      "tb_devicecost.format.vocabulary.",
                                      "tb_devicecost.format.readable.",
                                      "tb_devicecost.format.backend_facts."))
        }
        # The step's names, the format's rule of a readable number and each
        # backend's facts, free of imports beyond the standard library.
        assert outside <= {"dataclasses", "decimal", "math", "re", "numpy",
                           "tb_devicecost.format.vocabulary",
                           "tb_devicecost.format.readable",
                           "tb_devicecost.format.backend_facts"}, (name, outside)
    for path in ("vocabulary.py", "readable.py", "backend_facts.py"):
        imported = imports_of(os.path.join(package, os.pardir, "format", path))
        assert not {module for module in imported
                    if module.split(".")[0] in ("tensorboard", "tensorflow", "keras", "google")}
    # Imports run one way: each module imports only those before it, from
    # the checks of raw values up to the report.
    order = ["formatting", "reasons", "thresholds", "device_split", "guards", "names", "run_data", "step_numbers",
             "placement_summary", "trace_windows", "sweep_marks", "process_steps", "fit_end",
             "tried", "record", "sweeps", "interventions", "data_wait", "run_figures", "device_side", "estimates", "verdicts", "pairing",
             "compare", "waiting", "jobs", "workers", "predictions"]
    for index, name in enumerate(order):
        # `tb_devicecost.analysis.<module>` or `tb_devicecost.analysis.<module>.<name>`.
        inside = {module.split(".")[2] for module in modules[name]
                  if module.startswith("tb_devicecost.analysis.")}
        assert inside <= set(order[:index]), (name, inside)
    # Nor does importing it load a framework (the package loads only
    # TensorBoard's protobuf definitions, for its format module).
    code = (
        "import sys; import tb_devicecost.analysis; "
        "bad = [m for m in ('keras', 'tensorflow') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_fit_numbers_come_from_the_aggregate(fit_records):
    for record in fit_records.values():
        result = words.analyze_run(record)
        components = record.aggregate["components"]
        for name in ("step", "data_wait", "compute", "host_overhead"):
            key = "step_ms" if name == "step" else f"{name}_ms"
            assert result[key]["p50"] == components[name]["p50_ms"]
            assert result[key]["p90"] == components[name]["p90_ms"]
            assert result[key]["mean"] == components[name]["mean_ms"]
        assert result["steps"] == record.aggregate["steps"]
        assert result["warmup_ms"] == record.aggregate["warmup"]["sum_ms"]
        assert math.isclose(sum(result["shares"].values()), 1.0)
        assert result["shares"]["data_wait"] == pytest.approx(
            components["data_wait"]["sum_ms"]
            / sum(components[c]["sum_ms"] for c in analysis.COMPONENTS)
        )
        assert result["backend"] == "tensorflow"
        assert result["source"] == "aggregate"
        assert result["problems"] == []
        assert_json_clean(result)


def test_only_warmup_recorded():
    aggregate = make_aggregate([], [], [], warmup_ms=250.0)
    result = words.analyze_run(make_record("one/train", aggregate=aggregate))
    assert result["verdict"] == "warmup_dominated"
    assert result["shares"] == {"data_wait": None, "compute": None, "host_overhead": None}
    assert result["warmup_share_of_wall"] == 1.0
    assert_json_clean(result)


def test_steps_per_execution_gives_per_step_numbers():
    aggregate = make_aggregate(0.0, 40.0, 2.0, batch_size=None)
    record = make_record(
        "spe/train", aggregate=aggregate,
        info={"steps_per_record": 10, "fetch_in_graph": True, "batch_size": 32},
    )
    result = words.analyze_run(record)
    assert result["steps_per_record"] == 10
    assert result["step_ms"]["mean"] == pytest.approx(4.2)
    assert result["compute_ms"]["p50"] == pytest.approx(4.0)
    assert result["steps"] == aggregate["steps"] * 10
    assert result["samples_per_s"] == pytest.approx(32 / (4.2 / 1e3))
    assert result["verdict"] == "compute_bound"
    assert finding_of(result, "fetch_in_graph") is not None
    assert "steps_per_execution=10" in finding_of(result, "fetch_in_graph")["message"]


def test_run_object_has_the_documented_keys(fit_records):
    result = words.analyze_run(fit_records["input/train"])
    for key in ("run", "steps", "device", "backend", "batch_size", "step_ms",
                "data_wait_ms", "compute_ms", "host_overhead_ms", "shares",
                "warmup_ms", "warmup_share_of_wall", "spikes", "samples_per_s",
                "placement", "verdict", "findings", "status", "fetch_floor_ms",
                "starved_data_wait_ms", "steps_per_record", "problems"):
        assert key in result, key
    assert set(result["step_ms"]) >= {"p50", "p90", "p99", "mean"}
    assert set(result["shares"]) == {"data_wait", "compute", "host_overhead"}
    assert set(result["placement"]) >= {
        "devices", "variables", "ops", "cpu_ops_on_accelerator_run",
        "cross_device_copies", "input_bytes_per_step",
    }


def test_build_report_skips_what_it_cannot_read():
    good = make_record("good/train", aggregate=make_aggregate(0.0, 1.0, 0.0))
    newer = make_record(
        "newer/train",
        problems=["devicecost/aggregate: Written with schema version 2, newer than "
                  "the version 1 that this tb-devicecost reads. Upgrade tb-devicecost "
                  "to read it."],
        newer_schema=True,
        series={"step": np.arange(5), "data_wait_ms": np.ones(5),
                "compute_ms": np.ones(5), "host_overhead_ms": np.ones(5),
                "batch_size": np.ones(5)},
    )
    empty = make_record("empty/train")
    report = words.build_report([good, newer, empty])
    assert report["schema"] == 1
    assert [run["run"] for run in report["runs"]] == ["good/train"]
    reasons = {item["run"]: item["reason"] for item in report["skipped"]}
    assert "newer" in reasons["newer/train"]
    assert "no recorded step" in reasons["empty/train"]
    assert report["comparison"] is None
    with pytest.raises(ValueError, match="It was skipped"):
        words.build_report([good, newer], baseline="newer/train")
    assert_json_clean(report)


def test_edge_logdir_through_the_reader(edge_logdir):
    records = reader.read_runs(reader.local_provider(edge_logdir))
    report = words.build_report(records)
    runs = {run["run"]: run for run in report["runs"]}
    skipped = {item["run"]: item["reason"] for item in report["skipped"]}
    assert set(runs) == {"good/train", "running/train", "nan/train", "truncated/train"}
    assert set(skipped) == {"newer/train", "info_only/train"}
    assert f"schema version {metadata.SCHEMA_VERSION + 1}" in skipped["newer/train"]
    assert runs["running/train"]["status"] == "running"
    assert finding_of(runs["running/train"], "incomplete_run") is not None
    # NaN and negative aggregate totals: the sampled steps, minus two bad ones.
    nan = runs["nan/train"]
    assert nan["source"] == "series"
    assert nan["steady_steps"] == 38
    assert nan["step_ms"]["mean"] == pytest.approx(1.0 + 3.0 + 0.2)
    # The truncated file lost its aggregate (the last record) but not its steps.
    truncated = runs["truncated/train"]
    assert truncated["source"] == "series"
    assert truncated["steady_steps"] == 30
    assert truncated["data_wait_ms"]["mean"] == pytest.approx(2.0)
    good = runs["good/train"]
    assert good["step_ms"]["mean"] == pytest.approx(5.5)
    assert good["shares"]["compute"] == pytest.approx(4.0 / 5.5)
    assert_json_clean(report)


def test_malformed_fields_skip_the_run_not_the_report():
    good = make_record("good/train", aggregate=make_aggregate(0.2, 3.0, 0.1))
    odd = make_record(
        "odd/train",
        aggregate=dict(make_aggregate(0.2, 3.0, 0.1), spikes={"count": 1, "steps": 7}),
        trace={"schema": 1, "windows": 5},
        placement={"schema": 1, "devices": {"logical": "CPU:0"}, "cpu_op_types": 3},
    )
    report = words.build_report([good, odd])
    runs = {run["run"]: run for run in report["runs"]}
    # Malformed lists read as empty: the run is still analysed.
    assert runs["odd/train"]["trace_windows"] == []
    assert runs["odd/train"]["spike_steps"] == []
    assert "good/train" in runs
    assert_json_clean(report)


def test_wall_time_breakdown_accounts_for_the_whole_fit():
    parts = {"steps": 5000.0, "warmup": 2500.0, "between_steps": 2300.0,
             "measurement": 200.0}
    total = sum(parts.values())
    aggregate = make_aggregate(0.5, 4.5, 0.0, warmup_ms=2500.0)
    aggregate["wall_ms"] = dict(parts, total=total)
    result = words.analyze_run(make_record("w/train", aggregate=aggregate))
    assert result["wall_ms"] == dict(parts, total=total)
    assert result["wall_shares"] == {key: pytest.approx(value / total)
                                     for key, value in parts.items()}
    # Warm-up over the fit's wall time (25%), not over warm-up plus steps
    # (33%).
    assert result["warmup_share_of_wall"] == pytest.approx(2500.0 / total)
    assert result["verdict"] == "compute_bound"
    found = finding_of(result, "warmup")
    assert formatting.fmt_share(2500.0 / total) in found["message"]
    assert f"{formatting.fmt_ms(total)} ms total wall time" in found["message"]
    assert f"{formatting.fmt_ms(2300.0)} ms" in found["message"]
    assert_json_clean(result)


def test_wall_time_unknown_in_older_data_is_not_guessed():
    aggregate = make_aggregate(0.0, 5.0, 0.0, warmup_ms=200.0)
    assert "wall_ms" not in aggregate
    result = words.analyze_run(make_record("old/train", aggregate=aggregate))
    assert result["wall_ms"] == dict.fromkeys(
        ("total", "steps", "warmup", "between_steps", "measurement"))
    assert result["wall_shares"] == dict.fromkeys(
        ("steps", "warmup", "between_steps", "measurement"))
    # The share falls back to warm-up plus steady steps, and says so.
    assert result["warmup_share_of_wall"] == pytest.approx(200.0 / (200.0 + 500.0))
    assert "total wall time is unknown" in finding_of(result, "warmup")["message"]


def test_extreme_finite_values_never_leave_the_analysis_as_infinities():
    """1e308 ms and 1e-310 ms compared: before, the speedup was inf."""
    records = [
        make_record("cpu/train", aggregate=make_aggregate(1e-310, 1e-310, 0.0),
                            placement=cpu_placement()),
        make_record("gpu/train", aggregate=make_aggregate(1e308, 1e308, 1e308),
                            placement=gpu_placement()),
        make_record("big/train", aggregate=make_aggregate(0.1, 1e14, 0.1)),
        make_record("small/train", aggregate=make_aggregate(0.0, 1e-9, 0.0)),
    ]
    report = words.build_report(records, baseline="small/train")
    assert_json_clean(report)
    from tb_devicecost.cli.renderers import console, jsonrenderer, markdown

    assert "inf" not in console.render(report).lower().replace("info", "")
    assert "inf" not in markdown.render(report).lower().replace("info", "")
    jsonrenderer.render(report)


def test_one_rule_for_every_route_and_the_report(monkeypatch):
    """`analyze_record` is what `build_report` and the plugin's routes use:
    a run whose analysis raises is skipped with the reason, not a 500."""
    good = make_record("good/train", aggregate=make_aggregate(0.2, 3.0, 0.1))
    bad = make_record("bad/train", aggregate=make_aggregate(0.2, 3.0, 0.1))
    original = words.report.run_object

    def analyze(run):
        if run.run == "bad/train":
            raise ZeroDivisionError("float division by zero")
        return original(run)

    monkeypatch.setattr(words.report, "run_object", analyze)
    result, reason = words.analyze_record(bad)
    assert result is None and "ZeroDivisionError: float division by zero" in reason
    report = words.build_report([good, bad])
    assert report["skipped"] == [{"run": "bad/train", "reason": reason}]


def test_bidirectional_controls_in_run_names_stay_out_of_sentences():
    # Issue 25, item 7: a run name with U+202E (right-to-left override) is
    # quoted in the straggler's message and the sweep's notes; there the
    # control is an escape, so it cannot reverse the words after it. The
    # run's own name (an identifier) is kept as it is.
    from tests.support.documents import job_record

    n = 5
    prefix = "evil\u202e\u2067x"
    records = [
        job_record(f"{prefix}/process_0/train", 0, 2, [0.0] * n, [10.0] * n, [0.0] * n),
        job_record(f"{prefix}/process_1/train", 1, 2, [8.0] * n, [2.0] * n, [0.0] * n),
        job_record(f"{prefix}/process_9/train", 9, 2, [0.0] * n, [10.0] * n, [0.0] * n),
    ]
    report = words.build_report(records)
    controls = "".join(chr(code) for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])

    def sentences(value, key=None):
        if isinstance(value, dict):
            for name, item in value.items():
                yield from sentences(item, name)
        elif isinstance(value, list):
            for item in value:
                yield from sentences(item, key)
        elif isinstance(value, str) and key in ("message", "fix", "reason", "problems",
                                                 "explanation", "text", "basis"):
            yield value

    found = list(sentences(report))
    [group] = report["workers"]
    assert group["finding"]["message"] in found and group["problems"]
    assert "\\u202e" in group["finding"]["message"]
    for text in found:
        assert not set(text) & set(controls), text
    assert {run["run"] for run in report["runs"]} >= {
        f"{prefix}/process_0/train", f"{prefix}/process_1/train"}
