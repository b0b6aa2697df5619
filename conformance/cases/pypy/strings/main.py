# String processing: per line, reversal, case, palindromes, numbers,
# sorted words, and a character histogram; UTF-8 in and out.
import re
import sys
from collections import Counter

hist = Counter()
for n, line in enumerate(sys.stdin.read().split("\n")[:-1], 1):
    clean = re.sub(r"[^a-z0-9]", "", line.lower())
    s = sum(int(t) for t in re.findall(r"-?\d+", line))
    words = sorted(line.split())
    print("%3d|%s|%s|pal=%s|sum=%d|words=%s" % (n, line[::-1], line.upper(), clean == clean[::-1], s, ",".join(words)))
    hist.update(line)
print("histogram: " + " ".join("%s=%d" % (c, hist[c]) for c in sorted(hist)))
print("{:,.2f}".format(1234567.891), "straße".title(), "ǅ".lower(), " x ".strip().center(7, "*"))
