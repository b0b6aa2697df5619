import functools
import sys


def down(n):
    return 0 if n == 0 else 1 + down(n - 1)


try:
    down(100000)
except RecursionError as e:
    print("RecursionError", str(e)[:40])
sys.setrecursionlimit(20000)
print(down(15000))


@functools.lru_cache(maxsize=None)
def ways(n):
    return 1 if n <= 1 else ways(n - 1) + ways(n - 2)


print(ways(5000) % 1000000007)
