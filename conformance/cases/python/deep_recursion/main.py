import sys
import threading

sys.setrecursionlimit(1 << 20)
threading.stack_size(512 * 1024 * 1024)


def depth(n):
    if n == 0:
        return 0
    return depth(n - 1) + 1


def dfs(children, v, acc):
    acc.append(v)
    for c in children[v]:
        dfs(children, c, acc)


def main():
    print(depth(200000))
    n = 150000
    children = [[] for _ in range(n)]
    for v in range(1, n):
        children[v - 1].append(v)
    acc = []
    dfs(children, 0, acc)
    print(len(acc), acc[-1])


t = threading.Thread(target=main)
t.start()
t.join()
