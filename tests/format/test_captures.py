"""Where profiler traces live (`captures`): the Profile tab's layout,
found and confined to the log directory."""

import os

from tb_devicecost.format import captures


def _trace(root, run, capture, host, suffix=".xplane.pb"):
    directory = os.path.join(root, run, "plugins", "profile", capture)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, host + suffix), "wb"):
        pass


def test_captures_are_listed_newest_first_by_host(tmp_path):
    root = str(tmp_path)
    _trace(root, "a/train", "2026_01_02_03_04_05", "host1")
    _trace(root, "a/train", "2026_01_02_03_04_05", "host0")
    _trace(root, "a/train", "2026_02_01_00_00_00", "host0")
    assert captures.list_profile_captures(root, "a/train") == [
        {"capture": "2026_02_01_00_00_00", "host": "host0"},
        {"capture": "2026_01_02_03_04_05", "host": "host0"},
        {"capture": "2026_01_02_03_04_05", "host": "host1"},
    ]


def test_names_outside_the_layout_are_ignored(tmp_path):
    root = str(tmp_path)
    _trace(root, "run", "not_a_timestamp", "host")
    _trace(root, "run", "2026_01_02_03_04_05", "host", suffix=".txt")
    profile = os.path.join(root, "run", "plugins", "profile", "2026_01_02_03_04_05")
    open(os.path.join(profile, ".xplane.pb"), "wb").close()  # no host name
    assert captures.list_profile_captures(root, "run") == []
    assert captures.find_profile_runs(root) == []


def test_a_run_outside_the_log_directory_is_never_looked_at(tmp_path):
    _trace(str(tmp_path), "outside", "2026_01_02_03_04_05", "host")
    logdir = tmp_path / "logs"
    logdir.mkdir()
    assert captures.list_profile_captures(str(logdir), "../outside") == []
    assert captures.list_profile_captures(str(logdir), None) == []
    assert captures.list_profile_captures("", "run") == []


def test_runs_with_traces_are_found_at_any_depth_up_to_the_limit(tmp_path):
    root = str(tmp_path)
    _trace(root, ".", "2026_01_02_03_04_05", "h")
    _trace(root, "x/train", "2026_01_02_03_04_05", "h")
    _trace(root, "a/b/c/d/e/f/g/train", "2026_01_02_03_04_05", "h")  # 8 levels
    os.makedirs(os.path.join(root, "empty", "plugins", "profile"))
    assert captures.find_profile_runs(root) == [".", "x/train"]
    assert "a/b/c/d/e/f/g/train" in captures.find_profile_runs(root, max_depth=10)
    assert captures.find_profile_runs(str(tmp_path / "missing")) == []


def test_pytorch_traces_follow_the_same_layout(tmp_path):
    root = os.path.join(str(tmp_path), "plugins", "devicecost_torch")
    os.makedirs(os.path.join(root, "2026_01_02_03_04_05"))
    path = os.path.join(root, "2026_01_02_03_04_05", "host.pt.trace.json.gz")
    open(path, "wb").close()
    assert captures.list_traces(root, ".pt.trace.json.gz") == [
        (path, "2026_01_02_03_04_05", "host")
    ]
    assert captures.list_traces(os.path.join(root, "missing"), ".pt.trace.json.gz") == []
