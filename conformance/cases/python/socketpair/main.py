import socket
import threading

a, b = socket.socketpair()
payload = bytes(range(256)) * 4000


def echo():
    total = 0
    while True:
        chunk = b.recv(65536)
        if not chunk:
            break
        total += len(chunk)
    b.sendall(b"got %d" % total)
    b.close()


t = threading.Thread(target=echo)
t.start()
a.sendall(payload)
a.shutdown(socket.SHUT_WR)
print(a.recv(100))
t.join()
a.close()

d1, d2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
for i in range(3):
    d1.send(b"datagram %d" % i)
print([d2.recv(100) for _ in range(3)])
buf = bytearray(4)
d1.send(b"abcdefgh")
print(d2.recv_into(buf), bytes(buf))
d1.close()
d2.close()

x, y = socket.socketpair()
fx = x.makefile("w")
fy = y.makefile("r")
fx.write("line one\nline two\n")
fx.flush()
print(fy.readline().strip(), "|", fy.readline().strip())
x.setblocking(False)
try:
    x.recv(10)
except BlockingIOError:
    print("would block")
print(x.family.name, x.type.name, x.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM)
