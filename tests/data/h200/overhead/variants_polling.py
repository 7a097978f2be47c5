import os, sys, time, tempfile, statistics, threading, random, json
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL","3")
import keras, tb_devicecost
from tb_devicecost.backends import jax as jb
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models
steps=int(sys.argv[1]); rounds=int(sys.argv[2]); W=50
variants = sys.argv[3].split(",")
x, y = models.data("mlp", steps*32)
tid = threading.get_native_id()
def tcpu():
    with open(f"/proc/self/task/{tid}/schedstat") as f: return int(f.read().split()[0])/1e3
class Clock(keras.callbacks.Callback):
    def on_train_batch_begin(self, b, logs=None):
        if b == W: self.a = (tcpu(), time.perf_counter())
        elif b == steps-1: self.b = (tcpu(), time.perf_counter())
ms = {v: models.build("mlp") for v in variants}
for v, m in ms.items(): m.fit(x[:50*32], y[:50*32], batch_size=32, verbose=0)
res = {v: [] for v in variants}
for r in range(rounds):
    order = variants[:]; random.shuffle(order)
    for v in order:
        c = Clock(); cbs = []
        jb.POLL_EVERY = {"nopoll": 10**9, "poll1": 1}.get(v, 8)
        if v != "none":
            cbs.append(tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False))
        w0 = time.perf_counter()
        ms[v].fit(x, y, batch_size=32, verbose=0, callbacks=cbs+[c], shuffle=False)
        n = steps-1-W
        res[v].append({"cpu_step_us": (c.b[0]-c.a[0])/n, "wall_step_us": (c.b[1]-c.a[1])*1e6/n,
                       "fit_wall_ms": (time.perf_counter()-w0)*1e3})
for v in variants:
    print(keras.backend.backend(), v, {k: round(statistics.median(e[k] for e in res[v]), 1) for k in res[v][0]})
json.dump(res, open(sys.argv[4], "w"))
