import os
import select
import selectors
import threading
import time

r1, w1 = os.pipe()
r2, w2 = os.pipe()


def writer():
    for i in range(5):
        os.write(w1, b"a%d;" % i)
        time.sleep(0.005)
        os.write(w2, b"b%d;" % i)
    os.close(w1)
    os.close(w2)


sel = selectors.DefaultSelector()
sel.register(r1, selectors.EVENT_READ, "one")
sel.register(r2, selectors.EVENT_READ, "two")
t = threading.Thread(target=writer)
t.start()
got = {"one": b"", "two": b""}
open_fds = 2
while open_fds:
    for key, _ in sel.select(timeout=10):
        data = os.read(key.fd, 100)
        if not data:
            sel.unregister(key.fd)
            os.close(key.fd)
            open_fds -= 1
        got[key.data] += data
t.join()
print(type(sel).__name__, got["one"], got["two"])

r, w = os.pipe()
p = select.poll()
p.register(r, select.POLLIN)
print("poll empty", p.poll(10))
os.write(w, b"x")
print("poll ready", [(fd == r, ev & select.POLLIN != 0) for fd, ev in p.poll(1000)])
print("select", select.select([r], [w], [], 1.0) == ([r], [w], []))
os.close(w)
print(os.read(r, 10), os.read(r, 10))
