"""A small client of the svc HTTP API, in one file with no dependencies.

svc runs untrusted programs in Linux sandboxes for online judges. This
module speaks its HTTP API (API.md of the svc repository) with the
standard library only (``http.client``, ``json``), on Python 3.9 and
later, CPython and PyPy alike. Install it by copying this file next to
your code.

    from svc_client import Client, SvcError, task

    c = Client("http://127.0.0.1:8080", api_key)
    src = c.upload(b"int main(void) { return 0; }\\n", "a.c")
    resp = c.execute([
        task("gcc", ["-o", "a", "a.c"], files={"a.c": src}),
        task("./a", sandbox_profile="native_v2"),
    ], stop_on_failure=True)
    for step in resp["results"]:
        print(step["outcome"], step["exit_code"])

Requests and results are plain JSON values (dicts and lists) with the
wire names of API.md. :func:`task` builds a task, :func:`file_id` a
reference to a stored file. A task failure (non-zero exit, timeout, out
of memory, a killed policy violation) is an ``outcome`` in its result, not
an exception.

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
  that this client uploaded itself (it keeps their bytes, or the path of
  :meth:`Client.upload_file`) are uploaded again and the request is sent
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
API.md adds task fields that :func:`task` takes as keywords: ``limits``
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
from typing import Any, BinaryIO, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "CODES",
    "AFFINITY_HEADER",
    "Client",
    "OutputError",
    "SvcError",
    "Uploaded",
    "file_id",
    "task",
]

__version__ = "1"

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
"""A task: a JSON object with the wire names of API.md (see :func:`task`)."""

Step = Union[Task, List[Task]]
"""A step: one task, or a list of tasks that run in parallel."""

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
    """A collected output the server could not store (API.md, "Collected
    outputs"): ``error`` is ``not_found``, ``not_regular``, ``too_large`` or
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
    """Build a task (API.md, TASK). Fields left None are not sent, so the
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
    """How to read a stored file's content again, to upload it again."""

    def __init__(self, name: str, read: Callable[[], bytes]) -> None:
        self.name = name
        self.read = read


class Client:
    """A client of one svc server.

    Args:
        base_url: the server's base URL, such as ``http://127.0.0.1:8080``
            or ``https://svc.example.com/api/v1``; the paths of API.md are
            appended to it.
        api_key: sent as ``Authorization: Bearer <key>``; None sends none
            (a server started with ``--no-auth``).
        timeout: seconds each socket operation of an attempt may take;
            None waits as long as the server takes (an execute is bounded
            on the server by ``OVERALL_TIMEOUT_MS``). A timeout is a
            connection failure and is retried.
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
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        max_retries: int = 3,
        min_delay: float = 0.2,
        max_delay: float = 10.0,
        retry_rate_limited: bool = False,
        retries: bool = True,
        ssl_context: Any = None,
        user_agent: str = "svc-client-python/" + __version__,
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
        # _sleep waits; tests may replace it.
        self._sleep: Callable[[float], None] = time.sleep

    def __repr__(self) -> str:
        return "Client(%r)" % self.base_url

    # --- executing -------------------------------------------------------

    def execute(
        self,
        request: Union[Mapping[str, Any], Sequence[Step]],
        *,
        cache: Optional[bool] = None,
        stop_on_failure: Optional[bool] = None,
        legacy: bool = False,
    ) -> Any:
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

    def run(self, *steps: Step, **options: Any) -> List[Any]:
        """Run ``steps`` as one request and return its list of step
        results; ``options`` are those of :meth:`execute`."""
        resp = self.execute(list(steps), **options)
        results: List[Any] = resp if options.get("legacy") else resp["results"]
        return results

    def _execute(self, body: bytes, legacy: bool, affinity: str = "") -> Any:
        resp = self._call("POST", "/execute", body, "application/json", affinity=affinity)
        data = _json(resp, "POST", "/execute")
        if legacy:
            if not isinstance(data, list):
                raise SvcError("internal_error", "POST /execute: the answer is not a list of results", resp.status)
            return data
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SvcError("internal_error", "POST /execute: the answer is not an execute response", resp.status)
        return data

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
        :meth:`forget` or :meth:`delete`. ``content_type`` defaults to one
        guessed from the file name.
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
        self._remember(up.file_id, filename, lambda: content)
        return up

    def upload_file(self, path: Union[str, "os.PathLike[str]"], *, content_type: Optional[str] = None) -> Uploaded:
        """Upload the file at ``path`` under its base name and remember the
        path: :meth:`execute` reads it again to upload it again, and refuses
        to when its content changed meanwhile."""
        path = os.fspath(path)
        with open(path, "rb") as f:
            content = f.read()
        name = os.path.basename(path)
        up = self._upload(content, name, content_type)

        def read() -> bytes:
            with open(path, "rb") as f:
                return f.read()

        self._remember(up.file_id, name, read)
        return up

    def _upload(self, content: bytes, filename: str, content_type: Optional[str], affinity: str = "") -> Uploaded:
        if content_type is None:
            content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        body, ctype = _multipart(content, filename, content_type)
        resp = self._call("POST", "/file", body, ctype, affinity=affinity)
        data = _json(resp, "POST", "/file")
        fid = data.get("file_id") if isinstance(data, dict) else None
        if not isinstance(fid, str) or not _FILE_ID.fullmatch(fid):
            raise SvcError("internal_error", "POST /file: the answer has no valid file_id (%r)" % (fid,), resp.status)
        want = hashlib.sha256(content).hexdigest()
        if fid != want:
            raise SvcError(
                "internal_error",
                "POST /file: the server stored %s as %s, want its SHA-256 %s" % (filename, fid, want),
                resp.status,
            )
        return Uploaded(fid, int(data.get("size", len(content))), bool(data.get("already_exists", False)))

    def _remember(self, fid: str, name: str, read: Callable[[], bytes]) -> None:
        with self._lock:
            self._sources[fid] = _Source(name, read)

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
            content = src.read()
        except OSError as e:
            raise SvcError(
                "file_not_found",
                "%s; reading %s (%s) again to upload it failed: %s" % (cause.message, src.name, fid, e),
                cause.status,
                raw_code=cause.raw_code,
                request_id=cause.request_id,
            ) from e
        if hashlib.sha256(content).hexdigest() != fid:
            raise SvcError(
                "file_not_found",
                "%s; %s cannot be uploaded again: its content changed" % (cause.message, src.name),
                cause.status,
                raw_code=cause.raw_code,
                request_id=cause.request_id,
            )
        try:
            self._upload(content, src.name, None, affinity)
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
        ``outputs`` extension of API.md). Raises :class:`OutputError` when
        the server could not collect it, KeyError when the task did not ask
        for it."""
        outs = result.get("outputs")
        if not isinstance(outs, Mapping):
            raise KeyError("the result has no outputs (the task asked for none, or did not run)")
        entry = outs[path]
        if "error" in entry:
            raise OutputError(path, entry["error"])
        return self.download(entry["file_id"])

    def list_files(self) -> List[Dict[str, Any]]:
        """Return the stored files, newest first (GET /file): dicts with
        ``id``, ``filename``, ``content_type``, ``size``, ``created_at``."""
        data = _json(self._call("GET", "/file"), "GET", "/file")
        if not isinstance(data, dict) or not isinstance(data.get("files"), list):
            raise SvcError("internal_error", "GET /file: the answer is not a file list")
        files: List[Dict[str, Any]] = data["files"]
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
        body: Optional[bytes] = None,
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
        self, method: str, path: str, body: Optional[bytes], content_type: str, request_id: str, affinity: str
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
        if self._https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=self._ssl
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            conn.request(method, self._prefix + path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            return _Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        except (OSError, http.client.HTTPException) as e:  # socket.timeout is an OSError
            raise _ConnectionFailed(e) from e
        finally:
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


def _multipart(content: bytes, filename: str, content_type: str) -> Tuple[bytes, str]:
    """A multipart/form-data body with one part named "file"."""
    if any(c in filename for c in "\r\n\0"):
        raise ValueError("upload: the file name %r has a line break or NUL" % filename)
    boundary = "svc-" + uuid.uuid4().hex
    try:
        filename.encode("ascii")
        disp = 'form-data; name="file"; filename="%s"' % filename.replace("\\", "\\\\").replace('"', '\\"')
    except UnicodeEncodeError:
        disp = "form-data; name=\"file\"; filename*=utf-8''%s" % urllib.parse.quote(filename, safe="")
    head = "--%s\r\nContent-Disposition: %s\r\nContent-Type: %s\r\n\r\n" % (boundary, disp, content_type)
    body = head.encode("utf-8") + content + ("\r\n--%s--\r\n" % boundary).encode("ascii")
    return body, "multipart/form-data; boundary=" + boundary
