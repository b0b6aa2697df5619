# Hash maps: word counts in a dict and a Counter over a large generated
# text, a set of pairs (str hashes are randomized: output is sorted).
import sys
from collections import Counter, defaultdict

words = sys.stdin.read().split()
count = defaultdict(int)
pairs = set()
prev = ""
for w in words:
    count[w] += 1
    pairs.add((prev, w))
    prev = w
c = Counter(words)
assert c == count
print("words=%d distinct=%d pairs=%d" % (len(words), len(count), len(pairs)))
for w, k in sorted(count.items(), key=lambda t: (-t[1], t[0]))[:10]:
    print(w, k)
