import sys

sys.stdout.write("\n".join(str(i * 31 % 10007) for i in range(100000)))
sys.stdout.write("\n")
sys.stdout.flush()
buf = sys.stdout.buffer
for i in range(1000):
    buf.write(b"%d %s\n" % (i, b"x" * (i % 50)))
print(*range(30000), sep=" ")
