"""The words a user reads first: each finding's headline.

A headline is one plain sentence of at most `MAX_HEADLINE_WORDS` words that
says what is slow and by how much, with the number that matters. The
arithmetic behind it (floors, thresholds, statistics) stays in the finding's
`message`, which the tab shows under "details" and the CLI under
`--verbose`, written by `findings.py`. `verdicts.py` (and
`workers.py`, `waiting.py`) choose the facts; this module only words them,
so every headline is written here and tested in one place
(tests/words/test_phrases.py).

Headlines avoid the internal names (`JARGON`): the glossary,
docs/READING.md, explains the few terms they use.
"""

from tb_devicecost.analysis.formatting import fmt_count
from tb_devicecost.analysis.formatting import fmt_ms
from tb_devicecost.analysis.formatting import fmt_share
from tb_devicecost.analysis.formatting import fmt_speedup
from tb_devicecost.format import backend_facts

MAX_HEADLINE_WORDS = 25
# Words that must not reach a headline: internal names and statistics talk.
JARGON = (
    "fetch floor",
    "cost of a ready batch",
    "steady-state",
    "steady state",
    "latency_bound",
    "role",
    "device-busy window",
    "skew",
)


def _plural(count, word):
    return f"{fmt_count(count)} {word}{'' if count == 1 else 's'}"


def no_steps():
    return "No training step was recorded yet (0 steps), so there is nothing to judge."


def input_bound(severity, starved_data_wait_ms, step_ms):
    lead = "Input-bound" if severity == "high" else "Partly input-bound"
    return (
        f"{lead}: on average each step waits {fmt_ms(starved_data_wait_ms)} ms of its "
        f"{fmt_ms(step_ms)} ms for data."
    )


def no_fetch_floor(wait_ms, share):
    return (
        f"Data wait of {fmt_ms(wait_ms)} ms per step ({fmt_share(share)} of the "
        "time) is too short to call the input slow."
    )


def input_stalls(max_wait_ms):
    return (
        "The input keeps up, but a few steps waited up to "
        f"{fmt_ms(max_wait_ms)} ms for data."
    )


def host_overhead_bound(severity, host_ms, step_ms):
    lead = "Host-bound" if severity == "high" else "Some host overhead"
    return (
        f"{lead}: {fmt_ms(host_ms)} ms of each {fmt_ms(step_ms)} ms step is "
        "Python work outside the model (loop, callbacks, progress bar)."
    )


def latency_bound(device, busy, step_ms):
    return (
        f"{device or 'The accelerator'} is busy only {fmt_share(busy)} of each "
        f"{fmt_ms(step_ms)} ms step; the rest is per-step launch and dispatch cost."
    )


def compute_bound(compute_ms, step_ms, fetch_in_graph=False):
    if fetch_in_graph:
        return (
            f"Compute takes {fmt_ms(compute_ms)} ms of each {fmt_ms(step_ms)} ms "
            "step, data loading included (fetched inside the compiled step)."
        )
    return (
        f"Compute sets the pace: {fmt_ms(compute_ms)} ms of each "
        f"{fmt_ms(step_ms)} ms step is the model's own work."
    )


def warmup(steps, warmup_ms, share, wall_known):
    of = "the fit's wall time" if wall_known else "the recorded time"
    first = "the first step" if steps == 1 else f"the first {fmt_count(steps)} steps"
    return (
        f"Warm-up ({first}, compiling) took "
        f"{fmt_ms(warmup_ms)} ms, {fmt_share(share)} of {of}."
    )


def incomplete_run(status, steps, reached=None, reason=None):
    covered = f"the numbers cover its first {_plural(steps, 'step')}."
    if reached is None:
        what = "still being written" if status == "running" else "interrupted"
        return f"This run is {what}: {covered}"
    covered = "" if reached == steps else f" ({covered[:-1]})"
    if reason:
        return f"Recording stopped: {reason} at step {fmt_count(reached)}{covered}."
    if status == "running":
        return (f"This fit was not closed (still being written, or its process "
                f"ended without closing it): {_plural(reached, 'step')} reached "
                f"the disk{covered}.")
    return f"This fit was interrupted at step {fmt_count(reached)}{covered}."


def fetch_in_graph(steps_per_execution):
    return (
        f"With steps_per_execution={steps_per_execution} data loading is timed "
        "as compute, so input speed cannot be judged."
    )


def retracing(count):
    return (
        f"The step function was rebuilt {_plural(count, 'time')} after warm-up; "
        "each rebuild slows a step."
    )


def stalls(count, ratio):
    return (
        f"{_plural(count, 'step')} took over {ratio:g}x the typical compute time, "
        "with no rebuild of the step to explain them."
    )


def cpu_ops_off_accelerator(ops):
    return f"An accelerator is visible, but all {_plural(ops, 'op')} of the step ran on the CPU."


def cpu_ops_on_accelerator_run(cpu_ops, ops, device):
    return (
        f"{fmt_count(cpu_ops)} of the step's {_plural(ops, 'op')} run on the CPU, "
        f"copying data to and from {device} every step."
    )


def cross_device_copies(copies):
    return f"Data crosses between devices at {_plural(copies, 'point')} in every step."


def small_batch(batch, step_ms):
    return (
        f"Batches of {fmt_count(batch)} samples take only {fmt_ms(step_ms)} ms a "
        "step, so fixed per-step costs dominate."
    )


def measuring_cost(share):
    return (
        f"Measuring took {fmt_share(share)} of each step, so the split between its "
        "parts is uncertain by about that much."
    )


def straggler(process, share):
    return (
        f"Process {process} holds the others back: {fmt_share(share)} of all "
        "processes' step time is spent waiting for it."
    )


def waiting_for_others(process, share, straggler_process):
    return (
        f"Process {process} spends {fmt_share(share)} of its step waiting for "
        f"the slower process {straggler_process}."
    )


def words(text):
    """How many words a headline has."""
    return len(str(text).split())


# The input finding's fix, by what fed the fit (`input_pipeline` of the run
# object, recorded from Keras's data adapter): each kind its own settings,
# and never one the run already has.

def _join(parts):
    if len(parts) < 3:
        return " and ".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


_PYTHON_FIX = (
    "Python runs one element at a time under the GIL, however many parallel "
    "calls"
)


def _tf_data_fix(pipeline):
    """The tf.data fix without what the pipeline already does (its settings
    from `input_kind.tf_data_settings`; `None` is unknown and advised)."""
    maps, python = pipeline.get("maps"), pipeline.get("python_function")
    has, advice = [], []
    if pipeline.get("parallel_map") is True:
        has.append("maps in parallel")
    elif maps != 0:  # No map at all: nothing to parallelise.
        advice.append("dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE)")
    if pipeline.get("prefetch") is True:
        has.append("prefetches")
    else:
        advice.append("end the pipeline with .prefetch(tf.data.AUTOTUNE)")
    if pipeline.get("cache") is True:
        has.append("caches")
    else:
        advice.append("add .cache() after expensive loading or decoding when "
                      "the data fits in memory")
    if python is None:
        advice.append("replace tf.py_function and Python generators with "
                      "TensorFlow ops")
    elif python and advice:
        advice.append("replace its tf.py_function, tf.numpy_function or Python "
                      f"generator with TensorFlow ops ({_PYTHON_FIX})")
    already = f"It already {_join(has)}. " if has else ""
    if advice:
        return f"{already}Make the tf.data pipeline parallel and ahead of the model: {_join(advice)}."
    if python:
        return (
            f"{already}Its functions call Python (tf.py_function, "
            f"tf.numpy_function or a generator): {_PYTHON_FIX}. Write that "
            "work as TensorFlow ops, or do it in the model as Keras layers."
        )
    return (
        f"{already}With no Python function in it, what remains is the work "
        "done on each element: make it cheaper (batch before map, so the "
        "function runs once per batch on whole tensors; store the data "
        "decoded) or do it in the model as Keras layers. More tf.data threads "
        "or data workers would not help: AUTOTUNE already sizes them."
    )


# The whole fix, for a pipeline whose settings are unknown.
_TF_DATA_FIX = _tf_data_fix({"kind": "tf.data"}).split(": ", 1)[1]


def tf_data_eval_fix(pipeline):
    """The evaluation pipeline's `.cache()` and `.prefetch` advice, leaving
    out what it has; `""` when it has both."""
    pipeline = pipeline or {}
    missing = [text for key, text in (
        ("cache", ".cache() it when it fits in memory"),
        ("prefetch", "end it with .prefetch(tf.data.AUTOTUNE)"),
    ) if pipeline.get(key) is not True]
    if not missing:
        return ""
    return " A validation or evaluation pipeline only loads and batches: " + _join(missing) + "."


def input_fix(pipeline, backend=None, on_accelerator=False, tf_data=True):
    """How to make this run's pipeline keep ahead of the step.

    Args:
        pipeline: The run's `input_pipeline` (`{"kind", ...settings}`), or
            `None` when it was not recorded.
        backend: The Keras backend (its `backend_facts.input_loaders`: the
            loaders of its ecosystem the advice names too).
        on_accelerator: Whether the step ran on an accelerator (pinned host
            memory then helps).
        tf_data: Whether TensorFlow was importable in the recorded process
            (`interventions.tf_data_advisable`): without it no `tf.data`.
    """
    kind = (pipeline or {}).get("kind")
    loaders = backend_facts.of(backend).input_loaders
    if kind == "tf.data":
        return _tf_data_fix(pipeline)
    if kind == "PyDataset":
        workers = pipeline.get("workers") or 1
        processes = pipeline.get("use_multiprocessing")
        if workers <= 1:
            return (
                "Load batches ahead of the step: pass workers=N (e.g. the CPU "
                "cores) and use_multiprocessing=True to the PyDataset's "
                "super().__init__, so __getitem__ runs in worker processes "
                "while the model trains; make __getitem__ cheaper (vectorised "
                "NumPy rather than a Python loop per sample)."
            )
        if not processes:
            return (
                f"Its {workers} worker threads share one Python lock (the GIL), so "
                "Python work in __getitem__ does not run in parallel: pass "
                "use_multiprocessing=True to the PyDataset's super().__init__, "
                "or make __getitem__ vectorised NumPy."
            )
        return (
            f"It already loads in {workers} worker processes: raise workers "
            "towards the CPU cores and max_queue_size, make __getitem__ cheaper "
            "(vectorised NumPy, decode once and keep the result), or precompute "
            "the batches."
        )
    if kind == "generator":
        fix = (
            "A Python generator yields one batch at a time on the training "
            "thread: turn it into a keras.utils.PyDataset with workers=N and "
            "use_multiprocessing=True"
        )
        if tf_data:
            fix += (", or a tf.data pipeline (tf.data.Dataset.from_generator(...)"
                    ".prefetch(tf.data.AUTOTUNE))")
        if "grain" in loaders:
            fix += ", or a grain DataLoader with worker_count=N"
        return fix + "."
    if kind == "arrays":
        ahead = (
            "a tf.data.Dataset.from_tensor_slices(...).batch(B)"
            ".prefetch(tf.data.AUTOTUNE) (or a PyDataset with workers)"
            if tf_data else
            "a keras.utils.PyDataset of ready batches (workers=N, "
            "use_multiprocessing=True where slicing is the cost)"
            + (" or a grain DataLoader" if "grain" in loaders else "")
        )
        return (
            "Arrays in memory are sliced and converted on the training thread "
            f"every step: feed {ahead} so the next batch is ready before the "
            "step, keep the arrays on the device, and use a larger batch or "
            "steps_per_execution to spread the per-step cost."
        )
    if kind == "torch DataLoader":
        missing = []
        workers = pipeline.get("num_workers") or 0
        if workers == 0:
            missing.append("num_workers=N (e.g. the CPU cores; it loads on the training thread now)")
        if on_accelerator and pipeline.get("pin_memory") is not True:
            missing.append("pin_memory=True (faster copies to the GPU)")
        if pipeline.get("persistent_workers") is not True:
            missing.append("persistent_workers=True (no worker start-up each epoch)"
                           if workers else
                           "persistent_workers=True with the workers")
        if missing:
            return (
                "Load batches ahead of the step: DataLoader(" + ", ".join(missing)
                + "), and make the Dataset's __getitem__ cheaper (decode once, "
                "keep the result)."
            )
        return (
            f"It already has {workers} worker processes, pinned memory and "
            "persistent workers: raise num_workers and prefetch_factor, or make "
            "the Dataset's __getitem__ cheaper (decode once, keep the result)."
        )
    if kind == "grain":
        return (
            "Load batches ahead of the step: raise the grain DataLoader's "
            "worker_count and its read options' num_threads and "
            "prefetch_buffer_size, and make the transformations cheaper."
        )
    # Not recorded (older runs, custom loops): the usual fixes of each kind.
    return (
        "Make the pipeline parallel and ahead of the model."
        + (" With tf.data: " + _TF_DATA_FIX if tf_data else "")
        + " With a keras.utils.PyDataset: workers=N and use_multiprocessing=True"
        + ("; with a torch DataLoader: num_workers=N and pin_memory=True."
           if "torch DataLoader" in loaders else ".")
    )


def shared_map_threads(cpu_count):
    """Where a CPU-only TensorFlow run's `tf.data` maps share its few cores
    (`estimates.input_shares_cores`): their CPU is booked as the step's
    compute, so a `compute_bound` verdict may be the input's."""
    return (
        f" Its tf.data maps run on TensorFlow's own threads on the same {fmt_count(cpu_count)} "
        "cores, so part of this compute may be the input's: .cache() after the maps "
        "(where the data fits in memory) would tell, and tb_devicecost.try_fixes measures it."
    )


def ready_batches(tf_data=True):
    """How a pipeline hands over ready batches (no `tf.data` without it)."""
    if tf_data:
        return ("A pipeline that ends with .cache() (when it fits in memory) and "
                ".prefetch(tf.data.AUTOTUNE) hands over ready batches")
    return ("A pipeline that prepares batches ahead (PyDataset workers, a "
            "DataLoader's num_workers) hands over ready batches")


def stalls_fix(tf_data=True):
    """The `input_stalls` fix (no `tf.data` without it)."""
    return (
        "Stalls at epoch starts come from refilling a shuffle buffer or a cache "
        "that is not yet filled: "
        + ("a smaller shuffle buffer, .cache() before .shuffle(), and "
           ".prefetch(tf.data.AUTOTUNE) at the end smooth them." if tf_data else
           "a smaller shuffle buffer, and batches prepared ahead (PyDataset "
           "workers, a DataLoader's num_workers, persistent workers) smooth them.")
    )


def input_out_of_process(pipeline, tf_data=True):
    """The latency finding's advice to move the input's Python out of the
    training process, or `None` when the run already does (`tf_data`: as
    for `input_fix`)."""
    pipeline = pipeline or {}
    kind = pipeline.get("kind")
    if kind == "PyDataset" and (pipeline.get("workers") or 1) > 1 and pipeline.get("use_multiprocessing"):
        return None
    if kind == "torch DataLoader" and (pipeline.get("num_workers") or 0) > 0:
        return None
    if kind == "tf.data":
        return None
    if kind == "torch DataLoader":
        return "Move the input's Python out of the training process (DataLoader(num_workers=N))."
    if kind == "arrays":
        # No user Python: Keras slices the arrays on the training thread.
        return (
            "Have the batches sliced ahead of the step instead of by Keras's "
            "loop: "
            + ("tf.data.Dataset.from_tensor_slices((x, y)).batch(N)"
               ".prefetch(tf.data.AUTOTUNE)." if tf_data else
               "a keras.utils.PyDataset of ready batches with workers=N.")
        )
    return (
        "Move the input's Python out of the training process "
        "(PyDataset(workers=N, use_multiprocessing=True)"
        + (", or tf.data)." if tf_data else ").")
    )


def workers_unpredicted(kind, estimate=None):
    """Why worker `kind` (`"threads"` or `"processes"`) gets no prediction
    from the data wait (issue 34, on an H100: threads achieved 0.01-0.14 of
    the wait's estimate, processes 0.63 of it); `estimate`, the input
    finding's words, is what processes buy at most."""
    if kind == "threads":
        return ("worker threads share the Python lock (the GIL) with the training loop, "
                "so what they buy cannot be told from the data wait")
    return ("worker processes send every batch to the training process (pickled, "
            "through a pipe), a cost the run never paid, so what they buy cannot be "
            "told from the data wait"
            + (f"; the estimate ({estimate}) is the step without its wait, what they buy "
               "at most" if estimate else ""))


def finding_speedup(finding, speedup):
    """`the input_bound finding's 2.4x`: a finding's estimate, quoted."""
    return f"the {finding} finding's {fmt_speedup(speedup)}"


# The sentence of each `reasons.Reason` code this module says.
SAYS = {"workers_unpredicted": workers_unpredicted, "finding_speedup": finding_speedup}
