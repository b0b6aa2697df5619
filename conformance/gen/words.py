# Writes a text of n pseudo-random words from a fixed vocabulary (a fixed
# LCG: the same bytes on every run), twelve words a line.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
syll = ["ka", "to", "ri", "mu", "se", "no", "ha", "yi", "lo", "pe", "zu", "da"]
x = 42
words = []
for i in range(n):
    x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    k = 1 + (x >> 60) % 3
    w = "".join(syll[(x >> (8 * j + 16)) % len(syll)] for j in range(k))
    words.append(w)
lines = [" ".join(words[i:i + 12]) for i in range(0, n, 12)]
sys.stdout.write("\n".join(lines) + "\n")
