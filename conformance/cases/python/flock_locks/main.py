import fcntl
import os
import struct
import threading

open("lock", "w").close()
a = open("lock", "r+")
b = open("lock", "r+")
fcntl.flock(a, fcntl.LOCK_EX)
try:
    fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("second exclusive: got it")
except BlockingIOError:
    print("second exclusive: would block")
fcntl.flock(a, fcntl.LOCK_UN)
fcntl.flock(a, fcntl.LOCK_SH)
fcntl.flock(b, fcntl.LOCK_SH | fcntl.LOCK_NB)
print("two shared: ok")
fcntl.flock(a, fcntl.LOCK_UN)
fcntl.flock(b, fcntl.LOCK_UN)

fcntl.flock(a, fcntl.LOCK_EX)
got = []


def waiter():
    fcntl.flock(b, fcntl.LOCK_EX)
    got.append("waiter locked")
    fcntl.flock(b, fcntl.LOCK_UN)


t = threading.Thread(target=waiter)
t.start()
got.append("holder unlocks")
fcntl.flock(a, fcntl.LOCK_UN)
t.join()
print(got)

fcntl.lockf(a, fcntl.LOCK_EX, 10, 0)
fcntl.lockf(a, fcntl.LOCK_UN, 10, 0)
lk = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 100, 0)
fcntl.fcntl(a, fcntl.F_SETLK, lk)
res = fcntl.fcntl(a, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 100, 0))
print("getlk own lock", struct.unpack("hhqqi", res)[0] == fcntl.F_UNLCK)
fcntl.fcntl(a, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_UNLCK, os.SEEK_SET, 0, 100, 0))
print("released")
a.close()
b.close()
