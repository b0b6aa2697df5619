import sys
n = 1000000
out = [str(n)]
x = 12345
for _ in range(n):
    x = (x * 1103515245 + 12345) % 2147483648
    out.append(str(x % 1000000))
sys.stdout.write("\n".join(out) + "\n")
