"""Where profiler traces live in a run directory.

The layout is TensorBoard's Profile tab's:
`<run>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb`. The trace
digest, the reader and the plugin all find captures through this module.
"""

import os
import re

_CAPTURE_NAME = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}$")


def profile_dir(run_dir):
    """The directory holding a run's captures."""
    return os.path.join(run_dir, "plugins", "profile")


def list_captures(run_dir):
    """`[(path, capture, host)]` of a run's traces, newest capture first.

    Names that do not follow the layout are ignored; unreadable
    directories count as empty.
    """
    return list_traces(profile_dir(run_dir), ".xplane.pb")


def list_traces(root, suffix):
    """`[(path, capture, host)]` of `<root>/<timestamp>/<host><suffix>`
    files, newest capture first: the layout of the Profile tab's captures,
    which PyTorch traces (`torch_trace.py`) follow too."""
    try:
        names = sorted(os.listdir(root), reverse=True)
    except OSError:
        return []
    found = []
    for capture in names:
        if not _CAPTURE_NAME.match(capture):
            continue
        directory = os.path.join(root, capture)
        try:
            files = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in files:
            if name.endswith(suffix) and len(name) > len(suffix):
                found.append((os.path.join(directory, name), capture, name[: -len(suffix)]))
    return found


def list_profile_captures(logdir, run):
    """Profiler captures of `run`: `[{"capture": ts, "host": host}]`.

    Looks in `<logdir>/<run>/plugins/profile/<timestamp>/<host>.xplane.pb`,
    where the Profile tab finds them. Paths are confined to `logdir`.
    """
    if not logdir or run is None:
        return []
    root = os.path.realpath(logdir)
    run_dir = os.path.realpath(os.path.join(root, run))
    if os.path.commonpath([root, run_dir]) != root:
        return []
    return [
        {"capture": capture, "host": host}
        for _, capture, host in list_captures(run_dir)
    ]


def find_profile_runs(logdir, max_depth=6):
    """Runs under `logdir` that hold profiler captures, as run names.

    A run holds captures when `<run>/plugins/profile/<timestamp>/` exists
    with a trace in it; the search stops `max_depth` levels down.
    """
    if not logdir or not os.path.isdir(logdir):
        return []
    root = os.path.realpath(logdir)
    runs = []
    for directory, subdirectories, _ in os.walk(root):
        relative = os.path.relpath(directory, root)
        depth = 0 if relative == "." else relative.count(os.sep) + 1
        if "plugins" in subdirectories:
            run = "." if relative == "." else relative.replace(os.sep, "/")
            if list_profile_captures(logdir, run):
                runs.append(run)
        # Never descend into a run's plugin data, nor too deep.
        subdirectories[:] = [] if depth >= max_depth else sorted(
            name for name in subdirectories if name != "plugins"
        )
    return sorted(runs)
