"""The step's vocabulary: one name, with its unit, for each recorded quantity.

A step's wall time splits into three components, each in milliseconds:

    data_wait_ms      blocked getting the next batch
    compute_ms        the step until its results are on the host
    host_overhead_ms  the rest until the next step starts

They add up to the step's wall time (`step_ms`). These names are used as
they are from the step accounting's rows (`StepAccounting`) to the
event-file tags (`devicecost/<name>`), the reader's series, the report's
JSON (`data_wait_ms: {p50, p90, mean}`) and the tab. The aggregate document
alone keys its statistics by the bare component, with the unit on each
statistic (`components.data_wait.p50_ms`, the report's `data_wait_ms.p50`:
docs/ARCHITECTURE.md, "One name per quantity"). No protobuf, Keras or
TensorBoard import here: the writer, the reader, the analysis and the tab's
data all import this module.
"""

# The components, in the order used everywhere; the step is their sum.
COMPONENTS = ("data_wait", "compute", "host_overhead")
# The unit of every duration below, as a name suffix.
UNIT = "ms"

# Columns of a per-step row, in order. `step` and `wall_time` become the
# event's step and wall time; every other column is a per-step series.
STEP = "step"
WALL_TIME = "wall_time"
DATA_WAIT_MS = "data_wait_ms"
COMPUTE_MS = "compute_ms"
HOST_OVERHEAD_MS = "host_overhead_ms"
BATCH_SIZE = "batch_size"
# 1.0 for a warm-up step (tracing, compilation), else 0.0.
WARMUP = "warmup"

ROW_COLUMNS = (STEP, WALL_TIME, DATA_WAIT_MS, COMPUTE_MS, HOST_OVERHEAD_MS, BATCH_SIZE, WARMUP)
SERIES_COLUMNS = ROW_COLUMNS[2:]
COLUMN = {name: index for index, name in enumerate(ROW_COLUMNS)}

# A steady step whose compute exceeds this multiple of the median compute is
# a spike (a retrace, garbage collection, another process on the machine).
SPIKE_RATIO = 10.0


def component_column(component):
    """`"data_wait"` -> `"data_wait_ms"`."""
    return f"{component}_{UNIT}"


# The changes a finding's fix names (`change` on every finding) and that
# `tb_devicecost.try_fixes` tries (docs/VERDICTS.md, "Interventions"), one
# machine-readable word each. `input_free` and `empty_step` are no fixes but
# measured ceilings (the same model on batches already cached; a step with
# no model work); `move_augmentation_into_model` is advised, never tried
# automatically (it rewrites the model); `none` is the healthy case.
CHANGES = (
    "workers",
    "use_multiprocessing",
    "prefetch",
    "parallel_map",
    "steps_per_execution",
    "batch_size",
    "device",
    "jit_compile",
    "move_augmentation_into_model",
    "data_on_device",
    "none",
)
CEILINGS = ("input_free", "empty_step")
# Changes that change the training's arithmetic (what a step computes), so
# they are never the one advised over those that keep it.
CHANGES_ARITHMETIC = ("batch_size",)
# Changes that make the input pipeline faster: their gain is never predicted
# above `input_free`'s measured gain.
INPUT_CHANGES = ("workers", "use_multiprocessing", "prefetch", "parallel_map", "data_on_device")
# The frameworks whose importability the run info records (`importable`):
# no finding advises the API of one the recorded process could not import.
FRAMEWORKS = ("tensorflow", "jax", "torch", "grain")
