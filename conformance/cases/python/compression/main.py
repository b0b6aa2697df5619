import bz2
import gzip
import lzma
import zlib

data = b"".join(b"line %d of the text, repeated %d times\n" % (i, i % 7) for i in range(8000))
print(len(data), zlib.crc32(data), zlib.adler32(data))
z = zlib.compress(data, 9)
print("zlib", len(z), zlib.decompress(z) == data)
c = zlib.compressobj(6, zlib.DEFLATED, -15)
raw = c.compress(data) + c.flush()
print("raw deflate", len(raw), zlib.decompress(raw, -15) == data)
with gzip.GzipFile("out.gz", "wb", mtime=0) as f:
    f.write(data)
with gzip.open("out.gz", "rb") as f:
    print("gzip", f.read() == data)
print("gzip bytes", len(gzip.compress(data, mtime=0)))
b = bz2.compress(data)
print("bz2", len(b), bz2.decompress(b) == data)
x = lzma.compress(data, preset=6)
print("xz", len(x), lzma.decompress(x) == data)
with lzma.open("out.xz", "wt") as f:
    f.write("text mode\n")
with lzma.open("out.xz", "rt") as f:
    print(f.read().strip())
