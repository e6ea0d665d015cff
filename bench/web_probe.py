"""A probe of ``rq-cli web`` (issue 32), not a timed test: ``python -m bench.web_probe``
starts a private redis-server on a free port, fills 200 small queues and one of 1,000,000
dead items (bench/fill.py, server-side), runs the real ``rq-cli web`` on a free port over all
of them, and prints one JSON line: the overview of 201 queues (first and median of 5), the
first page of the 1,000,000 dead items (first and median of 5), the server process's peak
RSS (VmHWM) and the longest server call meanwhile (SLOWLOG). Targets: 300 ms, 1 s, 120 MB,
20 ms. ``--dead N`` and ``--queues N`` change the sizes."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import httpx
import redis

from bench.fill import fill
from tests.servers import free_port


def timed(url: str, n: int = 5) -> tuple[float, float]:
    """(first, median of the ``n`` after it) seconds of GET ``url``, 200 checked."""
    times = []
    for _ in range(n + 1):
        t = time.perf_counter()
        got = httpx.get(url, timeout=60)
        times.append(time.perf_counter() - t)
        if got.status_code != 200:
            raise RuntimeError(f"{url}: {got.status_code} {got.text[:200]}")
    return times[0], statistics.median(times[1:])


def vm_hwm_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queues", type=int, default=200)
    ap.add_argument("--dead", type=int, default=1_000_000)
    args = ap.parse_args()
    port, web_port = free_port(), free_port()
    tmp = tempfile.mkdtemp()
    server = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port",
                               str(port), "--save", "", "--appendonly", "no", "--dir", tmp],
                              stdout=subprocess.DEVNULL)
    web = None
    try:
        r = redis.Redis(port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        names = [f"q{i:03d}" for i in range(args.queues)]
        for name in names:
            fill(r, name, "pending", 10)
        t = time.perf_counter()
        fill(r, "big", "dead", args.dead)
        fill_s = time.perf_counter() - t
        r.config_set("slowlog-log-slower-than", 1000)  # calls over 1 ms
        r.slowlog_reset()
        url = f"redis://127.0.0.1:{port}/0"
        web = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", url, "--no-config",
                                "web", *names, "big", "--bind", f"127.0.0.1:{web_port}"],
                               env={**os.environ, "RQ_CLI_WEB_TOKEN": ""},
                               stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{web_port}"
        for _ in range(400):
            try:
                httpx.get(base + "/q/big?tab=history", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        overview = timed(base + "/")
        dead_page = timed(base + "/q/big?tab=dead")
        slow = r.slowlog_get(128)
        longest_ms = max((e["duration"] for e in slow), default=0) / 1000
        print(json.dumps({
            "queues": len(names) + 1, "dead": args.dead, "fill_s": round(fill_s, 1),
            "overview_first_ms": round(overview[0] * 1000, 1),
            "overview_median_ms": round(overview[1] * 1000, 1),
            "dead_page_first_ms": round(dead_page[0] * 1000, 1),
            "dead_page_median_ms": round(dead_page[1] * 1000, 1),
            "web_rss_mb": round(vm_hwm_mb(web.pid), 1),
            "longest_server_call_ms": longest_ms,
            "slow_calls": [(e["duration"] / 1000, e["command"][:60].decode("utf-8", "replace"))
                           for e in slow[:5]]}))
    finally:
        if web is not None:
            web.terminate()
            web.wait(10)
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
