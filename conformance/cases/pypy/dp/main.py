# Dynamic programming in plain loops, where PyPy's JIT earns its place: the
# longest common subsequence of two generated strings of 3000 characters,
# and a knapsack over 200 items.
x = 7


def rnd():
    global x
    x = (x * 1103515245 + 12345) % (1 << 31)
    return x >> 16


a = "".join("ACGT"[rnd() % 4] for _ in range(3000))
b = "".join("ACGT"[rnd() % 4] for _ in range(3000))
prev = [0] * (len(b) + 1)
for ca in a:
    cur = [0] * (len(b) + 1)
    for j, cb in enumerate(b, 1):
        cur[j] = prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1])
    prev = cur
print("lcs:", prev[-1])

cap = 10000
best = [0] * (cap + 1)
for _ in range(200):
    w, v = 1 + rnd() % 500, 1 + rnd() % 1000
    for c in range(cap, w - 1, -1):
        if best[c - w] + v > best[c]:
            best[c] = best[c - w] + v
print("knapsack:", best[cap])
