# Slow I/O: input() per line and a print per number, flushed each time as
# an interactive program does.
n = int(input())
s = seen = 0
try:
    while True:
        for t in input().split():
            s += int(t)
            seen += 1
            print(s, flush=True)
except EOFError:
    pass
print("done %d of %d" % (seen, n))
