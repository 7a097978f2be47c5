"""Each reason commonly given for a GPU training slower than a CPU, as a fit.

Every scenario is a function `(logdir, device, quick)` that trains small
real models with `DeviceCostCallback`, one run per variant, into
`<logdir>/<scenario>/<variant>-<device>`, and returns `None`, or a sentence
saying why it trained nothing on this backend or device. `sweep` takes
every device at once. They run on every Keras backend: the input pipelines
are `tf.data` on TensorFlow and `keras.utils.PyDataset` (or arrays in
memory) on JAX and PyTorch, where TensorFlow may not be installed; the
scenarios that are about TensorFlow itself (`tf.device` pinning, TFRecord
files, augmentation in TensorFlow ops) say so and are skipped there.

`quick` shortens every fit, never below about three times its warm-up (the
first step: tracing, graph optimisation): shorter than that, warm-up would
dominate runs whose story is something else, and the quick demo would tell a
different story from the full one. So each variant gets as many steps as its
own step time allows, the slow ones fewer.
"""

import os
import time

import keras
import numpy as np

import tb_devicecost

BACKEND = keras.backend.backend()
if BACKEND == "tensorflow":
    import tensorflow as tf

    # The demo builds a new model for each run and each sweep point, so
    # TensorFlow traces a new step function for each by design: its
    # "triggered tf.function retracing" warning would only be noise here.
    tf.get_logger().setLevel("ERROR")
else:
    tf = None  # Maybe not installed: nothing below needs it off TensorFlow.

# What each run shows on a CPU: its verdict, the story's point. The verdicts
# are far from every threshold (warm-up far from half of a fit, input wait
# far from a fifth of a step), so they hold on a busy machine, in the quick
# demo as in the full one.
EXPECTED_VERDICTS = {
    "small_work/batch10": "compute_bound",
    "small_work/batch1024": "compute_bound",
    "input_pipeline/naive": "input_bound",
    "input_pipeline/parallel_cache_prefetch": "input_bound",
    "input_pipeline/tf_ops": "compute_bound",
    "input_pipeline/augment_in_model": "compute_bound",
    "warmup/short": "warmup_dominated",
    "warmup/long": "compute_bound",
    "placement/pinned_layer": "compute_bound",
    "tfrecord/parallel_prefetch": "compute_bound",
}


def run_dir(logdir, scenario, variant, device):
    tag = device.strip("/").replace(":", "").lower()  # "/CPU:0" -> "cpu0"
    return os.path.join(logdir, scenario, f"{variant}-{tag}")


def keras_device(device):
    """`"/GPU:0"` -> `"gpu:0"`, as `keras.device` takes it on every backend.

    PyTorch's CPU is `"cpu"`: a torch device `"cpu:0"` does not compare equal
    to the `"cpu"` of the tensors Keras makes, and its variables get no
    gradients.
    """
    name = device.strip("/").lower()
    return "cpu" if BACKEND == "torch" and name.startswith("cpu") else name


def _tensorflow_only(what):
    return (
        f"skipped: {what} needs TensorFlow, and the Keras backend here is "
        f"{BACKEND!r}."
    )


def _fit(model, data, directory, device, epochs=1, verbose=0, **kwargs):
    """One run: a quiet fit (no progress bar) and one line that says where
    it went and how long it took."""
    if not isinstance(data, np.ndarray):
        # A tf.data.Dataset or a PyDataset brings its own order: Keras's
        # default shuffle=True would only warn that it ignores it.
        kwargs.setdefault("shuffle", False)
    started = time.monotonic()
    with keras.device(keras_device(device)):
        model.fit(
            data,
            epochs=epochs,
            verbose=verbose,
            # On a GPU the demo always measures how busy the device is:
            # its fits are too short for the default window's 1% budget,
            # and "the GPU sat idle" is the story it tells.
            callbacks=[
                tb_devicecost.DeviceCostCallback(
                    directory, device_busy=True if "gpu" in device.lower() else "auto"
                )
            ],
            **kwargs,
        )
    run = "/".join(os.path.normpath(directory).split(os.sep)[-2:])
    print(f"  {run}: {epochs} epoch{'s' if epochs != 1 else ''} in "
          f"{time.monotonic() - started:.1f} s", flush=True)


def mlp():
    """A small MLP, the usual example of these answers: 100 -> 128 -> 10."""
    model = keras.Sequential(
        [keras.Input((100,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _tabular(samples):
    rng = np.random.default_rng(0)
    return rng.random((samples, 100), dtype=np.float32), rng.integers(0, 10, samples)


def small_work(logdir, device, quick):
    """Too little work per step: the same MLP at batch 10 and at batch 1024."""
    x, y = _tabular(20_480 if quick else 51_200)
    # Passes over the data: batch 1024 has few steps per pass.
    for batch_size, passes in ((10, 1), (1024, 30)):
        directory = run_dir(logdir, "small_work", f"batch{batch_size}", device)
        with keras.device(keras_device(device)):
            model = mlp()
        if tf is None:
            _fit(model, x, directory, device, epochs=passes, y=y, batch_size=batch_size)
            continue
        dataset = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .batch(batch_size)
            .cache()
            .repeat(passes)
            .prefetch(tf.data.AUTOTUNE)
        )
        _fit(model, dataset, directory, device)


def _images(samples):
    rng = np.random.default_rng(1)
    return rng.integers(0, 255, (samples, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, samples)


def _conv_model(augment_in_model=False):
    layers = [keras.Input((32, 32, 3))]
    if augment_in_model:
        layers += [keras.layers.Rescaling(1 / 255.0), keras.layers.RandomFlip("horizontal")]
    layers += [
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ]
    model = keras.Sequential(layers)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _augment(image, passes=3):
    # Per-element work in pure Python, as decoding and augmenting in Python
    # is: it holds the GIL, so no other thread runs Python meanwhile and
    # parallel calls cannot share the work.
    raw = image.tobytes()
    for _ in range(passes):  # stands in for decoding a JPEG in Python
        raw = bytes([byte ^ 0x5A for byte in raw])
    image = np.frombuffer(raw, np.uint8).reshape(image.shape).astype(np.float32) / 255.0
    return image[:, ::-1, :] if np.random.rand() < 0.5 else image


def _python_augment(image):
    # `tf.py_function` hands over an eager tensor.
    return _augment(image.numpy())


class AugmentedImages(keras.utils.PyDataset):
    """Batches of images augmented one by one in Python (`_augment`), the
    pipeline of `input_pipeline` where `tf.data` is not used."""

    def __init__(self, images, labels, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.images, self.labels, self.batch_size = images, labels, batch_size

    def __len__(self):
        return len(self.images) // self.batch_size

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        # More passes than on TensorFlow: JAX's and PyTorch's CPU convolutions
        # take longer per step, and the story is a pipeline slower than it.
        images = [_augment(image, passes=12) for image in self.images[part]]
        return np.stack(images), self.labels[part]


def _tf_augment(image, label):
    # The same work as `_python_augment`, in TensorFlow ops: no Python, no GIL.
    image = tf.image.random_flip_left_right(tf.cast(image, tf.float32) / 255.0)
    return image, label


# Epochs of `input_pipeline/parallel_cache_prefetch`: the first fills the
# cache, waiting on Python; the next reads it. Over three its steady input
# share read 0.29 (quick) and 0.41 (full) on a quiet 2-core machine, near
# the input threshold of 0.2, and `compute_bound` with a second test process
# beside it; over two the uncached epoch is half the steps.
CACHED_EPOCHS = 2


def input_pipeline(logdir, device, quick):
    """A CPU-bound input pipeline and three ways to fix it.

    `naive` decodes and augments each element in Python, serially, with no
    prefetch. `parallel_cache_prefetch` is the usual fix on `tf.data`:
    `num_parallel_calls=AUTOTUNE`, `cache()`, `prefetch(AUTOTUNE)`; the
    Python work holds the GIL, so parallel calls do not help and only the
    cache (from the second epoch) does. `tf_ops` does the work in
    TensorFlow ops, `augment_in_model` in preprocessing layers. Without
    TensorFlow the pipeline is a `keras.utils.PyDataset`: `naive`,
    `parallel_workers` (4 threads) and `augment_in_model`.
    """
    # Batches per epoch: the slow pipelines need fewer steps for a steady state.
    batches = {"naive": 16, "parallel_cache_prefetch": 40, "tf_ops": 100, "augment_in_model": 100}
    scale = 1 if quick else 2
    images, labels = _images(64 * scale * max(batches.values()))
    if tf is None:
        return _input_pipeline_without_tf(logdir, device, images, labels, batches, scale)

    def py_augment(image, label):
        result = tf.py_function(_python_augment, [image], tf.float32)
        result.set_shape((32, 32, 3))
        return result, label

    def base(variant):
        samples = 64 * scale * batches[variant]
        return tf.data.Dataset.from_tensor_slices((images[:samples], labels[:samples]))

    autotune = tf.data.AUTOTUNE
    variants = (
        ("naive", base("naive").map(py_augment).batch(64), False),
        (
            "parallel_cache_prefetch",
            base("parallel_cache_prefetch")
            .map(py_augment, num_parallel_calls=autotune)
            .cache()
            .batch(64)
            .prefetch(autotune),
            False,
        ),
        ("tf_ops", base("tf_ops").batch(64).map(_tf_augment, num_parallel_calls=autotune).prefetch(autotune), False),
        ("augment_in_model", base("augment_in_model").batch(64).prefetch(autotune), True),
    )
    for variant, dataset, augment_in_model in variants:
        with keras.device(keras_device(device)):
            model = _conv_model(augment_in_model)
        _fit(model, dataset, run_dir(logdir, "input_pipeline", variant, device), device,
             epochs=CACHED_EPOCHS if variant == "parallel_cache_prefetch" else 3)


def _input_pipeline_without_tf(logdir, device, images, labels, batches, scale):
    """`input_pipeline` with `keras.utils.PyDataset`: `naive` augments in
    Python on the training thread, `parallel_workers` in 4 worker threads
    (the GIL keeps them from sharing the work), `augment_in_model` in
    preprocessing layers."""

    def take(variant):
        samples = 64 * scale * batches[variant]
        return images[:samples], labels[:samples]

    variants = (
        ("naive", AugmentedImages(*take("naive"), 64), False),
        # As slow as `naive` (the GIL), so as few batches: `tf.data`'s
        # usual fix needs more, for its cache.
        ("parallel_workers", AugmentedImages(*take("naive"), 64, workers=4), False),
        ("augment_in_model", take("augment_in_model"), True),
    )
    for variant, data, augment_in_model in variants:
        with keras.device(keras_device(device)):
            model = _conv_model(augment_in_model)
        directory = run_dir(logdir, "input_pipeline", variant, device)
        if isinstance(data, tuple):
            _fit(model, data[0], directory, device, epochs=3, y=data[1], batch_size=64)
        else:
            _fit(model, data, directory, device, epochs=3)
    return _tensorflow_only("the `tf_ops` variant (augmentation in TensorFlow ops)")


def warmup(logdir, device, quick):
    """A short fit where tracing and compilation dominate, against a long one."""
    x, y = _tabular(64_000 if quick else 160_000)
    for variant, samples in (("short", 320), ("long", len(x))):
        directory = run_dir(logdir, "warmup", variant, device)
        with keras.device(keras_device(device)):
            model = mlp()
        if tf is None:
            _fit(model, x[:samples], directory, device, y=y[:samples], batch_size=32)
            continue
        dataset = tf.data.Dataset.from_tensor_slices((x[:samples], y[:samples])).batch(32).cache().prefetch(tf.data.AUTOTUNE)
        _fit(model, dataset, directory, device)


class PinnedDense(keras.layers.Layer):
    """A Dense layer whose computation is forced onto another device."""

    def __init__(self, units, pinned_device, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(units, activation="relu")
        self.pinned_device = pinned_device

    def call(self, inputs):
        with tf.device(self.pinned_device):
            return self.dense(inputs)


def placement(logdir, device, quick):
    """A layer forced onto the CPU (a second logical CPU on CPU-only machines)."""
    if tf is None:
        return _tensorflow_only("pinning a layer to a device with `tf.device`")
    cpus = tf.config.list_logical_devices("CPU")
    gpus = tf.config.list_logical_devices("GPU")
    pinned = "/CPU:0" if gpus else (cpus[1].name if len(cpus) > 1 else cpus[0].name)
    if not gpus and device != "/CPU:0":
        return
    x, y = _tabular(51_200 if quick else 128_000)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).cache().prefetch(tf.data.AUTOTUNE)
    with keras.device(keras_device(device)):
        model = keras.Sequential(
            [keras.Input((100,)), keras.layers.Dense(256, activation="relu"),
             PinnedDense(256, pinned), keras.layers.Dense(10)]
        )
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    _fit(model, dataset, run_dir(logdir, "placement", "pinned_layer", device), device, epochs=2)


def _write_tfrecords(directory, images, labels, shards=4):
    """PNG-encoded images and their labels as `tf.train.Example`s."""
    os.makedirs(directory, exist_ok=True)
    encoded = (
        tf.data.Dataset.from_tensor_slices(images)
        .map(tf.io.encode_png, num_parallel_calls=tf.data.AUTOTUNE)
        .as_numpy_iterator()
    )
    paths = [os.path.join(directory, f"images-{shard}.tfrecord") for shard in range(shards)]
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    try:
        for index, png in enumerate(encoded):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[png])),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[labels[index]])),
                    }
                )
            )
            writers[index % shards].write(example.SerializeToString())
    finally:
        for writer in writers:
            writer.close()
    return paths


def tfrecord(logdir, device, quick):
    """A TFRecord pipeline done right: parallel reads and parse, cache, prefetch."""
    if tf is None:
        return _tensorflow_only("reading TFRecord files with `tf.data`")
    images, labels = _images(6_400 if quick else 16_000)
    shards = _write_tfrecords(os.path.join(logdir, "tfrecord", "_data"), images, labels)
    features = {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(record):
        parsed = tf.io.parse_single_example(record, features)
        image = tf.io.decode_png(parsed["image"], channels=3)
        image.set_shape((32, 32, 3))
        return tf.cast(image, tf.float32) / 255.0, parsed["label"]

    dataset = (
        tf.data.Dataset.from_tensor_slices(shards)
        .interleave(tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE)
        .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        # Decoded images fit in memory here: decode once, not every epoch.
        .cache()
        .batch(64)
        # Files have no length: say it, so that Keras knows where an epoch
        # ends instead of warning that the input ran out of data.
        .apply(tf.data.experimental.assert_cardinality(-(-len(images) // 64)))
        .prefetch(tf.data.AUTOTUNE)
    )
    with keras.device(keras_device(device)):
        model = _conv_model()
    _fit(model, dataset, run_dir(logdir, "tfrecord", "parallel_prefetch", device), device, epochs=3)


# Batch sizes of the sweep: from far below to far above where an H100
# overtakes a CPU for this MLP (between 1,024 and 2,048 samples per step).
SWEEP_BATCH_SIZES = (16, 64, 256, 1024, 4096)


def sweep(logdir, devices, quick):
    """The MLP over batch sizes on every device: where the GPU starts to win."""
    x, y = _tabular(4096 * 4)
    tb_devicecost.sweep(
        mlp,
        x,
        y,
        batch_sizes=SWEEP_BATCH_SIZES,
        devices=[keras_device(device) for device in devices],
        log_dir=os.path.join(logdir, "sweep"),
        steps=30 if quick else 60,
        your_batch_size=32,
    )


SCENARIOS = {
    "small_work": small_work,
    "input_pipeline": input_pipeline,
    "warmup": warmup,
    "placement": placement,
    "tfrecord": tfrecord,
}
# Scenarios that take every device at once.
ALL_DEVICE_SCENARIOS = {"sweep": sweep}
