"""`try_fixes` on one Keras backend, in a process of its own: `python
trial_fits.py BACKEND LOGDIR KIND`. KIND is the pipeline `data()` returns
(`arrays`, `pydataset`, `generator`, `tf.data`, `dataloader`); the same
object each call where it can be, so the test can check that the trials
left it as it was. Prints what `try_fixes` returned and what the user's
objects look like after, as JSON."""

import json
import os
import sys
import time

BACKEND, LOGDIR, KIND = sys.argv[1], sys.argv[2], sys.argv[3]
CHANGES = sys.argv[4].split(",") if len(sys.argv) > 4 else None
os.environ["KERAS_BACKEND"] = BACKEND

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.random((512, 32), dtype=np.float32)
Y = RNG.integers(0, 4, 512)
X_SUM = float(X.sum())


def build():
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(4)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class SlowBatches(keras.utils.PyDataset):
    """A Python loop per sample: the input is the slow part."""

    def __len__(self):
        return 32

    def __getitem__(self, index):
        time.sleep(0.004)
        rows = [X[(index * 16 + i) % len(X)] * 1.0 for i in range(16)]
        return np.stack(rows), Y[[(index * 16 + i) % len(X) for i in range(16)]]


PYDATASET = SlowBatches()


def slow_generator():
    for index in range(10_000):
        time.sleep(0.004)
        start = (index * 16) % 496
        yield X[start:start + 16], Y[start:start + 16]


def make_loader():
    import torch  # pylint: disable=import-outside-toplevel

    dataset = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))
    return torch.utils.data.DataLoader(dataset, batch_size=16)


LOADER = make_loader() if KIND == "dataloader" else None


def data():
    if KIND == "arrays":
        return X, Y
    if KIND == "pydataset":
        return PYDATASET
    if KIND == "generator":
        return slow_generator()
    if KIND == "dataloader":
        return LOADER
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    return tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2.0, y)).batch(16)


result = tb_devicecost.try_fixes(build, data, log_dir=LOGDIR, batch_size=16, steps=12,
                                 budget_s=1, changes=CHANGES)
report = result.pop("report")
base = next(run for run in report["runs"] if run["run"] == "tried/baseline/train")
after = {"x_sum_same": float(X.sum()) == X_SUM}
if KIND == "pydataset":
    after.update(workers=PYDATASET.workers, use_multiprocessing=PYDATASET.use_multiprocessing)
if KIND == "dataloader":
    after.update(num_workers=LOADER.num_workers, batch_size=LOADER.batch_size)
print(json.dumps({
    "result": result, "after": after, "verdict": base["verdict"],
    "findings": [{"id": f["id"], "change": f["change"], "tried": f.get("tried"),
                  "fix": f["fix"]} for f in base["findings"]],
    "advised": base.get("advised"),
}))
