import os, sys, time, tempfile, collections, cProfile, pstats, io
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL","3")
import tb_devicecost
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import models
steps=600
x, y = models.data("mlp", steps*32)
m = models.build("mlp")
m.fit(x[:50*32], y[:50*32], batch_size=32, verbose=0)
tot = collections.defaultdict(list)
prof = cProfile.Profile()
def timed(obj, name, profile):
    f = getattr(obj, name)
    def w(*a, **k):
        t0 = time.perf_counter()
        if profile: prof.enable()
        try: return f(*a, **k)
        finally:
            if profile: prof.disable()
            tot[name].append((time.perf_counter()-t0)*1e3)
    setattr(obj, name, w)
for i in range(8):
    cb = tb_devicecost.DeviceCostCallback(tempfile.mkdtemp(), device_busy=False)
    for n in ("on_train_begin","on_epoch_end","on_train_end","_after_first_async_step"):
        timed(cb, n, i >= 4)
    t0=time.perf_counter()
    m.fit(x, y, batch_size=32, verbose=0, callbacks=[cb], shuffle=False)
    tot["fit"].append((time.perf_counter()-t0)*1e3)
    t0=time.perf_counter()
    m.fit(x, y, batch_size=32, verbose=0, shuffle=False)
    tot["fit_without"].append((time.perf_counter()-t0)*1e3)
for k, v in tot.items(): print(k, "wall ms", ["%.1f" % e for e in v])
s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45); print(s.getvalue()[:9000])
