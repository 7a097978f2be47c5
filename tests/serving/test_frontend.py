"""The frontend (`frontend/`, shipped as `tb_devicecost/serving/static/`) is safe to
serve inside TensorBoard."""

import os
import re

from tests.support import paths


REPO = paths.REPO
FRONTEND = os.path.join(REPO, "frontend")


def _lines_matching(pattern):
    """`path:line: text` of each line of the frontend that `pattern` finds."""
    found = []
    for dirpath, _, filenames in os.walk(FRONTEND):
        for name in sorted(filenames):
            if not name.endswith((".js", ".css", ".html")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    if pattern.search(line):
                        found.append(f"{os.path.relpath(path, REPO)}:{lineno}: {line.strip()}")
    return found


def test_the_entry_module_exports_render():
    with open(os.path.join(FRONTEND, "index.js"), encoding="utf-8") as f:
        assert "export async function render()" in f.read()


def test_no_html_injection_sinks():
    offenders = _lines_matching(re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write"))
    assert not offenders, "\n".join(offenders)


def test_no_scripts_or_styles_from_other_hosts():
    # TensorBoard's content security policy blocks them; everything ships with
    # the package. (The SVG namespace URI is a name, not a fetch.)
    offenders = _lines_matching(re.compile(r"https?://(?!www\.w3\.org/2000/svg)"))
    assert not offenders, "\n".join(offenders)


def test_the_tab_names_each_component_as_the_vocabulary_does():
    """One name per quantity from the recorder to the pixel: the tab's
    components and their columns are `vocabulary`'s."""
    from tb_devicecost.format import vocabulary

    with open(os.path.join(FRONTEND, "views", "charts.js"), encoding="utf-8") as file:
        source = file.read()
    pairs = re.findall(r"\{key: '(\w+)', column: '(\w+)'", source)
    assert pairs == [
        (name, vocabulary.component_column(name)) for name in vocabulary.COMPONENTS
    ]


def test_the_glossary_is_linked_and_the_same_as_the_docs():
    """docs/READING.md, "How to read the tab": at most ten terms, linked
    from the README and from the tab's header, which serves the same text
    beside its modules (frontend/READING.txt)."""
    with open(os.path.join(REPO, "docs", "READING.md"), encoding="utf-8") as f:
        reading = f.read()
    with open(os.path.join(FRONTEND, "READING.txt"), encoding="utf-8") as f:
        assert f.read() == reading, "copy docs/READING.md to frontend/READING.txt"
    assert reading.startswith("# How to read the tab\n")
    terms = re.findall(r"^\d+\. \*\*(.+?)\*\*", reading, re.M)
    assert 5 <= len(terms) <= 10, terms
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        assert "(docs/READING.md)" in f.read()
    with open(os.path.join(FRONTEND, "index.js"), encoding="utf-8") as f:
        assert "new URL('./READING.txt', import.meta.url)" in f.read()


def test_warm_up_is_described_in_the_same_words_everywhere():
    """The tab's WARMUP_TEXT is the renderers' (issue 23): one description,
    matching the JSON's warmup_steps (one step a fit, two where TensorFlow
    builds its step function)."""
    from tb_devicecost.cli.renderers import common

    with open(os.path.join(FRONTEND, "views", "common.js"), encoding="utf-8") as f:
        source = f.read()
    match = re.search(r"export const WARMUP_TEXT = ((?:\"[^\"]*\"\s*\+?\s*)+);", source)
    assert match, "WARMUP_TEXT not found"
    text = "".join(re.findall(r"\"([^\"]*)\"", match.group(1)))
    assert text == common.WARMUP_TEXT
