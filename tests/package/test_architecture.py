"""The package's sub-packages are its architecture, and imports run one way.

`docs/ARCHITECTURE.md` draws the floors; this holds the code to them: each
sub-package imports only the sub-packages below it, so none imports one
beside or above it (the reading never asks the analysis, the format never
asks anyone), and nothing but the public surface sits at the top level.
"""

import ast
import os
import re

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


# Issue 37: the analysis decides and `words/` says. A string of three words
# in a row is a sentence (or part of one); identifiers, units and format
# specs never hold one.
_SENTENCE = re.compile(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+")
_BACKEND_NAMES = {"tensorflow", "jax", "torch"}


def _tree(path):
    with open(path, encoding="utf-8") as source:
        return ast.parse(source.read())


def _allowed_strings(tree):
    """Docstrings, and the messages of exceptions raised (a `ValueError`
    for a caller's mistake, an arithmetic guard caught by the caller):
    Python's errors, for programmers, never a user's words."""
    allowed = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)):
            allowed.add(id(body[0].value))
        if isinstance(node, ast.Raise) and node.exc is not None:
            allowed.update(id(inner) for inner in ast.walk(node.exc))
    return allowed


def test_the_analysis_holds_no_sentence():
    """Every sentence a user reads is `words/`'s: the analysis returns
    codes and figures (`reasons.Reason`, typed results)."""
    found = []
    for path in _modules()["analysis"]:
        tree = _tree(path)
        allowed = _allowed_strings(tree)
        found += [
            (os.path.relpath(path, PACKAGE), node.lineno, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in allowed and _SENTENCE.search(node.value)
        ]
    assert not found, found


def test_words_import_no_threshold():
    """The analysis decides by its thresholds; `words/` quotes those a
    result carries (`Finding.limits`) and imports none."""
    for path in _modules()["words"]:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not [name for name in names if name.startswith(
                "tb_devicecost.analysis.thresholds")], os.path.relpath(path, PACKAGE)


def test_no_backend_name_is_compared_outside_the_backends():
    """What differs per backend is `format/backend_facts.py`'s (and the
    `Backend`s'): no module outside `backends/` compares a backend name.
    Whether a module is imported (`"tensorflow" in sys.modules`) is not a
    backend's name."""
    found = []
    for package, paths in _modules().items():
        if package == "backends":
            continue
        for path in paths:
            for node in ast.walk(_tree(path)):
                if not isinstance(node, ast.Compare):
                    continue
                if any(isinstance(side, ast.Attribute) and side.attr == "modules"
                       for side in node.comparators):
                    continue
                for side in [node.left] + node.comparators:
                    values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                    found += [
                        (os.path.relpath(path, PACKAGE), node.lineno, value.value)
                        for value in values
                        if isinstance(value, ast.Constant) and value.value in _BACKEND_NAMES
                    ]
    assert not found, found
