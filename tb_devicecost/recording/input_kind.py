"""What kind of input pipeline fed a fit: recorded in the run info.

Keras wraps whatever `fit` is given (a `tf.data.Dataset`, a
`keras.utils.PyDataset`, a Python generator, arrays, a torch `DataLoader`)
in a data adapter held by its epoch iterator. The kind and the settings
that decide how far ahead it can run (a PyDataset's `workers` and
`use_multiprocessing`, a DataLoader's `num_workers` and `pin_memory`, what
a `tf.data` pipeline already does: `tf_data_settings`) let the input finding
advise a fix for that pipeline, and never a setting it already has
(`words/phrases.py`, `input_fix`).
"""

# Keras's adapter classes, by name: no import of Keras internals needed.
_KINDS = {
    "TFDatasetAdapter": "tf.data",
    "PyDatasetAdapter": "PyDataset",
    "GeneratorDataAdapter": "generator",
    "ArrayDataAdapter": "arrays",
    "TorchDataLoaderAdapter": "torch DataLoader",
    "GrainDatasetAdapter": "grain",
}
KINDS = tuple(_KINDS.values())


def _setting(source, name, kind):
    """`source.name` when it is a `kind` (a bool is not an int here)."""
    value = getattr(source, name, None)
    if kind is bool:
        return value if isinstance(value, bool) else None
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def describe(epoch_iterator):
    """`{"kind", ...settings}` of the pipeline behind a Keras epoch iterator,
    or `None` when there is none or it is not one Keras knows.

    Args:
        epoch_iterator: Keras's `EpochIterator` of the fit (or evaluation).
    """
    try:
        return _describe(epoch_iterator)
    except Exception:  # pylint: disable=broad-except
        return None  # Recording what fed the fit never stops it.


def _describe(epoch_iterator):
    adapter = getattr(epoch_iterator, "data_adapter", None)
    if adapter is None:
        return None
    kind = _KINDS.get(type(adapter).__name__)
    if kind is None:
        return None
    info = {"kind": kind}
    if kind == "PyDataset":
        dataset = getattr(adapter, "py_dataset", None)
        info["workers"] = _setting(dataset, "workers", int)
        info["use_multiprocessing"] = _setting(dataset, "use_multiprocessing", bool)
    elif kind == "tf.data":
        info.update(tf_data_settings(getattr(adapter, "_dataset", None)))
    elif kind == "torch DataLoader":
        loader = getattr(adapter, "_dataloader", None)
        info["num_workers"] = _setting(loader, "num_workers", int)
        info["pin_memory"] = _setting(loader, "pin_memory", bool)
        info["persistent_workers"] = _setting(loader, "persistent_workers", bool)
    return info


# A `tf.data` pipeline's stages, by class name without its leading
# underscore (TensorFlow 2.21 names them `_ParallelMapDataset`, `CacheDataset`...).
_MAPS = ("MapDataset", "ParallelMapDataset", "MapAndBatchDataset")
# Stages that pass elements on without work of their own: a prefetch below
# them still ends the pipeline.
_PASS_THROUGH = (
    "OptionsDataset", "RepeatDataset", "TakeDataset", "SkipDataset",
    "AssertCardinalityDataset", "ShardDataset", "MaxIntraOpParallelismDataset",
    "PrivateThreadPoolDataset",
)
# Ops that run Python for each element: `tf.py_function`, `tf.numpy_function`
# (and `tf.compat.v1.py_func`), `Dataset.from_generator`.
_PYTHON_OPS = ("EagerPyFunc", "PyFunc", "PyFuncStateless", "GeneratorDataset")
# The stage Keras's adapter adds for `fit(class_weight=...)`: a sequential
# map and a prefetch that are not the user's.
_CLASS_WEIGHT_MAP = "class_weights_map_fn"
# Deeper pipelines are not walked to the end: their settings are unknown.
_MAX_STAGES = 500
TF_DATA_SETTINGS = ("maps", "parallel_map", "prefetch", "cache", "python_function")


def tf_data_settings(dataset):
    """What a `tf.data.Dataset` already does to keep ahead of the step.

    Walks the dataset's stages through its inputs (`dataset._inputs()`).
    Any error, or a pipeline this walk cannot read to its sources (a
    `tf.distribute.DistributedDataset`, a TensorFlow whose private names
    differ), leaves every setting unknown (`None`): the fix then advises
    them all rather than guess.

    Args:
        dataset: The `tf.data.Dataset` that Keras's adapter iterates.

    Returns:
        A dict: `maps` (how many `map` stages), `parallel_map` (every `map`
        has `num_parallel_calls` AUTOTUNE or above 1; `None` without a
        `map`), `prefetch` (the pipeline ends with a prefetch), `cache` (a
        `.cache()` anywhere), `python_function` (a stage's function calls
        `tf.py_function`, `tf.numpy_function` or a `from_generator`
        generator).
    """
    try:
        return _tf_data_settings(dataset)
    except Exception:  # pylint: disable=broad-except
        return dict.fromkeys(TF_DATA_SETTINGS)


def _stage(dataset):
    return type(dataset).__name__.lstrip("_")


def _functions(dataset):
    """The traced functions a stage holds (`map`, `filter`, `interleave`...)."""
    for value in vars(dataset).values():
        function = getattr(value, "function", None)  # StructuredFunctionWrapper
        if function is not None and hasattr(function, "graph"):
            yield function


def _calls_python(function):
    graph = function.graph.as_graph_def()  # With the functions it calls.
    ops = {node.op for node in graph.node}
    for library_function in graph.library.function:
        ops.update(node.op for node in library_function.node_def)
    return any(op in ops for op in _PYTHON_OPS)


def _parallel(dataset):
    calls = getattr(dataset, "_num_parallel_calls", None)
    if calls is None:
        return False
    calls = int(calls.numpy() if hasattr(calls, "numpy") else calls)
    return calls == -1 or calls > 1  # -1 is tf.data.AUTOTUNE.


def _is_class_weight_map(dataset):
    function = getattr(getattr(dataset, "_map_func", None), "function", None)
    return _CLASS_WEIGHT_MAP in str(getattr(function, "name", ""))


def _tf_data_settings(dataset):
    # Skip what Keras added for `class_weight`: map(...).prefetch(AUTOTUNE).
    if _stage(dataset) == "PrefetchDataset":
        [inner] = dataset._inputs()  # pylint: disable=protected-access
        if _stage(inner) == "MapDataset" and _is_class_weight_map(inner):
            [dataset] = inner._inputs()  # pylint: disable=protected-access
    outer = dataset
    while _stage(outer) in _PASS_THROUGH:
        [outer] = outer._inputs()  # pylint: disable=protected-access
    maps = parallel = 0
    cache = python = False
    stack, seen = [dataset], 0
    while stack:
        stage = stack.pop()
        seen += 1
        if seen > _MAX_STAGES:
            raise ValueError("too many stages to read")
        name = _stage(stage)
        if name in _MAPS:
            maps += 1
            parallel += _parallel(stage)
        cache = cache or name == "CacheDataset"
        python = python or any(_calls_python(function) for function in _functions(stage))
        stack.extend(stage._inputs())  # pylint: disable=protected-access
    return {
        "maps": maps,
        "parallel_map": parallel == maps if maps else None,
        "prefetch": "Prefetch" in _stage(outer),
        "cache": cache,
        "python_function": python,
    }


def runs_python_threads(info):
    """Whether the pipeline `info` (from `describe`) runs its Python on
    threads of the training process, beside the step: a `PyDataset` with
    several workers that are threads, not processes."""
    return bool(
        info
        and info.get("kind") == "PyDataset"
        and (info.get("workers") or 1) > 1
        and not info.get("use_multiprocessing")
    )
