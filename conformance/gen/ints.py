# Writes n and n pseudo-random integers (a fixed LCG: the same bytes on
# every run), ten a line.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
x = 12345
out = [str(n)]
line = []
for i in range(n):
    x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    line.append(str((x >> 33) - (1 << 30)))
    if len(line) == 10:
        out.append(" ".join(line))
        line = []
if line:
    out.append(" ".join(line))
sys.stdout.write("\n".join(out) + "\n")
