"""The report as JSON: the stable machine interface documented in `docs/CLI.md`."""

import json


def render(report):
    """The report, indented by 2; NaN is refused (the analysis never writes one)."""
    return json.dumps(report, indent=2, allow_nan=False)
