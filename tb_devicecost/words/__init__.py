"""Words: every sentence a user reads, from what the analysis decided.

Internal. `tb_devicecost.analysis` decides and returns typed results
(`RunData`, `verdicts.Finding`, `workers.Job`, `waiting.Waiting`) and, in
place of a sentence, a `reasons.Reason`: a code and the figures it
quotes. This floor, above the analysis, says them: the run object, the
group objects and the report with their words (`report`: `build_report`,
`analyze_record`, the plugin's `run` route's `with_fixes_tried`,
`worker_groups`, `mark_waiting`), every `Reason` said (`render`). The
analysis imports nothing of it.

- `findings`: each finding's words (headline, message, fix), from a
  `Finding`, `RunData` and `RunFigures`; the headlines and the sentences
  several findings share in `phrases`; `fit_end` (`incomplete_run`) and
  `measuring` (what our measuring took, `measuring_cost`);
- `jobs`: the words of a distributed job's findings (`straggler`,
  `waiting_for_others`);
- `comparisons`: a comparison's explanation; `predictions`: a prediction
  checked; `estimates`: what a fix would buy; `tried`: fixes tried;
  `sweeps`: a batch-size sweep; `problems`: a run's problems and a
  comparison's baseline;
- `render`: the `SAYS` table of every `Reason` code, and `render(result)`.

No threshold is imported here (the analysis decides, and a `Finding`
carries the limits its words quote), and no backend name is compared
(`format/backend_facts.py`).
"""

from tb_devicecost.words.render import render
from tb_devicecost.words.report import REPORT_SCHEMA
from tb_devicecost.words.report import analyze_record
from tb_devicecost.words.report import analyze_run
from tb_devicecost.words.report import build_report
from tb_devicecost.words.report import compare_runs
from tb_devicecost.words.report import mark_waiting
from tb_devicecost.words.report import with_fixes_tried
from tb_devicecost.words.report import worker_groups

__all__ = [
    "REPORT_SCHEMA",
    "analyze_record",
    "analyze_run",
    "build_report",
    "compare_runs",
    "mark_waiting",
    "render",
    "with_fixes_tried",
    "worker_groups",
]
