"""The fetch floor: what handing over a batch costs when it is already there.

A fetch timed apart from the step (inside Keras's graph on TensorFlow, a
`next()` of Keras's loop on JAX and PyTorch) has a fixed cost even when the
input pipeline is far ahead (tenths of a millisecond on CPU, more for
larger batches). The floor is measured on an iterator whose batches are
always ready, timed the same way, under the same load as the real fetches:
data wait above it is starvation, data wait up to it is the handover.
"""

import collections
import threading
import time

# Batches fetched before timing, so the pipeline is warm.
_WARM_BATCHES = 3
# Samples taken when the probe starts; later ones come one at a time.
_FIRST_SAMPLES = 15
# A Python handover (JAX, PyTorch) is one call on a batch already there:
# one call warms it, and it is sampled once a fit, back to back, in the
# first step. On a GPU each JAX sample is a copy to the device (about
# 0.1 ms of the training thread on an H200 host, where 18 of them were a
# quarter of the callback's once-a-fit time, tests/data/h200/overhead/
# fixed_cost_hooks_jax_6334255.txt): 8, and a later fit adds its samples.
_PYTHON_WARM_BATCHES = 1
_PYTHON_SAMPLES = 7
# The newest samples kept; the floor is their median.
_KEPT_SAMPLES = 101
# The later samples take at most this share of the time since the first
# ones (`due`): on TensorFlow a sample is a `tf.function` call, about 0.6 ms
# on this project's CPU, and one every 50 steps of a 1.4 ms step cost the
# fit 0.6-1.2% (issue 36).
BUDGET = 0.002
# TensorFlow's ready iterators and their samples, handed from the floor of
# a fit that ended to the next fit's floor of batches of the same structure
# in this process, this callback's or a new one's (`release`, `start`): a
# new floor costs a fit about 20 ms on this project's CPU (the pipeline,
# its warm-up, 15 first samples a step apart), 1.4% of a 2,000-step fit of
# the seeds' MLP. At most `_POOL_ENTRIES`, each holding a batch of at most
# `_POOL_BYTES` (the ready pipeline's rows); the oldest go first.
_POOL = collections.OrderedDict()
_POOL_ENTRIES = 4
_POOL_BYTES = 16 * 2**20
# Fits in several threads may end and start at once.
_POOL_LOCK = threading.Lock()


class FetchFloor:
    """Samples the cost of a fetch from an always-ready iterator.

    Args:
        clock: Function returning seconds from a monotonic clock. Defaults
            to `time.perf_counter`.
    """

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._iterator = None
        # TensorFlow: a `tf.function` timing `get_next` in its graph.
        self._timed = None
        self._signature = None
        self._samples = collections.deque(maxlen=_KEPT_SAMPLES)
        # The clock when the first samples ended, and the seconds the later
        # ones took since (`due`).
        self._since = None
        self._later_s = 0.0
        # First samples still to take, one a step (`start`).
        self._first_left = 0
        # TensorFlow's: the strategy the iterator was distributed by, and
        # the batch's bytes (`None`: unknown), for the pool (`release`).
        self._strategy = None
        self._bytes = None

    @property
    def running(self):
        return self._iterator is not None

    @property
    def spreading(self):
        """Whether first samples are left to take, one a step."""
        return self._iterator is not None and self._first_left > 0

    def due(self):
        """Whether a first sample is left, or one more keeps the later
        samples within `BUDGET` of the time since the first ones (one
        clock read)."""
        if self._iterator is None:
            return False
        if self._first_left:
            return True
        return self._later_s <= BUDGET * (self._clock() - self._since)

    def sample_if_due(self):
        """Takes one more sample where `due`; whether it did."""
        if not self.due():
            return False
        if self._first_left:
            self.sample(1)
            self._first_left -= 1
            if not self._first_left:
                self._since, self._later_s = self._clock(), 0.0
            return True
        started = self._clock()
        self.sample(1)
        self._later_s += self._clock() - started
        return True

    def _first_samples(self, spread=False, samples=_FIRST_SAMPLES):
        # Back to back, the samples of a TensorFlow pipeline drain its
        # prefetch buffer and then time the batch's assembly, not its
        # handover: 1.77 against 0.18 ms with 20 ms between samples, for
        # 256 images of 64x64x3 on this project's CPU. A step apart, the
        # buffer refills in between, as a prefetched pipeline's does.
        self.sample(1 if spread else samples)
        self._first_left = samples - 1 if spread else 0
        self._since, self._later_s = self._clock(), 0.0

    def start(self, batch, strategy=None):
        """Opens a ready iterator shaped like `batch` and takes its first
        sample; the other first samples follow one a step
        (`sample_if_due`, called between steps), not back to back.

        An iterator already open for batches of the same structure, or one
        a fit that ended left in the process's pool (`release`: a later fit
        with this callback or another), is reused with its samples: a
        repeated fit pays neither to build one nor for 15 more first
        samples (about 20 ms on this project's CPU, most of a callback's
        fixed cost); the later samples go on, on their budget from now.
        """
        signature = _signature(batch)
        if self._iterator is None:
            self._adopt(signature, strategy)
        if self._iterator is not None and signature == self._signature:
            if not self._first_left:
                self._since, self._later_s = self._clock(), 0.0
            return True
        # Another structure (a batch size, a shape) has a floor of its own.
        self._signature = signature
        self._samples = collections.deque(maxlen=_KEPT_SAMPLES)
        self._strategy, self._bytes = strategy, None
        return self._start_tensorflow(batch, strategy)

    def _adopt(self, signature, strategy):
        """Takes a ready iterator of the same structure and strategy from
        the pool, where one is there."""
        key = (signature, id(strategy))
        with _POOL_LOCK:
            entries = _POOL.get(key)
            while entries:
                entry = entries.pop()
                if entry[0] is strategy:  # The key's id is this strategy's.
                    (self._strategy, self._iterator, self._timed, self._samples,
                     self._first_left, self._bytes) = entry
                    self._signature = signature
                    break
            if entries is not None and not entries:
                del _POOL[key]

    def release(self):
        """The fit ended: a TensorFlow floor's ready iterator and its samples
        go to the process's pool (`start`), where its batch is small
        enough; a Python floor's generator, and the batch it holds, go."""
        iterator, self._iterator = self._iterator, None
        if iterator is None or self._timed is None:
            return
        if self._bytes is None or self._bytes > _POOL_BYTES:
            return
        key = (self._signature, id(self._strategy))
        with _POOL_LOCK:
            _POOL.setdefault(key, []).append((self._strategy, iterator, self._timed,
                                               self._samples, self._first_left, self._bytes))
            _POOL.move_to_end(key)
            while sum(len(entries) for entries in _POOL.values()) > _POOL_ENTRIES:
                oldest = next(iter(_POOL.values()))
                oldest.pop(0)
                if not oldest:
                    _POOL.popitem(last=False)
        # Its samples travel with it; this floor keeps a copy to report.
        self._samples = collections.deque(self._samples, maxlen=_KEPT_SAMPLES)

    def _start_tensorflow(self, batch, strategy):
        """Opens a ready iterator shaped like `batch` and samples it.

        Fresh batches are assembled in the background, as a prefetched
        pipeline hands them over (reusing one tensor would be cheaper than
        any real pipeline). Returns whether the probe could start: batches
        that TensorFlow cannot rebatch (per-replica values, ragged or
        string-keyed structures it rejects) have no floor.
        """
        from tb_devicecost.backends import placement
        from tb_devicecost.backends import tensorflow as tensorflow_backend

        try:
            dataset = ready_pipeline(batch)
            if strategy is not None:
                dataset = strategy.experimental_distribute_dataset(dataset)
            iterator = iter(dataset)
            self._timed = tensorflow_backend.timed_fetch()
        except Exception:  # pylint: disable=broad-except
            return False
        try:
            self._bytes = placement.input_bytes(batch)
        except Exception:  # pylint: disable=broad-except
            self._bytes = None  # Not pooled.
        return self._begin(iterator, spread=True)

    def start_python(self, batch, handover):
        """Samples the handover of a ready batch in a Python loop (the JAX
        and PyTorch backends): `next()` on a generator that passes the
        batch through `handover`, as Keras's loop hands batches over."""

        def ready():
            while True:
                yield handover(batch)

        try:
            signature = _signature(batch)
        except Exception:  # pylint: disable=broad-except
            signature = None  # Leaves without a shape: a structure unknown.
        if signature is None or signature != self._signature:
            self._samples = collections.deque(maxlen=_KEPT_SAMPLES)
        self._signature = signature
        self._timed = None
        return self._begin(ready(), warm=_PYTHON_WARM_BATCHES, samples=_PYTHON_SAMPLES)

    def _begin(self, iterator, spread=False, warm=_WARM_BATCHES, samples=_FIRST_SAMPLES):
        """Warms `iterator` up and takes the first samples from it."""
        try:
            for _ in range(warm):
                if self._timed is not None:
                    self._timed(iterator)  # The first traces the timed fetch.
                else:
                    next(iterator)
        except Exception:  # pylint: disable=broad-except
            self._timed = None
            return False
        self._iterator = iterator
        self._first_samples(spread, samples)
        return True

    def sample(self, count=1):
        """Times `count` more fetches from the ready iterator."""
        if self._iterator is None:
            return
        for _ in range(count):
            if self._timed is not None:
                self._samples.append(float(self._timed(self._iterator)))
                continue
            started = self._clock()
            next(self._iterator)
            self._samples.append(self._clock() - started)

    def stop(self):
        """Releases the iterator; the samples taken so far are kept."""
        self._iterator = None

    def milliseconds(self):
        """The median of the samples in milliseconds, or `None`."""
        if not self._samples:
            return None
        ordered = sorted(self._samples)
        return ordered[len(ordered) // 2] * 1e3


def ready_pipeline(batch):
    """A `tf.data.Dataset` of fresh batches shaped like `batch`, always
    ready: its rows rebatched, two prefetched.

    Built in about half the time of `from_tensors(batch).repeat().unbatch()`
    (7.5 against 14 ms for the seeds' MLP batch on this project's CPU; the
    fixed cost of a new callback), with the same floor. Without autotuning:
    nothing in it has a parallelism to tune, and freeing an iterator whose
    autotuning ran sometimes blocked the freeing thread for 2 s (4 of 12
    runs freeing 8 such iterators on this project's CPU; 0 of 7 without).
    A callback is freed in a garbage collection, wherever that runs: in a
    later fit's first step, the demo's stalled for 5 to 30 s.
    """
    import tensorflow as tf

    from tb_devicecost.backends import placement

    options = tf.data.Options()
    options.autotune.enabled = False
    return (
        tf.data.Dataset.from_tensor_slices(batch)
        .repeat()
        .batch(placement.batch_size(batch), drop_remainder=True)
        .prefetch(2)
        .with_options(options)
    )


def _signature(batch):
    """The structure of a batch: each part's type, shape and dtype."""
    from tb_devicecost.backends import placement

    return tuple(
        (type(leaf).__name__, tuple(leaf.shape), str(leaf.dtype))
        for leaf in placement.leaves(batch)
    )
