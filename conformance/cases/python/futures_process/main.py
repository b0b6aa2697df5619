from concurrent.futures import ProcessPoolExecutor, as_completed


def primes_below(n):
    sieve = bytearray([1]) * n
    sieve[0:2] = b"\0\0"
    for i in range(2, int(n ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(range(i * i, n, i)))
    return sum(sieve)


if __name__ == "__main__":
    with ProcessPoolExecutor(max_workers=2) as ex:
        print(list(ex.map(primes_below, [10, 100, 1000, 10000, 100000])))
        futs = {ex.submit(pow, 2, k, 1000000007): k for k in range(5)}
        print(sorted((futs[f], f.result()) for f in as_completed(futs)))
        f = ex.submit(int, "not a number")
        print(type(f.exception()).__name__)
