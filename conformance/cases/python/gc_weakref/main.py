import gc
import weakref

finalized = []


class Obj:
    def __init__(self, name):
        self.name = name
        self.other = None

    def __del__(self):
        finalized.append(self.name)


a, b = Obj("a"), Obj("b")
a.other, b.other = b, a
ref = weakref.ref(a)
del a, b
print("alive before collect", ref() is not None)
print("collected", gc.collect() >= 2, sorted(finalized), ref())
cache = weakref.WeakValueDictionary()
keep = Obj("kept")
cache["k"] = keep
cache["t"] = Obj("temp")
print("weak values", sorted(cache.keys()))
fin = weakref.finalize(keep, finalized.append, "finalizer")
del keep
print("finalizer", fin.alive, finalized[-2:])
gc.disable()
print("enabled", gc.isenabled(), len(gc.get_threshold()))
gc.enable()
gc.freeze()
print("frozen", gc.get_freeze_count() > 0)
