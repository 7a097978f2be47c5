"""The shipped frontend (tb_devicecost/static/) is current and safe."""

import importlib.util
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC = os.path.join(REPO, "tb_devicecost", "static")
BUILD = os.path.join(REPO, "frontend", "build.py")


def _static_files():
    for dirpath, _, filenames in os.walk(STATIC):
        for name in filenames:
            if name.endswith((".js", ".css", ".html")):
                yield os.path.join(dirpath, name)


def test_static_copy_is_up_to_date():
    result = subprocess.run(
        [sys.executable, BUILD, "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, (
        "tb_devicecost/static/ differs from frontend/; run "
        "`python frontend/build.py`.\n" + result.stdout + result.stderr
    )


def test_static_copy_has_the_entry_module():
    index = os.path.join(STATIC, "index.js")
    assert os.path.isfile(index)
    with open(index, encoding="utf-8") as f:
        assert "export async function render()" in f.read()


def test_check_names_the_file_that_differs(tmp_path):
    spec = importlib.util.spec_from_file_location("_frontend_build", BUILD)
    frontend_build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(frontend_build)
    src = tmp_path / "src"
    dst = tmp_path / "dst"
    (src / "views").mkdir(parents=True)
    (src / "index.js").write_text("export async function render() {}\n")
    (src / "views" / "a.js").write_text("export const a = 1;\n")
    assert frontend_build.differences(str(src), str(dst)) == [
        ("index.js", "missing"),
        ("views/a.js", "missing"),
    ]
    frontend_build.build(str(src), str(dst))
    assert frontend_build.differences(str(src), str(dst)) == []
    (src / "views" / "a.js").write_text("export const a = 2;\n")
    (dst / "old.js").write_text("")
    assert frontend_build.differences(str(src), str(dst)) == [
        ("views/a.js", "differs"),
        ("old.js", "extra"),
    ]
    frontend_build.build(str(src), str(dst))
    assert frontend_build.differences(str(src), str(dst)) == []
    assert not (dst / "old.js").exists()


def test_no_html_injection_sinks():
    sinks = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write")
    offenders = []
    for path in _static_files():
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if sinks.search(line):
                    offenders.append(f"{os.path.relpath(path, REPO)}:{lineno}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_no_scripts_or_styles_from_other_hosts():
    # TensorBoard's content security policy blocks them; everything ships with
    # the package. (The SVG namespace URI is a name, not a fetch.)
    remote = re.compile(r"https?://(?!www\.w3\.org/2000/svg)")
    offenders = []
    for path in _static_files():
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if remote.search(line):
                    offenders.append(f"{os.path.relpath(path, REPO)}:{lineno}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
