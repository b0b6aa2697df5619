import ctypes

libc = ctypes.CDLL("libc.so.6")
libm = ctypes.CDLL("libm.so.6")
print(libc.strlen(b"hello, world"))
arr = (ctypes.c_int * 10)(*[9, 3, 7, 1, 8, 2, 6, 0, 5, 4])
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
print(list(arr))
buf = ctypes.create_string_buffer(64)
libc.snprintf(buf, 64, b"%d-%s-%.3f", 42, b"x", ctypes.c_double(2.5))
print(buf.value)
libm.cos.restype = ctypes.c_double
libm.cos.argtypes = [ctypes.c_double]
print(round(libm.cos(0.0), 6), ctypes.sizeof(ctypes.c_long))


class Point(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_short)]


p = Point(3, -4)
print(ctypes.sizeof(p), bytes(p).hex())
libc.getpid.restype = ctypes.c_int
print(libc.getpid() > 0)
