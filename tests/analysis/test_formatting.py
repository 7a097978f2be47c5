"""`tb_devicecost.analysis.formatting`: one rule for every figure, as the tab's."""

import ast

import pytest

from tb_devicecost.analysis import formatting


@pytest.mark.parametrize("value, shown", [
    (0.0625, "0.063"), (2.125, "2.13"), (12.25, "12.3"), (1234.5, "1,235"),
    (1.005, "1.00"), (0.1884, "0.188"), (41.24, "41.2"), (1823.2, "1,823"),
    (0.0, "0.000"), (None, "\u2014"), (float("nan"), "\u2014"),
])
def test_milliseconds_round_half_away_from_zero_like_the_tab(value, shown):
    # JavaScript's toFixed rounds the exact binary value, ties away from
    # zero; Python's format would give 0.062, 2.12, 12.2 and 1,234.
    assert formatting.fmt_ms(value) == shown


def test_one_symbol_for_a_missing_value():
    assert formatting.MISSING == "\u2014"
    for function in (formatting.fmt_ms, formatting.fmt_share, formatting.fmt_count,
                     formatting.fmt_speedup, formatting.fmt_signed_ms,
                     formatting.fmt_ms_unit):
        assert function(None) == "\u2014", function
    assert formatting.fmt_signed_ms(-0.0001) == "+0.000"
    assert formatting.fmt_signed_ms(-1.25) == "-1.25"
    assert formatting.fmt_speedup(0.455) == "0.46x"
    assert formatting.fmt_count(9470.5) == "9,471"


@pytest.mark.parametrize(
    "share, shown",
    [(0.1496, "14%"), (0.1996, "19%"), (0.4997, "49%"), (0.2, "20%"), (0.29, "29%"),
     (0.042, "4.2%")],
)
def test_shares_never_round_up_across_a_threshold(share, shown):
    assert formatting.fmt_share(share) == shown


def test_formatting_imports_only_the_standard_library():
    with open(formatting.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    assert names <= {"decimal", "math", "re"}, names
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]


@pytest.mark.parametrize("value, shown", [
    (0.333, "0.333"), (2.0, "2.00"), (12.34, "12.3"), (17.25, "17.3"), (1234.5, "1,235"),
    (0.0004, "0.000400"), (0.0, "0"), (None, "\u2014"),
])
def test_a_rate_keeps_its_significant_digits(value, shown):
    # Issue 35, item 9: a small rate never reads 0.
    assert formatting.fmt_rate(value) == shown
