"""How often a TensorFlow fit returns late after its last `on_train_end`.

Variants of one 2,000-step fit of the seeds' MLP at batch 32 from arrays
alternate (A B C ..., then reversed) in one process, each on a model of its
own, warmed up first. Per round, each variant's line gives `(seconds from
the last on_train_end to fit()'s return, the fit's seconds)`; the last
lines count the fits over 0.5 s late. Over 20 ms late is TensorFlow's lost
wake-up of tf.data's autotune thread (docs/PERFORMANCE.md); a fit returns
2-4 ms after its last hook otherwise.

Variants: `none` (no callback), `full` (`DeviceCostCallback`), `grab`
(a callback that only finds Keras's epoch iterator, as ours does),
`sleep` (no callback; 0.3 s asleep in `on_train_end`), `busy` (no
callback; a thread hashing for 50 ms from `on_train_end`), `burn` (no
callback of ours; one that spends 30 µs of Python at each batch end), `keep` (ours,
kept alive past the fit), `nobatch` (ours, the first step without its
batch), `nostamp` (ours, the fetch without its `tf.timestamp`s), `noread`
(ours, the step's figures not read), `nofloor` (ours, no fetch floor),
`noplace` (ours, `capture_placement=False`), `keepstep` (ours, its timed
step's `tf.function`s kept alive past the fit), `kerasstep` (ours, Keras's
own step function: every hook, no timed step).

Usage, from the checkout's root:
    KERAS_BACKEND=tensorflow python tests/data/tf_late_fits/late_fits.py none,full 30 2000
"""

import os
import sys
import tempfile
import threading
import time
import hashlib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), ROOT]

import keras  # noqa: E402

import models  # noqa: E402
import tb_devicecost  # noqa: E402
from tb_devicecost.backends import keras_loop  # noqa: E402
from tb_devicecost.backends import tensorflow as tensorflow_backend  # noqa: E402

variants = sys.argv[1].split(",")
rounds, steps = int(sys.argv[2]), int(sys.argv[3])
x, y = models.data("mlp", steps * 32)
BUFFER = b"x" * (1 << 20)
# `burn`'s Python a step: about what the callback adds to a TensorFlow step.
BURN_S = 30e-6
KEPT = []
_stamped_get_next = tensorflow_backend.stamped_get_next
_call = tensorflow_backend.FetchTimedStep.__call__


class End(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        self.ended = time.perf_counter()


class Grab(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.found = keras_loop.caller_local("epoch_iterator", keras_loop.epoch_iterator_class())

    def on_train_end(self, logs=None):
        self.found = None


class Sleep(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        time.sleep(0.3)


def _hash_until(end):
    while time.perf_counter() < end:
        hashlib.sha256(BUFFER)


class Busy(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        threading.Thread(target=_hash_until, args=(time.perf_counter() + 0.05,),
                         daemon=True).start()


class Burn(keras.callbacks.Callback):
    """Spends `BURN_S` of Python at each batch end, as a callback of about
    the same weight as ours would."""

    def on_train_batch_end(self, batch, logs=None):
        end = time.perf_counter() + BURN_S
        while time.perf_counter() < end:
            pass


class NoBatch(tb_devicecost.DeviceCostCallback):
    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._needs_batch["train"] = False


def _unstamped_get_next(tf, iterator):
    zero = tf.constant(0.0, tf.float64)
    return iterator.get_next(), zero, zero


class NoStamp(tb_devicecost.DeviceCostCallback):
    def on_train_begin(self, logs=None):
        tensorflow_backend.stamped_get_next = _unstamped_get_next
        super().on_train_begin(logs)

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        tensorflow_backend.stamped_get_next = _stamped_get_next


def _unread_call(self, iterator, with_batch=False):
    if with_batch:
        return _call(self, iterator, with_batch)
    called = self._functions[False](iterator)
    if not called[0].has_value():
        raise StopIteration
    return called[0].get_value(), 0.0, None, None


class NoRead(tb_devicecost.DeviceCostCallback):
    def on_train_begin(self, logs=None):
        tensorflow_backend.FetchTimedStep.__call__ = _unread_call
        super().on_train_begin(logs)

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        tensorflow_backend.FetchTimedStep.__call__ = _call


class NoFloor(tb_devicecost.DeviceCostCallback):
    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._floors.clear()


_fetch_timed_step = tensorflow_backend.fetch_timed_step
STEPS = []


def _kept_fetch_timed_step(original, model):
    step = _fetch_timed_step(original, model)
    STEPS.append(step)
    del STEPS[:-4]
    return step


class KeepStep(tb_devicecost.DeviceCostCallback):
    def on_train_begin(self, logs=None):
        tensorflow_backend.fetch_timed_step = _kept_fetch_timed_step
        super().on_train_begin(logs)

    def on_train_end(self, logs=None):
        super().on_train_end(logs)
        tensorflow_backend.fetch_timed_step = _fetch_timed_step


class KerasStep(tb_devicecost.DeviceCostCallback):
    def _wrap(self, attribute, role):
        pass


def make(variant):
    ours = {"full": tb_devicecost.DeviceCostCallback, "nobatch": NoBatch,
            "nostamp": NoStamp, "noread": NoRead, "kerasstep": KerasStep, "nofloor": NoFloor,
            "keepstep": KeepStep}
    if variant == "none":
        return []
    if variant in ("grab", "sleep", "busy", "burn"):
        return [{"grab": Grab, "sleep": Sleep, "busy": Busy, "burn": Burn}[variant]()]
    if variant == "noplace":
        return [tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False,
                                                 capture_placement=False)]
    if variant == "keep":
        KEPT.append(tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False))
        del KEPT[:-2]
        return [KEPT[-1]]
    return [ours[variant](tempfile.mkdtemp(), device_busy=False)]


built = {variant: models.build("mlp") for variant in variants}
for variant in variants:
    built[variant].fit(x[: 50 * 32], y[: 50 * 32], batch_size=32, verbose=0, shuffle=False,
                       callbacks=make(variant))
late = {variant: [] for variant in variants}
for index in range(rounds):
    for variant in variants if index % 2 == 0 else variants[::-1]:
        end = End()
        began = time.perf_counter()
        built[variant].fit(x, y, batch_size=32, verbose=0, shuffle=False,
                           callbacks=make(variant) + [end])
        returned = time.perf_counter()
        late[variant].append((round(returned - end.ended, 3), round(returned - began, 2)))
    print(index, {variant: late[variant][-1] for variant in variants}, flush=True)
for variant in variants:
    print(variant, sum(after > 0.5 for after, _ in late[variant]), "of", rounds, "late")
