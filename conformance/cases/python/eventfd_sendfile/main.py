import os
import threading

efd = os.eventfd(0)


def bump():
    for _ in range(5):
        os.eventfd_write(efd, 2)


t = threading.Thread(target=bump)
t.start()
t.join()
print("eventfd", os.eventfd_read(efd))
os.close(efd)

with open("src.bin", "wb") as f:
    f.write(bytes(range(256)) * 2000)
size = os.path.getsize("src.bin")
src = os.open("src.bin", os.O_RDONLY)
dst = os.open("dst.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
sent = 0
while sent < size:
    n = os.sendfile(dst, src, sent, size - sent)
    if n == 0:
        break
    sent += n
os.close(dst)
print("sendfile", sent, open("dst.bin", "rb").read() == open("src.bin", "rb").read())
dst = os.open("range.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
n = os.copy_file_range(src, dst, 1000, 0)
os.close(dst)
print("copy_file_range", n, os.path.getsize("range.bin"))
r, w = os.pipe()
n = os.splice(src, w, 300, offset_src=256)
os.close(w)
print("splice", n, os.read(r, 400)[:4].hex())
os.close(r)
os.close(src)
