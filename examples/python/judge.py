#!/usr/bin/env python3
"""A small judge on an svc server, with the Python client (svc_client).

It uploads a C solution once, compiles it in one step that refers to the
source by file_id, runs it on every test in a parallel step (each run on
its own stdin, under the native_v2 profile), compares each output with
the expected one and prints a verdict table with CPU time and peak
memory. The solution (problem/solution.c) is wrong on purpose.

    go run ./cmd/svc serve                     # logs the generated API key
    python3 examples/python/judge.py --key <that key>

--url (or SVC_URL) is the server's base URL, default
http://127.0.0.1:8080; --key (or SVC_KEY) its API key. A busy server is
waited for as the specification's client retry policy says; a source the
server lost is uploaded again.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
# The client is one file: copy it next to your code. Here it is taken
# from the repository.
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from svc_client import Client, SvcError, task  # noqa: E402

# The tests: input and expected output. The problem: read n, then n
# integers; print their sum.
TESTS: List[Tuple[str, str]] = [
    ("3\n1 2 3\n", "6\n"),
    ("1\n-7\n", "-7\n"),
    ("2\n2000000000 2000000000\n", "4000000000\n"),
    ("0\n", "0\n"),
    ("100000\n" + "1 " * 100000 + "\n", "100000\n"),
]


def verdict(r: Dict[str, Any], want: str) -> str:
    """Judge one run: exit status 0 and the expected tokens is accepted;
    a time, memory or output limit is that verdict; a non-zero exit, a
    signal or a refused system call is a runtime error."""
    outcome = r["outcome"]
    if outcome == "exited":
        if r["exit_code"] != 0:
            return "runtime error"
        if r["stdout_truncated"]:
            return "output limit exceeded"
        return "accepted" if r["stdout"].split() == want.split() else "wrong answer"
    return {
        "timed_out": "time limit exceeded",
        "cpu_time_exceeded": "time limit exceeded",
        "out_of_memory": "memory limit exceeded",
        "output_limit": "output limit exceeded",
        "signaled": "runtime error",
        "policy_violation": "runtime error",
        "pids_limit": "runtime error",
    }.get(outcome, "judge error")  # not run, or another's OOM: run again


def ended(r: Dict[str, Any]) -> str:
    """How a run ended: "exit 0", "signal 11", or its outcome."""
    if r["outcome"] == "exited":
        return "exit %d" % r["exit_code"]
    if r["outcome"] == "signaled":
        return "signal %d" % r["signal"]
    return r["outcome"]


def cpu(r: Dict[str, Any]) -> str:
    usec = r.get("stats", {}).get("cpu_usage_usec")
    return "-" if usec is None else "%d ms" % (usec // 1000)


def memory(r: Dict[str, Any]) -> str:
    peak = r.get("stats", {}).get("memory_peak_bytes")
    return "-" if peak is None else "%.1f MiB" % (peak / (1 << 20))


def judge(c: Client, source: str) -> None:
    width = c.info()["limits"]["max_parallel_tasks"]
    up = c.upload_file(source)  # the client keeps the path, to upload it again if need be
    name = os.path.basename(source)
    print("judging %s on %d tests" % (name, len(TESTS)))

    build = task("gcc", ["-O2", "-o", "solution", name], files={name: up}, cache=True)
    runs = [task("./solution", stdin=inp, sandbox_profile="native_v2") for inp, _ in TESTS]
    # One parallel step per max_parallel_tasks tests; the steps share the
    # workspace, so every run finds the binary the first step built.
    steps: List[Any] = [build] + [runs[i:i + width] for i in range(0, len(runs), width)]
    results = c.execute(steps, stop_on_failure=True)["results"]
    c.delete(up)

    compiled, tests = results[0], [r for step in results[1:] for r in step]
    if compiled["outcome"] != "exited" or compiled["exit_code"] != 0:
        print("compilation error (%s):" % ended(compiled))
        print(compiled["stderr"].rstrip())
        print("0 of %d tests accepted" % len(TESTS))
        return
    print("compiled in %d ms" % compiled["stats"]["wall_time_ms"])

    rows = [("test", "verdict", "time", "memory", "ended")]
    accepted = 0
    for i, ((_, want), r) in enumerate(zip(TESTS, tests), 1):
        v = verdict(r, want)
        accepted += v == "accepted"
        rows.append((str(i), v, cpu(r), memory(r), ended(r)))
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print("%d of %d tests accepted" % (accepted, len(TESTS)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("SVC_URL", "http://127.0.0.1:8080"),
                   help="base URL of the svc server (SVC_URL)")
    p.add_argument("--key", default=os.environ.get("SVC_KEY"), help="API key of the server (SVC_KEY)")
    p.add_argument("source", nargs="?", default=os.path.join(HERE, "problem", "solution.c"),
                   help="the C solution (default problem/solution.c)")
    args = p.parse_args()
    try:
        judge(Client(args.url, args.key), args.source)
    except SvcError as e:
        # The server refused a request or could not run it: e.code says
        # why (unauthorized, capacity_exhausted after the retries, ...).
        hint = " (give the server's API key with --key or SVC_KEY)" if e.code == "unauthorized" else ""
        print("judge: %s%s" % (e, hint), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
