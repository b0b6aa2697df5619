import multiprocessing


def square(x):
    return x * x


def collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


if __name__ == "__main__":
    with multiprocessing.Pool(2) as pool:
        print(sum(pool.map(square, range(1000))))
        print(max(pool.imap(collatz, range(1, 20000), chunksize=500)))
        r = pool.apply_async(pow, (3, 200, 1000003))
        print(r.get(timeout=30))
    lock = multiprocessing.Lock()
    with lock:
        print("locked")
    v = multiprocessing.Value("i", 0)
    p = multiprocessing.Process(target=square, args=(7,))
    p.start()
    p.join()
    print("exitcode", p.exitcode, v.value)
