"""A real Keras fit that dies, repeats or shares its log_dir (issue 35).

Run as a script, in a process of its own (`python -m tests.support.fit_probe
MODE LOG_DIR STEPS BATCH AT [BARRIER]`): a small MLP on JAX fits
two epochs of `STEPS` steps of `BATCH` samples (3 ms of Python a step, so
that the fit lasts), each followed by validation, recorded by
`DeviceCostCallback(LOG_DIR)`, and at training step `AT` (counted over
both epochs: below `STEPS` is the first epoch):

- `kill`: SIGKILL (kill -9, the OOM killer): no handler, no atexit;
- `hup`: SIGHUP (a closed terminal): the default action ends the process;
- `enospc`: the disk fills: the writer's next write puts half its bytes
  down and raises `OSError(ENOSPC)` (as a full disk does), then writes go
  through again (cutting the partial record off freed its space);
- `enospc_forever`: every write from then on raises `OSError(ENOSPC)`;
- `none`: nothing; the fit ends normally.

With `BARRIER` (a path), the process writes `BARRIER.<pid>` and waits for
another such file before fitting: two processes then fit at the same time.
"""

import errno
import glob
import os
import signal
import sys
import time


def main(argv):
    mode, log_dir, steps, batch, at = argv[:5]
    steps, batch, at = int(steps), int(batch), int(at)
    barrier = argv[5] if len(argv) > 5 else None
    if mode == "hup":
        # As under a terminal: a suite started with `nohup` (SIGHUP ignored,
        # and inherited) would otherwise see the fit live on.
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
    import numpy as np

    import tb_devicecost
    from tb_devicecost.format import writer
    from tests.support.seeding import set_random_seed

    class Probe(keras.callbacks.Callback):
        done = 0

        def on_train_batch_end(self, index, logs=None):
            time.sleep(0.003)
            Probe.done += 1
            if Probe.done != at + 1:
                return
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif mode == "hup":
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(5)
            elif mode.startswith("enospc"):
                real = writer.SummaryWriter._write
                state = {"failed": False}

                def full(self, payloads):
                    if mode == "enospc" and state["failed"]:
                        return real(self, payloads)
                    state["failed"] = True
                    event_file = self._event_file()
                    data = b"".join(payloads)
                    event_file.write(data[: max(1, len(data) // 2)])
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

                writer.SummaryWriter._write = full

    set_random_seed(0)
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(steps * batch, 16)).astype("float32")
    y = x[:, :1]
    if barrier:
        open(f"{barrier}.{os.getpid()}", "w").close()
        deadline = time.monotonic() + 120
        while len(glob.glob(barrier + ".*")) < 2 and time.monotonic() < deadline:
            time.sleep(0.002)
    model.fit(x, y, batch_size=batch, epochs=2, verbose=0,
              validation_data=(x[: 4 * batch], y[: 4 * batch]),
              callbacks=[tb_devicecost.DeviceCostCallback(log_dir), Probe()])
    print("fit ended", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
