"""A probe of a confirmed purge under load (issue 38), not a timed test: ``python -m
bench.confirm_probe`` starts a private redis-server on a free port, pushes ``--items``
pending items, shows ``rq-cli web``'s confirmation of "purge pending" (the app in this
process, over HTTP through Starlette's client), then keeps a producer pushing while "Do it"
runs, and prints one JSON line: the count confirmed, the count purged, the items left and
how many the producer pushed (left must equal pushed: none of the new ones is purged), the
seconds "Do it" took, the server calls over 1 ms meanwhile and the longest (SLOWLOG,
microseconds; the target is under 20 ms)."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
from html import unescape

import redis

from bench.web_probe import free_port
from rq_cli.cli.common import State
from rq_cli.cli.dash import global_options
from rq_cli.cli.inspect import stats_targets
from rq_cli.core.queue import WorkQueue
from rq_cli.core.scripting.scripts import source
from rq_cli.core.types import NewItem
from rq_cli.web.guard import Guard
from rq_cli.web.pages import Web, make_app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=200_000)
    args = parser.parse_args()
    import warnings

    with warnings.catch_warnings():  # (Starlette 1.x would rather have httpx2; httpx works)
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    port, tmp = free_port(), tempfile.mkdtemp()
    server = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port",
                               str(port), "--save", "", "--appendonly", "no", "--dir", tmp],
                              stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        for _ in range(200):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        wq = WorkQueue(r, "thumbnails")
        for start in range(0, args.items, 1000):
            wq.push([NewItem(b'{"n": 1}', f"old-{n}")
                     for n in range(start, min(start + 1000, args.items))])
        url = f"redis://127.0.0.1:{port}/0"
        st = State(url=url, no_config=True)
        web = Web(stats_targets(st, ["thumbnails"], False), guard=Guard(),
                  cli_prefix=global_options(st), st=st, log=io.StringIO())
        c = TestClient(make_app(web), base_url="http://localhost")
        page = c.get("/q/thumbnails/confirm", params={"action": "purge", "state": "pending"})
        confirmed = _number(r"Delete all ([\d,]+) pending", page.text)
        form = {k: unescape(v) for k, v in
                re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text)}
        # every call over 1 ms kept (all of them: a long log), the longest reported
        r.config_set("slowlog-log-slower-than", 1000)
        r.config_set("slowlog-max-len", 100_000)
        r.slowlog_reset()
        stop, pushed = threading.Event(), [0]

        def producer() -> None:
            q = WorkQueue(redis.Redis(port=port), "thumbnails")
            while not stop.is_set():
                q.push([NewItem(b'{"n": 2}', f"new-{pushed[0] + n}") for n in range(100)])
                pushed[0] += 100

        thread = threading.Thread(target=producer)
        thread.start()
        t = time.perf_counter()
        done = c.post("/q/thumbnails/do", data=form)
        took = time.perf_counter() - t
        stop.set()
        thread.join()
        purged = _number(r"purged ([\d,]+) pending", done.text)
        slow = r.slowlog_get(100_000)
        names = {hashlib.sha1(source(n).encode()).hexdigest(): n for n in ("purge", "push")}

        def longest(script: str) -> int:
            return max((e["duration"] for e in slow
                        if names.get(_sha(e["command"])) == script), default=0)
        print(json.dumps({"confirmed": confirmed, "purged": purged,
                          "left": wq.stats().pending, "pushed_meanwhile": pushed[0],
                          "do_seconds": round(took, 3), "calls_over_1ms": len(slow),
                          "slowest_purge_call_us": longest("purge"),
                          "slowest_push_call_us": longest("push"),
                          "slowest_call_us": max((e["duration"] for e in slow), default=0)}))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    if found is None:
        raise SystemExit(f"not on the page: {pattern}\n{text[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _sha(command: bytes | str) -> str:
    words = (command.decode() if isinstance(command, bytes) else command).split()
    return words[1] if len(words) > 1 and words[0].upper() == "EVALSHA" else ""


if __name__ == "__main__":
    main()
