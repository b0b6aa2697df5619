import array
import struct

rec = struct.Struct("<IhdQ4s?")
packed = b"".join(rec.pack(i, -i, i / 3, 2 ** 40 + i, b"ab%02d" % i, i % 2 == 0) for i in range(5))
print(rec.size, len(packed), packed[:rec.size].hex())
print([r[:2] + (round(r[2], 6),) + r[3:] for r in rec.iter_unpack(packed)][-1])
print(struct.pack(">hHl", -2, 65535, -1).hex(), struct.unpack("!f", struct.pack("!f", 3.14))[0])
print(struct.calcsize("@iqc"), struct.calcsize("=iqc"), struct.pack_into)
a = array.array("i", range(1000))
a.append(-5)
a.byteswap()
a.byteswap()
with open("arr.bin", "wb") as f:
    a.tofile(f)
b = array.array("i")
with open("arr.bin", "rb") as f:
    b.fromfile(f, 1001)
print(a == b, b[-1], sum(b), b.itemsize, b.typecode)
d = array.array("d", [1.5, 2.5])
print(d.tobytes().hex(), array.array("u", "héllo").tounicode())
m = memoryview(bytearray(16)).cast("I")
m[1] = 0xDEADBEEF
print(m.tolist(), bytes(m.obj[4:8]).hex(), m.nbytes, m.format)
print((1024).to_bytes(4, "big"), int.from_bytes(b"\x01\x00", "little"), (-1).to_bytes(2, "big", signed=True))
buf = bytearray(12)
struct.pack_into("<3I", buf, 0, 1, 2, 3)
print(buf.hex(), struct.unpack_from("<I", buf, 8))
