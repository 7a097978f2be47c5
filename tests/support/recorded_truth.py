"""Runs that `truth_fits.py` recorded on a GPU, read back as the tab does."""

import json
import os

from tb_devicecost import words
from tb_devicecost.reading import reader


def read_recorded(directory, backend):
    """`(facts, records, runs)` of `directory/<backend>`: the facts the
    script printed (`<backend>.json`, its last line), the records, and the
    report's run objects."""
    with open(os.path.join(directory, f"{backend}.json"), encoding="utf-8") as handle:
        facts = json.loads(handle.read().strip().splitlines()[-1])
    records = reader.read_runs(reader.local_provider(os.path.join(directory, backend)))
    return facts, records, words.build_report(records)["runs"]
