"""The package's sub-packages are its architecture, and imports run one way.

`docs/ARCHITECTURE.md` draws the floors; this holds the code to them: each
sub-package imports only the sub-packages below it, so none imports one
beside or above it (the reading never asks the analysis, the format never
asks anyone), and nothing but the public surface sits at the top level.
"""

import ast
import os

import tb_devicecost

PACKAGE = os.path.dirname(tb_devicecost.__file__)

# What each sub-package may import of ours, besides itself: the floors of
# docs/ARCHITECTURE.md, from the bottom up.
MAY_IMPORT = {
    "format": set(),
    "traces": {"format"},
    "reading": {"format"},
    "analysis": {"format"},
    # Above the analysis: it says what the analysis decided.
    "words": {"analysis", "format"},
    "backends": {"traces", "format"},
    "recording": {"backends", "traces", "format", "version"},
    "serving": {"reading", "words", "analysis", "format"},
    "cli": {"recording", "reading", "words", "analysis", "format", "version"},
}
# The top level: the public surface, `python -m tb_devicecost` and the version.
TOP_LEVEL = {"__init__.py", "__main__.py", "version.py"}


def _imports_of_ours(path):
    """The first part below `tb_devicecost` of each module `path` imports."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(name.split(".")[1] for name in names
                     if name.startswith("tb_devicecost."))
    return found


def _modules():
    """`{sub-package: [path of each of its modules]}`."""
    modules = {}
    for name in sorted(os.listdir(PACKAGE)):
        folder = os.path.join(PACKAGE, name)
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            continue
        for root, _, files in os.walk(folder):
            modules.setdefault(name, []).extend(
                os.path.join(root, file) for file in sorted(files)
                if file.endswith(".py") and not file.endswith("_pb2.py"))
    return modules


def test_the_top_level_holds_only_the_public_surface_and_the_sub_packages():
    files = {name for name in os.listdir(PACKAGE) if name.endswith(".py")}
    assert files == TOP_LEVEL
    assert set(_modules()) == set(MAY_IMPORT)


def test_each_sub_package_imports_only_those_below_it():
    for package, paths in _modules().items():
        for path in paths:
            outside = _imports_of_ours(path) - {package}
            assert outside <= MAY_IMPORT[package], (os.path.relpath(path, PACKAGE), outside)


def test_the_floors_run_one_way():
    # No two sub-packages may import each other, directly or through others.
    def below(package, seen=()):
        found = set()
        for other in MAY_IMPORT.get(package, ()):
            if other in MAY_IMPORT and other not in seen:
                found |= {other} | below(other, seen + (package,))
        return found

    for package in MAY_IMPORT:
        assert package not in below(package), package


def test_each_module_holds_one_responsibility_s_worth_of_lines():
    """Issue 24: no module of the package over 600 lines (generated code
    aside), no script of the frontend over 450."""
    long = [
        (os.path.relpath(path, PACKAGE), lines)
        for paths in _modules().values() for path in paths
        if (lines := _line_count(path)) > 600
    ]
    frontend = os.path.join(os.path.dirname(PACKAGE), "frontend")
    for root, _, files in os.walk(frontend):
        long += [
            (os.path.relpath(os.path.join(root, file), frontend), lines)
            for file in files
            if file.endswith(".js") and (lines := _line_count(os.path.join(root, file))) > 450
        ]
    assert not long, long


def _line_count(path):
    with open(path, encoding="utf-8") as source:
        return sum(1 for _ in source)
