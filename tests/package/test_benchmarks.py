"""The benchmarks are few, listed, and each answers `--help`.

`benchmarks/README.md` gives each one's measure, target, command and where
its output is kept; these tests hold the drawer to that: at most eight
files, each with its row, each script's `--help` cheap (no framework
imported to print it), the README's and the Makefile's commands using only
options the script has, and every script the docs or tests cite either
present or cited at the commit that had it.
"""

import glob
import os
import re
import subprocess
import tempfile
import sys

import pytest

from tests.support import paths

BENCHMARKS = os.path.join(paths.REPO, "benchmarks")
README = os.path.join(BENCHMARKS, "README.md")
FILES = sorted(name for name in os.listdir(BENCHMARKS)
               if name != "README.md" and not name.startswith((".", "__")))
PYTHON_SCRIPTS = [name for name in FILES if name.endswith(".py")
                  and "__main__" in open(os.path.join(BENCHMARKS, name), encoding="utf-8").read()]
HEAVY = ("tensorflow", "keras", "jax", "torch")
# Runs a script's `--help` as `python script --help` would, then says which
# heavy frameworks it imported on the way.
HELP = """
import runpy, sys
sys.argv = [sys.argv[1], "--help"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as exit:
    code = exit.code or 0
else:
    code = 0
print("IMPORTED", sorted(name for name in {heavy} if name in sys.modules))
sys.exit(code)
""".format(heavy=HEAVY)


def _readme():
    with open(README, encoding="utf-8") as handle:
        return handle.read()


def _help(name):
    return subprocess.run(
        [sys.executable, "-c", HELP, os.path.join(BENCHMARKS, name)],
        cwd=paths.REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=paths.REPO),
    )


def test_at_most_eight_benchmarks_each_with_its_row():
    assert 0 < len(FILES) <= 8, FILES
    rows = re.findall(r"^\| `([^`]+)` \|(.*)$", _readme(), flags=re.MULTILINE)
    listed = {name: cells for name, cells in rows}
    assert sorted(listed) == FILES
    for name in PYTHON_SCRIPTS + ["record_gpu.sh"]:
        measure, target, command, output = [cell.strip() for cell in listed[name].split("|")[:4]]
        assert measure and target and output, name
        assert f"benchmarks/{name}" in command, name


@pytest.mark.parametrize("name", PYTHON_SCRIPTS)
def test_a_benchmark_says_what_it_measures_and_answers_help_without_a_framework(name):
    with open(os.path.join(BENCHMARKS, name), encoding="utf-8") as handle:
        source = handle.read()
    assert source.startswith('"""'), f"{name} has no module docstring"
    completed = _help(name)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "usage:" in completed.stdout
    assert "IMPORTED []" in completed.stdout, completed.stdout[-300:]


def test_the_recording_script_is_valid_bash_and_answers_help():
    script = os.path.join(BENCHMARKS, "record_gpu.sh")
    completed = subprocess.run(["bash", "-n", script], capture_output=True, text=True, timeout=30)
    assert completed.returncode == 0, completed.stderr
    with tempfile.TemporaryDirectory() as scratch:
        # Run where nothing can be installed or recorded: --help must do
        # neither, and make no output folder of its name.
        completed = subprocess.run(["bash", script, "--help"], capture_output=True,
                                   text=True, timeout=30, cwd=scratch)
        assert completed.returncode == 0, completed.stderr
        assert "bash benchmarks/record_gpu.sh" in completed.stdout
        assert os.listdir(scratch) == []


def _commands():
    """Every script and its options in the README's table and the
    Makefile's list."""
    rows = re.findall(r"^\| `[^`]+` \|(.*)$", _readme(), flags=re.MULTILINE)
    text = "\n".join(row.split("|")[2] for row in rows)
    with open(os.path.join(paths.REPO, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    found = re.findall(r"benchmarks/(\w+\.py)((?: [^`;|\n]*)?)", text)
    found += re.findall(r'"(\w+\.py)((?: [^"]*)?)"', makefile)
    return found


def test_the_readme_and_makefile_commands_use_options_the_scripts_have():
    commands = _commands()
    assert len(commands) >= 8
    helps = {}
    for name, arguments in commands:
        assert name in PYTHON_SCRIPTS, name
        if name not in helps:
            helps[name] = _help(name).stdout
        for option in re.findall(r"(?<!\S)(--[\w-]+)", arguments):
            assert option in helps[name], f"{name} has no {option}"


def test_every_benchmark_cited_exists_or_is_cited_at_a_commit():
    sources = [os.path.join(paths.REPO, name) for name in ("README.md", "Makefile")]
    sources += glob.glob(os.path.join(paths.REPO, "docs", "*.md"))
    sources += [path for path in glob.glob(os.path.join(paths.TESTS, "**", "*.py"), recursive=True)
                if os.sep + "data" + os.sep not in path]
    missing = []
    for path in sources:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for match in re.finditer(r"benchmarks/(\w+\.(?:py|sh))`?", text):
            after = text[match.end():match.end() + 40]
            if match.group(1) not in FILES and "at commit" not in after:
                missing.append(f"{os.path.relpath(path, paths.REPO)}: {match.group(0)}")
    assert not missing
