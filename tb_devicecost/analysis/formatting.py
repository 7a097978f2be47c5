"""How every figure is written: one rule for the report, the findings and the tab.

`tb_devicecost.analysis` writes its findings and explanations with these
functions, `tb_devicecost.cli.renderers` the report's tables, and the Device
Cost tab's JavaScript (`frontend/format.js`) mirrors them exactly, so one
number reads the same wherever it is shown. The rule, precisely:

Rounding. "Half away from zero on the exact binary value": a number is
rounded as the float it is (0.0625 is exactly 1/16, so it is a tie and
becomes 0.063; 1.005 is stored as 1.00499999999999989..., so it becomes
1.00). This is what JavaScript's `Number.prototype.toFixed` does, and what
`Math.round` does for the non-negative values it is used for here. Python's
`format()` would round ties to even instead, so this module rounds with
`decimal.ROUND_HALF_UP` on `Decimal(value)`.

Milliseconds (`fmt_ms`). Decimals by the magnitude of the unrounded value:
below 1: 3 decimals (`0.188`); from 1: 2 (`3.74`); from 10: 1 (`41.2`);
from 100: none, with a comma every three digits (`1,823`). The tier is
chosen before rounding, so 9.996 reads `10.00` and 99.96 reads `100.0`.
Zero is `0.000`. A negative value is its magnitude so written after `-`.

Signed milliseconds (`fmt_signed_ms`). `+` or `-` then `fmt_ms` of the
magnitude; `-` only when the value is negative and its written magnitude is
not zero (`+0.000`, never `-0.000`).

Shares (`fmt_share`). A share of 1 as a percentage, truncated (floored),
never rounded, so that a printed share never crosses a threshold that the
share itself did not (14.96% reads `14%`, not `15%`, beside a 15% rule):
`p = 100 * value + 1e-9` (in float arithmetic; the 1e-9 absorbs the float
error of e.g. `100 * 0.29 = 28.999999999999996`); below 10, with one
decimal `floor(p * 10) / 10` (`4.2%`), the decimal left out when it is 0
(`4%`); from 10, `floor(p)` (`73%`). So `0.0004` reads `0%`.

Counts and rates (`fmt_count`). Rounded to a whole number, a comma every
three digits: `36,931`.

Speedups (`fmt_speedup`). Two decimals and `x`: `0.46x`, `1.00x`.

Missing values. Every function writes `None` (and NaN or an infinity) as
`MISSING`, the em dash `—` (U+2014), the one symbol for a missing value in
every table, sentence and view. (`tb-devicecost report` turns it into `-`
only on a terminal that cannot show it.)
"""

import decimal
import math
import re

MISSING = "\u2014"

_SHARE_EPSILON = 1e-9


def _finite(value):
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _round(value, decimals):
    """`value` rounded half away from zero, written with `decimals` and commas."""
    exact = decimal.Decimal(value)
    quantum = decimal.Decimal(1).scaleb(-decimals)
    rounded = exact.quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    return f"{rounded:,.{decimals}f}"


def _ms_decimals(magnitude):
    if magnitude >= 100:
        return 0
    if magnitude >= 10:
        return 1
    if magnitude >= 1:
        return 2
    return 3


def fmt_ms(value):
    """`0.188`, `3.74`, `41.2`, `1,823` (milliseconds, without the unit)."""
    value = _finite(value)
    if value is None:
        return MISSING
    magnitude = abs(value)
    text = _round(magnitude, _ms_decimals(magnitude))
    return "-" + text if value < 0 and _nonzero(text) else text


def fmt_ms_unit(value):
    """`fmt_ms` with ` ms`, or `MISSING` alone."""
    text = fmt_ms(value)
    return text if text == MISSING else text + " ms"


def fmt_signed_ms(value):
    """`+1.20`, `-0.300`, `+0.000`: a difference in milliseconds."""
    value = _finite(value)
    if value is None:
        return MISSING
    text = fmt_ms(abs(value))
    return ("-" if value < 0 and _nonzero(text) else "+") + text


def _nonzero(text):
    return any(character in "123456789" for character in text)


def fmt_share(value):
    """`73%`, `4.2%`, `4%`: a share of 1 as a percentage, floored."""
    value = _finite(value)
    if value is None:
        return MISSING
    percent = 100.0 * value + _SHARE_EPSILON
    if percent < 10:
        tenths = math.floor(percent * 10)
        if tenths % 10:
            return f"{tenths / 10:.1f}%"
    return f"{math.floor(percent):.0f}%"


def fmt_count(value):
    """`36,931`: a count or a rate, rounded to a whole number."""
    value = _finite(value)
    if value is None:
        return MISSING
    text = _round(abs(value), 0)
    return "-" + text if value < 0 and _nonzero(text) else text


# Decimals of a rate below 1 (samples/s), by magnitude: three significant
# digits, the bounds written as literals so the tab compares alike.
_RATE_DECIMALS = ((0.1, 3), (0.01, 4), (0.001, 5), (1e-4, 6), (1e-5, 7), (1e-6, 8))


def fmt_rate(value):
    """`36,931`, `12.3`, `0.333`: a rate (samples/s), whole from 100 on,
    else to three significant digits: a small rate never reads `0`."""
    value = _finite(value)
    if value is None:
        return MISSING
    magnitude = abs(value)
    if magnitude >= 100 or value == 0:
        return fmt_count(value)
    decimals = 1 if magnitude >= 10 else 2 if magnitude >= 1 else next(
        (places for bound, places in _RATE_DECIMALS if magnitude >= bound), 9)
    text = _round(magnitude, decimals)
    return "-" + text if value < 0 else text


def fmt_speedup(value):
    """`0.46x`: how many times as fast."""
    value = _finite(value)
    if value is None:
        return MISSING
    return _round(value, 2) + "x" if value >= 0 else "-" + _round(-value, 2) + "x"


# Unicode's bidirectional embeddings, overrides and isolates (U+202A-202E,
# U+2066-2069): inside a sentence, one in a run name would reorder the rest.
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def confined(text):
    """`text` (a run name, a device: a string from the recorded data) with
    every bidirectional control written as its escape (`\\u202e`), as the
    CLI prints it: set inside a sentence, it can no longer reverse the
    words after it. The analysis writes user strings into its messages so."""
    return _BIDI_CONTROLS.sub(lambda match: f"\\u{ord(match.group()):04x}", str(text))


# Keys whose strings are sentences that may quote the recorded data (a run
# name, a device): their bidirectional controls are written as escapes.
_SENTENCES = frozenset({
    "headline", "message", "fix", "reason", "explanation", "problems", "text", "basis",
    "baseline_reason",
})


def json_ready(value, key=None):
    """Plain JSON types only: numpy scalars unwrapped, NaN and inf as `None`.

    Whatever a run's documents held, what leaves the analysis is JSON that
    `json.dumps(..., allow_nan=False)` writes; in its sentences (a finding's
    `message`, a `reason`, ...) a bidirectional control quoted from a run
    name is an escape (`formatting.confined`), so it cannot reverse the
    words after it wherever the sentence is shown.
    """
    # The plain types first, by exact type: a report is mostly numbers in
    # lists, and the tab converts one for each request.
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int or kind is bool or value is None:
        return value
    if kind is str:
        return confined(value) if key in _SENTENCES else value
    if kind is dict:
        return {str(name): json_ready(item, name) for name, item in value.items()}
    if kind is list or kind is tuple:
        return [json_ready(item, key) for item in value]
    return _json_ready_other(value, key)


def _json_ready_other(value, key):
    """`json_ready` of what is not a plain type: subclasses, NumPy scalars."""
    if isinstance(value, dict):
        return {str(name): json_ready(item, name) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item, key) for item in value]
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # A NumPy scalar (this module imports no NumPy).
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and key in _SENTENCES:
        return confined(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
