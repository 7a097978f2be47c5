import os, sys, time, tempfile, statistics, threading, random, json
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL","3")
import keras, tb_devicecost
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models
steps=int(sys.argv[1]); rounds=int(sys.argv[2]); W=50
x, y = models.data("mlp", steps*32)
tid = threading.get_native_id()
def tcpu():
    with open(f"/proc/self/task/{tid}/schedstat") as f: return int(f.read().split()[0])/1e3
class Clock(keras.callbacks.Callback):
    def on_train_batch_begin(self, b, logs=None):
        if b == W: self.a = (tcpu(), time.perf_counter())
        elif b == steps-1: self.b = (tcpu(), time.perf_counter())
    def on_epoch_end(self, e, logs=None): self.c = (tcpu(), time.perf_counter())
class Off(keras.callbacks.Callback):
    def __init__(self, cb): super().__init__(); self.cb = cb
    def on_train_begin(self, logs=None): self.cb._enabled = False
variants = ["none", "off", "full"]
ms = {v: models.build("mlp") for v in variants}
for v, m in ms.items(): m.fit(x[:50*32], y[:50*32], batch_size=32, verbose=0)
res = {v: [] for v in variants}
for r in range(rounds):
    order = variants[:]; random.shuffle(order)
    for v in order:
        c = Clock(); cbs = []
        if v != "none":
            cb = tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False); cbs.append(cb)
            if v == "off": cbs.append(Off(cb))
        w0 = time.perf_counter(); t0 = tcpu()
        ms[v].fit(x, y, batch_size=32, verbose=0, callbacks=cbs+[c], shuffle=False)
        w1 = time.perf_counter(); t1 = tcpu()
        n = steps-1-W
        res[v].append({"cpu_step_us": (c.b[0]-c.a[0])/n, "wall_step_us": (c.b[1]-c.a[1])*1e6/n,
                       "end_cpu_ms": (c.c[0]-c.b[0])/1e3, "fit_cpu_ms": (t1-t0)/1e3, "fit_wall_ms": (w1-w0)*1e3})
out = {"backend": keras.backend.backend(), "steps": steps, "rounds": rounds, "res": res}
for v in variants:
    print(keras.backend.backend(), v, {k: round(statistics.median(e[k] for e in res[v]), 2) for k in res[v][0]})
if len(sys.argv) > 3: json.dump(out, open(sys.argv[3], "w"))
