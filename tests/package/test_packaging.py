"""The package as built from the repository: the sdist and the wheel carry
the frontend (kept once, in `frontend/`) and the entry points, building them
is clean, and an editable install serves the frontend in place."""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from tests.support import paths


REPO = paths.REPO
README = os.path.join(REPO, "README.md")
FRONTEND = os.path.join(REPO, "frontend")


def _frontend_files():
    """The frontend's files, relative to `frontend/`, with "/"."""
    return {
        os.path.relpath(os.path.join(root, name), FRONTEND).replace(os.sep, "/")
        for root, _, files in os.walk(FRONTEND)
        if "__pycache__" not in root
        for name in files
    }


def _build(hook, source, out_dir):
    """Runs a hook of the build backend named in pyproject.toml as pip calls
    it, in a process of its own, with every warning shown ("-W always").
    Returns `(the file built, the build's output)`."""
    completed = subprocess.run(
        [sys.executable, "-W", "always", "-c",
         f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))",
         str(out_dir)],
        cwd=source,
        capture_output=True,
        text=True,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-3000:]
    return out_dir / completed.stdout.strip().splitlines()[-1], output


@pytest.fixture(scope="module")
def clean_copy(tmp_path_factory):
    """A copy of the checkout as a fresh clone has it (no `build/`, no
    `*.egg-info`, whose leftovers would hide what a first build does)."""
    source = tmp_path_factory.mktemp("source") / "tb-devicecost"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "runs", "logs"
        ),
    )
    return source


@pytest.fixture(scope="module")
def built_sdist(clean_copy, tmp_path_factory):
    """`(sdist path, build output)`, built from the clean copy."""
    return _build("build_sdist", clean_copy, tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def built_wheel(built_sdist, tmp_path_factory):
    """`(wheel path, build output)`: the wheel built from the unpacked sdist,
    as pip and `python -m build` build it (the sdist's output included)."""
    sdist, sdist_output = built_sdist
    unpacked = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    [source] = list(unpacked.iterdir())
    wheel, output = _build("build_wheel", source, tmp_path_factory.mktemp("wheel"))
    return wheel, sdist_output + output


def test_the_sdist_holds_the_frontend_once(built_sdist):
    sdist, _ = built_sdist
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"frontend/" + name for name in _frontend_files()} <= names
    assert not [name for name in names if name.startswith("tb_devicecost/serving/static")]


def test_wheel_contains_the_frontend_and_the_plugin_entry_point(built_wheel):
    wheel, _ = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name for name in names if name.startswith("tb_devicecost/serving/static/")}
    assert "index.js" in _frontend_files()
    assert any(name.startswith("views/") for name in _frontend_files())
    # Every file of frontend/, at the same place under static/, and nothing else.
    assert shipped == {"tb_devicecost/serving/static/" + name for name in _frontend_files()}
    for name in shipped:
        with open(os.path.join(FRONTEND, name.removeprefix("tb_devicecost/serving/static/")), "rb") as source:
            assert zipfile.ZipFile(wheel).read(name) == source.read(), name
    assert not [name for name in names if "__pycache__" in name]
    [entry_points] = [name for name in names if name.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[tensorboard_plugins]" in text
    assert "devicecost = tb_devicecost.serving.plugin_loader:DeviceCostPluginLoader" in text
    assert "tb-devicecost = tb_devicecost.cli:main" in text


# What setuptools says when it would leave data out, when a folder of the
# package is not listed, or when a build step cannot run for an editable install.
SETUPTOOLS_WARNINGS = re.compile(
    r"would be ignored|absent from|as data is deprecated|Setuptools\w*Warning|incompatible with editable"
)


def test_building_warns_about_no_package(built_wheel):
    _, output = built_wheel
    warnings = [line for line in output.splitlines() if SETUPTOOLS_WARNINGS.search(line)]
    assert not warnings, "\n".join(warnings)


def test_an_editable_install_serves_the_checkouts_frontend(clean_copy, tmp_path):
    """`pip install -e .` (what `make test` and `make demo` use) builds no
    static copy: the plugin finds `frontend/` beside the package."""
    editable, output = _build("build_editable", clean_copy, tmp_path / "editable")
    assert not SETUPTOOLS_WARNINGS.search(output), output[-3000:]
    site_dir = tmp_path / "site"
    with zipfile.ZipFile(editable) as archive:
        archive.extractall(site_dir)
    # A Python that sees the copy through the editable wheel's own finder (and
    # not this checkout's: no `site`, whose .pth files would install it), and
    # then this environment's TensorBoard.
    import tensorboard

    probe = (
        "import site, sys; site.addsitedir(sys.argv[1]); sys.path.append(sys.argv[2]);"
        "from tb_devicecost.serving import plugin;"
        "print(plugin._static_file('/data/plugin/devicecost/static/views/dom.js'))"
    )
    completed = subprocess.run(
        [sys.executable, "-S", "-c", probe, str(site_dir),
         os.path.dirname(os.path.dirname(tensorboard.__file__))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == os.path.realpath(clean_copy / "frontend" / "views" / "dom.js")


def _readme_outside_the_tour():
    """The README without its generated tour (regenerated from a demo run)."""
    with open(README, encoding="utf-8") as readme:
        text = readme.read()
    return re.sub(r"<!-- tour:start -->.*?<!-- tour:end -->", "", text, flags=re.DOTALL)


def _pip_installs(text):
    """The targets of the `pip install` commands in `text`, in order."""
    return [
        match.group(1).strip("\"'")
        for match in re.finditer(r"pip install (?:-e )?(\"[^\"]+\"|'[^']+'|\S+)", text)
    ]


def _extras(target):
    match = re.search(r"\[([^\]]*)\]", target)
    return {name.strip() for name in match.group(1).split(",")} if match else set()


def _normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as archive:
        [name] = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def _requirements_by_extra(wheel):
    """`{extra: {distribution name}}` from the wheel's metadata."""
    by_extra = {}
    for line in _wheel_metadata(wheel).splitlines():
        match = re.match(r"Requires-Dist: ([A-Za-z0-9._-]+).*extra == ['\"]([^'\"]+)['\"]", line)
        if match:
            by_extra.setdefault(match.group(2), set()).add(_normalise(match.group(1)))
    return by_extra


def test_readme_installs_from_a_clone_until_the_package_is_published(built_wheel):
    """The package is not on PyPI: the first install command a reader meets
    installs the checkout, with extras the package has, and the index form
    is only offered for when it is published."""
    wheel, _ = built_wheel
    text = _readme_outside_the_tour()
    installs = _pip_installs(text)
    assert installs, "the README says nowhere how to install"
    first = installs[0]
    assert first.startswith((".", "/")), f"the first install command installs {first!r}, not the clone"
    provided = set(re.findall(r"^Provides-Extra: (\S+)", _wheel_metadata(wheel), flags=re.MULTILINE))
    for target in installs:
        assert _extras(target) <= provided, (target, provided)
    assert "git clone" in text.split(first)[0], "no clone before installing from it"
    for paragraph in text.split("\n\n"):
        if re.search(r"pip install [\"']?tb-devicecost", paragraph):
            assert "published" in paragraph, paragraph


def test_the_extra_the_readme_names_for_traces_installs_the_profile_tab(built_wheel):
    """The Profile tab that traces open in is a TensorBoard plugin of another
    distribution: the install command of the README's profiler section must
    pull it in."""
    from importlib import metadata

    providers = {
        _normalise(distribution.metadata["Name"])
        for distribution in metadata.distributions()
        for entry_point in distribution.entry_points
        if entry_point.group == "tensorboard_plugins" and entry_point.name == "profile"
    }
    # `make test` installs the profile extra, so the provider is here.
    assert providers, "no installed distribution provides TensorBoard's Profile tab"
    wheel, _ = built_wheel
    by_extra = _requirements_by_extra(wheel)
    text = _readme_outside_the_tour()
    section = re.search(r"^## [^\n]*profiler.*?(?=^## )", text, flags=re.MULTILINE | re.DOTALL | re.IGNORECASE)
    assert section, "the README has no section on the profiler"
    pulled = set()
    for target in _pip_installs(section.group(0)):
        for extra in _extras(target):
            pulled |= by_extra.get(extra, set())
    assert providers & pulled, (providers, by_extra)


@pytest.mark.slow
def test_ci_runs_make_test_and_make_test_fails_when_no_test_ran(tmp_path):
    """`.ci/run` is `make test`, and `make test` fails when pytest collects
    nothing (pytest's exit code 5), rather than passing with no test run."""
    make = shutil.which("make")
    venv_python = os.path.join(REPO, ".venv", "bin", "python")
    # `make test` made the .venv this suite runs in.
    assert make is not None and os.path.exists(venv_python)
    # A `make` that records how CI calls it.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "make").write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "make-args"}\n')
    (shim / "make").chmod(0o755)
    completed = subprocess.run(
        [os.path.join(REPO, ".ci", "run")],
        env=dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}"),
        capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "make-args").read_text().split() == ["test"]
    # The real target, its setup taken as done (-o: never remade).
    completed = subprocess.run(
        [make, "-o", ".venv/bin/python", "-o", ".venv/.installed", "-o", ".venv/.installed-test",
         "test", "ARGS=tests/package/test_packaging.py -k no_test_is_called_this -p no:cacheprovider"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode != 0, completed.stdout[-2000:]
    assert "no test" in (completed.stdout + completed.stderr)
