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
