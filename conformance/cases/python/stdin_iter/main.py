import sys

first = sys.stdin.readline()
count = 1
chars = len(first)
longest = first
for line in sys.stdin:
    count += 1
    chars += len(line)
    if len(line) > len(longest):
        longest = line
print(count, chars, repr(longest), repr(line))
print(repr(sys.stdin.readline()), repr(sys.stdin.read()))
