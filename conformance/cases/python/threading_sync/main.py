import queue
import threading

counter = 0
lock = threading.Lock()


def add(n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1


ts = [threading.Thread(target=add, args=(10000,)) for _ in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("counter", counter)

q = queue.Queue()
results = []


def consumer():
    while True:
        item = q.get()
        if item is None:
            break
        results.append(item * 2)
        q.task_done()


c = threading.Thread(target=consumer)
c.start()
for i in range(100):
    q.put(i)
q.join()
q.put(None)
c.join()
print("queue", sum(results))

cond = threading.Condition()
ready = []


def waiter():
    with cond:
        cond.wait_for(lambda: ready)
        print("woken", ready[0])


w = threading.Thread(target=waiter)
w.start()
with cond:
    ready.append("go")
    cond.notify_all()
w.join()

barrier = threading.Barrier(3)
order = []


def at_barrier(i):
    barrier.wait()
    with lock:
        order.append(i)


bs = [threading.Thread(target=at_barrier, args=(i,)) for i in range(3)]
for t in bs:
    t.start()
for t in bs:
    t.join()
print("barrier", sorted(order))

ev = threading.Event()
timer = threading.Timer(0.05, ev.set)
timer.start()
print("event", ev.wait(10))
sem = threading.BoundedSemaphore(2)
sem.acquire()
sem.acquire()
print("semaphore", sem.acquire(blocking=False))
local = threading.local()
local.x = 1


def see():
    print("local", hasattr(local, "x"))


t = threading.Thread(target=see)
t.start()
t.join()
print("threads", threading.active_count())
