"""Turns recorded runs into numbers, a verdict with fixes, and a comparison.

Pure functions over the `RunRecord`s of `tb_devicecost.reading.reader` (or plain
dicts with the same fields): the TensorBoard plugin and
`tb-devicecost report` both call them, so the tab and the command can never
disagree. Nothing here imports Keras, TensorFlow or TensorBoard, and every
result is plain JSON-ready data (no NaN: missing numbers are `None`).

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
  (`device_side`), what a fix would buy (`estimates`); every finding's
  words in `finding_text` and `wording` (headlines).
- `compare`: speedups and differences against a baseline, and why in
  numbers (`scaling`, `parts`); which run is compared with which in
  `pairing`, the explanation's words in `comparison_text`.
- `workers`: the processes of a distributed job (`RunData`s, grouped by
  `jobs`) lined up by step, their waits for each other and the straggler
  (`docs/VERDICTS.md`), as a typed `Job`; the processes mostly waiting for
  it in `waiting`, the words of both findings in `job_text`.
- `predictions`: each finding's predicted gain beside what a fixed
  counterpart of its run (the same model with the fix applied) achieved.
- `tried`: what `tb_devicecost.try_fixes` measured of each change against
  the noise of the baseline's fits, the `input_free` ceiling and the change
  advised; `interventions`: the change each finding's fix names.
- `report`: the only builder of the JSON-ready documents: the run object
  (`analyze_run`, `run_object`: figures, verdict, each finding's words and
  estimate), each job's group object (`worker_groups`, with
  `attach_findings` and `mark_waiting` setting its findings on its runs)
  and the report (`build_report`).
"""

from tb_devicecost.analysis.compare import compare_runs
from tb_devicecost.analysis.pairing import default_baseline
from tb_devicecost.analysis.report import REPORT_SCHEMA
from tb_devicecost.analysis.report import analyze_record
from tb_devicecost.analysis.report import analyze_run
from tb_devicecost.analysis.report import build_report
from tb_devicecost.analysis.formatting import json_ready
from tb_devicecost.analysis.report import mark_waiting
from tb_devicecost.analysis.report import with_fixes_tried
from tb_devicecost.analysis.report import worker_groups
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
    "REPORT_SCHEMA",
    "SEVERITIES",
    "VERDICTS",
    "WALL_PARTS",
    "analyze_record",
    "analyze_run",
    "build_report",
    "compare_runs",
    "default_baseline",
    "find_sweeps",
    "fmt_ms",
    "fmt_share",
    "json_ready",
    "with_fixes_tried",
    "mark_waiting",
    "worker_groups",
]
