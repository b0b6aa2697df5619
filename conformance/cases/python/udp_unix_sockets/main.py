import os
import select
import socket
import threading

u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u1.bind(("127.0.0.1", 0))
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u2.bind(("127.0.0.1", 0))
for i in range(3):
    u1.sendto(b"udp %d" % i, u2.getsockname())
got = []
while len(got) < 3 and select.select([u2], [], [], 5)[0]:
    data, addr = u2.recvfrom(100)
    got.append((data, addr == u1.getsockname()))
print(got)
u1.close()
u2.close()

srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("server.sock")
srv.listen(1)
print(os.path.exists("server.sock"))


def serve():
    conn, _ = srv.accept()
    with conn:
        conn.sendall(conn.recv(100)[::-1])


t = threading.Thread(target=serve)
t.start()
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect("server.sock")
c.sendall(b"stressed")
print(c.recv(100))
t.join()
c.close()
srv.close()
os.unlink("server.sock")

d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d.bind("dgram.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(b"to a path", "dgram.sock")
print(d.recv(100))
d.close()
s.close()
os.unlink("dgram.sock")
