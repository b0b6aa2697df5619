import bisect
import functools
import heapq
import itertools
from collections import Counter, OrderedDict, defaultdict, deque, namedtuple

n = 2000
adj = defaultdict(list)
for i in range(n):
    for d in (1, 7, 31):
        j = (i * d + 13) % n
        adj[i].append((j, (i * j) % 17 + 1))
dist = [float("inf")] * n
dist[0] = 0
pq = [(0, 0)]
while pq:
    d, u = heapq.heappop(pq)
    if d > dist[u]:
        continue
    for v, w in adj[u]:
        if d + w < dist[v]:
            dist[v] = d + w
            heapq.heappush(pq, (dist[v], v))
print("dijkstra", sum(x for x in dist if x != float("inf")), sum(x == float("inf") for x in dist))

a = sorted((i * 7919) % 10007 for i in range(5000))
print("bisect", bisect.bisect_left(a, 5000), bisect.bisect_right(a, 5000), a[bisect.bisect(a, 9999) - 1])
bisect.insort(a, 4999)
c = Counter("the quick brown fox jumps over the lazy dog")
print("counter", c.most_common(3), sum(c.values()))
dq = deque(range(10), maxlen=7)
dq.rotate(3)
dq.appendleft(-1)
print("deque", list(dq))
od = OrderedDict.fromkeys("abcde")
od.move_to_end("b")
print("ordered", "".join(od))
P = namedtuple("P", "x y")
print("namedtuple", P(1, 2)._replace(y=5), sorted([P(2, 1), P(1, 3), P(1, 2)]))
print("perms", sum(1 for p in itertools.permutations(range(7)) if p[0] < p[-1]))
print("combs", list(itertools.combinations("abcd", 2)))
print("product", len(list(itertools.product(range(3), repeat=5))))
print("accumulate", list(itertools.accumulate(range(1, 8), lambda x, y: x * y)))
print("groupby", [(k, len(list(g))) for k, g in itertools.groupby("aaabbcaaa")])
print("chain", list(itertools.islice(itertools.chain.from_iterable(itertools.repeat([1, 2], 5)), 7)))


@functools.lru_cache(maxsize=None)
def fib(k):
    return k if k < 2 else fib(k - 1) + fib(k - 2)


print("fib", fib(300) % 1000000007, fib.cache_info().hits)
words = ["pear", "Apple", "fig", "banana", "apple", "Fig"]
print("sorted", sorted(words, key=lambda w: (w.lower(), w)), sorted(words, key=len, reverse=True))
print("cmp", sorted([3, 1, 2], key=functools.cmp_to_key(lambda x, y: y - x)))
print("reduce", functools.reduce(lambda x, y: x ^ y, range(1000)))
print("nlargest", heapq.nlargest(3, a), heapq.nsmallest(3, a, key=lambda x: -x))
print("merge", list(heapq.merge([1, 4, 9], [2, 3, 10], [0])))
