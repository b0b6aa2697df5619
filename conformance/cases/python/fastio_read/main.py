import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
vals = list(map(int, data[1:n + 1]))
print(n, sum(vals), max(vals), min(vals))
print(sum(v * (i + 1) for i, v in enumerate(vals)) % 1000000007)
