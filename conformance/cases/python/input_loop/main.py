n = int(input())
total = 0
best = -1
for _ in range(n):
    a, b = map(int, input().split())
    total += a * b
    best = max(best, a + b)
print(total, best)
try:
    input()
except EOFError:
    print("EOF")
