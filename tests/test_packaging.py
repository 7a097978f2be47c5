"""The wheel built from the repository carries the frontend and entry points."""

import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_wheel_contains_the_frontend_and_the_plugin_entry_point(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", REPO, "--no-deps",
         "--no-build-isolation", "--quiet", "--wheel-dir", str(tmp_path)],
        check=True,
        cwd=tmp_path,
    )
    [wheel] = list(tmp_path.glob("tb_devicecost-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    static = os.path.join(REPO, "tb_devicecost", "static")
    shipped = {
        "tb_devicecost/static/" + os.path.relpath(os.path.join(root, name), static).replace(os.sep, "/")
        for root, _, files in os.walk(static)
        for name in files
    }
    assert "tb_devicecost/static/index.js" in shipped
    assert any(name.startswith("tb_devicecost/static/views/") for name in shipped)
    assert shipped <= names, sorted(shipped - names)
    [entry_points] = [name for name in names if name.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[tensorboard_plugins]" in text
    assert "devicecost = tb_devicecost.plugin_loader:DeviceCostPluginLoader" in text
    assert "tb-devicecost = tb_devicecost.cli:main" in text
