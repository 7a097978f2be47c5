"""`tb_devicecost.format.readable`: the numbers both sides trust, and when
the reader may take a run's numbers from its aggregate."""

import math

import pytest

from tb_devicecost.analysis import step_numbers
from tb_devicecost.format import readable


def _aggregate(**overrides):
    components = {
        name: {"count": 10, "sum_ms": 12.5}
        for name in ("data_wait", "compute", "host_overhead", "step")
    }
    components.update(overrides)
    return {"components": components, "steps": 10}


@pytest.mark.parametrize("value", [None, True, "x", [], math.nan, math.inf, -1.0,
                                   1e-310, 1e308, 10 ** 400])
def test_implausible_numbers_are_none(value):
    assert readable.as_number(value) is None


@pytest.mark.parametrize("value", [0, 0.0, 1e-9, 3, "2.5", 1e15])
def test_plausible_numbers_are_floats(value):
    assert readable.as_number(value) == float(value)


@pytest.mark.parametrize("aggregate, usable", [
    (None, False),
    ([], False),
    ({}, False),
    ({"components": []}, False),
    (_aggregate(), True),
    (_aggregate(compute={"count": 10, "sum_ms": math.nan}), False),
    (_aggregate(step={"count": -1, "sum_ms": 1.0}), False),
    (_aggregate(host_overhead="not an object"), False),
    (_aggregate(data_wait={"count": 10}), False),
])
def test_the_reader_and_the_analysis_agree_on_a_usable_aggregate(aggregate, usable):
    assert readable.aggregate_usable(aggregate) is usable
    problems = []
    numbers = step_numbers.numbers_from_aggregate(aggregate, problems)
    assert (numbers is not None) is usable


def test_unreadable_components_in_the_vocabulary_order():
    aggregate = _aggregate(step={"count": 1, "sum_ms": -2}, data_wait={})
    assert readable.unreadable_components(aggregate["components"]) == ["data_wait", "step"]
