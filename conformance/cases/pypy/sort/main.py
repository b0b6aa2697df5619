# Sorting: a million ints, records by key (sort is stable), keys and
# tuples, bisect.
import bisect

x = 987654321
M = (1 << 64) - 1
a = []
for _ in range(1000000):
    x = (x * 6364136223846793005 + 1442695040888963407) & M
    a.append(x >> 33)
a.sort()
h = 0
for v in a:
    h = (h * 31 + v) & M
print("min=%d max=%d median=%d hash=%d" % (a[0], a[-1], a[len(a) // 2], h))
print("search:", a[bisect.bisect_left(a, a[12345])] == a[12345])
items = []
for i in range(200000):
    x = (x * 6364136223846793005 + 1442695040888963407) & M
    items.append(((x >> 33) % 1000, i))
items.sort(key=lambda t: -t[0])
unstable = sum(1 for p, q in zip(items, items[1:]) if p[0] == q[0] and p[1] > q[1])
print("first=%s last=%s unstable pairs=%d" % (items[0], items[-1], unstable))
print(sorted(["pear", "apple", "fig", "banana", "kiwi", "cherry"], key=lambda w: (len(w), w)))
print(sorted([3.5, -1.0, 2.25, 0.0, -7.5], reverse=True))
