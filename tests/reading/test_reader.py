"""`tb_devicecost.reading.reader` and `metadata.decode_json`: damaged and hostile data
is refused with a reason, never raised, never hangs (issue 16)."""

import contextlib
import json
import os
import threading

import numpy as np
import pytest

from tb_devicecost import words
from tb_devicecost.format import metadata
from tb_devicecost.reading import reader

from tests.support import paths
from tests.support.documents import cpu_placement, make_aggregate
from tests.support.event_files import write_run


INFO = {"schema": 1, "backend": "tensorflow", "batch_size": 32,
        "steps_per_record": 1, "fetch_in_graph": False}


def good_run(run_dir, rows=20):
    write_run(
        str(run_dir),
        aggregate=make_aggregate(1.0, 4.0, 0.5),
        info=INFO,
        placement=cpu_placement(),
        rows=[(step, 1.0, 4.0, 0.5, 32) for step in range(rows)],
    )
    return str(run_dir)


def read(logdir):
    """`(records by run, unread)` as the CLI reads them."""
    scan = reader.scan_logdir(logdir)
    records, unread = reader.read_logdir(reader.local_provider(logdir, scan=scan), scan)
    return {record.run: record for record in records}, unread


def within(seconds, function, *args):
    """`function(*args)`, failing the test if it does not return in time."""
    result, error = [], []

    def target():
        try:
            result.append(function(*args))
        except BaseException as caught:  # pylint: disable=broad-except
            error.append(caught)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function.__name__} did not return in {seconds} s"
    if error:
        raise error[0]
    return result[0]


# Documents (metadata.decode_json).


def test_deeply_nested_json_is_a_format_error_not_a_recursion_error():
    deep = '{"schema": 1, "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(metadata.FormatError, match="nested deeper"):
        metadata.decode_json(deep.encode())
    # Deep enough to trouble whoever walks it next, shallow enough to parse.
    middling = '{"schema": 1, "deep": ' + "[" * 500 + "]" * 500 + "}"
    with pytest.raises(metadata.FormatError, match="nested deeper"):
        metadata.decode_json(middling)
    assert metadata.decode_json('{"schema": 1, "a": [[[1]]]}')["a"] == [[[1]]]


@pytest.mark.parametrize("value", [
    np.array([b'{"schema": 1}', b'{"schema": 1}'], dtype=object),
    np.array([], dtype=object),
    np.zeros((1, 2), dtype=object),
])
def test_a_string_tensor_of_other_than_one_element_is_a_format_error(value):
    with pytest.raises(metadata.FormatError, match="one JSON string"):
        metadata.decode_json(value)


def test_a_number_tensor_where_a_document_belongs_is_a_format_error():
    with pytest.raises(metadata.FormatError):
        metadata.decode_json(np.array(3.0))


def test_newer_schema_in_the_summary_metadata_is_refused():
    metadata.check_plugin_content(b'{"schema": 1}')
    metadata.check_plugin_content(b"")
    with pytest.raises(metadata.NewerSchemaError, match="schema version 99"):
        metadata.check_plugin_content(b'{"schema": 99}')
    with pytest.raises(metadata.FormatError):
        metadata.check_plugin_content(b"\xff not json")


def write_with_content(run_dir, content):
    """A good run whose every summary's `plugin_data.content` is `content`."""
    original = metadata.create_summary_metadata

    def patched(data_class):
        summary_metadata = original(data_class)
        summary_metadata.plugin_data.content = content
        return summary_metadata

    metadata.create_summary_metadata = patched
    try:
        return good_run(run_dir)
    finally:
        metadata.create_summary_metadata = original


def test_a_run_whose_summary_metadata_has_a_newer_schema_is_skipped_with_the_reason(
        tmp_path):
    good_run(tmp_path / "good" / "train")
    write_with_content(tmp_path / "newer" / "train", b'{"schema": 99}')
    records, unread = read(str(tmp_path))
    newer = records["newer/train"]
    assert newer.newer_schema and newer.aggregate is None and not newer.series
    assert any("schema version 99" in problem for problem in newer.problems)
    report = words.build_report(list(records.values()), unread=unread)
    assert [run["run"] for run in report["runs"]] == ["good/train"]
    [skipped] = report["skipped"]
    assert skipped["run"] == "newer/train"
    assert "schema version 99" in skipped["reason"] and "Upgrade" in skipped["reason"]


# The log directory (scan_logdir, local_provider).


def test_symlink_loops_are_never_followed(tmp_path):
    run_dir = good_run(tmp_path / "a" / "train")
    good_run(tmp_path / "b" / "train")
    os.symlink(".", os.path.join(run_dir, "loop"))
    os.symlink("..", os.path.join(run_dir, "up"))
    os.symlink(str(tmp_path), os.path.join(run_dir, "root"))
    os.symlink("/", os.path.join(run_dir, "slash"))
    records, unread = within(60, read, str(tmp_path))
    assert sorted(records) == ["a/train", "b/train"]
    reasons = {item["run"]: item["reason"] for item in unread}
    assert set(reasons) == {"a/train/loop", "a/train/up", "a/train/root", "a/train/slash"}
    assert all("not followed" in reason for reason in reasons.values())
    assert "which holds the log directory" in reasons["a/train/slash"]


def test_a_link_to_a_run_outside_the_log_directory_is_read(tmp_path):
    good_run(tmp_path / "elsewhere" / "gpu" / "train")
    logdir = tmp_path / "logs"
    logdir.mkdir()
    os.symlink(str(tmp_path / "elsewhere" / "gpu"), str(logdir / "gpu"))
    records, unread = read(str(logdir))
    assert sorted(records) == ["gpu/train"] and unread == []


def test_a_fifo_named_like_an_event_file_is_never_opened(tmp_path):
    run_dir = good_run(tmp_path / "a" / "train")
    os.mkfifo(os.path.join(run_dir, "events.out.tfevents.2.host.fifo"))
    os.makedirs(tmp_path / "only_fifo" / "train")
    os.mkfifo(str(tmp_path / "only_fifo" / "train" / "events.out.tfevents.1.host"))
    records, unread = within(60, read, str(tmp_path))
    assert sorted(records) == ["a/train"]
    assert any("a FIFO, not a regular file" in problem for problem in records["a/train"].problems)
    [item] = unread
    assert item["run"] == "only_fifo/train" and "a FIFO" in item["reason"]


def test_an_unreadable_directory_is_skipped_with_the_reason(tmp_path, monkeypatch):
    """Tests run as root, who reads any directory: listing one is made to
    fail as it does for a user without the right (mode 000)."""
    good_run(tmp_path / "good" / "train")
    locked = tmp_path / "locked"
    good_run(locked / "train")
    real_scandir = os.scandir

    def scandir(path="."):
        if not isinstance(path, int) and os.path.abspath(os.fspath(path)) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    records, unread = read(str(tmp_path))
    assert sorted(records) == ["good/train"]
    assert unread == [{
        "run": "locked",
        "reason": "The directory could not be read (PermissionError: Permission denied).",
    }]


def unreadable(monkeypatch, *paths):
    """Opening `paths` fails as for a user without read permission (tests
    run as root, who may open any file)."""
    real_open = os.open
    denied = {os.path.abspath(str(path)) for path in paths}

    def fake_open(path, flags, *args, **kwargs):
        if os.path.abspath(os.fspath(path)) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


def event_files(run_dir):
    return sorted(
        os.path.join(run_dir, name) for name in os.listdir(run_dir) if "tfevents" in name
    )


def test_unreadable_event_files_are_skipped_with_the_reason(tmp_path, monkeypatch):
    good_run(tmp_path / "good" / "train")
    # A run whose only file cannot be opened, and one with an extra such file.
    [only] = event_files(good_run(tmp_path / "locked" / "train"))
    extra_dir = good_run(tmp_path / "extra" / "train")
    extra = os.path.join(extra_dir, "events.out.tfevents.9.host.extra")
    with open(extra, "wb") as handle:
        handle.write(b"")
    unreadable(monkeypatch, only, extra)
    records, unread = read(str(tmp_path))
    assert sorted(records) == ["extra/train", "good/train"]
    assert any(
        "Skipped the event file events.out.tfevents.9.host.extra: it could not be opened "
        "(PermissionError: Permission denied)" in problem
        for problem in records["extra/train"].problems
    )
    [item] = unread
    assert item["run"] == "locked/train"
    assert "could not be opened (PermissionError" in item["reason"]
    report = words.build_report(list(records.values()), unread=unread)
    assert {run["run"] for run in report["runs"]} == {"extra/train", "good/train"}
    assert [item["run"] for item in report["skipped"]] == ["locked/train"]


def test_runs_are_read_one_by_one_so_a_bad_one_costs_only_itself(tmp_path):
    good_run(tmp_path / "good" / "train")
    # A scalar series whose values have two elements: TensorBoard's data
    # provider cannot make a scalar of it.
    bad_dir = str(tmp_path / "bad" / "train")
    from tb_devicecost.format import writer as writer_module
    from tensorboard.compat.proto import event_pb2

    writer = writer_module.SummaryWriter(bad_dir)
    writer.write_json(metadata.TAG_AGGREGATE, 1, 0.0, make_aggregate(1.0, 2.0, 0.1))
    event = event_pb2.Event(step=1, wall_time=1.0)
    value = event.summary.value.add(tag=metadata.TAG_COMPUTE_MS)
    value.tensor.dtype = 1  # DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=2)
    value.tensor.float_val.extend([1.0, 2.0])
    value.metadata.CopyFrom(metadata.create_summary_metadata("scalar"))
    writer.write_event(event)
    writer.close()
    records, _ = read(str(tmp_path))
    assert records["good/train"].series["step"].size == 20
    assert any("per-step series could not be read" in problem
               for problem in records["bad/train"].problems)
    assert words.build_report(list(records.values()))["runs"]


def test_runs_listing_reads_series_where_the_aggregate_is_lost(tmp_path):
    """The overview (no series asked for) and the report (series read)
    take a run's numbers from the same place."""
    good_run(tmp_path / "good" / "train")
    write_run(
        str(tmp_path / "lost" / "train"), info=INFO,
        rows=[(step, 1.0, 2.0, 0.1, 32) for step in range(30)],
        raw_documents={metadata.TAG_AGGREGATE: json.dumps({"schema": 1, "components": 3})},
    )
    provider = reader.local_provider(str(tmp_path))
    listing = {r.run: r for r in reader.read_runs(provider, series_points=0)}
    assert listing["good/train"].series == {}
    assert listing["lost/train"].series["step"].size == 30
    full = {r.run: r for r in reader.read_runs(provider)}
    assert (words.build_report(list(listing.values()))
            == words.build_report(list(full.values())))


def test_a_document_larger_than_any_of_ours_is_a_format_error():
    text = '{"schema": 1, "x": "%s"}' % ("y" * metadata.MAX_DOCUMENT_CHARACTERS)
    with pytest.raises(metadata.FormatError, match="characters long"):
        metadata.decode_json(text)


def test_a_damaged_record_is_named_where_the_reading_stops(tmp_path):
    good_run(tmp_path / "good" / "train")
    [path] = event_files(good_run(tmp_path / "flipped" / "train", rows=200))
    data = bytearray(open(path, "rb").read())
    # Inside the last record (the aggregate): the steps before it are read.
    data[len(data) - 40] ^= 0x10
    open(path, "wb").write(bytes(data))
    os.makedirs(tmp_path / "garbage" / "train")
    (tmp_path / "garbage" / "train" / "events.out.tfevents.1.h").write_bytes(b"\x07" * 300)
    # A file cut inside its last record is one still being written: no damage.
    [cut] = event_files(good_run(tmp_path / "cut" / "train"))
    os.truncate(cut, os.path.getsize(cut) - 3)
    records, unread = read(str(tmp_path))
    [note] = [p for p in records["flipped/train"].problems if "damaged record" in p]
    assert note.startswith(f"The event file {os.path.basename(path)}: it holds a damaged "
                           "record at byte ")
    assert "what follows in the file is not read" in note
    assert records["flipped/train"].aggregate is None
    assert records["flipped/train"].series["step"].tolist() == list(range(200))
    assert not [p for p in records["cut/train"].problems if "damaged" in p]
    [item] = unread
    assert item["run"] == "garbage/train"
    assert item["reason"].startswith(reader.NO_DATA_REASON)
    assert "damaged record at byte 0 " in item["reason"]


# Storage: blocks of steps (schema 2) and per-step scalars (schema 1).


def event_values(path):
    """`[(step, wall_time, value)]` of an event file's summary values, read
    with TensorBoard's own loader."""
    from tensorboard.backend.event_processing import event_file_loader

    return [
        (event.step, event.wall_time, value)
        for event in event_file_loader.EventFileLoader(str(path)).Load()
        for value in event.summary.value
    ]


def test_steps_are_written_as_blocks_of_consecutive_steps(tmp_path):
    from tensorboard.util import tensor_util

    from tb_devicecost.format import writer as writer_module

    # Steps 0-2, then 10-11 (a gap), then 1030 consecutive steps 20-1049.
    steps = [0, 1, 2, 10, 11] + list(range(20, 1050))
    rows = np.array([[step, 1000.0 + 0.5 * index, 0.25, 2.5, 0.125, 32.0, float(step == 0)]
                     for index, step in enumerate(steps)])
    writer = writer_module.SummaryWriter(str(tmp_path))
    writer.write_steps(rows[:3])
    writer.write_steps(rows[3:])
    writer.close()
    [path] = event_files(str(tmp_path))
    values = event_values(path)
    # One event per block: a gap ends a block, and so does the 1024th row.
    assert [(step, value.tag) for step, _, value in values] == [
        (0, "devicecost/steps"), (10, "devicecost/steps"), (20, "devicecost/steps"),
        (1044, "devicecost/steps")]
    assert [list(tensor_util.make_ndarray(value.tensor).shape) for _, _, value in values] == [
        [3, 6], [2, 6], [1024, 6], [6, 6]]
    # The summary metadata (plugin, schema 2, tensor data class) comes once.
    first = values[0][2].metadata
    assert first.plugin_data.plugin_name == "devicecost"
    assert json.loads(first.plugin_data.content) == {"schema": 2}
    assert first.data_class == 2  # DATA_CLASS_TENSOR
    assert not any(value.HasField("metadata") for _, _, value in values[1:])
    # The event's wall time is the block's first step's; rows hold offsets.
    step, wall_time, value = values[1]
    assert wall_time == 1001.5
    assert tensor_util.make_ndarray(value.tensor).tolist() == [
        [0.0, 0.25, 2.5, 0.125, 32.0, 0.0], [0.5, 0.25, 2.5, 0.125, 32.0, 0.0]]
    # 1035 steps in a few events: well under 64 bytes a step.
    assert os.path.getsize(path) / len(steps) < 26


def test_blocks_read_back_as_series_by_column(tmp_path):
    """Every step of a short run, with its wall time, from the blocks."""
    run_dir = str(tmp_path / "a" / "train")
    start = 1_795_000_000.0
    rows = [(step, start + 0.002 * step, 0.5 + step, 2.0, 0.25, 16.0 if step < 3 else 32.0,
             1.0 if step < 2 else 0.0) for step in range(700)]
    from tb_devicecost.format import writer as writer_module

    writer = writer_module.SummaryWriter(run_dir)
    writer.write_steps(np.array(rows[:256]))
    writer.write_steps(np.array(rows[256:]))
    writer.close()
    records, _ = read(str(tmp_path))
    series = records["a/train"].series
    assert list(series) == ["step", "wall_time", "data_wait_ms", "compute_ms",
                            "host_overhead_ms", "batch_size", "warmup"]
    assert series["step"].tolist() == list(range(700))
    assert series["data_wait_ms"][:3].tolist() == [0.5, 1.5, 2.5]
    assert series["data_wait_ms"][-1] == 699.5
    assert set(series["compute_ms"].tolist()) == {2.0}
    assert series["batch_size"][:4].tolist() == [16.0, 16.0, 16.0, 32.0]
    assert series["warmup"][:3].tolist() == [1.0, 1.0, 0.0]
    # Wall times: within float32's precision of the offset in its block.
    expected = np.array([row[1] for row in rows])
    assert np.max(np.abs(series["wall_time"] - expected)) < 1e-6
    assert series["wall_time"][300] == pytest.approx(start + 0.6, abs=1e-6)


def test_a_long_run_reads_as_an_even_sample_that_keeps_the_last_step(tmp_path):
    from tb_devicecost.format import writer as writer_module

    writer = writer_module.SummaryWriter(str(tmp_path / "long"))
    for first in range(0, 30_000, 256):
        steps = np.arange(first, min(first + 256, 30_000))
        rows = np.zeros((len(steps), 7))
        rows[:, 0] = steps
        rows[:, 1] = 5000.0 + steps
        rows[:, 2] = steps % 7
        writer.write_steps(rows)
    writer.close()
    [record] = reader.read_runs(reader.local_provider(str(tmp_path)))
    steps = record.series["step"]
    assert len(steps) == reader.DEFAULT_SERIES_POINTS
    assert steps[0] == 0 and steps[-1] == 29_999
    gaps = np.diff(steps)
    assert gaps.min() >= 20 and gaps.max() <= 40  # about 30 apart, all along
    # Each point is that step's own row.
    assert record.series["data_wait_ms"].tolist() == (steps % 7).astype(float).tolist()
    assert record.series["wall_time"].tolist() == (5000.0 + steps).astype(float).tolist()


def write_schema_1_run(run_dir, rows, warmup=True):
    """A run as tb-devicecost wrote it before blocks: one event per step,
    a scalar per column, `{"schema": 1}` in the summary metadata."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.proto import summary_pb2

    from tb_devicecost.format import writer as writer_module

    content = b'{"schema": 1}'
    tags = ["devicecost/data_wait_ms", "devicecost/compute_ms",
            "devicecost/host_overhead_ms", "devicecost/batch_size"]
    if warmup:
        tags.append("devicecost/warmup")
    writer = writer_module.SummaryWriter(run_dir)
    for index, (step, wall_time, *values) in enumerate(rows):
        event = event_pb2.Event(step=step, wall_time=wall_time)
        for tag, number in zip(tags, values):
            value = event.summary.value.add(tag=tag)
            value.tensor.dtype = 1  # DT_FLOAT
            value.tensor.tensor_shape.SetInParent()
            value.tensor.float_val.append(number)
            if index == 0:
                value.metadata.plugin_data.plugin_name = "devicecost"
                value.metadata.plugin_data.content = content
                value.metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
        writer.write_event(event)
    writer.close()


def test_schema_1_runs_read_as_before_with_wall_times(tmp_path):
    rows = [(step, 2000.0 + step, 1.5, 4.0, 0.25, 32.0, 1.0 if step == 0 else 0.0)
            for step in range(50)]
    write_schema_1_run(str(tmp_path / "old" / "train"), rows)
    write_schema_1_run(str(tmp_path / "older" / "train"),
                       [row[:-1] for row in rows], warmup=False)
    records, unread = read(str(tmp_path))
    assert unread == []
    old = records["old/train"].series
    assert old["step"].tolist() == list(range(50))
    assert old["wall_time"].tolist() == [2000.0 + step for step in range(50)]
    assert set(old["compute_ms"].tolist()) == {4.0}
    assert old["warmup"].tolist() == [1.0] + [0.0] * 49
    # Written before the warm-up flag: no flag, not a guessed one.
    assert "warmup" not in records["older/train"].series
    assert records["older/train"].series["host_overhead_ms"].tolist() == [0.25] * 50


@pytest.mark.slow
def test_schema_1_runs_recorded_on_the_h100_read_as_through_tensorboards_loader():
    """The schema-1 runs in tests/data/h100 (recorded on an H100) read the
    same through the report's provider as through TensorBoard's own Python
    loader: the same documents, and the same steps where both keep every
    step."""
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    data = os.path.join(paths.DATA, "h100")
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance={event_accumulator.TENSORS: 0},
        tensor_size_guidance={metadata.PLUGIN_NAME: 0},
    )
    multiplexer.AddRunsFromDirectory(data)
    multiplexer.Reload()
    theirs = {record.run: record for record in reader.read_runs(
        data_provider.MultiplexerDataProvider(multiplexer, data), series_points=100_000)}
    ours = {record.run: record for record in reader.read_runs(
        reader.local_provider(data), series_points=100_000)}
    assert sorted(ours) == sorted(theirs) and len(ours) >= 10
    for run, record in ours.items():
        other = theirs[run]
        assert (record.aggregate, record.info, record.placement, record.trace) == (
            other.aggregate, other.info, other.placement, other.trace), run
        if len(record.series["step"]) < 1000:  # every step kept by both
            for key, values in record.series.items():
                np.testing.assert_array_equal(values, other.series[key], err_msg=run)


def test_a_block_of_the_wrong_shape_is_left_out_and_said(tmp_path):
    from tensorboard.compat.proto import event_pb2

    from tb_devicecost.format import writer as writer_module

    run_dir = good_run(tmp_path / "a" / "train", rows=10)
    writer = writer_module.SummaryWriter(run_dir)
    event = event_pb2.Event(step=50, wall_time=1.0)
    value = event.summary.value.add(tag=metadata.TAG_STEPS)
    value.tensor.dtype = 1  # DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=4)
    value.tensor.float_val.extend([1.0, 2.0, 3.0, 4.0])
    value.metadata.CopyFrom(metadata.create_summary_metadata("tensor"))
    writer.write_event(event)
    writer.close()
    records, _ = read(str(tmp_path))
    assert records["a/train"].series["step"].tolist() == list(range(10))
    assert any("1 block(s) of steps are not [steps, 6] float tensors" in problem
               for problem in records["a/train"].problems)


# Issue 25.


def colliding_run(tmp_path, spans):
    """A run directory holding one event file of ours per `(opened,
    last_write, pid)`, as two fits given the same log_dir write them."""
    run_dir = tmp_path / "logs" / "same" / "train"
    run_dir.mkdir(parents=True)
    for index, (opened, last_write, pid) in enumerate(spans):
        source = good_run(tmp_path / f"fit{index}" / "train", rows=10 + index)
        [path] = [os.path.join(source, name) for name in os.listdir(source)]
        target = run_dir / f"events.out.tfevents.{opened:010d}.host.{pid}.{index:06d}.devicecost"
        os.replace(path, target)
        os.utime(target, (last_write, last_write))
    return str(tmp_path / "logs")


def test_two_fits_written_at_once_into_one_run_are_said_to_collide(tmp_path):
    # Item 3: two processes, DeviceCostCallback("logs/same"): two event
    # files open at the same time. The run is kept, with the collision.
    logdir = colliding_run(tmp_path, [(1_000, 1_050.5, 111), (1_010, 1_060.5, 222)])
    records, unread = read(logdir)
    assert list(records) == ["same/train"] and unread == []
    [problem] = [text for text in records["same/train"].problems if "at once" in text]
    assert "111" in problem and "222" in problem
    report = words.build_report(list(records.values()))
    [run] = report["runs"]
    assert any("at once" in text for text in run["problems"])


def test_fits_one_after_another_into_one_run_do_not_collide(tmp_path):
    # Item 3: a rerun after the first fit ended (even within its last
    # second) is no collision.
    logdir = colliding_run(tmp_path, [(1_000, 1_050.5, 111), (1_050, 1_090.0, 222)])
    records, _ = read(logdir)
    assert not [text for text in records["same/train"].problems if "at once" in text]


def test_one_rule_for_the_length_of_a_run_name(tmp_path):
    # Item 5: a 3,748-character run name (a valid path) is read; a name
    # over `MAX_RUN_NAME` is skipped with the reason, never listed.
    logdir = tmp_path / "logs"
    parts = ["d" * 200] * 18 + ["x" * 124, "train"]
    long_name = "/".join(parts)
    assert len(long_name) == 3_748
    good_run(os.path.join(str(logdir), *parts))
    records, unread = read(str(logdir))
    assert list(records) == [long_name] and unread == []
    assert reader.MAX_RUN_NAME >= 3_748
    monkeypatched = reader.MAX_RUN_NAME
    try:
        reader.MAX_RUN_NAME = 1_000
        records, unread = read(str(logdir))
    finally:
        reader.MAX_RUN_NAME = monkeypatched
    assert records == {}
    assert [item["run"] for item in unread] == [long_name]
    assert "3,748 characters" in unread[0]["reason"]


# Issue 35: readers that never fall over (items 4 to 7 and 11).


def tab_provider(logdir, load=True):
    """TensorBoard's Python loader and data provider over `logdir`, as the
    tab reads through them. `load=False`: a loader that has served nothing
    yet (TensorBoard's Rust loader walking a link to /sys never does)."""
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        tensor_size_guidance={metadata.PLUGIN_NAME: 1000})
    if load:
        multiplexer.AddRunsFromDirectory(logdir)
        reader.reload_runs(multiplexer)
    return data_provider.MultiplexerDataProvider(multiplexer, logdir)


def tab_read(logdir, load=True, provider=None):
    """`(records by run, unread)` as the tab reads them: through
    `tab_provider` (or `provider`), with the local scan."""
    provider = provider or tab_provider(logdir, load)
    scan = reader.scan_if_local(logdir)
    records, unread = reader.read_logdir(provider, scan,
                                         series_points=reader.DEFAULT_SERIES_POINTS)
    return {record.run: record for record in records}, unread


@contextlib.contextmanager
def chain(root, depth, name="d"):
    """`depth` directories one in the other, made and removed without
    recursion (`os.makedirs` and `shutil.rmtree` recurse: pytest's cleanup
    of its old temporary directories would raise RecursionError)."""
    path = str(root)
    made = []
    try:
        for _ in range(depth):
            path = os.path.join(path, name)
            os.mkdir(path)
            made.append(path)
        yield path
    finally:
        for directory in reversed(made):
            os.rmdir(directory)


def block_event(step, rows, shape_rows):
    """A block of steps whose checksums are right and whose shape says
    `shape_rows` rows, holding `rows`."""
    from tensorboard.compat.proto import event_pb2

    event = event_pb2.Event(step=step, wall_time=1.0)
    value = event.summary.value.add(tag=metadata.TAG_STEPS)
    value.tensor.dtype = 1  # DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=shape_rows)
    value.tensor.tensor_shape.dim.add(size=len(metadata.BLOCK_COLUMNS))
    value.tensor.tensor_content = np.asarray(rows, dtype="<f4").tobytes()
    value.metadata.CopyFrom(metadata.create_summary_metadata("tensor"))
    return event


def append_block(run_dir, step, rows, shape_rows):
    from tb_devicecost.format import writer as writer_module

    writer = writer_module.SummaryWriter(str(run_dir))
    writer.write_event(block_event(step, rows, shape_rows))
    writer.close()


ROWS = [[0.001 * i, 1.0, 4.0, 0.5, 32.0, 0.0] for i in range(10)]


def test_a_chain_of_a_thousand_directories_is_named_not_fatal(tmp_path):
    """Item 4: the scan walks without recursion (`os.walk` raised
    RecursionError), goes 100 levels deep, and names the directory below
    which it stopped, in the report and the tab alike."""
    good_run(tmp_path / "a" / "train")
    with chain(tmp_path, 1000):
        records, unread = within(60, read, str(tmp_path))
        assert reader.scan_if_local(str(tmp_path)) is not None
        tab, tab_unread = tab_read(str(tmp_path), load=False)
    assert list(records) == ["a/train"]
    [item] = unread
    assert item["run"] == "/".join(["d"] * 100)
    assert "at most 100 directories below the log directory" in item["reason"]
    assert list(tab) == ["a/train"] and tab_unread == unread


def test_a_slow_scan_stops_in_time_and_names_what_it_left(tmp_path, monkeypatch):
    """Item 4: a scan that takes longer than `MAX_SCAN_S` (a clock that
    moves 1 s per directory) stops there, keeps what it read and names the
    next directory and how many more were left."""
    from tb_devicecost.reading import logdir_scan

    for index in range(3):
        good_run(tmp_path / f"a{index}" / "train")
    for index in range(40):
        os.makedirs(tmp_path / "slow" / f"x{index:02d}")
    seconds = iter(range(10_000))
    monkeypatch.setattr(logdir_scan, "_clock", lambda: float(next(seconds)))
    records, unread = read(str(tmp_path))
    assert list(records) == ["a0/train", "a1/train", "a2/train"]
    [item] = unread
    assert item["run"].startswith("slow/x")
    assert f"the scan stops after {logdir_scan.MAX_SCAN_S:g} s" in item["reason"]
    assert "more directories were not read either" in item["reason"]


def test_links_into_system_directories_are_never_followed(tmp_path, monkeypatch):
    """Item 6: a link to /sys, to /proc/self/cwd (which TensorBoard and the
    scan followed into another directory's runs) and a link to that link
    are named, not followed: only the log directory's own run is read."""
    logdir = tmp_path / "logs"
    good_run(logdir / "a" / "train")
    elsewhere = tmp_path / "elsewhere"
    good_run(elsewhere / "theirs" / "train")
    monkeypatch.chdir(elsewhere)
    os.symlink("/sys", logdir / "sys")
    os.symlink("/proc/self/cwd", logdir / "cwd")
    os.symlink("cwd", logdir / "via")
    records, unread = within(60, read, str(logdir))
    assert list(records) == ["a/train"]
    reasons = {item["run"]: item["reason"] for item in unread}
    assert reasons == {
        "sys": reasons["sys"], "cwd": reasons["cwd"], "via": reasons["via"]}, reasons
    assert "A symbolic link into /sys: not followed" in reasons["sys"]
    assert "A symbolic link into /proc: not followed" in reasons["cwd"]
    assert "A symbolic link into /proc: not followed" in reasons["via"]


def test_the_tab_reads_from_the_files_what_tensorboard_does_not_serve(tmp_path):
    """Item 6: where TensorBoard's loader serves nothing (its Rust loader
    walking a link to /sys never finishes), the tab reads the scanned runs
    from their files, as the report does, rather than calling each one
    damaged."""
    good_run(tmp_path / "a" / "train")
    good_run(tmp_path / "b" / "train", rows=30)
    records, unread = read(str(tmp_path))
    tab, tab_unread = tab_read(str(tmp_path), load=False)
    assert list(tab) == list(records) == ["a/train", "b/train"]
    assert tab_unread == unread == []
    for run, record in records.items():
        assert tab[run].aggregate == record.aggregate
        np.testing.assert_array_equal(tab[run].series["step"], record.series["step"])


def test_one_damaged_block_costs_only_that_block(tmp_path):
    """Item 5: a block whose checksums are right and whose shape says 1,000
    rows where it holds 10 is left out alone, and said: the run keeps its
    other steps (its whole series was lost), in the report and the tab."""
    run_dir = good_run(tmp_path / "a" / "train", rows=300)
    append_block(run_dir, 400, ROWS, shape_rows=1000)
    for records, _ in (read(str(tmp_path)), tab_read(str(tmp_path))):
        record = records["a/train"]
        assert record.series["step"].tolist() == list(range(300))
        assert [problem for problem in record.problems if "block" in problem] == [
            "devicecost/steps: 1 block(s) of steps are not [steps, 6] float tensors "
            "and were left out."]


def test_a_name_that_is_not_utf8_is_escaped_and_read_in_the_tab_too(tmp_path):
    """Item 7: a run directory named with a byte that is not UTF-8 is
    named `caf\\xe9/train` (valid text) and read, by the report and by the
    tab, which skipped it as damaged. (TensorBoard's Python loader cannot
    list such a directory at all, its Rust loader names it otherwise: the
    loader here has loaded the other run only.)"""
    good_run(tmp_path / "cpu" / "train")
    loaded = tab_provider(str(tmp_path))
    good_run(os.path.join(str(tmp_path), os.fsdecode(b"caf\xe9"), "train"))
    records, unread = read(str(tmp_path))
    assert list(records) == ["caf\\xe9/train", "cpu/train"] and unread == []
    for provider in (loaded, tab_provider(str(tmp_path), load=False)):
        tab, tab_unread = tab_read(str(tmp_path), provider=provider)
        assert list(tab) == list(records) and tab_unread == [], tab_unread
        assert tab["caf\\xe9/train"].aggregate == records["caf\\xe9/train"].aggregate


def test_steps_near_2_63_are_left_out_without_a_warning(tmp_path):
    """Item 11: a block numbered near 2**63 (whose steps overflow int64)
    is left out and said, with no NumPy RuntimeWarning on stderr."""
    import warnings

    run_dir = good_run(tmp_path / "a" / "train", rows=20)
    append_block(run_dir, 2**63 - 5, ROWS, shape_rows=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records, _ = read(str(tmp_path))
    assert [str(warning.message) for warning in caught] == []
    record = records["a/train"]
    assert record.series["step"].tolist() == list(range(20))
    assert any("numbered beyond 1,000,000,000,000,000 were left out" in problem
               for problem in record.problems), record.problems
