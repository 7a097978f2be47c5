"""What kind of input pipeline fed a fit: recorded in the run info.

Keras wraps whatever `fit` is given (a `tf.data.Dataset`, a
`keras.utils.PyDataset`, a Python generator, arrays, a torch `DataLoader`)
in a data adapter held by its epoch iterator. The kind and the settings
that decide how far ahead it can run (a PyDataset's `workers` and
`use_multiprocessing`, a DataLoader's `num_workers` and `pin_memory`) let
the input finding advise a fix for that pipeline, and never a setting it
already has (`analysis/wording.py`, `input_fix`).
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
    elif kind == "torch DataLoader":
        loader = getattr(adapter, "_dataloader", None)
        info["num_workers"] = _setting(loader, "num_workers", int)
        info["pin_memory"] = _setting(loader, "pin_memory", bool)
        info["persistent_workers"] = _setting(loader, "persistent_workers", bool)
    return info


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
