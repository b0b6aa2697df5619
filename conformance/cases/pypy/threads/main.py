# Threads: a ThreadPoolExecutor, a queue of work with worker threads, a
# lock-protected counter.
import queue
import threading
from concurrent.futures import ThreadPoolExecutor


def primes(lo, hi):
    c = 0
    for i in range(max(lo, 2), hi):
        d = 2
        while d * d <= i:
            if i % d == 0:
                break
            d += 1
        else:
            c += 1
    return c


with ThreadPoolExecutor(max_workers=4) as ex:
    res = list(ex.map(lambda k: primes(k * 50000, (k + 1) * 50000), range(8)))
for k, c in enumerate(res):
    print("range %d: %d" % (k, c))
print("primes below 4e5:", sum(res))

q = queue.Queue()
out = queue.Queue()
for i in range(1000):
    q.put(i)


def worker():
    while True:
        try:
            i = q.get_nowait()
        except queue.Empty:
            return
        out.put(i * i)


ws = [threading.Thread(target=worker) for _ in range(4)]
for w in ws:
    w.start()
for w in ws:
    w.join()
print("queue sum:", sum(out.get() for _ in range(out.qsize())))

lock = threading.Lock()
counter = [0]


def add():
    for _ in range(50000):
        with lock:
            counter[0] += 1


ts = [threading.Thread(target=add) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("counter:", counter[0])
