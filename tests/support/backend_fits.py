"""Real fits on one Keras backend, run in a process of their own.

The Keras backend is fixed when Keras is imported, so `test_backends.py`
runs this script once per backend: `python backend_fits.py BACKEND LOGDIR`.
It trains the scenarios below with `DeviceCostCallback` into LOGDIR and
prints one JSON object of facts the tests check against what the callback
recorded (read back by the tests, not here).
"""

import json
import os
import sys
import warnings

BACKEND, LOGDIR = sys.argv[1], sys.argv[2]
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import tb_devicecost  # noqa: E402
from seeding import set_random_seed  # noqa: E402
from backend_models import Delayed, arrays, mlp  # noqa: E402

if BACKEND == "torch":
    import torch

    # PyTorch's CPU thread pool spins; on a small shared machine one thread
    # keeps step times steady enough to compare with a known delay.
    torch.set_num_threads(1)

# Per-batch sleep of the injected-delay pipeline.
DELAY_S = 0.05


def callback(name):
    return tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, name))


def main():
    facts = {"backend": keras.backend.backend()}
    x, y = arrays(2048)

    # Input-bound: the pipeline sleeps DELAY_S per batch.
    mlp().fit(Delayed(x[:1280], y[:1280], 32, DELAY_S), epochs=1, verbose=0, callbacks=[callback("delay")])
    facts["delay_ms"] = DELAY_S * 1e3

    # Compute-bound: arrays in memory, a model wide enough that its steps
    # (about 30 ms on JAX on a 2-core CPU) outlast what a loaded machine
    # takes from the loop between them. At hidden=2048 (3.7 ms steps) a
    # starved training thread left the device idle, truly host overhead,
    # for half the fit once while the suite's other process ran.
    mlp(hidden=8192).fit(x, y, batch_size=256, epochs=2, verbose=0, callbacks=[callback("compute")])

    # Validation, and two fits with one callback.
    reused = callback("twice")
    model = mlp()
    model.fit(x[:640], y[:640], batch_size=32, epochs=2, verbose=0,
              validation_data=(x[:128], y[:128]), callbacks=[reused])
    model.fit(x[:320], y[:320], batch_size=32, epochs=1, verbose=0, callbacks=[reused])

    # Other inputs: a Python generator, and on PyTorch a DataLoader.
    def batches():
        while True:
            for start in range(0, 640, 32):
                yield x[start:start + 32], y[start:start + 32]

    mlp().fit(batches(), steps_per_epoch=20, epochs=1, verbose=0, callbacks=[callback("generator")])

    # A generator that runs out before its epoch's end: the last fetch
    # raises StopIteration inside our step function (on JAX, most calls
    # fetch there, not in Keras's), which ends the fit as without us.
    ran_out = callback("ran_out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras's "ran out of data".
        mlp().fit(((x[i:i + 32], y[i:i + 32]) for i in range(0, 12 * 32, 32)),
                  steps_per_epoch=20, epochs=1, verbose=0, callbacks=[ran_out])
    # JAX's compile events name no step once the fit is over.
    facts["ran_out_compile_pinned"] = getattr(ran_out._compiles, "dispatching", None) is not None
    if BACKEND == "torch":
        import torch

        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.from_numpy(x[:640]), torch.from_numpy(y[:640])),
            batch_size=32,
        )
        mlp().fit(loader, epochs=1, verbose=0, callbacks=[callback("dataloader")])

    # Callbacks listed before and after ours get every batch-end hook with
    # Python numbers, on Keras's worker where ours runs there too.
    before, after = _Neighbour(), _Neighbour()
    mlp().fit(x[:640], y[:640], batch_size=32, epochs=1, verbose=0,
              validation_data=(x[:128], y[:128]),
              callbacks=[before, callback("neighbours"), after])
    facts["neighbours"] = [before.seen, after.seen]
    facts["neighbours_begun"] = [before.begun, after.begun]

    # Keras's worker is busy while any batch-end hook of a call runs: the
    # loop clock counts the call finished only after the last (the GIL
    # meter reads the worker until then, `gil_wait.GilWait.pool`).
    counted = callback("counted")
    counts = _Counts(counted)
    mlp().fit(x[:320], y[:320], batch_size=32, epochs=1, verbose=0,
              validation_data=(x[:64], y[:64]), callbacks=[counts, counted])
    facts["counts_in_hooks"], facts["counts_at_end"] = counts.in_hooks, counts.at_end

    if BACKEND == "jax":
        # When the training thread's turns to poll come in a 200-step fit:
        # the step it was at each time the lean lane (JAX's usual step,
        # `timed_jax`) asked for its next turn.
        from tb_devicecost.backends import asynchronous

        turns, next_poll_in = [], asynchronous.AsyncSteps.next_poll_in

        def recorded_next_poll_in(steps):
            if sys._getframe(1).f_code.co_name == "timed_jax":
                turns.append(steps.upcoming_step)
            return next_poll_in(steps)

        asynchronous.AsyncSteps.next_poll_in = recorded_next_poll_in
        try:
            mlp().fit(x[:1600], y[:1600], batch_size=8, epochs=1, verbose=0,
                      callbacks=[callback("polled")])
        finally:
            asynchronous.AsyncSteps.next_poll_in = next_poll_in
        facts["poll_turns"] = turns

    # Batches of inputs alone, no `(x, y)`: a DataLoader of bare tensors
    # on PyTorch, a PyDataset of bare arrays on JAX. The size recorded is
    # the batch's, not its first sample's.
    unsupervised = keras.Sequential([keras.Input((100,)), keras.layers.Dense(10), _OwnLoss()])
    unsupervised.compile("sgd", loss=None)
    if BACKEND == "torch":
        import torch

        # A tensor is a map-style dataset of its rows.
        bare = torch.utils.data.DataLoader(torch.from_numpy(x[:320]), batch_size=16)
    else:
        bare = _Bare(x[:320], batch_size=16)
    unsupervised.fit(bare, epochs=1, verbose=0, callbacks=[callback("bare")])
    facts["bare_batch"] = 16

    # Two inputs in a list, and as a dict: the batch's first part is no
    # array, so its size is not `len` of it (2 inputs) but the batch's.
    left, right = keras.Input((60,), name="left"), keras.Input((40,), name="right")
    joined = keras.layers.Concatenate()([keras.layers.Dense(8)(left), keras.layers.Dense(8)(right)])
    two = keras.Model([left, right], keras.layers.Dense(10, activation="softmax")(joined))
    two.compile("sgd", "sparse_categorical_crossentropy")
    two.fit([x[:320, :60], x[:320, 60:]], y[:320], batch_size=16, epochs=1, verbose=0,
            callbacks=[callback("two_inputs")])
    two.fit({"left": x[:320, :60], "right": x[:320, 60:]}, y[:320], batch_size=16, epochs=1,
            verbose=0, callbacks=[callback("named_inputs")])

    # A failure inside the writer: recording stops, training does not.
    broken = callback("broken")
    def fail(*args, **kwargs):
        raise OSError("disk full")
    broken_model = mlp()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        broken_model.fit(x[:640], y[:640], batch_size=32, epochs=1, verbose=0,
                         callbacks=[broken, _BreakWriter(broken, fail)])
    facts["broken_warnings"] = [
        str(w.message) for w in caught if "stopped recording" in str(w.message)
    ]
    facts["broken_history_epochs"] = len(broken_model.history.history["loss"])

    # A device-busy window a fit ends before (PyTorch opens it a step
    # early) is tried again in the next fit, and only that one is kept.
    retried = tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "retried"), device_busy=True)
    model = mlp()
    model.fit(x[:320], y[:320], batch_size=32, epochs=1, verbose=0, callbacks=[retried])
    model.fit(x[:640], y[:640], batch_size=32, epochs=1, verbose=0, callbacks=[retried])

    # The same fit with and without the callback, from the same seed.
    # The third fit also traces the device-busy window (forced on: the
    # CPU is no accelerator), which must change nothing either.
    weights = []
    for callbacks in (
        [],
        [callback("same")],
        [tb_devicecost.DeviceCostCallback(os.path.join(LOGDIR, "busy"), device_busy=True)],
    ):
        set_random_seed(3)
        model = mlp()
        model.fit(x[:500], y[:500], batch_size=32, epochs=2, verbose=0,
                  validation_data=(x[:100], y[:100]), callbacks=callbacks)
        weights.append([np.asarray(w) for w in model.get_weights()])
        facts.setdefault("histories", []).append(model.history.history)
    facts["weights_identical"] = all(
        np.array_equal(a, b) for other in weights[1:] for a, b in zip(weights[0], other)
    )
    print(json.dumps(facts))


class _OwnLoss(keras.layers.Layer):
    """A loss of the inputs alone: a model that fits without targets."""

    def call(self, inputs):
        self.add_loss(keras.ops.mean(inputs ** 2))
        return inputs


class _Bare(keras.utils.PyDataset):
    """Batches of `x` alone, one bare array each."""

    def __init__(self, x, batch_size):
        super().__init__()
        self.x, self.batch_size = x, batch_size

    def __len__(self):
        return len(self.x) // self.batch_size

    def __getitem__(self, index):
        return self.x[index * self.batch_size:(index + 1) * self.batch_size]


class _Neighbour(keras.callbacks.Callback):
    """Keeps `(role, batch, whether the loss is a Python float)` of each
    batch-end hook, and `(role, batch, logs)` of each batch-begin hook."""

    async_safe = True

    def __init__(self):
        super().__init__()
        self.seen = []
        self.begun = []

    def on_train_batch_begin(self, batch, logs=None):
        self.begun.append(("train", batch, logs))

    def on_test_batch_begin(self, batch, logs=None):
        self.begun.append(("test", batch, logs))

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append(("train", batch, type(logs["loss"]) is float))

    def on_test_batch_end(self, batch, logs=None):
        self.seen.append(("test", batch, type(logs["loss"]) is float))


class _Counts(keras.callbacks.Callback):
    """Keeps the loop clock's counts of Keras's batch-end calls
    (`submitted`, `finished`) as each batch-end hook of this callback sees
    them, listed before ours (which runs every hook of a call before it
    counts it finished), and as the fit ends."""

    async_safe = True

    def __init__(self, target):
        super().__init__()
        self.target, self.in_hooks, self.at_end = target, [], None

    def _keep(self):
        loop = self.target._loop
        self.in_hooks.append((loop.submitted, sum(loop.finished.values())))

    def on_train_batch_end(self, batch, logs=None):
        self._keep()

    def on_test_batch_end(self, batch, logs=None):
        self._keep()

    def on_train_end(self, logs=None):
        # Before ours, once Keras has waited for its worker.
        loop = self.target._loop
        self.at_end = (loop.submitted, sum(loop.finished.values()))


class _BreakWriter(keras.callbacks.Callback):
    """Breaks the writer of `target`'s train run after its first epoch
    begins, as a full disk would."""

    def __init__(self, target, fail):
        super().__init__()
        self.target, self.fail = target, fail

    def on_epoch_begin(self, epoch, logs=None):
        writer = self.target._train._writer
        writer.write_steps = self.fail
        writer.write_json = self.fail


if __name__ == "__main__":
    main()
