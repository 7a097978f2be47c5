"""What each change of `try_fixes` feeds `fit`: the user's data, changed.

`data()` returns what the user passes to `fit` (arrays `(x, y)`, a
`keras.utils.PyDataset`, a `tf.data.Dataset`, a Python generator or a
function returning one, a torch `DataLoader`); each fit calls it again and
changes only the new object it returned, or a copy of it, so the user's
own objects are never touched. `applicable` says which changes of
`vocabulary.CHANGES` (and the two ceilings) this data and backend can try;
`fit_arguments` builds the `fit` arguments of one of them.
"""

import copy
import inspect
import math
import queue
import threading

import keras
import numpy as np

from tb_devicecost.format import backend_facts
from tb_devicecost.format import vocabulary

# Cached batches the `input_free` replay cycles through.
CACHED_BATCHES = 8
# `steps_per_execution` tried, and how much larger a batch `batch_size` tries.
STEPS_PER_EXECUTION = 8
BATCH_GROWTH = 4
# A fit of `steps_per_execution` runs whole executions, at least this many:
# 12 steps ran one execution of 8 and one of 4 (compiled again), and left
# one fit in two with no steady execution to time.
MIN_EXECUTIONS = 4
# `data_on_device` places the fit's whole input on the device only below this.
MAX_DEVICE_BYTES = 256 << 20


class TrialDataError(ValueError):
    """`data()` returned something `try_fixes` cannot feed `fit`."""


def kind_of(data):
    """The pipeline kind of what `data()` returned (`input_kind.KINDS`)."""
    module = type(data).__module__ or ""
    if isinstance(data, keras.utils.PyDataset):
        return "PyDataset"
    if module.startswith("tensorflow") and hasattr(data, "element_spec"):
        return "tf.data"
    if module.startswith("torch") and type(data).__name__ == "DataLoader":
        return "torch DataLoader"
    if inspect.isgenerator(data) or callable(data):
        return "generator"
    leaves = _leaves(data)
    if leaves and all(isinstance(leaf, np.ndarray) and leaf.ndim >= 1 for leaf in leaves):
        return "arrays"
    raise TrialDataError(
        "`data()` must return what you pass to fit: NumPy arrays (x, y), a "
        "keras.utils.PyDataset, a tf.data.Dataset, a Python generator (or a "
        "function returning one) or a torch DataLoader. Received: "
        f"{type(data).__name__}"
    )


def _leaves(data):
    try:
        return keras.tree.flatten(data)
    except Exception:  # pylint: disable=broad-except
        return []


def _split(data):
    """`(x, y)` of arrays data: a tuple or list of two, else `(data, None)`."""
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return data[0], data[1]
    return data, None


def _samples(x):
    return int(keras.tree.flatten(x)[0].shape[0])


def workers_to_try():
    """Worker threads or processes tried: the cores, 2 to 4."""
    import os  # pylint: disable=import-outside-toplevel

    return max(2, min(4, os.cpu_count() or 2))


def applicable(kind, data, backend, on_accelerator, importable):
    """`{change: what is tried}` for the changes this data and backend can
    try; the ceilings first.

    Args:
        kind: `kind_of(data)`.
        data: One object `data()` returned (read, never changed).
        backend: The Keras backend's name.
        on_accelerator: Whether the baseline's model runs on an accelerator.
        importable: `run_info.importable()`.
    """
    facts = backend_facts.of(backend)
    found = {"input_free": f"the same model stepping on {CACHED_BATCHES} batches already "
                           "converted, cycled"}
    x, y = _split(data) if kind == "arrays" else (None, None)
    if kind != "arrays" or (_single(x) and (y is None or _single(y))):
        found["empty_step"] = "a one-layer model on the same cached batches: the loop's fixed cost"
    workers = workers_to_try()
    if kind == "arrays":
        found["workers"] = f"a PyDataset slicing the arrays, workers={workers} (threads)"
        found["use_multiprocessing"] = (
            f"a PyDataset slicing the arrays, workers={workers}, use_multiprocessing=True")
        found["data_on_device"] = "every batch of the fit converted to a device tensor before it"
        found["batch_size"] = f"batch size x{BATCH_GROWTH}"
        if facts.tf_data:
            found["prefetch"] = ("tf.data.Dataset.from_tensor_slices(...).batch(B)"
                                 ".prefetch(tf.data.AUTOTUNE)")
    elif kind == "PyDataset":
        has = getattr(data, "workers", 1) or 1
        processes = bool(getattr(data, "use_multiprocessing", False))
        if has <= 1:
            found["workers"] = f"workers={workers} (threads)"
        elif processes:
            found["workers"] = f"workers={max(workers, 2 * has)} (processes)"
        if not processes:
            found["use_multiprocessing"] = f"workers={max(workers, has)}, use_multiprocessing=True"
    elif kind == "generator":
        found["workers"] = "the generator read ahead on one worker thread (a queue of 8 batches)"
        if facts.tf_data:
            found["prefetch"] = "tf.data.Dataset.from_generator(...).prefetch(tf.data.AUTOTUNE)"
    elif kind == "tf.data":
        found["prefetch"] = "dataset.prefetch(tf.data.AUTOTUNE)"
        found["parallel_map"] = ("dataset.with_options(...) with map_parallelization: its "
                                 "maps in parallel")
    elif kind == "torch DataLoader":
        has = getattr(data, "num_workers", 0) or 0
        found["workers"] = f"DataLoader(num_workers={max(workers, 2 * has)})"
        if getattr(data, "batch_size", None):
            found["batch_size"] = f"batch size x{BATCH_GROWTH}"
    if not facts.forks_safely:
        # Advised, not tried (`not_tried`): a trial must never hang.
        found.pop("use_multiprocessing", None)
    if facts.steps_per_execution:
        found["steps_per_execution"] = f"compile(..., steps_per_execution={STEPS_PER_EXECUTION})"
    if facts.quick_jit_compile:
        found["jit_compile"] = "jit_compile=True"
    if on_accelerator:
        found["device"] = "the same fit on the CPU"
    del importable  # tf.data is tried only on TensorFlow: never imported here.
    return found


def not_tried(change, kind, backend):
    """Why `change` is not tried for `kind` data on `backend`."""
    facts = backend_facts.of(backend)
    if change == "use_multiprocessing" and not facts.forks_safely:
        return ("not tried on JAX: Keras forks its worker processes, and a fork of a "
                "process running JAX can deadlock (keras #20619); advised only")
    if change == "steps_per_execution" and not facts.steps_per_execution:
        return "Keras 3.15 has no steps_per_execution on PyTorch"
    if change == "jit_compile" and not facts.quick_jit_compile:
        return "jit_compile on PyTorch is torch.compile: minutes, not a short fit"
    if change == "move_augmentation_into_model":
        return "it rewrites the model: advised, never tried automatically"
    return f"no way to try {change} on {kind} data on {backend} without rewriting it"


def _single(value):
    return isinstance(value, np.ndarray)


def to_numpy(batch):
    """A batch as NumPy arrays (from TensorFlow, torch or JAX tensors)."""
    def convert(leaf):
        if hasattr(leaf, "detach"):
            leaf = leaf.detach().cpu()
        if hasattr(leaf, "numpy"):
            return np.asarray(leaf.numpy())
        return np.asarray(leaf)

    return keras.tree.map_structure(convert, batch)


def cached_batches(kind, data, batch_size, count=CACHED_BATCHES):
    """The first `count` full batches of `data` as NumPy arrays (all of one
    batch size, so the replay's steps are alike)."""
    batches = []
    if kind == "arrays":
        x, y = _split(data)
        samples = _samples(x)
        for index in range(count):
            indices = (np.arange(batch_size) + index * batch_size) % samples
            take = lambda leaf, i=indices: np.take(leaf, i, axis=0)  # noqa: E731
            batch = keras.tree.map_structure(take, x)
            batches.append(batch if y is None else (batch, keras.tree.map_structure(take, y)))
    else:
        for batch in _iterate(kind, data):
            batches.append(to_numpy(batch))
            if len(batches) >= count:
                break
    if not batches:
        raise TrialDataError("`data()` yielded no batch to cache for the replay.")
    first = _batch_of(batches[0])
    return [batch for batch in batches if _batch_of(batch) == first]


def _batch_of(batch):
    return int(keras.tree.flatten(batch)[0].shape[0])


def _iterate(kind, data):
    if kind == "PyDataset":
        return (data[index] for index in range(len(data)))
    if kind == "generator":
        return data() if callable(data) and not inspect.isgenerator(data) else data
    return iter(data)


def _on_device(batches, backend):
    """The batches as the backend's tensors, on its default device."""
    if backend_facts.of(backend).tf_data:
        return batches
    return [keras.tree.map_structure(keras.ops.convert_to_tensor, batch) for batch in batches]


def _cycled(batches, steps):
    def generate():
        for index in range(steps):
            yield batches[index % len(batches)]

    return generate()


def _replay(batches, steps, backend):
    """A feed of `steps` batches cycled from `batches`, already converted:
    nothing of the input pipeline left but the handover."""
    if backend_facts.of(backend).tf_data:
        import tensorflow as tf  # pylint: disable=import-outside-toplevel

        stacked = keras.tree.map_structure(lambda *leaves: np.stack(leaves), *batches)
        dataset = tf.data.Dataset.from_tensor_slices(stacked).cache().repeat().take(steps)
        return dataset.prefetch(tf.data.AUTOTUNE)
    return _cycled(_on_device(batches, backend), steps)


class _ArrayBatches(keras.utils.PyDataset):
    """Batches sliced from arrays: the `workers` and `use_multiprocessing`
    trials of arrays in memory."""

    def __init__(self, x, y, batch_size, steps, **kwargs):
        super().__init__(**kwargs)
        self._x, self._y, self._batch_size, self._steps = x, y, batch_size, steps
        self._count = _samples(x)

    def __len__(self):
        return self._steps

    def __getitem__(self, index):
        indices = (np.arange(self._batch_size) + index * self._batch_size) % self._count
        take = lambda leaf: np.take(leaf, indices, axis=0)  # noqa: E731
        x = keras.tree.map_structure(take, self._x)
        return x if self._y is None else (x, keras.tree.map_structure(take, self._y))


def _read_ahead(generator, depth=8):
    """The generator read on one worker thread into a queue of `depth`."""
    items = queue.Queue(maxsize=depth)
    done = object()

    def work():
        try:
            for item in generator:
                items.put(item)
        finally:
            items.put(done)

    threading.Thread(target=work, daemon=True, name="try_fixes-read-ahead").start()

    def generate():
        while True:
            item = items.get()
            if item is done:
                return
            yield item

    return generate()


def _repeated_arrays(data, batch_size, steps):
    """`(x, y)` of exactly `steps` batches, the samples taken in order and
    repeated as needed (new arrays; the user's are only read)."""
    x, y = _split(data)
    indices = np.arange(steps * batch_size) % _samples(x)
    take = lambda leaf: np.take(leaf, indices, axis=0)  # noqa: E731
    return (keras.tree.map_structure(take, x),
            None if y is None else keras.tree.map_structure(take, y))


def steps_of_fit(change, steps):
    """The steps of one fit of `change`: `steps`, or for
    `steps_per_execution` at least `MIN_EXECUTIONS` whole executions."""
    if change != "steps_per_execution":
        return steps
    executions = max(MIN_EXECUTIONS, -(-steps // STEPS_PER_EXECUTION))
    return executions * STEPS_PER_EXECUTION


def fit_arguments(change, kind, data, batch_size, steps, backend, cached=None):
    """`(x, y, fit keyword arguments)` of one fit of `change` (`"baseline"`,
    a ceiling or a change of `applicable`)."""
    if change in ("input_free", "empty_step"):
        return _replay(cached, steps, backend), None, {"steps_per_epoch": steps}
    if kind == "arrays":
        size = batch_size * (BATCH_GROWTH if change == "batch_size" else 1)
        x, y = _repeated_arrays(data, size, steps)
        if change in ("workers", "use_multiprocessing"):
            dataset = _ArrayBatches(x, y, size, steps, workers=workers_to_try(),
                                    use_multiprocessing=change == "use_multiprocessing")
            return dataset, None, {}
        if change == "data_on_device":
            per_fit = sum(leaf.nbytes for leaf in keras.tree.flatten((x, y)) if leaf is not None)
            if per_fit > MAX_DEVICE_BYTES:
                raise TrialDataError(
                    f"the fit's {per_fit / 2**20:.0f} MiB of input would not be placed "
                    "on the device (at most 256 MiB)")
            batches = cached_batches("arrays", (x, y) if y is not None else x, size, steps)
            return _replay(batches, steps, backend), None, {"steps_per_epoch": steps}
        if change == "prefetch":
            import tensorflow as tf  # pylint: disable=import-outside-toplevel

            elements = x if y is None else (x, y)
            dataset = tf.data.Dataset.from_tensor_slices(elements).batch(size)
            return dataset.prefetch(tf.data.AUTOTUNE), None, {}
        return x, y, {"batch_size": size, "shuffle": False}
    if kind == "PyDataset":
        dataset = copy.copy(data)
        if change in ("workers", "use_multiprocessing"):
            has = getattr(data, "workers", 1) or 1
            processes = bool(getattr(data, "use_multiprocessing", False))
            dataset._workers = (  # pylint: disable=protected-access
                max(workers_to_try(), 2 * has) if processes else max(workers_to_try(), has))
            dataset._use_multiprocessing = (  # pylint: disable=protected-access
                processes or change == "use_multiprocessing")
        return dataset, None, {"steps_per_epoch": min(steps, len(dataset))}
    if kind == "generator":
        generator = _iterate(kind, data)
        if change == "workers":
            generator = _read_ahead(generator)
        elif change == "prefetch":
            return _tf_generator(generator, cached), None, {"steps_per_epoch": steps}
        return generator, None, {"steps_per_epoch": steps}
    if kind == "tf.data":
        import tensorflow as tf  # pylint: disable=import-outside-toplevel

        dataset = data
        if change == "prefetch":
            dataset = dataset.prefetch(tf.data.AUTOTUNE)
        elif change == "parallel_map":
            options = tf.data.Options()
            options.experimental_optimization.map_parallelization = True
            dataset = dataset.with_options(options)
        return dataset.take(steps), None, {}
    if kind == "torch DataLoader":
        loader = data
        if change in ("workers", "batch_size"):
            loader = _loader_like(data, change)
        return loader, None, {"steps_per_epoch": _steps_of(loader, steps)}
    raise TrialDataError(f"no fit of {change!r} for {kind} data")


def _steps_of(loader, steps):
    try:
        return max(1, min(steps, len(loader)))
    except TypeError:
        return steps


def _tf_generator(generator, cached):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    signature = keras.tree.map_structure(
        lambda leaf: tf.TensorSpec((None,) + leaf.shape[1:], tf.as_dtype(leaf.dtype)),
        cached[0])
    dataset = tf.data.Dataset.from_generator(lambda: generator, output_signature=signature)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _loader_like(loader, change):
    """A new torch `DataLoader` over the same dataset with more workers or a
    larger batch; the user's loader is only read."""
    import torch.utils.data as torch_data  # pylint: disable=import-outside-toplevel

    workers = loader.num_workers or 0
    if change == "workers":
        workers = max(workers_to_try(), 2 * workers)
    arguments = dict(
        num_workers=workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        persistent_workers=workers > 0 and bool(getattr(loader, "persistent_workers", False)),
    )
    if loader.batch_size is not None:
        size = loader.batch_size * (BATCH_GROWTH if change == "batch_size" else 1)
        arguments.update(batch_size=size, sampler=loader.sampler, drop_last=loader.drop_last)
    else:
        arguments.update(batch_sampler=loader.batch_sampler)
    return torch_data.DataLoader(loader.dataset, **arguments)


def empty_model(cached):
    """A compiled one-layer model for the cached batches, or `None` when
    their structure is not one array in and one out."""
    batch = cached[0]
    if not (isinstance(batch, tuple) and len(batch) == 2
            and all(isinstance(leaf, np.ndarray) for leaf in batch)):
        return None
    x, y = batch
    units = int(math.prod(y.shape[1:])) or 1
    model = keras.Sequential([
        keras.Input(x.shape[1:], dtype=str(x.dtype)),
        keras.layers.Flatten(),
        keras.layers.Dense(units),
        keras.layers.Reshape(y.shape[1:] or (1,)),
    ])
    model.compile("sgd", "mse")
    return model


def changes_known():
    """Every word a trial may carry: the changes and the ceilings."""
    return vocabulary.CHANGES + vocabulary.CEILINGS
