"""`Reason`: what a sentence will say, without its words.

The analysis decides and `tb_devicecost.words` says: where a result carries
a sentence for its reader (a comparison's explanation, why a prediction is
not made, what a fix would buy), the analysis sets a `Reason` in its place,
a short code and the figures the sentence quotes. `words.render` turns
every `Reason` of a result into its sentence, the same words wherever the
result is shown (the report, the tab's routes, `try_fixes`).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Reason:
    """A sentence to be said: its `code` and the `figures` it quotes.

    Attributes:
        code: What is said, a short identifier (`"workers_unpredicted"`);
            `words.render` holds the sentence of each code.
        figures: `{name: value}`, the numbers, names and other reasons the
            sentence quotes, as the analysis found them.
    """

    code: str
    figures: dict

    def __repr__(self):
        return f"Reason({self.code!r}, {sorted(self.figures)!r})"


def reason(code, **figures):
    """The `Reason` of `code` quoting `figures`."""
    return Reason(code, figures)
