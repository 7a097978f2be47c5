"""Which change each finding's fix names: one word of `vocabulary.CHANGES`.

Every finding carries `change` (docs/VERDICTS.md, "Interventions"): what
its fix changes, in one machine-readable word, for this run's backend and
pipeline. `tb_devicecost.try_fixes` tries the changes its baseline's
findings name, and `tried.py` sets what each measured beside the finding
whose change it is. A backend gets only what it supports: Keras 3.15 has
no `steps_per_execution` on PyTorch, and `tf.data` only where TensorFlow
was importable in the recorded process (`tf_data_advisable`).
"""

from tb_devicecost.analysis.names import is_accelerator
from tb_devicecost.format import backend_facts

# Findings whose fix is a faster input pipeline.
INPUT_FINDINGS = ("input_bound", "input_stalls")
# Findings that say nothing is to change (the record, the healthy case).
_NOTHING = (
    "no_steps", "incomplete_run", "fetch_in_graph", "no_fetch_floor", "warmup",
    "warmup_dominated", "retracing", "stalls", "cpu_ops_on_accelerator_run",
    "cross_device_copies", "straggler", "waiting_for_others", "measuring_cost",
)


def tf_data_advisable(run):
    """Whether advice may name `tf.data`: TensorFlow was importable in the
    recorded process (the run info's `importable`; unknown in older runs,
    whose advice keeps naming it)."""
    importable = run.importable
    if not isinstance(importable, dict):
        return True
    # The package, not the Keras backend: a JAX run may import TensorFlow.
    return importable.get("tensorflow", True) is True


def spe_supported(run):
    """`steps_per_execution` is a Keras setting of TensorFlow and JAX only
    (`backend_facts`)."""
    return backend_facts.of(run.backend).steps_per_execution


def input_change(run):
    """The change an input finding's fix names, by what fed the fit."""
    pipeline = run.input_pipeline or {}
    kind = pipeline.get("kind")
    if kind == "PyDataset":
        workers = pipeline.get("workers") or 1
        if workers > 1 and pipeline.get("use_multiprocessing"):
            return "workers"
        return "use_multiprocessing"
    if kind == "tf.data":
        if pipeline.get("maps") != 0 and pipeline.get("parallel_map") is not True:
            return "parallel_map"
        if pipeline.get("prefetch") is not True:
            return "prefetch"
        return "none"
    if kind == "arrays":
        return "data_on_device"
    return "workers"


def change_of(finding_id, run):
    """The `change` word of finding `finding_id` of `run` (a `RunData`)."""
    if finding_id in INPUT_FINDINGS:
        return input_change(run)
    if finding_id == "host_overhead_bound":
        return "steps_per_execution" if spe_supported(run) else "none"
    if finding_id in ("latency_bound", "small_batch"):
        return "batch_size"
    if finding_id == "compute_bound":
        return "jit_compile" if run.jit_compile is False and spe_supported(run) else "none"
    if finding_id in _NOTHING:
        return "none"
    return "none"


def companions(run):
    """Changes worth trying beside those the findings name, where the step
    is small: fewer calls from Python and the other device."""
    found = []
    if spe_supported(run):
        found.append("steps_per_execution")
    if is_accelerator(run.placement.device):
        found.append("device")
    return found


# The input changes worth trying beside the one an input finding names, by
# what fed the fit: which of them buys most is measured, not told from the
# wait (issue 34: worker threads bought 0.45x on JAX from arrays, worker
# processes 6.9x on PyTorch from a Python PyDataset).
_INPUT_ALTERNATIVES = {
    "arrays": ("data_on_device", "workers", "use_multiprocessing"),
    "PyDataset": ("workers", "use_multiprocessing"),
    "generator": ("workers",),
    "torch DataLoader": ("workers",),
    "tf.data": ("parallel_map", "prefetch"),
}


def input_alternatives(run):
    """The input changes to try where a run has an input finding: every
    one its pipeline kind can take (`try_fixes` leaves out, with the
    reason, those its backend cannot try)."""
    kind = (run.input_pipeline or {}).get("kind")
    found = list(_INPUT_ALTERNATIVES.get(kind, ()))
    if kind == "tf.data" and not tf_data_advisable(run):
        return []
    return found

