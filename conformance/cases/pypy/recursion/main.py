# Deep recursion as judges' templates do it: a high recursion limit and a
# thread with a large stack; a depth-first search down 200000 nodes. Then
# unbounded recursion under a limit of 10000 ends in a RecursionError.
# (Under the limit of 1e6, PyPy's stack check trusts the limit and
# overflows the 512 MiB stack first: SIGSEGV.)
import sys
import threading


def main():
    n = 200000
    nxt = [i + 1 if i + 1 < n else -1 for i in range(n)]
    depth = [0] * n

    def dfs(v, d):
        depth[v] = d
        if nxt[v] < 0:
            return d
        return dfs(nxt[v], d + 1) + 1

    r = dfs(0, 0)
    print("n=%d r=%d last=%d" % (n, r, depth[n - 1]))

    def down(k):
        return down(k + 1) + 1

    sys.setrecursionlimit(10000)
    try:
        down(0)
    except RecursionError as e:
        print("caught", type(e).__name__)


sys.setrecursionlimit(10**6)
threading.stack_size(512 << 20)
t = threading.Thread(target=main)
t.start()
t.join()
