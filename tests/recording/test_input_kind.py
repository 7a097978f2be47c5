"""What fed a fit (tb_devicecost/recording/input_kind.py), recorded in the run info,
and the input fix chosen by it (analysis/phrases.py's `input_fix`): each
kind its own fix, never a setting the run already has (issue 23)."""

import dataclasses

import numpy as np
import pytest

import tb_devicecost
from tb_devicecost import words
from tb_devicecost.analysis import record as run_records
from tb_devicecost.reading import reader
from tb_devicecost.recording import input_kind
from tb_devicecost.words import phrases
from tb_devicecost.words import report

from tests.support.documents import make_aggregate, make_record


def _samples(count=256):
    rng = np.random.default_rng(0)
    return rng.random((count, 8), dtype=np.float32), rng.integers(0, 2, count)


def _fit(log_dir, data, **kwargs):
    import keras

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(data, epochs=1, verbose=0,
              callbacks=[tb_devicecost.DeviceCostCallback(log_dir)], **kwargs)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Short fits fed by each kind Keras takes on TensorFlow: their run
    objects, by kind."""
    import keras
    import tensorflow as tf

    x, y = _samples()
    root = tmp_path_factory.mktemp("kinds")

    class Batches(keras.utils.PyDataset):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)

        def __len__(self):
            return 8

        def __getitem__(self, index):
            return x[index * 32:(index + 1) * 32], y[index * 32:(index + 1) * 32]

    def generator():
        for index in range(8):
            yield x[index * 32:(index + 1) * 32], y[index * 32:(index + 1) * 32]

    _fit(str(root / "tfdata"), tf.data.Dataset.from_tensor_slices((x, y)).batch(32),
         shuffle=False)
    _fit(str(root / "pydataset"), Batches(workers=2, use_multiprocessing=False), shuffle=False)
    _fit(str(root / "generator"), generator(), steps_per_epoch=8, shuffle=False)
    _fit(str(root / "arrays"), x, y=y, batch_size=32)
    report = words.build_report(reader.read_runs(reader.local_provider(str(root))))
    return {run["run"].split("/")[0]: run for run in report["runs"]}


def test_each_kind_of_pipeline_is_recorded(recorded):
    assert recorded["tfdata"]["input_pipeline"] == {
        "kind": "tf.data", "maps": 0, "parallel_map": None, "prefetch": False,
        "cache": False, "python_function": False}
    assert recorded["pydataset"]["input_pipeline"] == {
        "kind": "PyDataset", "workers": 2, "use_multiprocessing": False}
    assert recorded["generator"]["input_pipeline"] == {"kind": "generator"}
    assert recorded["arrays"]["input_pipeline"] == {"kind": "arrays"}


def test_a_torch_dataloader_is_described_with_its_settings():
    """Without PyTorch here: an adapter named as Keras's, holding a loader."""

    class Loader:
        num_workers, pin_memory, persistent_workers = 4, True, False

    class TorchDataLoaderAdapter:
        _dataloader = Loader()

    class Iterator:
        data_adapter = TorchDataLoaderAdapter()

    assert input_kind.describe(Iterator()) == {
        "kind": "torch DataLoader", "num_workers": 4, "pin_memory": True,
        "persistent_workers": False}
    assert input_kind.describe(object()) is None

    class Broken:
        @property
        def data_adapter(self):
            raise RuntimeError("never stops the fit")

    assert input_kind.describe(Broken()) is None


def _input_fix_of(pipeline, device=None, backend=None):
    """The input_bound finding's fix of a starved run fed by `pipeline`."""
    run = _run_data(8.0, 2.0, 0.1, "cpu/train", 0.1)
    run = dataclasses.replace(run, input_pipeline=pipeline, backend=backend)
    if device:
        run = dataclasses.replace(
            run, placement=dataclasses.replace(run.placement, device=device))
    [finding] = [
        finding for finding in report.run_object(run)["findings"]
        if finding["id"] == "input_bound"
    ]
    return finding["fix"]


def _run_data(data_wait, compute, host, name, fetch_floor_ms):
    """The `RunData` of a run whose steady steps took these times (ms)."""
    aggregate = make_aggregate(
        data_wait, compute, host, fetch_floor_ms=fetch_floor_ms)
    return run_records.read_run(make_record(name, aggregate=aggregate))


@pytest.mark.parametrize("pipeline, says, never", [
    ({"kind": "tf.data"}, ["num_parallel_calls=tf.data.AUTOTUNE", ".prefetch("], ["PyDataset", "DataLoader"]),
    ({"kind": "PyDataset", "workers": 1, "use_multiprocessing": False},
     ["workers=N", "use_multiprocessing=True"], ["tf.data.AUTOTUNE", "DataLoader"]),
    ({"kind": "PyDataset", "workers": 4, "use_multiprocessing": False},
     ["4 worker threads", "use_multiprocessing=True"], ["workers=N", "tf.data.AUTOTUNE"]),
    ({"kind": "PyDataset", "workers": 4, "use_multiprocessing": True},
     ["already loads in 4 worker processes"], ["use_multiprocessing=True", "workers=N"]),
    ({"kind": "generator"}, ["PyDataset with workers=N"], ["grain"]),
    ({"kind": "arrays"}, ["from_tensor_slices"], ["DataLoader"]),
    ({"kind": "torch DataLoader", "num_workers": 0, "pin_memory": False, "persistent_workers": False},
     ["num_workers=N"], ["tf.data.AUTOTUNE", "PyDataset"]),
    ({"kind": "torch DataLoader", "num_workers": 8, "pin_memory": True, "persistent_workers": True},
     ["already has 8 worker processes"], ["num_workers=N", "pin_memory=True", "persistent_workers=True"]),
])
def test_each_kind_gets_its_own_fix_and_never_a_setting_it_has(pipeline, says, never):
    fix = _input_fix_of(pipeline)
    for text in says:
        assert text in fix, (text, fix)
    for text in never:
        assert text not in fix, (text, fix)


def test_the_fix_fits_the_backend_and_the_device():
    assert "grain" in _input_fix_of({"kind": "generator"}, backend="jax")
    loader = {"kind": "torch DataLoader", "num_workers": 4, "pin_memory": False,
              "persistent_workers": True}
    assert "pin_memory=True" in _input_fix_of(loader, device="GPU:0")
    assert "pin_memory" not in _input_fix_of(loader, device="CPU:0")


def test_the_latency_advice_keeps_what_the_run_has():
    assert phrases.input_out_of_process(
        {"kind": "PyDataset", "workers": 4, "use_multiprocessing": True}) is None
    # Arrays: no Python of the user's to move; the slicing is Keras's.
    arrays = phrases.input_out_of_process({"kind": "arrays"})
    assert "from_tensor_slices" in arrays and "PyDataset" not in arrays
    assert phrases.input_out_of_process({"kind": "torch DataLoader", "num_workers": 2}) is None
    assert "use_multiprocessing=True" in phrases.input_out_of_process(
        {"kind": "PyDataset", "workers": 1, "use_multiprocessing": False})


def test_recorded_runs_get_the_fix_of_their_pipeline(recorded):
    """Each recorded kind, starved, is advised on its own terms."""
    opening = {
        "tfdata": "Make the tf.data pipeline parallel",
        "pydataset": "Its 2 worker threads share one Python lock",
        "generator": "A Python generator yields one batch at a time",
        "arrays": "Arrays in memory are sliced",
    }
    for name, run in recorded.items():
        assert _input_fix_of(run["input_pipeline"]).startswith(opening[name]), name


def _tf_augment(image, label):
    return image * 2.0, label


def _py_augment(image, label):
    import tensorflow as tf

    image = tf.py_function(lambda value: value * 2.0, [image], tf.float32)
    return tf.ensure_shape(image, (8,)), label


@pytest.fixture(scope="module")
def tf_data_pipelines(tmp_path_factory):
    """Real fits through DeviceCostCallback on tf.data pipelines built well
    and badly: their recorded `input_pipeline`, by name."""
    import tensorflow as tf

    x, y = _samples()
    autotune = tf.data.AUTOTUNE
    root = tmp_path_factory.mktemp("tfdata")

    def source():
        return tf.data.Dataset.from_tensor_slices((x, y))

    pipelines = {
        "well_built": source().map(_tf_augment, num_parallel_calls=autotune)
        .cache().batch(32).prefetch(autotune),
        "python_well_built": source().map(_py_augment, num_parallel_calls=autotune)
        .cache().batch(32).prefetch(autotune).repeat(),
        "naive": source().map(_py_augment).batch(32),
        "one_call": source().batch(32).map(_tf_augment, num_parallel_calls=1).cache(),
    }
    for name, dataset in pipelines.items():
        _fit(str(root / name), dataset, steps_per_epoch=8, shuffle=False)
    # Keras's own map and prefetch for class_weight are not the user's.
    _fit(str(root / "class_weight"), source().map(_tf_augment).batch(32), shuffle=False,
         class_weight={0: 1.0, 1: 2.0})
    report = words.build_report(reader.read_runs(reader.local_provider(str(root))))
    return {run["run"].split("/")[0]: run["input_pipeline"] for run in report["runs"]}


def _settings(maps, parallel_map, prefetch, cache, python_function):
    return {"kind": "tf.data", "maps": maps, "parallel_map": parallel_map,
            "prefetch": prefetch, "cache": cache, "python_function": python_function}


def test_a_tf_data_pipeline_is_recorded_with_what_it_already_does(tf_data_pipelines):
    assert tf_data_pipelines == {
        "well_built": _settings(1, True, True, True, False),
        "python_well_built": _settings(1, True, True, True, True),
        "naive": _settings(1, False, False, False, True),
        "one_call": _settings(1, False, False, True, False),
        "class_weight": _settings(1, False, False, False, False),
    }


def _fixes_of(pipeline):
    """The input finding's fix of a moderately and of a highly starved
    training run, and of a starved validation run, fed by `pipeline`."""
    fixes = []
    for wait, name in ((1.0, "cpu/train"), (2.0, "cpu/train"), (2.0, "cpu/validation")):
        run = _run_data(wait, 8.0, 0.1, name, 0.05)
        findings = report.run_object(dataclasses.replace(run, input_pipeline=pipeline))
        [finding] = [f for f in findings["findings"] if f["id"] == "input_bound"]
        fixes.append(finding["fix"])
    return fixes


def test_the_tf_data_fix_never_advises_what_the_pipeline_has(tf_data_pipelines):
    """A well-built pipeline is told what remains, not to add what it has."""
    for fix in _fixes_of(tf_data_pipelines["well_built"]):
        assert fix.startswith("It already maps in parallel, prefetches, and caches."), fix
        for advice in ("num_parallel_calls=", ".prefetch(", ".cache()", "py_function"):
            assert advice not in fix, (advice, fix)
        assert "what remains is the work done on each element" in fix
        assert "workers would not help" in fix
    for fix in _fixes_of(tf_data_pipelines["python_well_built"]):
        for advice in ("num_parallel_calls=", ".prefetch(", ".cache()"):
            assert advice not in fix, (advice, fix)
        assert "Its functions call Python (tf.py_function" in fix
    train, _, validation = _fixes_of(tf_data_pipelines["one_call"])
    assert "num_parallel_calls=tf.data.AUTOTUNE" in train and ".prefetch(" in train
    assert ".cache()" not in train and "py_function" not in train
    assert "It already caches." in train
    assert validation.endswith("only loads and batches: end it with .prefetch(tf.data.AUTOTUNE).")
    naive = _fixes_of(tf_data_pipelines["naive"])[0]
    for advice in ("num_parallel_calls=tf.data.AUTOTUNE", ".prefetch(", ".cache()",
                   "replace its tf.py_function"):
        assert advice in naive, (advice, naive)


def test_tf_data_settings_are_unknown_rather_than_wrong():
    """Anything the walk cannot read leaves every setting unknown, and the
    fix then advises them all."""
    unknown = input_kind.tf_data_settings(object())
    assert unknown == dict.fromkeys(input_kind.TF_DATA_SETTINGS)
    fix = phrases.input_fix(dict(unknown, kind="tf.data"))
    assert fix == phrases.input_fix({"kind": "tf.data"})
    assert fix.startswith("Make the tf.data pipeline parallel and ahead of the model: dataset.map(")
