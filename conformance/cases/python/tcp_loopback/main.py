import http.server
import socket
import socketserver
import threading
import urllib.request


class Upper(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())


srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Upper)
threading.Thread(target=srv.serve_forever, args=(0.01,), daemon=True).start()
port = srv.server_address[1]
with socket.create_connection(("127.0.0.1", port)) as c:
    f = c.makefile("rwb")
    for w in (b"alpha\n", b"beta\n"):
        f.write(w)
        f.flush()
        print(f.readline())
    f.close()
srv.shutdown()
srv.server_close()

ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(8)
results = {}


def client(i):
    with socket.create_connection(ls.getsockname()) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sendall(b"%d" % i * 10000)
        c.shutdown(socket.SHUT_WR)
        results[i] = c.recv(100)


ts = [threading.Thread(target=client, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for _ in ts:
    conn, addr = ls.accept()
    with conn:
        n = 0
        while chunk := conn.recv(65536):
            n += len(chunk)
        conn.sendall(b"%d bytes from %s" % (n, addr[0].encode()))
for t in ts:
    t.join()
ls.close()
print(sorted(results.values()))


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("path=" + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


hs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
threading.Thread(target=hs.serve_forever, args=(0.01,), daemon=True).start()
with urllib.request.urlopen("http://127.0.0.1:%d/x?y=1" % hs.server_address[1], timeout=10) as r:
    print(r.status, r.read())
hs.shutdown()
hs.server_close()
