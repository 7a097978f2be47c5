"""The device side of a run's trace windows, as one set of per-step means.

A run's trace windows (a `RunData`'s `TraceWindow`s, a run object's
`trace_windows`) each hold the trace's per-step means (`summary`); for the
findings and the comparison what matters is the
accelerator's side of them: how busy it was, its kernels and the bytes
copied to it. `run_device_trace` (for the findings) and `device_trace`
(for the comparison) average them over the windows that have a device
plane.
"""


def device_trace(run):
    """The device side of a run's trace windows, or `None` without one.

    Means over the windows with a device plane of their per-step means
    (`summary`): device busy ms, the traced step's ms, kernels and their mean
    duration, host-to-device bytes. `busy_fraction` is the run's
    `device_busy_fraction` (the windows' mean share); with one window it is
    `device_busy_ms / traced_step_ms`. A figure no window holds is `None`.

    Args:
        run: A run object of `analyze_run`.
    """
    summaries = [
        window["summary"]
        for window in run.get("trace_windows") or ()
        if window.get("has_device_plane") and isinstance(window.get("summary"), dict)
    ]
    return _device_means(summaries, run.get("device_busy_fraction"))


def run_device_trace(run):
    """`device_trace` of a `RunData` (its `TraceWindow`s)."""
    summaries = [
        window.summary
        for window in run.trace_windows
        if window.has_device_plane and isinstance(window.summary, dict)
    ]
    return _device_means(summaries, run.device_busy_fraction)


def _device_means(windows, busy_fraction):
    if not windows or busy_fraction is None:
        return None

    def mean(key):
        values = [summary.get(key) for summary in windows]
        if any(value is None for value in values):
            return None
        return sum(values) / len(values)

    return {
        "windows": len(windows),
        "busy_fraction": busy_fraction,
        "busy_ms": mean("mean_device_busy_ms"),
        "traced_step_ms": mean("mean_step_ms"),
        "kernels": mean("mean_kernels"),
        "kernel_mean_us": mean("mean_kernel_mean_us"),
        "h2d_bytes": mean("mean_h2d_bytes"),
        "h2d_ms": mean("mean_h2d_ms"),
    }
