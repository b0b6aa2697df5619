# Fast input as judges write it: all of stdin as bytes, split; output
# joined and written once.
import sys

data = sys.stdin.buffer.read().split()
n = int(data[0])
s = x = 0
m = None
out = []
for i in range(n):
    v = int(data[1 + i])
    s += v
    x ^= v
    if m is None or v > m:
        m = v
    if i % 10000 == 0:
        out.append("%d %d" % (i, v))
out.append("n=%d sum=%d xor=%d max=%d" % (n, s, x, m))
sys.stdout.write("\n".join(out) + "\n")
