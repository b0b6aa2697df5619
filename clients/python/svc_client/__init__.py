"""A client of the svc HTTP API, with no dependencies.

svc runs untrusted programs in Linux sandboxes for online judges. This
package speaks its HTTP API (docs/http-api.md of the svc repository)
with the standard library only (``http.client``, ``json``), on Python
3.9 and later, CPython and PyPy alike. Install it with pip from the
repository (``pip install ./clients/python``; clients/python/README.md
says how without PyPI).

    from svc_client import Client, SvcError, single, task

    with Client("http://127.0.0.1:8080", api_key) as c:
        src = c.upload(b"int main(void) { return 0; }\\n", "a.c")
        resp = c.execute([
            task("gcc", ["-o", "a", "a.c"], files={"a.c": src}),
            task("./a", sandbox_profile="native_v2"),
        ], stop_on_failure=True)
        for step in resp["results"]:
            r = single(step)
            print(r["outcome"], r.get("exit_code"))

Requests and results are plain JSON values (dicts and lists) with the
wire names of the API, typed for checkers: a step's result is a
:class:`Result` (a ``TypedDict``), or a list of them for a parallel step
(:func:`single` and :func:`parallel` tell them apart), and the answer of
:meth:`Client.execute` an :class:`ExecuteResponse`. :func:`task` builds
a task, :func:`file_id` a reference to a stored file. A task failure
(non-zero exit, timeout, out of memory, a killed policy violation) is an
``outcome`` in its result, not an exception.

Connections
-----------
A :class:`Client` keeps its connections open between calls (HTTP/1.1
keep-alive; at most ``max_idle_connections`` idle ones) and closes them
in :meth:`Client.close`, or at the end of a ``with`` block. A connection
the server closed while it was idle is replaced at once, without a
retry. Each socket operation of an attempt waits at most ``timeout``
seconds (300 by default: an execute is answered once it ran).

Errors
------
Every error response of the server (``{"error": ..., "code": ...}``)
raises :class:`SvcError` with that ``code`` (a code this module does not
know becomes ``internal_error``, as the specification says; the code sent
is kept in ``raw_code``), the server's message, the HTTP ``status``, the
``request_id`` (``x-request-id``: quote it to the operator), any
``retry_after`` and the number of ``attempts``. A connection that failed
for good is an ``internal_error`` with ``status`` None and the transport's
exception as ``__cause__``. Branch on ``code``, never on the message.

Retries
-------
Every call but :meth:`Client.health` follows the client retry policy of
the specification (section 7):

* 503 (``capacity_exhausted``, ``shutting_down``, ``cancelled``) and
  connection failures are sent again up to ``max_retries`` times, after
  the ``Retry-After`` the server sent or, without one, after an
  exponential backoff with jitter. A ``Retry-After`` longer than
  ``max_delay`` ends the retries: the error is raised with it.
* 500, 502 and 504 are sent again once.
* ``file_not_found`` from :meth:`Client.execute`: the files of the request
  that this client uploaded itself (it keeps their bytes, or only the
  path of :meth:`Client.upload_file`) are uploaded again and the request is sent
  once more. A file it does not know cannot come back: the error is
  raised.
* Any other 4xx is raised at once. That includes 429 ``rate_limited``,
  as the specification says ("never retry other 4xx codes"); a client
  made with ``retry_rate_limited=True`` waits out its ``Retry-After``
  instead, within the same bounds as a 503.

All attempts of one call carry the same ``x-request-id``. Retries are
logged on the ``svc_client`` logger at INFO level; each record has the
attributes ``svc_method``, ``svc_path``, ``svc_code``, ``svc_status`` and
``svc_wait`` (seconds). Uploads again are logged there too, with
``svc_reupload`` (the file ids).

Extensions beyond the specification
-----------------------------------
svc adds task fields (docs/http-api.md, "Extensions beyond the
specification") that :func:`task` takes as keywords: ``limits``
(lower a task's limits), ``outputs`` (files collected into the file store
after the step; :meth:`Client.read_output` downloads one) and
``stdin_from`` (in a parallel step, another task's stdout as this task's
stdin). A server that predates them answers ``invalid_request``.

A :class:`Client` is safe for use by several threads.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import mimetypes
import os
import random
import re
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import (
    Any,
    Callable,
    BinaryIO,
    Dict,
    Generator,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    Literal,
    TypedDict,
    Union,
    cast,
    overload,
)

__all__ = [
    "CODES",
    "OUTCOMES",
    "AFFINITY_HEADER",
    "CacheSummary",
    "Client",
    "ExecuteResponse",
    "Outcome",
    "OutputEntry",
    "OutputError",
    "Result",
    "Stats",
    "StepResult",
    "StoredFile",
    "SvcError",
    "Uploaded",
    "file_id",
    "parallel",
    "single",
    "task",
]

__version__ = "1.1.0"

log = logging.getLogger("svc_client")

#: The error codes of the specification (section 7).
CODES = frozenset(
    {
        "invalid_request",
        "unauthorized",
        "not_found",
        "file_not_found",
        "payload_too_large",
        "limits_exceeded",
        "profile_not_allowed",
        "capacity_exhausted",
        "rate_limited",
        "shutting_down",
        "cancelled",
        "deadline_exceeded",
        "sandbox_setup_failed",
        "cache_disabled",
        "internal_error",
    }
)

#: The header by which a load balancer can keep related requests on one
#: instance: the uploads again after ``file_not_found`` and the request
#: sent again carry it with one fresh value, so that they meet on the
#: instance that now holds the files. svc itself ignores it.
AFFINITY_HEADER = "X-Svc-Affinity"

Task = Dict[str, Any]
"""A task: a JSON object with the wire names of the API (see :func:`task`)."""

Step = Union[Task, List[Task]]
"""A step: one task, or a list of tasks that run in parallel."""

Outcome = Literal[
    "exited",
    "signaled",
    "timed_out",
    "cpu_time_exceeded",
    "out_of_memory",
    "ancestor_out_of_memory",
    "output_limit",
    "pids_limit",
    "policy_violation",
    "not_started",
    "infrastructure_failure",
]
"""How a task ended (docs/http-api.md, "Outcomes")."""

#: Every :data:`Outcome`. A newer server may send one not listed here.
OUTCOMES = frozenset(
    {
        "exited",
        "signaled",
        "timed_out",
        "cpu_time_exceeded",
        "out_of_memory",
        "ancestor_out_of_memory",
        "output_limit",
        "pids_limit",
        "policy_violation",
        "not_started",
        "infrastructure_failure",
    }
)


class Stats(TypedDict, total=False):
    """The statistics of a completed task; a figure the kernel cannot
    give is None."""

    wall_time_ms: int
    cpu_usage_usec: Optional[int]
    cpu_user_usec: Optional[int]
    cpu_system_usec: Optional[int]
    cpu_nr_throttled: Optional[int]
    cpu_throttled_usec: Optional[int]
    memory_peak_bytes: Optional[int]
    pids_peak: Optional[int]
    oom_kill_count: Optional[int]
    pids_limit_hit_count: Optional[int]
    denied_syscalls: Dict[str, int]


class OutputEntry(TypedDict, total=False):
    """A collected output: ``file_id`` and ``size`` when stored, else
    ``error`` (``not_found``, ``not_regular``, ``too_large``,
    ``store_full``)."""

    file_id: str
    size: int
    error: str


class Result(TypedDict, total=False):
    """The result of one task (docs/http-api.md, "A result").

    A completed task has ``outcome``, ``exit_code``, ``signal``,
    ``replayed``, ``stdout``, ``stderr``, the ``*_truncated`` flags and
    ``stats`` (and ``outputs`` when it asked for some); a task that did
    not run has only ``outcome`` (``not_started`` or
    ``infrastructure_failure``), ``signal`` (None) and ``error``. Fields
    a newer server adds are kept.
    """

    outcome: str
    exit_code: int
    signal: Optional[int]
    replayed: bool
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    stats: Stats
    outputs: Dict[str, OutputEntry]
    error: str


StepResult = Union[Result, List[Result]]
"""A step's result: a :class:`Result`, or a list of them for a parallel
step."""


class CacheSummary(TypedDict):
    """What the step cache did for one request."""

    enabled: bool
    replayed_steps: int
    stored_steps: int


class ExecuteResponse(TypedDict):
    """The answer of POST /execute: one result per step, in order."""

    results: List[StepResult]
    cache: CacheSummary


class StoredFile(TypedDict):
    """A stored file, as GET /file lists it."""

    id: str
    filename: str
    content_type: str
    size: int
    created_at: str


def single(step: StepResult) -> Result:
    """The result of a step of one task; TypeError for a parallel step's."""
    if isinstance(step, list):
        raise TypeError("a parallel step's results (%d), not one task's" % len(step))
    return step


def parallel(step: StepResult) -> List[Result]:
    """The results of a parallel step; TypeError for a step of one task."""
    if not isinstance(step, list):
        raise TypeError("one task's result, not a parallel step's")
    return step

_FILE_ID = re.compile(r"[0-9a-f]{64}")


class SvcError(Exception):
    """An error the server answered, or a call that failed for good.

    Attributes:
        code: the stable code of the error body (``invalid_request``,
            ``file_not_found``, ...); ``internal_error`` for a code not in
            :data:`CODES`, for an answer that is not an svc error body, and
            for a connection that failed.
        message: the human-readable text.
        status: the HTTP status of the last attempt; None when no answer
            came (connection failure, or a check made before sending).
        raw_code: the code as the server sent it ("" when none).
        request_id: the ``x-request-id`` of the answer.
        retry_after: the ``Retry-After`` of the answer in seconds, or None.
        attempts: how many times the request was sent.
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: Optional[int] = None,
        *,
        raw_code: str = "",
        request_id: str = "",
        retry_after: Optional[float] = None,
        attempts: int = 0,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.raw_code = raw_code
        self.request_id = request_id
        self.retry_after = retry_after
        self.attempts = attempts

    def __str__(self) -> str:
        s = "%s: %s" % (self.code, self.message)
        extra = []
        if self.status is not None:
            extra.append("HTTP %d" % self.status)
        if self.raw_code and self.raw_code != self.code:
            extra.append("code sent %r" % self.raw_code)
        if self.request_id:
            extra.append("request id " + self.request_id)
        if self.retry_after is not None:
            extra.append("retry after %g s" % self.retry_after)
        if self.attempts > 1:
            extra.append("%d attempts" % self.attempts)
        if extra:
            s += " (" + ", ".join(extra) + ")"
        return s

    def __repr__(self) -> str:
        return "SvcError(%r, %r, %r)" % (self.code, self.message, self.status)


class OutputError(Exception):
    """A collected output the server could not store (docs/http-api.md,
    "Collected outputs"): ``error`` is ``not_found``, ``not_regular``, ``too_large`` or
    ``store_full``; ``path`` is the output's path."""

    def __init__(self, path: str, error: str) -> None:
        super().__init__("output %s: %s" % (path, error))
        self.path = path
        self.error = error


@dataclass(frozen=True)
class Uploaded:
    """The answer to an upload.

    Attributes:
        file_id: the lowercase hex SHA-256 of the content, the ``file_id``
            tasks refer to.
        size: the size of the content in bytes.
        already_exists: True when the server held the content already.
    """

    file_id: str
    size: int
    already_exists: bool

    def __str__(self) -> str:
        return self.file_id


FileRef = Union[str, Uploaded]
"""A stored file: its id, or the :class:`Uploaded` of its upload."""


def file_id(ref: FileRef) -> Dict[str, str]:
    """Return the ``files`` value that places the stored file ``ref`` in
    the workspace: ``{"file_id": "<hex64>"}``."""
    return {"file_id": _id_of(ref)}


def _id_of(ref: FileRef) -> str:
    return ref.file_id if isinstance(ref, Uploaded) else ref


def task(
    cmd: str,
    args: Optional[Sequence[str]] = None,
    *,
    files: Optional[Mapping[str, Union[str, bytes, Uploaded, Mapping[str, str]]]] = None,
    stdin: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    working_dir: Optional[str] = None,
    sandbox_profile: Optional[str] = None,
    cache: Optional[bool] = None,
    limits: Optional[Mapping[str, int]] = None,
    outputs: Optional[Sequence[str]] = None,
    stdin_from: Optional[int] = None,
) -> Task:
    """Build a task (docs/http-api.md, "A task"). Fields left None are not sent, so the
    server's defaults apply.

    Args:
        cmd: the program; resolved through PATH unless it has a ``/``.
        args: its arguments.
        files: workspace-relative path -> content. A ``str`` is the
            content inline; ``bytes`` must be UTF-8 and are sent as text
            (upload binary files); an :class:`Uploaded` or
            ``{"file_id": ...}`` (:func:`file_id`) places a stored file.
        stdin: written to the task's standard input, which is then closed.
        env: variables added to the task's fixed environment.
        working_dir: absolute directory to start in (default ``/svc``).
        sandbox_profile: ``compile_v2``, ``native_v2``, ``compile_v1`` or
            ``native_v1``.
        cache: declares the task deterministic (step cache).
        limits: lower limits for this task (extension): any of
            ``wall_timeout_ms``, ``cpu_time_limit_ms``, ``memory_max_bytes``,
            ``pids_max``, ``output_limit_bytes``.
        outputs: workspace-relative paths stored in the file store after
            the step (extension); see :meth:`Client.read_output`.
        stdin_from: in a parallel step, the index of the task whose
            standard output becomes this task's standard input (extension).
    """
    t: Task = {"cmd": cmd}
    if args is not None:
        if isinstance(args, str):
            raise TypeError("task args: a list of strings, not one string")
        t["args"] = list(args)
    if env is not None:
        t["env"] = dict(env)
    if stdin is not None:
        t["stdin"] = stdin
    if files is not None:
        t["files"] = {path: _file_value(path, v) for path, v in files.items()}
    if working_dir is not None:
        t["working_dir"] = working_dir
    if sandbox_profile is not None:
        t["sandbox_profile"] = sandbox_profile
    if cache is not None:
        t["cache"] = bool(cache)
    if limits is not None:
        t["limits"] = dict(limits)
    if outputs is not None:
        if isinstance(outputs, str):
            raise TypeError("task outputs: a list of paths, not one string")
        t["outputs"] = list(outputs)
    if stdin_from is not None:
        t["stdin_from"] = stdin_from
    return t


def _file_value(path: str, v: Any) -> Any:
    if isinstance(v, Uploaded):
        return file_id(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("task files[%r]: inline content must be UTF-8; upload binary files" % path) from None
    if isinstance(v, str) or (isinstance(v, Mapping) and "file_id" in v):
        return dict(v) if isinstance(v, Mapping) else v
    raise TypeError("task files[%r]: want str, bytes, Uploaded or {'file_id': ...}, got %s" % (path, type(v).__name__))


class _Source:
    """What a client keeps of a file it uploaded, to upload it again: its
    bytes, or only the path it was read from."""

    def __init__(self, name: str, content: Optional[bytes] = None, path: Optional[str] = None) -> None:
        self.name = name
        self.content = content
        self.path = path


_CHUNK = 64 << 10


class _Body:
    """A multipart upload body streamed from a file at each attempt: the
    file is read in chunks, never whole, and hashed on the way."""

    def __init__(self, path: str, head: bytes, tail: bytes) -> None:
        self.path = path
        self.head = head
        self.tail = tail
        self.sha256 = ""  # of the file content sent by the last attempt
        self.size = 0

    def open(self) -> Tuple[int, Generator[bytes, None, None]]:
        """Open the file; return the body's length and its chunks."""
        f = open(self.path, "rb")
        size = os.fstat(f.fileno()).st_size
        self.size = size

        def chunks() -> Generator[bytes, None, None]:
            h = hashlib.sha256()
            try:
                yield self.head
                left = size
                while left > 0:
                    b = f.read(min(_CHUNK, left))
                    if not b:
                        raise SvcError("invalid_request", "upload: %s shrank while it was being sent" % self.path)
                    h.update(b)
                    left -= len(b)
                    yield b
                yield self.tail
                self.sha256 = h.hexdigest()
            finally:
                f.close()

        return len(self.head) + size + len(self.tail), chunks()


def _sha256_of(path: str) -> str:
    """The SHA-256 of the file at path, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(_CHUNK), b""):
            h.update(b)
    return h.hexdigest()


class Client:
    """A client of one svc server.

    Args:
        base_url: the server's base URL, such as ``http://127.0.0.1:8080``
            or ``https://svc.example.com/api/v1``; the paths of the API are
            appended to it.
        api_key: sent as ``Authorization: Bearer <key>``; None sends none
            (a server started with ``--no-auth``).
        timeout: seconds each socket operation of an attempt may take
            (connecting, sending, waiting for the answer); 300 by default.
            An execute is answered once it ran: the server bounds it by
            ``OVERALL_TIMEOUT_MS`` (60 s by default) after a wait for
            slots of at most ``QUEUE_TIMEOUT_MS``; raise it for servers
            whose sum is larger. None waits as long as the server takes.
            A timeout is a connection failure and is retried.
        max_retries: how many times a call that met a 503 or a connection
            failure is sent again; 0 sends it once.
        min_delay: the backoff before the first retry without a
            ``Retry-After``, in seconds; it doubles with each retry, and
            each wait is drawn from its upper half.
        max_delay: caps the backoff; a longer ``Retry-After`` ends the
            retries.
        retry_rate_limited: wait out a 429 ``rate_limited``'s
            ``Retry-After`` (counted with the 503s) instead of raising at
            once as the specification says.
        retries: False sends every request once: no retries of any kind
            and no uploads again on ``file_not_found``.
        ssl_context: the ``ssl.SSLContext`` of an ``https`` URL.
        user_agent: the ``User-Agent`` header.
        max_idle_connections: how many open connections the client keeps
            for the next calls (keep-alive); 0 opens one for each attempt.

    A client is a context manager: ``with Client(...) as c:`` closes its
    connections at the end (:meth:`close`).
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        *,
        timeout: Optional[float] = 300.0,
        max_retries: int = 3,
        min_delay: float = 0.2,
        max_delay: float = 10.0,
        retry_rate_limited: bool = False,
        retries: bool = True,
        ssl_context: Any = None,
        user_agent: str = "svc-client-python/" + __version__,
        max_idle_connections: int = 4,
    ) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url %r: want http://host[:port][/prefix] or https://..." % base_url)
        if u.query or u.fragment:
            raise ValueError("base_url %r: a query or fragment has no place in the base URL" % base_url)
        self.base_url = base_url.rstrip("/")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._key = api_key
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.retry_rate_limited = retry_rate_limited
        self.retries = retries
        self._ssl = ssl_context
        self._agent = user_agent
        self._lock = threading.Lock()
        self._sources: Dict[str, _Source] = {}
        self._max_idle = max(0, max_idle_connections)
        self._idle: List[http.client.HTTPConnection] = []  # guarded by _lock
        # _sleep waits; tests may replace it.
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

    def close(self) -> None:
        """Close the connections the client keeps open. The client stays
        usable: a later call opens a new one."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    # --- executing -------------------------------------------------------

    @overload
    def execute(
        self,
        request: Union[Mapping[str, Any], Sequence[Step]],
        *,
        cache: Optional[bool] = None,
        stop_on_failure: Optional[bool] = None,
        legacy: Literal[False] = False,
    ) -> ExecuteResponse: ...

    @overload
    def execute(self, request: Sequence[Step], *, legacy: Literal[True]) -> List[StepResult]: ...

    def execute(
        self,
        request: Union[Mapping[str, Any], Sequence[Step]],
        *,
        cache: Optional[bool] = None,
        stop_on_failure: Optional[bool] = None,
        legacy: bool = False,
    ) -> Union[ExecuteResponse, List[StepResult]]:
        """Run steps in one sandbox (POST /execute) and return the answer.

        ``request`` is the envelope (a mapping with ``steps`` and
        optionally ``cache`` and ``stop_on_failure``) or the list of steps;
        ``cache`` and ``stop_on_failure`` given here are set on it. Each
        step is a task (:func:`task`) or a list of tasks run in parallel.

        Returns the response envelope: ``{"results": [...], "cache":
        {...}}``, one result per step in order, shaped like its step (a
        dict, or a list of dicts for a parallel step). With
        ``legacy=True`` the steps are sent as a bare array and the bare
        list of results is returned.

        A task's failure is the ``outcome`` of its result. SvcError means
        the server refused the request or could not run it. On
        ``file_not_found`` the files of the request that this client
        uploaded are uploaded again and the request is sent once more.
        """
        if isinstance(request, Mapping):
            if legacy:
                raise ValueError("execute: legacy=True takes a list of steps, not an envelope")
            env = dict(request)
            if "steps" not in env:
                raise ValueError("execute: the request has no 'steps'")
        elif isinstance(request, (str, bytes)) or not isinstance(request, Sequence):
            raise TypeError("execute: want an envelope dict or a list of steps, got %s" % type(request).__name__)
        else:
            env = {"steps": list(request)}
        if cache is not None:
            env["cache"] = cache
        if stop_on_failure is not None:
            env["stop_on_failure"] = stop_on_failure
        if legacy:
            if len(env) > 1:
                raise ValueError("execute: a legacy request has no cache or stop_on_failure")
            payload: Any = env["steps"]
        else:
            payload = env
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        try:
            return self._execute(body, legacy)
        except SvcError as e:
            if e.code != "file_not_found" or not self.retries:
                raise
            err = e
        # The server lost files the request refers to (expired, deleted, or
        # another instance behind a load balancer): upload again what we
        # can, then send the request once more, all under one affinity.
        affinity = uuid.uuid4().hex
        ids = _file_ids(env["steps"])
        with self._lock:
            known = [i for i in ids if i in self._sources]
        if not known:
            raise err
        log.info(
            "POST /execute: file_not_found; uploading %d file(s) again and retrying once",
            len(known),
            extra={"svc_reupload": known, "svc_code": "file_not_found", "svc_method": "POST",
                   "svc_path": "/execute", "svc_status": err.status, "svc_wait": 0.0},
        )
        for fid in known:
            self._reupload(fid, affinity, err)
        return self._execute(body, legacy, affinity)

    def run(
        self,
        *steps: Step,
        cache: Optional[bool] = None,
        stop_on_failure: Optional[bool] = None,
        legacy: bool = False,
    ) -> List[StepResult]:
        """Run ``steps`` as one request and return its list of step
        results (:func:`single` or :func:`parallel` each); the options
        are those of :meth:`execute`."""
        if legacy:
            if cache is not None or stop_on_failure is not None:
                raise ValueError("run: a legacy request has no cache or stop_on_failure")
            return self.execute(list(steps), legacy=True)
        return self.execute(list(steps), cache=cache, stop_on_failure=stop_on_failure)["results"]

    def _execute(self, body: bytes, legacy: bool, affinity: str = "") -> Union[ExecuteResponse, List[StepResult]]:
        resp = self._call("POST", "/execute", body, "application/json", affinity=affinity)
        data = _json(resp, "POST", "/execute")
        if legacy:
            if not isinstance(data, list):
                raise SvcError("internal_error", "POST /execute: the answer is not a list of results", resp.status)
            results: List[StepResult] = data
            return results
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SvcError("internal_error", "POST /execute: the answer is not an execute response", resp.status)
        return cast(ExecuteResponse, data)

    # --- files -----------------------------------------------------------

    def upload(
        self,
        data: Union[bytes, bytearray, memoryview, str, BinaryIO],
        filename: str,
        *,
        content_type: Optional[str] = None,
    ) -> Uploaded:
        """Store ``data`` in the server's file store (POST /file) under the
        file name ``filename`` and return the answer; its ``file_id`` is
        what tasks refer to (pass the :class:`Uploaded` itself as a
        ``files`` value, or :func:`file_id`).

        ``data`` is bytes, a ``str`` (stored as UTF-8), or a binary file
        object, which is read whole. The client keeps the bytes, so that
        :meth:`execute` can upload them again on ``file_not_found``, until
        :meth:`forget` or :meth:`delete`; :meth:`upload_file` streams a
        file from its path and keeps only the path. ``content_type``
        defaults to one guessed from the file name.
        """
        if isinstance(data, str):
            content = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            content = bytes(data)
        elif hasattr(data, "read"):
            content = data.read()
            if not isinstance(content, bytes):
                raise TypeError("upload: the file object must be opened in binary mode")
        else:
            raise TypeError("upload: want bytes, str or a binary file object, got %s" % type(data).__name__)
        up = self._upload(content, filename, content_type)
        self._remember(up.file_id, _Source(filename, content=content))
        return up

    def upload_file(self, path: Union[str, "os.PathLike[str]"], *, content_type: Optional[str] = None) -> Uploaded:
        """Upload the file at ``path`` under its base name, streaming it:
        the client reads it in chunks and holds none of its bytes. It
        remembers the path: :meth:`execute` reads the file again to
        upload it again, and refuses to when its content changed
        meanwhile."""
        path = os.fspath(path)
        name = os.path.basename(path)
        up = self._upload_path(path, name, content_type)
        self._remember(up.file_id, _Source(name, path=path))
        return up

    def _upload(self, content: bytes, filename: str, content_type: Optional[str], affinity: str = "") -> Uploaded:
        head, tail, ctype = _multipart(filename, content_type)
        resp = self._call("POST", "/file", head + content + tail, ctype, affinity=affinity)
        return self._uploaded(resp, filename, hashlib.sha256(content).hexdigest(), len(content))

    def _upload_path(self, path: str, filename: str, content_type: Optional[str], affinity: str = "") -> Uploaded:
        head, tail, ctype = _multipart(filename, content_type)
        body = _Body(path, head, tail)
        try:
            resp = self._call("POST", "/file", body, ctype, affinity=affinity)
        except OSError as e:  # opening the file
            raise SvcError("invalid_request", "upload %s: %s" % (path, e)) from e
        return self._uploaded(resp, filename, body.sha256, body.size)

    def _uploaded(self, resp: "_Response", filename: str, want: str, size: int) -> Uploaded:
        """The Uploaded of a POST /file answer, checked against the
        SHA-256 of the content sent."""
        data = _json(resp, "POST", "/file")
        fid = data.get("file_id") if isinstance(data, dict) else None
        if not isinstance(fid, str) or not _FILE_ID.fullmatch(fid):
            raise SvcError("internal_error", "POST /file: the answer has no valid file_id (%r)" % (fid,), resp.status)
        if fid != want:
            raise SvcError(
                "internal_error",
                "POST /file: the server stored %s as %s, want its SHA-256 %s" % (filename, fid, want),
                resp.status,
            )
        return Uploaded(fid, int(data.get("size", size)), bool(data.get("already_exists", False)))

    def _remember(self, fid: str, src: _Source) -> None:
        with self._lock:
            self._sources[fid] = src

    def forget(self, ref: FileRef) -> None:
        """Drop what the client keeps of the stored file ``ref``: it will
        not upload it again."""
        with self._lock:
            self._sources.pop(_id_of(ref), None)

    def _reupload(self, fid: str, affinity: str, cause: SvcError) -> None:
        with self._lock:
            src = self._sources.get(fid)
        if src is None:  # forgotten meanwhile
            return
        try:
            now = _sha256_of(src.path) if src.path is not None else hashlib.sha256(src.content or b"").hexdigest()
        except OSError as e:
            raise SvcError(
                "file_not_found",
                "%s; reading %s (%s) again to upload it failed: %s" % (cause.message, src.name, fid, e),
                cause.status,
                raw_code=cause.raw_code,
                request_id=cause.request_id,
            ) from e
        if now != fid:
            raise SvcError(
                "file_not_found",
                "%s; %s cannot be uploaded again: its content changed" % (cause.message, src.name),
                cause.status,
                raw_code=cause.raw_code,
                request_id=cause.request_id,
            )
        try:
            if src.path is None:
                self._upload(src.content or b"", src.name, None, affinity)
            else:
                self._upload_path(src.path, src.name, None, affinity)
        except SvcError as e:
            raise SvcError(
                "file_not_found",
                "%s; uploading %s (%s) again failed: %s" % (cause.message, src.name, fid, e),
                cause.status,
                raw_code=cause.raw_code,
                request_id=cause.request_id,
            ) from e

    def download(self, ref: FileRef) -> bytes:
        """Return the content of the stored file ``ref`` (GET /file/{id}),
        checked against its SHA-256. A file that is not stored raises
        ``not_found``."""
        fid = _check_id(ref)
        path = "/file/" + fid
        resp = self._call("GET", path)
        if hashlib.sha256(resp.body).hexdigest() != fid:
            raise SvcError("internal_error", "GET %s: the content's SHA-256 does not match" % path, resp.status)
        return resp.body

    def read_output(self, result: Mapping[str, Any], path: str) -> bytes:
        """Download the collected output ``path`` of a task's result (the
        ``outputs`` extension, docs/http-api.md). Raises :class:`OutputError` when
        the server could not collect it, KeyError when the task did not ask
        for it."""
        outs = result.get("outputs")
        if not isinstance(outs, Mapping):
            raise KeyError("the result has no outputs (the task asked for none, or did not run)")
        entry = outs[path]
        if "error" in entry:
            raise OutputError(path, entry["error"])
        return self.download(entry["file_id"])

    def list_files(self) -> List[StoredFile]:
        """Return the stored files, newest first (GET /file): dicts with
        ``id``, ``filename``, ``content_type``, ``size``, ``created_at``."""
        data = _json(self._call("GET", "/file"), "GET", "/file")
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            raise SvcError("internal_error", "GET /file: the answer is not a file list")
        files: List[StoredFile] = data["files"]
        return files

    def delete(self, ref: FileRef) -> None:
        """Delete the stored file ``ref`` (DELETE /file/{id}) and forget
        it. A file that is not stored raises ``not_found``."""
        fid = _check_id(ref)
        self.forget(fid)
        self._call("DELETE", "/file/" + fid)

    # --- the service -----------------------------------------------------

    def info(self) -> Dict[str, Any]:
        """Return what the server says of itself (GET /info): ``version``,
        ``toolchains``, ``sandbox_profiles``, ``cache``, ``limits``, ..."""
        data = _json(self._call("GET", "/info"), "GET", "/info")
        if not isinstance(data, dict):
            raise SvcError("internal_error", "GET /info: the answer is not an object")
        return data

    def drop_cache(self) -> int:
        """Drop every cached layer of the server's cache namespace (DELETE
        /cache) and return how many were dropped. A server without a step
        cache raises ``cache_disabled``."""
        data = _json(self._call("DELETE", "/cache"), "DELETE", "/cache")
        return int(data.get("dropped_layers", 0)) if isinstance(data, dict) else 0

    def metrics(self) -> str:
        """Return the server's metrics in the Prometheus text format (GET
        /metrics)."""
        return self._call("GET", "/metrics").body.decode("utf-8", "replace")

    def health(self) -> None:
        """Check GET /health once, without retries: return when the server
        serves, raise SvcError (``shutting_down`` while it drains, or a
        connection failure) otherwise."""
        self._call("GET", "/health", retry=False)

    # --- the exchange ----------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        body: Union[None, bytes, _Body] = None,
        content_type: str = "",
        *,
        retry: bool = True,
        affinity: str = "",
    ) -> "_Response":
        """Send one call under the retry policy and return the 2xx answer,
        or raise the last error as SvcError."""
        request_id = str(uuid.uuid4())
        transient = 0  # 503s, 429s and connection failures retried
        server_errors = 0  # 500, 502, 504 retried
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._attempt(method, path, body, content_type, request_id, affinity)
            except _ConnectionFailed as e:
                err = SvcError(
                    "internal_error",
                    "%s %s: connection failed: %s" % (method, path, e.cause),
                    attempts=attempt,
                )
                err.__cause__ = e.cause
                status = 0
            else:
                if 200 <= resp.status <= 299:
                    return resp
                err = _error_of(resp, method, path)
                err.attempts = attempt
                status = resp.status
            if not retry or not self.retries:
                raise err
            if status in (0, 503) or (status == 429 and self.retry_rate_limited):
                if transient >= self.max_retries:
                    raise err
                transient += 1
                wait = self._backoff(transient)
                if err.retry_after is not None:
                    if err.retry_after > self.max_delay:
                        raise err
                    wait = err.retry_after
            elif status in (500, 502, 504):
                if server_errors >= 1:
                    raise err
                server_errors += 1
                wait = self._backoff(1)
            else:
                raise err
            log.info(
                "%s %s: %s; retry %d in %.1f s (request id %s)",
                method, path, err, attempt, wait, request_id,
                extra={"svc_method": method, "svc_path": path, "svc_code": err.code,
                       "svc_status": status or None, "svc_wait": wait},
            )
            self._sleep(wait)

    def _backoff(self, n: int) -> float:
        """The wait before the n-th retry (from 1) without a Retry-After:
        min_delay doubled n-1 times, capped at max_delay, drawn from its
        upper half."""
        d = float(min(self.min_delay * 2 ** (n - 1), self.max_delay))
        return d / 2 + random.uniform(0, d / 2)

    def _attempt(
        self,
        method: str,
        path: str,
        body: Union[None, bytes, _Body],
        content_type: str,
        request_id: str,
        affinity: str,
    ) -> "_Response":
        headers = {"User-Agent": self._agent, "X-Request-Id": request_id, "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = "Bearer " + self._key
        if content_type:
            headers["Content-Type"] = content_type
        if affinity:
            headers[AFFINITY_HEADER] = affinity
        if body is None and method in ("POST", "PUT"):
            body = b""
        # A kept connection the server closed while it was idle fails at
        # once: the request goes again on a new one, not counted as a
        # retry.
        conn, reused = self._take()
        while True:
            stream: Optional[Generator[bytes, None, None]] = None
            data: Union[None, bytes, Generator[bytes, None, None]] = body if not isinstance(body, _Body) else None
            if isinstance(body, _Body):
                try:
                    length, stream = body.open()
                except BaseException:
                    self._give(conn, keep=reused)
                    raise
                headers["Content-Length"] = str(length)
                data = stream
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                r = conn.getresponse()
                payload = r.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                conn.close()
                if reused:
                    conn, reused = self._connect(), False
                    continue
                raise _ConnectionFailed(e) from e
            except (OSError, http.client.HTTPException) as e:  # socket.timeout is an OSError
                conn.close()
                raise _ConnectionFailed(e) from e
            except BaseException:
                conn.close()
                raise
            finally:
                if stream is not None:
                    stream.close()
            self._give(conn, keep=not r.will_close)
            return _Response(r.status, {k.lower(): v for k, v in r.getheaders()}, payload)

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _take(self) -> Tuple[http.client.HTTPConnection, bool]:
        """A kept connection (True), else a new one (False)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _give(self, conn: http.client.HTTPConnection, keep: bool) -> None:
        """Keep conn for a later call, or close it."""
        if keep:
            with self._lock:
                if len(self._idle) < self._max_idle:
                    self._idle.append(conn)
                    return
        conn.close()


class _ConnectionFailed(Exception):
    """An attempt got no complete answer."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Response:
    """A complete HTTP answer."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def _error_of(resp: _Response, method: str, path: str) -> SvcError:
    """The SvcError of a non-2xx answer."""
    retry_after = _parse_retry_after(resp.headers.get("retry-after", ""))
    request_id = resp.headers.get("x-request-id", "")
    try:
        eb = json.loads(resp.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        eb = None
    if isinstance(eb, dict) and isinstance(eb.get("error"), str) and isinstance(eb.get("code"), str):
        raw = eb["code"]
        code = raw if raw in CODES else "internal_error"
        return SvcError(code, eb["error"], resp.status, raw_code=raw, request_id=request_id, retry_after=retry_after)
    # Not an svc error body: a proxy or load balancer answered.
    msg = "%s %s: HTTP %d %s" % (method, path, resp.status, http.client.responses.get(resp.status, ""))
    text = resp.body.decode("utf-8", "replace").strip()
    if text:
        msg += ": " + repr(text[:200] + ("..." if len(text) > 200 else ""))
    return SvcError("internal_error", msg.rstrip(), resp.status, request_id=request_id, retry_after=retry_after)


def _parse_retry_after(v: str, now: Optional[float] = None) -> Optional[float]:
    """Parse a Retry-After value, whole seconds or an HTTP date, into
    seconds; None for none or a value that cannot be read."""
    v = v.strip()
    if not v:
        return None
    if v.isdigit():
        n = int(v)
        return float(n) if 0 < n <= 1 << 30 else None
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    d = when.timestamp() - (time.time() if now is None else now)
    return d if d > 0 else None


def _json(resp: _Response, method: str, path: str) -> Any:
    if not resp.body:
        return None
    try:
        return json.loads(resp.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SvcError("internal_error", "%s %s: the answer is not JSON: %s" % (method, path, e), resp.status) from e


def _check_id(ref: FileRef) -> str:
    """Refuse an id that is not a file id before it reaches a path."""
    fid = _id_of(ref)
    if not isinstance(fid, str) or not _FILE_ID.fullmatch(fid):
        raise SvcError("invalid_request", "file id %r is not 64 lowercase hex characters" % (fid,))
    return fid


def _file_ids(steps: Iterable[Any]) -> List[str]:
    """The distinct file ids the steps refer to, in order."""
    ids: List[str] = []
    for step in steps:
        for t in step if isinstance(step, list) else [step]:
            files = t.get("files") if isinstance(t, Mapping) else None
            if not isinstance(files, Mapping):
                continue
            for path in sorted(files):
                v = files[path]
                if isinstance(v, Mapping) and isinstance(v.get("file_id"), str) and v["file_id"] not in ids:
                    ids.append(v["file_id"])
    return ids


def _multipart(filename: str, content_type: Optional[str]) -> Tuple[bytes, bytes, str]:
    """The head and tail of a multipart/form-data body with one part named
    "file", whose content goes between them, and its Content-Type."""
    if any(c in filename for c in "\r\n\0"):
        raise ValueError("upload: the file name %r has a line break or NUL" % filename)
    if content_type is None:
        content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    boundary = "svc-" + uuid.uuid4().hex
    try:
        filename.encode("ascii")
        disp = 'form-data; name="file"; filename="%s"' % filename.replace("\\", "\\\\").replace('"', '\\"')
    except UnicodeEncodeError:
        disp = "form-data; name=\"file\"; filename*=utf-8''%s" % urllib.parse.quote(filename, safe="")
    head = "--%s\r\nContent-Disposition: %s\r\nContent-Type: %s\r\n\r\n" % (boundary, disp, content_type)
    tail = "\r\n--%s--\r\n" % boundary
    return head.encode("utf-8"), tail.encode("ascii"), "multipart/form-data; boundary=" + boundary
