"""Turns recorded runs into numbers, a verdict with fixes, and a comparison.

Pure functions over the `RunRecord`s of `tb_devicecost.reading.reader` (or plain
dicts with the same fields): the TensorBoard plugin and
`tb-devicecost report` both call them (through `tb_devicecost.words`), so
the tab and the command can never disagree. Nothing here imports Keras,
TensorFlow or TensorBoard, holds a sentence or compares a backend's name
(`format/backend_facts.py` says what differs per backend): results are
typed, or plain data with a `reasons.Reason` where words go.

One module per decision, in the order data flows through them (each imports
only those before it):

- `record`: reads a run's raw documents once into a typed `RunData`
  (`run_data`), through the only code that checks raw values (`guards`):
  step numbers (`step_numbers`), where the step ran (`placement_summary`),
  trace
  windows (`trace_windows`), the run's sweep (`sweep_marks`), a process's
  place in its job, distribution and steady steps (`process_steps`); run
  and device names in `names`. Nothing after it reads a `RunRecord`.
- `sweeps`: runs of one batch-size sweep, each device's fixed and
  per-sample cost, and where one device overtakes the other.
- `verdicts`: `judge(RunData) -> Verdict`, the verdict and the findings
  (`Finding`: ids, severities, the figures judged; `docs/VERDICTS.md`), by
  the thresholds of `thresholds`, over the run's per-step figures
  (`run_figures`, with the data wait set apart as the cost of a ready
  batch: `data_wait`); the device side of the trace windows
  (`device_side`), what a fix would buy (`estimates`).
- `compare`: speedups and differences against a baseline, and why in
  numbers (`scaling`, `parts`); which run is compared with which in
  `pairing`.
- `workers`: the processes of a distributed job (`RunData`s, grouped by
  `jobs`) lined up by step, their waits for each other and the straggler
  (`docs/VERDICTS.md`), as a typed `Job`; the processes mostly waiting for
  it in `waiting`.
- `predictions`: each finding's predicted gain beside what a fixed
  counterpart of its run (the same model with the fix applied) achieved.
- `tried`: what `tb_devicecost.try_fixes` measured of each change against
  the noise of the baseline's fits, the `input_free` ceiling and the change
  advised; `interventions`: the change each finding's fix names.
- `reasons`: `Reason`, a sentence's code and figures, set where a result
  carries words.

Nothing here holds a sentence for the user: `tb_devicecost.words`, the
floor above, builds the report from these results and says every
`Reason` (`words.build_report`).
"""

from tb_devicecost.analysis.compare import compare_runs
from tb_devicecost.analysis.pairing import default_baseline
from tb_devicecost.analysis.formatting import json_ready
from tb_devicecost.analysis.run_data import WALL_PARTS
from tb_devicecost.analysis.sweeps import find_sweeps
from tb_devicecost.analysis.thresholds import INPUT_HIGH
from tb_devicecost.analysis.verdicts import SEVERITIES
from tb_devicecost.analysis.verdicts import VERDICTS
from tb_devicecost.format.vocabulary import COMPONENTS

# Figures in findings are written by `tb_devicecost.analysis.formatting`; these two
# names stay here for callers that import them from the analysis.
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share

__all__ = [
    "COMPONENTS",
    "INPUT_HIGH",
    "SEVERITIES",
    "VERDICTS",
    "WALL_PARTS",
    "compare_runs",
    "default_baseline",
    "find_sweeps",
    "fmt_ms",
    "fmt_share",
    "json_ready",
]
