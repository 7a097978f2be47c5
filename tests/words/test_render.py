"""`tb_devicecost.words.render`: every `Reason` the analysis sets is said,
by one module, and a rendered document holds no `Reason` (issue 37)."""

import ast
import glob
import os

from tb_devicecost import analysis
from tb_devicecost.analysis.reasons import reason
from tb_devicecost.words.render import SAYS
from tb_devicecost.words.render import render
from tb_devicecost.words.render import say


def _strings(node, assigned):
    """The codes an argument can be: a string, either string of a
    conditional, or those assigned to a name."""
    if isinstance(node, ast.Constant):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body, assigned) | _strings(node.orelse, assigned)
    if isinstance(node, ast.Name):
        return set().union(*(_strings(value, {}) for value in assigned.get(node.id, ())))
    raise AssertionError(f"a code that is not a string: {ast.dump(node)}")


def _codes_set_by_the_analysis():
    """Every code the analysis passes to `reason(...)` (or its alias `said`)."""
    codes = set()
    for path in glob.glob(os.path.join(os.path.dirname(analysis.__file__), "*.py")):
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        assigned = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                assigned.setdefault(node.targets[0].id, []).append(node.value)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("reason", "said")):
                codes |= _strings(node.args[0], assigned)
    return codes


def test_every_code_the_analysis_sets_has_its_sentence():
    codes = _codes_set_by_the_analysis()
    assert len(codes) > 50
    assert codes <= set(SAYS), codes - set(SAYS)


def test_a_rendered_document_holds_sentences_only():
    # A reason quoting another: the inner one is said first.
    nested = reason("workers_unpredicted", kind="processes",
                    estimate=reason("finding_speedup", finding="input_bound", speedup=2.0))
    document = render({"rows": [{"why": nested}], "pair": (1, nested)})
    assert document == {
        "rows": [{"why": say(nested)}],
        "pair": [1, say(nested)],
    }
    assert "the input_bound finding's 2.00x" in document["rows"][0]["why"]


def test_a_sentence_quoting_a_run_name_keeps_its_bidirectional_controls_escaped():
    # Issue 25: a run name with U+202E is written as its escape in a sentence.
    said = render(
        {"reason": reason("sweep_no_steady_step", run="a\u202eb/train")})
    assert said["reason"] == "a\\u202eb/train has no steady-state step, so it is not a point of the sweep."
