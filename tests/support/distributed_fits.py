"""Distributed fits for `analysis/test_workers.py`, one process each.

    python distributed_fits.py jax INDEX COUNT PORT LOGDIR DELAY_MS STEPS
        One process of a `jax.distributed` job on 127.0.0.1 (gloo CPU
        collectives) fitting with `keras.distribution.DataParallel` and a
        per-process `PyDataset`; process COUNT-1 sleeps DELAY_MS per batch.
    python distributed_fits.py torch RANK COUNT PORT LOGDIR DELAY_MS STEPS
        One rank of a PyTorch DistributedDataParallel loop (gloo) recorded
        by `StepRecorder`; rank COUNT-1 sleeps DELAY_MS per batch.
    python distributed_fits.py mirrored LOGDIR
        `tf.distribute.MirroredStrategy` over 2 logical CPUs, one process.

Each prints one JSON object of facts as its last line (to a file: the test
gives children files, not pipes, since a full pipe would block a process
inside a collective and with it every other process).
"""

import json
import os
import sys
import time

MODE = sys.argv[1]
os.environ["KERAS_BACKEND"] = {"jax": "jax", "torch": "torch", "mirrored": "tensorflow"}[MODE]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BATCH = 32


def jax_fit(index, count, port, logdir, delay_ms, steps):
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"127.0.0.1:{port}", num_processes=count, process_id=index,
        initialization_timeout=60,
    )
    import keras

    import tb_devicecost
    from backend_models import Delayed, arrays, mlp
    from seeding import set_random_seed

    # The same seed in every process: `DataParallel` checks that the
    # replicated weights match.
    set_random_seed(0)
    distribution = keras.distribution.DataParallel()
    distribution.auto_shard_dataset = False
    keras.distribution.set_distribution(distribution)
    x, y = arrays(BATCH * steps * count)
    # Each process its own part of the data, as a per-process pipeline.
    part = slice(index * BATCH * steps, (index + 1) * BATCH * steps)
    delay = delay_ms / 1e3 if index == count - 1 else 0.0
    dataset = Delayed(x[part], y[part], BATCH, delay)
    model = mlp()
    started = time.perf_counter()
    model.fit(
        dataset, epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(logdir)],
    )
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [str(device) for device in jax.local_devices()],
        "device_count": jax.device_count(),
        "delay_ms": delay * 1e3,
        "fit_s": time.perf_counter() - started,
        "steps": len(dataset),
    }


def torch_fit(rank, count, port, logdir, delay_ms, steps):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=count
    )
    try:
        import tb_devicecost

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(100, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
        )
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
        generator = torch.Generator().manual_seed(rank)
        x = torch.rand((steps * BATCH, 100), generator=generator)
        y = torch.randint(0, 10, (steps * BATCH,), generator=generator)
        delay = delay_ms / 1e3 if rank == count - 1 else 0.0

        def batches():
            for index in range(steps):
                time.sleep(delay)
                part = slice(index * BATCH, (index + 1) * BATCH)
                yield x[part], y[part]

        recorder = tb_devicecost.StepRecorder(logdir)
        for features, labels in recorder.timed(batches()):
            with recorder.compute():
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(ddp(features), labels)
                loss.backward()  # the gradients' all-reduce
                optimizer.step()
                float(loss)
        recorder.close()
        return {
            "process_index": dist.get_rank(),
            "process_count": dist.get_world_size(),
            "delay_ms": delay * 1e3,
            "steps": steps,
        }
    finally:
        dist.destroy_process_group()


def mirrored_fit(logdir):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras

    import tb_devicecost
    from backend_models import arrays, mlp

    keras.utils.set_random_seed(0)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = mlp()
    x, y = arrays(BATCH * 2 * 12)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH * 2)
    model.fit(
        dataset, epochs=1, verbose=0,
        callbacks=[tb_devicecost.DeviceCostCallback(logdir)],
    )
    return {
        "replicas": strategy.num_replicas_in_sync,
        "global_batch": BATCH * 2,
        "devices": list(strategy.extended.worker_devices),
    }


def main():
    args = sys.argv[2:]
    if MODE == "mirrored":
        facts = mirrored_fit(args[0])
    else:
        index, count, port = int(args[0]), int(args[1]), int(args[2])
        logdir, delay_ms, steps = args[3], float(args[4]), int(args[5])
        fit = jax_fit if MODE == "jax" else torch_fit
        facts = fit(index, count, port, logdir, delay_ms, steps)
    print(json.dumps(facts), flush=True)


if __name__ == "__main__":
    main()
