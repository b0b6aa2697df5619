import os
import zlib

total = 0
crc = 0
chunks = 0
while True:
    b = os.read(0, 1 << 16)
    if not b:
        break
    total += len(b)
    crc = zlib.crc32(b, crc)
    chunks += 1
print(total, crc, chunks > 0, flush=True)
data = memoryview(b"0123456789abcdef\n" * 50000)
while data:
    n = os.write(1, data)
    data = data[n:]
