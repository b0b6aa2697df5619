"""Tests of svc_client.

The offline tests talk to a stub HTTP server in this process and need
nothing. The others talk to real svc servers, which ``go test
./clients/python`` starts (as root) and names in the environment:

    SVC_URL, SVC_KEY            a server with the defaults
    SVC_BUSY_URL, SVC_BUSY_KEY  a server with one task slot (MAX_CONCURRENCY=1)
    SVC_RATE_URL, SVC_RATE_KEYS a server with RATE_LIMIT_PER_MINUTE=60 and
                                two keys, comma-separated
    SVC_PY_EXTENSIONS           the extensions (docs/http-api.md) the server has:
                                "1" for all, or some of
                                "limits,outputs,stdin_from"

Without them those tests are skipped. Run with
``/usr/bin/python3 -m unittest -v test_svc_client`` in this directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import logging
import os
import socket
import tempfile
import threading
import time
import unittest
from typing import Any, Callable, Dict, Iterator, List, Tuple, TypeVar

import svc_client
from svc_client import Client, OutputError, Result, StepResult, SvcError, Uploaded, file_id, parallel, single, task

URL = os.environ.get("SVC_URL", "")
KEY = os.environ.get("SVC_KEY", "")
BUSY_URL = os.environ.get("SVC_BUSY_URL", "")
BUSY_KEY = os.environ.get("SVC_BUSY_KEY", "")
RATE_URL = os.environ.get("SVC_RATE_URL", "")
RATE_KEYS = [k for k in os.environ.get("SVC_RATE_KEYS", "").split(",") if k]
ALL_EXTENSIONS = ("limits", "outputs", "stdin_from")
_ext = os.environ.get("SVC_PY_EXTENSIONS", "").strip()
EXTENSIONS = set(ALL_EXTENSIONS) if _ext == "1" else {e.strip() for e in _ext.split(",") if e.strip() not in ("", "0")}
if EXTENSIONS - set(ALL_EXTENSIONS):
    raise ValueError("SVC_PY_EXTENSIONS=%r: want 1, 0, or some of %s" % (_ext, ",".join(ALL_EXTENSIONS)))


F = TypeVar("F", bound=Callable[..., Any])


def singles(steps: List[StepResult]) -> List[Result]:
    """The results of steps of one task each."""
    return [single(s) for s in steps]


def needs_extension(name: str) -> Callable[[F], F]:
    """Skip a test unless SVC_PY_EXTENSIONS says the server has the
    extension ``name``."""
    return unittest.skipUnless(
        name in EXTENSIONS, "SVC_PY_EXTENSIONS does not name %s: the server may not have it yet" % name
    )

needs_server = unittest.skipUnless(URL, "SVC_URL is not set: no svc server (go test ./clients/python starts one)")

HELLO_C = '#include <stdio.h>\nint main(void) { puts("hello from the sandbox"); return 0; }\n'


@contextlib.contextmanager
def retry_log() -> Iterator[List[logging.LogRecord]]:
    """Collect the svc_client logger's records (retries, uploads again)."""
    records: List[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("svc_client")
    h = Collect()
    old = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(h)
    try:
        yield records
    finally:
        logger.removeHandler(h)
        logger.setLevel(old)


def svc(rec: logging.LogRecord, attr: str) -> Any:
    """An attribute svc_client puts on its log records (svc_code, ...)."""
    return getattr(rec, attr)


def wait_for(cond: Any, what: str, timeout: float = 20.0) -> None:
    """Wait until cond() is true, failing after a generous timeout."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


# --- offline: a stub server ----------------------------------------------


class Stub:
    """An HTTP server on loopback that answers from a script and records
    the requests: each answer is (status, headers, body)."""

    def __init__(self, answers: List[Tuple[int, Dict[str, str], bytes]], *, keep_alive: bool = False,
                 drop_idle: bool = False) -> None:
        """keep_alive: answer in HTTP/1.1 and keep connections open;
        drop_idle: but close each after its answer without saying so, as a
        server does with an idle connection."""
        self.answers = list(answers)
        self.requests: List[Dict[str, Any]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                stub.requests.append({"method": self.command, "path": self.path, "port": self.client_address[1],
                                      "headers": dict(self.headers), "body": body})
                if drop_idle:
                    self.close_connection = True
                status, headers, data = stub.answers.pop(0) if len(stub.answers) > 1 else stub.answers[0]
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def err_body(code: str, msg: str = "no") -> bytes:
    return json.dumps({"error": msg, "code": code}).encode()


class OfflineTests(unittest.TestCase):
    """The client's own logic against a stub: codes, retry budgets, waits."""

    def stub(self, *answers: Tuple[int, Dict[str, str], bytes], **kw: bool) -> Stub:
        s = Stub(list(answers), **kw)
        self.addCleanup(s.close)
        return s

    def client(self, url: str, **kw: Any) -> Tuple[Client, List[float]]:
        c = Client(url, "k", **kw)
        waits: List[float] = []
        c._sleep = waits.append  # no real waiting
        return c, waits

    def test_unknown_code_is_internal_error(self) -> None:
        s = self.stub((409, {"X-Request-Id": "r1"}, err_body("brand_new", "what")))
        c, _ = self.client(s.url)
        with self.assertRaises(SvcError) as cm:
            c.info()
        e = cm.exception
        self.assertEqual((e.code, e.raw_code, e.status, e.request_id, e.attempts), ("internal_error", "brand_new", 409, "r1", 1))
        self.assertEqual(e.message, "what")

    def test_not_an_error_body(self) -> None:
        s = self.stub((502, {}, b"<html>bad gateway</html>"), (200, {}, b"{}"))
        c, waits = self.client(s.url)
        self.assertEqual(c.info(), {})  # 502 is retried once
        self.assertEqual(len(waits), 1)
        s2 = self.stub((418, {}, b"<html>teapot</html>"))
        c2, _ = self.client(s2.url)
        with self.assertRaises(SvcError) as cm:
            c2.info()
        self.assertEqual((cm.exception.code, cm.exception.status), ("internal_error", 418))
        self.assertIn("teapot", cm.exception.message)

    def test_500_is_retried_once(self) -> None:
        s = self.stub((500, {}, err_body("internal_error")))
        c, waits = self.client(s.url)
        with self.assertRaises(SvcError) as cm:
            c.info()
        self.assertEqual((cm.exception.code, cm.exception.attempts, len(s.requests), len(waits)), ("internal_error", 2, 2, 1))

    def test_503_backoff_without_retry_after(self) -> None:
        s = self.stub((503, {}, err_body("capacity_exhausted")))
        c, waits = self.client(s.url, max_retries=4, min_delay=0.1, max_delay=0.3)
        with self.assertRaises(SvcError) as cm:
            c.run(task("true"))
        self.assertEqual((cm.exception.code, cm.exception.attempts, len(s.requests)), ("capacity_exhausted", 5, 5))
        bounds = [(0.05, 0.1), (0.1, 0.2), (0.15, 0.3), (0.15, 0.3)]
        self.assertEqual(len(waits), 4)
        for w, (lo, hi) in zip(waits, bounds):
            self.assertTrue(lo <= w <= hi, "wait %g not in [%g, %g] (%s)" % (w, lo, hi, waits))
        ids = {r["headers"]["X-Request-Id"] for r in s.requests}
        self.assertEqual(len(ids), 1, "one x-request-id over the attempts")

    def test_503_retry_after(self) -> None:
        s = self.stub((503, {"Retry-After": "2"}, err_body("shutting_down")), (200, {}, b'{"results": []}'))
        c, waits = self.client(s.url)
        self.assertEqual(c.execute([task("true")]), {"results": []})
        self.assertEqual(waits, [2.0])

    def test_retry_after_over_max_delay_gives_up(self) -> None:
        s = self.stub((503, {"Retry-After": "100"}, err_body("capacity_exhausted")))
        c, waits = self.client(s.url, max_delay=10)
        with self.assertRaises(SvcError) as cm:
            c.info()
        self.assertEqual((cm.exception.retry_after, cm.exception.attempts, waits), (100.0, 1, []))

    def test_other_4xx_not_retried(self) -> None:
        for code, status in [("invalid_request", 400), ("limits_exceeded", 422), ("rate_limited", 429), ("not_found", 404)]:
            s = self.stub((status, {"Retry-After": "1"}, err_body(code)))
            c, waits = self.client(s.url)
            with self.assertRaises(SvcError) as cm:
                c.info()
            self.assertEqual((cm.exception.code, cm.exception.attempts, len(s.requests), waits), (code, 1, 1, []))

    def test_retries_off(self) -> None:
        s = self.stub((503, {"Retry-After": "1"}, err_body("capacity_exhausted")))
        c, waits = self.client(s.url, retries=False)
        with self.assertRaises(SvcError):
            c.info()
        self.assertEqual((len(s.requests), waits), (1, []))

    def test_connection_failure_is_retried(self) -> None:
        with socket.socket() as sk:  # a port that nothing listens on
            sk.bind(("127.0.0.1", 0))
            port = sk.getsockname()[1]
        c, waits = self.client("http://127.0.0.1:%d" % port, max_retries=2)
        with self.assertRaises(SvcError) as cm:
            c.info()
        e = cm.exception
        self.assertEqual((e.code, e.status, e.attempts, len(waits)), ("internal_error", None, 3, 2))
        self.assertIsInstance(e.__cause__, OSError)

    def test_parse_retry_after(self) -> None:
        p = svc_client._parse_retry_after
        self.assertEqual(p("3"), 3.0)
        self.assertIsNone(p("0"))
        self.assertIsNone(p(""))
        self.assertIsNone(p("soon"))
        self.assertIsNone(p("-1"))
        self.assertAlmostEqual(p("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) or 0, 10.0)
        self.assertIsNone(p("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0))

    def test_headers_and_prefix(self) -> None:
        s = self.stub((200, {}, b'{"version": "x"}'))
        c = Client(s.url + "/api/v1/", "secret")
        c.info()
        r = s.requests[0]
        self.assertEqual(r["path"], "/api/v1/info")
        self.assertEqual(r["headers"]["Authorization"], "Bearer secret")
        Client(s.url).info()
        self.assertNotIn("Authorization", s.requests[1]["headers"])

    def test_base_url_checked(self) -> None:
        for bad in ["127.0.0.1:8080", "ftp://h", "http://h/?q=1", "http://"]:
            with self.assertRaises(ValueError, msg=bad):
                Client(bad)

    def test_task_helper(self) -> None:
        up = Uploaded("a" * 64, 3, False)
        t = task("gcc", ["-c", "x.c"], files={"x.c": up, "y.h": "int y;", "z": b"z", "w": file_id("b" * 64)},
                 stdin="", sandbox_profile="compile_v2", cache=True, limits={"wall_timeout_ms": 100},
                 outputs=["x.o"], stdin_from=1, env={"A": "1"}, working_dir="/svc")
        self.assertEqual(t, {"cmd": "gcc", "args": ["-c", "x.c"], "env": {"A": "1"}, "stdin": "",
                             "files": {"x.c": {"file_id": "a" * 64}, "y.h": "int y;", "z": "z", "w": {"file_id": "b" * 64}},
                             "working_dir": "/svc", "sandbox_profile": "compile_v2", "cache": True,
                             "limits": {"wall_timeout_ms": 100}, "outputs": ["x.o"], "stdin_from": 1})
        self.assertEqual(task("true"), {"cmd": "true"})
        with self.assertRaises(TypeError):
            task("echo", "hi")
        with self.assertRaises(ValueError):
            task("cat", files={"b": b"\xff"})
        self.assertEqual(svc_client._file_ids([t, [task("x", files={"q": file_id("a" * 64)}), task("y")]]),
                         ["b" * 64, "a" * 64])

    def test_connections_are_kept(self) -> None:
        s = self.stub((200, {}, b'{"version": "x"}'), keep_alive=True)
        with Client(s.url, "k") as c:
            for _ in range(3):
                c.info()
            self.assertEqual(len({r["port"] for r in s.requests}), 1, "three calls, one connection")
        self.assertEqual(c._idle, [], "closed at the end of the with block")
        c.info()  # still usable: a new connection
        self.assertEqual(len({r["port"] for r in s.requests}), 2)
        c.close()
        # max_idle_connections=0: one connection per call.
        c0 = Client(s.url, "k", max_idle_connections=0)
        c0.info()
        c0.info()
        self.assertEqual(len({r["port"] for r in s.requests}), 4)

    def test_connection_closed_while_idle_is_replaced(self) -> None:
        s = self.stub((200, {}, b'{"version": "x"}'), keep_alive=True, drop_idle=True)
        c, waits = self.client(s.url)
        with retry_log() as records:
            for _ in range(3):
                self.assertEqual(c.info(), {"version": "x"})
        self.assertEqual((len(s.requests), waits, records), (3, [], []), "no retry, no wait: a new connection")
        c.close()

    def test_finite_default_timeout(self) -> None:
        self.assertEqual(Client("http://127.0.0.1:1").timeout, 300.0)

    def test_upload_file_streams_and_keeps_only_the_path(self) -> None:
        data = os.urandom(300 << 10)  # several chunks
        fid = hashlib.sha256(data).hexdigest()
        s = self.stub((201, {}, json.dumps({"file_id": fid, "size": len(data)}).encode()), keep_alive=True)
        c, _ = self.client(s.url)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "big.bin")
            with open(path, "wb") as f:
                f.write(data)
            up = c.upload_file(path)
        self.assertEqual((up.file_id, up.size), (fid, len(data)))
        r = s.requests[0]
        self.assertEqual(r["headers"]["Content-Length"], str(len(r["body"])))
        self.assertNotIn("Transfer-Encoding", r["headers"])
        self.assertIn(b'filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n' + data + b"\r\n--", r["body"])
        src = c._sources[fid]
        self.assertEqual((src.content, src.path), (None, path), "the path, not the bytes")
        # A server that stored something else: refused.
        s2 = self.stub((201, {}, json.dumps({"file_id": "0" * 64, "size": 1}).encode()))
        c2, _ = self.client(s2.url)
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"x")
            f.flush()
            with self.assertRaises(SvcError) as cm:
                c2.upload_file(f.name)
        self.assertIn("want its SHA-256", cm.exception.message)
        with self.assertRaises(SvcError) as cm:
            c2.upload_file(os.path.join(tempfile.gettempdir(), "no-such-file-" + os.urandom(8).hex()))
        self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_request", None))

    def test_upload_file_sent_again_after_503(self) -> None:
        data = b"retried content\n"
        fid = hashlib.sha256(data).hexdigest()
        s = self.stub((503, {"Retry-After": "1"}, err_body("capacity_exhausted")),
                      (201, {}, json.dumps({"file_id": fid, "size": len(data)}).encode()))
        c, waits = self.client(s.url)
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            self.assertEqual(c.upload_file(f.name).file_id, fid)
        self.assertEqual([len(r["body"]) for r in s.requests], [len(s.requests[0]["body"])] * 2)
        self.assertIn(data, s.requests[1]["body"])
        self.assertEqual(waits, [1.0])

    def test_local_id_check(self) -> None:
        c = Client("http://127.0.0.1:1")
        for bad in ["", "ABC", "a" * 63, "A" * 64, "../" + "a" * 61]:
            with self.assertRaises(SvcError) as cm:
                c.download(bad)
            self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_request", None))


# --- against a real server -----------------------------------------------


@needs_server
class ExecuteTests(unittest.TestCase):
    """POST /execute and GET /info on a real server."""

    def setUp(self) -> None:
        self.c = Client(URL, KEY)

    def test_info(self) -> None:
        info = self.c.info()
        self.assertIn("compile_v2", info["sandbox_profiles"]["allowed"])
        for k in ["memory_max_bytes", "wall_timeout_ms", "max_parallel_tasks", "max_concurrency", "upload_file_limit_bytes"]:
            self.assertIsInstance(info["limits"][k], int, k)
        self.assertIn("svc_execution_slots_in_use", self.c.metrics())
        self.c.health()

    def test_compile_and_run(self) -> None:
        resp = self.c.execute(
            [
                task("gcc", ["-O2", "-o", "hello", "hello.c"], files={"hello.c": HELLO_C}),
                task("./hello", sandbox_profile="native_v2"),
            ],
            stop_on_failure=True,
        )
        self.assertEqual(set(resp), {"results", "cache"})
        gcc, run = singles(resp["results"])
        self.assertEqual((gcc["outcome"], gcc["exit_code"]), ("exited", 0), gcc["stderr"])
        self.assertEqual((run["outcome"], run["exit_code"], run["signal"]), ("exited", 0, None))
        self.assertEqual(run["stdout"], "hello from the sandbox\n")
        self.assertFalse(run["replayed"])
        self.assertGreaterEqual(run["stats"]["wall_time_ms"], 0)
        self.assertEqual(run["stats"]["denied_syscalls"], {})

    def test_parallel_step_and_stdin(self) -> None:
        results = self.c.run(
            task("sh", ["-c", "echo made > shared.txt"]),
            [task("tr", ["a-z", "A-Z"], stdin="first\n"), task("cat", ["shared.txt"]), task("sh", ["-c", "exit 3"])],
        )
        self.assertIsInstance(results[1], list)
        self.assertEqual([r["stdout"] for r in parallel(results[1])], ["FIRST\n", "made\n", ""])
        self.assertEqual(parallel(results[1])[2]["exit_code"], 3)

    def test_failures_are_outcomes(self) -> None:
        results = singles(self.c.run(task("no-such-program"), task("true"), stop_on_failure=True))
        self.assertEqual((results[0]["outcome"], results[0]["exit_code"]), ("exited", 127))
        self.assertTrue(results[0]["stderr"].startswith("svc: "), results[0]["stderr"])
        self.assertEqual(results[1]["outcome"], "not_started")
        self.assertNotIn("exit_code", results[1])

    def test_legacy(self) -> None:
        results = self.c.execute([task("echo", ["old"])], legacy=True)
        self.assertIsInstance(results, list)
        self.assertEqual(single(results[0])["stdout"], "old\n")


@needs_server
class FileTests(unittest.TestCase):
    """The file store: upload, file_id inputs, download, list, delete."""

    def setUp(self) -> None:
        self.c = Client(URL, KEY)

    def test_upload_file_id_input_download(self) -> None:
        data = b"line one\nline two\n" + os.urandom(8).hex().encode()
        up = self.c.upload(data, "input.txt")
        self.assertEqual((up.file_id, up.size, up.already_exists), (hashlib.sha256(data).hexdigest(), len(data), False))
        self.assertTrue(self.c.upload(data, "input.txt").already_exists)
        results = singles(self.c.run(task("wc", ["-l", "in/data.txt"], files={"in/data.txt": up}),
                                     task("sha256sum", ["in/data.txt"])))
        self.assertEqual(results[0]["stdout"], "2 in/data.txt\n")
        self.assertEqual(results[1]["stdout"].split()[0], up.file_id)
        self.assertEqual(self.c.download(up), data)
        self.assertEqual(self.c.download(up.file_id), data)
        self.c.delete(up)
        with self.assertRaises(SvcError) as cm:
            self.c.download(up)
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

    def test_binary_upload_and_names(self) -> None:
        data = bytes(range(256)) + os.urandom(16)
        up = self.c.upload(data, "résumé.bin")
        files = {f["id"]: f for f in self.c.list_files()}
        self.assertEqual(files[up.file_id]["filename"], "résumé.bin")
        self.assertEqual(files[up.file_id]["size"], len(data))
        r = single(self.c.run(task("cmp", ["b", "c"], files={"b": up, "c": file_id(up.file_id)}))[0])
        self.assertEqual(r["exit_code"], 0)
        self.c.delete(up)

    def test_upload_file_and_stream(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "source.c")
            with open(path, "w") as f:
                f.write(HELLO_C + "/* %s */\n" % os.urandom(8).hex())
            up = self.c.upload_file(path)
            with open(path, "rb") as fb:
                self.assertEqual(self.c.upload(fb, "again.c").file_id, up.file_id)
            files = {f["id"]: f for f in self.c.list_files()}
            self.assertEqual(files[up.file_id]["filename"], "source.c")
            self.c.delete(up)


@needs_server
class ErrorTests(unittest.TestCase):
    """Errors come back as SvcError with the code of the error body."""

    def setUp(self) -> None:
        self.c = Client(URL, KEY)

    def code_of(self, fn: Any, *args: Any, **kw: Any) -> SvcError:
        with self.assertRaises(SvcError) as cm:
            fn(*args, **kw)
        return cm.exception

    def test_invalid_request(self) -> None:
        e = self.code_of(self.c.execute, {"steps": []})
        self.assertEqual((e.code, e.status, e.attempts), ("invalid_request", 400, 1))
        self.assertTrue(e.request_id)
        e = self.code_of(self.c.execute, [task("true"), {"cmd": "true", "argz": ["typo"]}])
        self.assertEqual(e.code, "invalid_request")
        self.assertIn('steps[1]: unknown field "argz"', e.message)  # names the field
        e = self.code_of(self.c.execute, [[]])
        self.assertEqual(e.code, "invalid_request")

    def test_unauthorized(self) -> None:
        for key in ["wrong-key", None]:
            e = self.code_of(Client(URL, key).info)
            self.assertEqual((e.code, e.status, e.attempts), ("unauthorized", 401, 1), key)

    def test_limits_and_profiles(self) -> None:
        n = self.c.info()["limits"]["max_steps"]
        e = self.code_of(self.c.run, *[task("true")] * (n + 1))
        self.assertEqual((e.code, e.status), ("limits_exceeded", 422))
        e = self.code_of(self.c.run, task("true", sandbox_profile="native_v1"))
        self.assertEqual((e.code, e.status), ("profile_not_allowed", 422))

    def test_file_not_found_of_a_file_the_client_did_not_upload(self) -> None:
        missing = hashlib.sha256(os.urandom(16)).hexdigest()
        with retry_log() as records:
            e = self.code_of(self.c.run, task("cat", ["x"], files={"x": file_id(missing)}))
        self.assertEqual((e.code, e.status, e.attempts), ("file_not_found", 404, 1))
        self.assertEqual(records, [], "nothing to upload again, nothing retried")


@needs_server
class RetryTests(unittest.TestCase):
    """The specification's retry rules against real servers."""

    def test_file_not_found_uploads_again_once(self) -> None:
        c = Client(URL, KEY)
        data = ("the content of a test file %s\n" % os.urandom(8).hex()).encode()
        up = c.upload(data, "input.txt")
        Client(URL, KEY).delete(up)  # another client, say; or it expired
        with retry_log() as records:
            r = single(c.run(task("cat", ["in.txt"], files={"in.txt": up}))[0])
        self.assertEqual(r["stdout"], data.decode())
        self.assertEqual([svc(rec, "svc_reupload") for rec in records], [[up.file_id]])
        self.assertEqual(c.download(up), data, "the file is stored again")

        # Once only: a request that still misses a file after the uploads
        # again (here one nobody uploaded) fails with file_not_found.
        Client(URL, KEY).delete(up)
        missing = hashlib.sha256(os.urandom(16)).hexdigest()
        with retry_log() as records:
            with self.assertRaises(SvcError) as cm:
                c.run(task("cat", ["a", "b"], files={"a": up, "b": file_id(missing)}))
        self.assertEqual(cm.exception.code, "file_not_found")
        self.assertEqual([svc(rec, "svc_reupload") for rec in records], [[up.file_id]])
        c.delete(up)

    def test_file_not_found_from_path_and_changed_content(self) -> None:
        c = Client(URL, KEY)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "data.txt")
            with open(path, "w") as f:
                f.write("version 1 %s\n" % os.urandom(8).hex())
            up = c.upload_file(path)
            Client(URL, KEY).delete(up)
            r = single(c.run(task("cat", ["data.txt"], files={"data.txt": up}))[0])
            self.assertTrue(r["stdout"].startswith("version 1"))
            Client(URL, KEY).delete(up)
            with open(path, "w") as f:
                f.write("version 2\n")
            with self.assertRaises(SvcError) as cm:
                c.run(task("cat", ["data.txt"], files={"data.txt": up}))
            self.assertEqual(cm.exception.code, "file_not_found")
            self.assertIn("content changed", cm.exception.message)

    @unittest.skipUnless(BUSY_URL, "SVC_BUSY_URL is not set: no server with one slot")
    def test_503_capacity_exhausted_waits_retry_after(self) -> None:
        holder = Client(BUSY_URL, BUSY_KEY, retries=False)
        got: Dict[str, Any] = {}

        def hold() -> None:
            try:
                got["results"] = holder.run(task("sleep", ["3"]))
            except Exception as e:  # reported below
                got["error"] = e

        t = threading.Thread(target=hold)
        t.start()
        try:
            wait_for(lambda: "svc_execution_slots_in_use 1\n" in holder.metrics(), "the one slot to be taken")
            # Without retries: 503 capacity_exhausted with Retry-After.
            e = None
            try:
                Client(BUSY_URL, BUSY_KEY, retries=False).run(task("true"))
            except SvcError as err:
                e = err
            self.assertIsNotNone(e, "a second request ran while the one slot was taken")
            assert e is not None
            self.assertEqual((e.code, e.status, e.retry_after), ("capacity_exhausted", 503, 1.0))
            # With them: the client waits the Retry-After and gets through
            # once the slot is free.
            c = Client(BUSY_URL, BUSY_KEY, max_retries=20)
            with retry_log() as records:
                r = single(c.run(task("echo", ["hi"]))[0])
            self.assertEqual(r["stdout"], "hi\n")
        finally:
            t.join()
        self.assertNotIn("error", got)
        self.assertEqual(got["results"][0]["outcome"], "exited")
        self.assertTrue(records, "the client never met capacity_exhausted")
        for rec in records:
            self.assertEqual((svc(rec, "svc_code"), svc(rec, "svc_status"), svc(rec, "svc_wait")), ("capacity_exhausted", 503, 1.0))

    @unittest.skipUnless(RATE_URL and len(RATE_KEYS) >= 2, "SVC_RATE_URL is not set: no rate-limited server")
    def test_429_rate_limited_is_not_retried(self) -> None:
        c = Client(RATE_URL, RATE_KEYS[0])
        with retry_log() as records:
            for _ in range(500):
                try:
                    c.list_files()
                except SvcError as e:
                    self.assertEqual((e.code, e.status, e.attempts), ("rate_limited", 429, 1))
                    self.assertGreaterEqual(e.retry_after or 0, 1.0)
                    break
            else:
                self.fail("500 requests and never rate_limited")
        self.assertEqual(records, [])

    @unittest.skipUnless(RATE_URL and len(RATE_KEYS) >= 2, "SVC_RATE_URL is not set: no rate-limited server")
    def test_429_waited_out_when_asked(self) -> None:
        c = Client(RATE_URL, RATE_KEYS[1], retry_rate_limited=True)
        with retry_log() as records:
            for _ in range(500):
                c.list_files()  # never raises: a 429 is waited out
                if records:
                    break
            else:
                self.fail("500 requests and never rate_limited")
        for rec in records:
            self.assertEqual((svc(rec, "svc_code"), svc(rec, "svc_status")), ("rate_limited", 429))
            self.assertGreaterEqual(svc(rec, "svc_wait"), 1.0)


@needs_server
class ExtensionTests(unittest.TestCase):
    """The extensions of docs/http-api.md: per-task limits, outputs, stdin_from."""

    def setUp(self) -> None:
        self.c = Client(URL, KEY)

    @needs_extension("outputs")
    def test_outputs_are_downloaded(self) -> None:
        r = single(self.c.run(task("sh", ["-c", r"printf 'result\000\377\n' > out.bin; mkdir dir"],
                                   outputs=["out.bin", "missing.txt", "dir"]))[0])
        self.assertEqual(r["outcome"], "exited")
        outs = r["outputs"]
        self.assertEqual(set(outs), {"out.bin", "missing.txt", "dir"})
        self.assertEqual(outs["out.bin"]["size"], 9)
        self.assertEqual(self.c.read_output(r, "out.bin"), b"result\x00\xff\n")
        self.assertEqual(self.c.download(outs["out.bin"]["file_id"]), b"result\x00\xff\n")
        self.assertEqual(outs["missing.txt"], {"error": "not_found"})
        with self.assertRaises(OutputError) as cm:
            self.c.read_output(r, "missing.txt")
        self.assertEqual((cm.exception.path, cm.exception.error), ("missing.txt", "not_found"))
        self.assertEqual(outs["dir"], {"error": "not_regular"})
        self.assertNotIn("outputs", self.c.run(task("true"))[0])
        with self.assertRaises(SvcError) as ce:
            self.c.run(task("true", outputs=["../escape"]))
        self.assertEqual(ce.exception.code, "invalid_request")

    @needs_extension("limits")
    def test_lowered_limits(self) -> None:
        service = self.c.info()["limits"]
        spin, sleep = parallel(self.c.run([
            task("sh", ["-c", "while :; do :; done"], limits={"cpu_time_limit_ms": 300}),
            task("sleep", ["30"], limits={"wall_timeout_ms": 300}),
        ])[0])
        self.assertEqual(spin["outcome"], "cpu_time_exceeded")
        self.assertEqual(sleep["outcome"], "timed_out")
        self.assertLess(sleep["stats"]["wall_time_ms"], 10000)
        with self.assertRaises(SvcError) as cm:
            self.c.run(task("true", limits={"cpu_time_limit_ms": service["cpu_time_limit_ms"] + 1}))
        self.assertEqual((cm.exception.code, cm.exception.status), ("limits_exceeded", 422))
        self.assertIn("cpu_time_limit_ms", cm.exception.message)
        with self.assertRaises(SvcError) as cm:
            self.c.run(task("true", limits={"pids_max": 0}))
        self.assertEqual((cm.exception.code, cm.exception.status), ("invalid_request", 400))

    @needs_extension("stdin_from")
    def test_stdin_from_pipes_two_tasks(self) -> None:
        interactor, solution = parallel(self.c.run([
            task("sh", ["-c", "echo 20; read answer; echo \"got $answer\" >&2"], stdin_from=1),
            task("sh", ["-c", "read n; echo $((n + 1))"], stdin_from=0, sandbox_profile="compile_v2"),
        ])[0])
        self.assertEqual((interactor["exit_code"], solution["exit_code"]), (0, 0))
        self.assertEqual(interactor["stdout"], "20\n")  # the transcript of what it wrote
        self.assertEqual(solution["stdout"], "21\n")
        self.assertEqual(interactor["stderr"], "got 21\n")
        with self.assertRaises(SvcError) as cm:
            self.c.run(task("cat", stdin_from=0))
        self.assertEqual(cm.exception.code, "invalid_request")


if __name__ == "__main__":
    unittest.main()
