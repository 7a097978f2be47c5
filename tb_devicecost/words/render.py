"""Every `reasons.Reason` of a result said: the one place codes become words.

The analysis returns its results with a `Reason` (a code and its figures)
wherever a sentence goes; `render` walks a result and sets each one's
sentence in its place, from the `SAYS` table of the module that words it.
"""

from tb_devicecost.analysis.formatting import json_ready
from tb_devicecost.analysis.reasons import Reason
from tb_devicecost.words import comparisons
from tb_devicecost.words import estimates
from tb_devicecost.words import jobs
from tb_devicecost.words import phrases
from tb_devicecost.words import predictions
from tb_devicecost.words import problems
from tb_devicecost.words import sweeps
from tb_devicecost.words import tried

_TABLES = (comparisons.SAYS, estimates.SAYS, jobs.SAYS, phrases.SAYS, predictions.SAYS,
           problems.SAYS, sweeps.SAYS, tried.SAYS)
# Each code, and the function that says it from its figures: one module a code.
SAYS = {code: function for table in _TABLES for code, function in table.items()}
if len(SAYS) != sum(len(table) for table in _TABLES):
    raise ImportError("A reason code is said by two modules of tb_devicecost.words.")


def say(found):
    """The sentence of the `Reason` `found` (its figures' own reasons said first)."""
    figures = {name: say(value) if isinstance(value, Reason) else value
               for name, value in found.figures.items()}
    return SAYS[found.code](**figures)


def render(value, key=None):
    """`value` (a result: dicts, lists, values) with every `Reason` said,
    JSON-ready (`formatting.json_ready`: its sentences' bidirectional
    controls escaped), in one walk."""
    if isinstance(value, dict):
        return {str(name): render(item, name) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [render(item, key) for item in value]
    if isinstance(value, Reason):
        return render(say(value), key)
    return json_ready(value, key)
