import mmap

with open("data.bin", "wb") as f:
    f.write(b"\0" * 8192)
with open("data.bin", "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    m[0:5] = b"hello"
    m[4096:4101] = b"world"
    m.flush()
    print(len(m), m.find(b"world"), m[:5])
    m.resize(16384)
    m[-3:] = b"end"
    m.close()
with open("data.bin", "rb") as f:
    data = f.read()
print(len(data), data[:5], data[4096:4101], data[-3:])
with open("data.bin", "rb") as f:
    ro = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    print(ro.readline()[:5], ro.tell(), ro.rfind(b"end", 0))
    ro.close()
anon = mmap.mmap(-1, 1 << 20)
anon.write(b"anonymous")
anon.seek(0)
print(anon.read(9), len(anon))
anon.madvise(mmap.MADV_DONTNEED)
print(anon[:9])
