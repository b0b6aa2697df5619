import hashlib
from concurrent.futures import ThreadPoolExecutor, wait


def work(i):
    h = hashlib.sha256()
    for j in range(2000):
        h.update(b"%d:%d" % (i, j))
    return i, h.hexdigest()[:16]


with ThreadPoolExecutor(max_workers=4) as ex:
    for i, d in ex.map(work, range(8)):
        print(i, d)
    futs = [ex.submit(divmod, 100, k) for k in (3, 7, 0)]
    wait(futs)
    for f in futs:
        e = f.exception()
        print(type(e).__name__ if e else f.result())
