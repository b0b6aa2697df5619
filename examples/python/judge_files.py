#!/usr/bin/env python3
"""A judge at scale on an svc server, with the Python client (svc_client).

Its tests live in the server's file store, uploaded once; a submission's
request names them by id. Each run reads its test as ``stdin_path`` and
writes its output to a ``stdout_path`` file, a token checker compares in
the sandbox, and only verdicts come back. The build and run commands come
from GET /languages. The solution is C++, the checker C; both builds are
cacheable, so a server with a step cache replays them.

    go run ./cmd/svc serve                       # logs the generated API key
    python3 examples/python/judge_files.py --key <that key>

--url (or SVC_URL) is the server's base URL, default
http://127.0.0.1:8080; --key (or SVC_KEY) its API key.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import urllib.request
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

from svc_client import Client, task  # noqa: E402

SOLUTION = r"""#include <cstdio>
int main() { long long s = 0, x; while (scanf("%lld", &x) == 1) s += x; printf("%lld\n", s); }
"""

# testlib's convention: checker input output answer; 0 accepted, 1 wrong.
CHECKER = r"""#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc != 4) return 3;
    FILE *o = fopen(argv[2], "r"), *a = fopen(argv[3], "r");
    if (!o || !a) return 3;
    char x[256], y[256];
    for (;;) {
        int ho = fscanf(o, "%255s", x) == 1, ha = fscanf(a, "%255s", y) == 1;
        if (!ho && !ha) return 0;
        if (ho != ha || strcmp(x, y)) return 1;
    }
}
"""

WIDTH = 8  # tests a parallel step runs at once


def languages(url: str, key: str) -> Dict[str, Dict[str, Any]]:
    """GET /languages: the recipe of each language, by name."""
    req = urllib.request.Request(url.rstrip("/") + "/languages", headers={"Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return {lang["name"]: lang for lang in json.load(resp)["languages"]}


def make_tests(client: Client, n: int, size: int) -> List[Tuple[str, str]]:
    """Upload n tests of about size bytes; return (input id, answer id) pairs."""
    rng = random.Random(1)
    tests = []
    for i in range(n):
        nums, length = [], 0
        while length < size:
            x = rng.randrange(-1_000_000, 1_000_000)
            nums.append(str(x))
            length += len(nums[-1]) + 1
        data = "\n".join(nums) + "\n"
        answer = "%d\n" % sum(int(x) for x in nums)
        tests.append((client.upload(data, "%d.in" % (i + 1)).file_id, client.upload(answer, "%d.ans" % (i + 1)).file_id))
    return tests


def submission(cpp: Dict[str, Any], cc: Dict[str, Any], source: str, tests: List[Tuple[str, str]]) -> List[Any]:
    """The steps that judge source on tests (see the module's doc)."""
    steps: List[Any] = [
        task(cpp["build"][0], cpp["build"][1:], files={cpp["source"]: source}, sandbox_profile=cpp["build_profile"], cache=True),
        task(cc["build"][0], cc["build"][1:], files={"checker/" + cc["source"]: CHECKER}, working_dir="/svc/checker",
             sandbox_profile=cc["build_profile"], cache=True),
    ]
    for i in range(0, len(tests), WIDTH):
        runs = []
        for j in range(i, min(i + WIDTH, len(tests))):
            t = task(cpp["run"][0], cpp["run"][1:], files={"t/%d.in" % (j + 1): {"file_id": tests[j][0]}},
                     sandbox_profile=cpp["run_profile"])
            t["stdin_path"] = "t/%d.in" % (j + 1)  # type: ignore[typeddict-unknown-key]
            t["stdout_path"] = "t/%d.out" % (j + 1)  # type: ignore[typeddict-unknown-key]
            runs.append(t)
        steps.append(runs)
    n = min(WIDTH, len(tests))
    scripts = [""] * n
    answers: List[Dict[str, Any]] = [{} for _ in range(n)]
    for j, (_, ans) in enumerate(tests):
        k = j % n
        answers[k]["t/%d.ans" % (j + 1)] = {"file_id": ans}
        scripts[k] += "./checker/main t/{0}.in t/{0}.out t/{0}.ans; echo {0} $?\n".format(j + 1)
    steps.append([task("sh", ["-c", scripts[k]], files=answers[k], sandbox_profile="compile_v2") for k in range(n)])
    return steps


def verdicts(results: List[Any], n: int) -> List[str]:
    build = results[0]
    if build["outcome"] != "exited" or build["exit_code"] != 0:
        return ["compilation-error"] * n
    status: Dict[int, int] = {}
    for r in results[-1]:
        for line in r["stdout"].strip().splitlines():
            j, s = line.split()
            status[int(j) - 1] = int(s)
    out = []
    for j in range(n):
        r = results[2 + j // WIDTH][j % WIDTH]
        if r["outcome"] != "exited" or r["exit_code"] != 0:
            out.append(r["outcome"])
        elif status.get(j) == 0:
            out.append("accepted")
        elif status.get(j) == 1:
            out.append("wrong-answer")
        else:
            out.append("judge-error")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("SVC_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--key", default=os.environ.get("SVC_KEY", ""))
    ap.add_argument("--tests", type=int, default=12)
    ap.add_argument("--size", type=int, default=64 << 10)
    a = ap.parse_args()
    langs = languages(a.url, a.key)
    if "cpp" not in langs or "c" not in langs:
        print("the server's image has no C or C++ toolchain", file=sys.stderr)
        return 1
    client = Client(a.url, a.key)
    tests = make_tests(client, a.tests, a.size)
    resp = client.execute({"steps": submission(langs["cpp"], langs["c"], SOLUTION, tests), "stop_on_failure": True})
    v = verdicts(resp["results"], len(tests))  # type: ignore[index]
    print("%d of %d accepted" % (v.count("accepted"), len(v)))
    print(" ".join(v))
    return 0 if v.count("accepted") == len(v) else 1


if __name__ == "__main__":
    sys.exit(main())
