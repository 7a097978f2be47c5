"""The words of the `incomplete_run` finding: a run still written, not
closed, or interrupted, how far it got and why it stopped (`fit_end.FitEnd`,
decided by `tb_devicecost.analysis.fit_end`)."""

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.words import phrases


def words(run, figures):
    """The words of the `incomplete_run` finding: a run still written, not
    closed, or interrupted, how far it got and why it stopped."""
    status = run.numbers.status
    end = run.fit_end
    reached = end.reached_step if end is not None else None
    reason = end.reason if end is not None else None
    if reason:
        why = (f"Recording stopped before the fit ended: {reason}. The steps and "
               "documents written until then are kept")
        fix = ("Fix what stopped it (free space on the disk of the log directory, "
               "or give a log_dir that can be written) and run the fit again to "
               "measure it whole.")
    elif status == "running":
        why = ("This run is still being written, or its process ended without "
               "closing it (kill -9, the out-of-memory killer, a closed terminal)")
        fix = ("If the fit is still running, report again once it has finished; "
               "if its process ended, run the fit again to measure it whole.")
    else:
        why = ("This fit was interrupted: it raised, or its process got SIGTERM "
               "or was stopped")
        fix = "Run the fit again to its end to measure it whole."
    if reached:
        why += f", with {fmt_count(reached)} step(s) on disk"
    return (
        phrases.incomplete_run(status, figures.steps, reached, reason),
        why + f": the numbers cover the {fmt_count(figures.steps)} step(s) "
        "recorded so far.",
        fix,
    )
