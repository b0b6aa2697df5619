import sys

out = sys.stdout.buffer
for i in range(200):
    out.write(bytes((i + j) % 251 for j in range(25000)))
