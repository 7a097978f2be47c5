"""The wheel built from the repository carries the frontend and entry points,
and building it is clean."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory):
    """Builds a wheel from a copy of the checkout as a fresh clone has it (no
    `build/`, no `*.egg-info`, whose leftovers would hide what a first build
    does), with every warning shown. Returns `(wheel path, build output)`."""
    source = tmp_path_factory.mktemp("source") / "tb-devicecost"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "runs", "logs"
        ),
    )
    wheel_dir = tmp_path_factory.mktemp("wheel")
    # The build backend named in pyproject.toml, called as pip calls it, in a
    # process of its own; "-W always" shows its deprecation warnings too.
    completed = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])",
         str(wheel_dir)],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-3000:]
    [wheel] = list(wheel_dir.glob("tb_devicecost-*.whl"))
    return wheel, completed.stdout + completed.stderr


def test_wheel_contains_the_frontend_and_the_plugin_entry_point(built_wheel):
    wheel, _ = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    static = os.path.join(REPO, "tb_devicecost", "static")
    shipped = {
        "tb_devicecost/static/" + os.path.relpath(os.path.join(root, name), static).replace(os.sep, "/")
        for root, dirs, files in os.walk(static)
        if "__pycache__" not in root
        for name in files
    }
    assert "tb_devicecost/static/index.js" in shipped
    assert any(name.startswith("tb_devicecost/static/views/") for name in shipped)
    assert shipped <= names, sorted(shipped - names)
    assert not [name for name in names if "__pycache__" in name]
    [entry_points] = [name for name in names if name.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[tensorboard_plugins]" in text
    assert "devicecost = tb_devicecost.plugin_loader:DeviceCostPluginLoader" in text
    assert "tb-devicecost = tb_devicecost.cli:main" in text


def test_building_the_wheel_warns_about_no_package(built_wheel):
    """setuptools warns when a folder Python can import (the frontend's
    `static/`) ships as data of a package that does not list it."""
    _, output = built_wheel
    warnings = [
        line for line in output.splitlines()
        if "would be ignored" in line or "absent from" in line or "as data is deprecated" in line
    ]
    assert not warnings, "\n".join(warnings)
