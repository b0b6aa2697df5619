"""script.py: a Python workload: common imports, a local module, files,
a thread, a subprocess, a socketpair and a loopback TCP connection (as test
harnesses and build servers use), and some computation."""
import bisect
import collections
import dataclasses
import datetime
import decimal
import fractions
import functools
import hashlib
import heapq
import itertools
import json
import math
import os
import pathlib
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import typing

import helper


@dataclasses.dataclass
class Point:
    x: int
    y: int


def sockets() -> str:
    a, b = socket.socketpair()
    a.sendall(b"ping")
    got = b.recv(4)
    a.close()
    b.close()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    cli.sendall(got)
    got = conn.recv(4)
    conn.shutdown(socket.SHUT_RDWR)
    for s in (conn, cli, srv):
        s.close()
    return got.decode()


def main() -> None:
    nums = [int(t) for t in sys.stdin.read().split()]
    heap = list(nums)
    heapq.heapify(heap)
    c = collections.Counter(n % 3 for n in nums)
    pts = [Point(i, i * i) for i in range(5)]
    data = json.dumps({"nums": sorted(nums), "counts": c, "pts": [dataclasses.asdict(p) for p in pts]})
    assert json.loads(data)["nums"][0] == heap[0]
    digest = hashlib.sha256(data.encode()).hexdigest()
    words = re.findall(r"[a-z]+", "the quick brown fox jumps over the lazy dog")
    fib = functools.lru_cache(maxsize=None)(lambda n: n if n < 2 else fib(n - 1) + fib(n - 2))
    total = decimal.Decimal("0.1") * 3 + fractions.Fraction(1, 3).numerator
    perms = sum(1 for _ in itertools.permutations(range(5)))
    random.seed(1)
    out = pathlib.Path("py.out")
    out.write_text(data)
    with tempfile.TemporaryDirectory() as d:
        pathlib.Path(d, "x").write_text("x")
        listed = os.listdir(d)
    results: typing.List[int] = []
    t = threading.Thread(target=lambda: results.append(helper.square(7)))
    t.start()
    t.join()
    echo = subprocess.run(["echo", "child"], capture_output=True, text=True, check=True).stdout.strip()
    pong = sockets()
    time.sleep(0.001)
    print(digest[:8], len(words), fib(30), total, perms, math.isqrt(99), bisect.bisect(sorted(nums), 3),
          listed, results, echo, pong, datetime.date(2024, 1, 2).isoformat(), out.stat().st_size > 0)
    out.unlink()


if __name__ == "__main__":
    main()
