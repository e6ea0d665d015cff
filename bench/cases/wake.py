"""Case `wake` (issue 22): ``lease --wait`` on a fair queue (one that has had tenants).

- Latency: one waiter in ``lease(1, wait=...)`` in a loop, another client pushing one item
  into a tenant's sub-queue every 5-15 ms; the time from the push's reply to the waiter's
  lease returning it, p50 and p99 (budget p99 < 5 ms). A waiter blocks on ``P:wake``, where
  every item put in line leaves a token (before: it polled every 250 ms).
- Idle cost: the server's CPU (``INFO cpu``, user + sys) over 10 s with 100 idle waiters
  (threads in ``lease(1, wait=30)``, a connection each) on the fair queue vs on a plain
  queue, side by side in the same run (budget <= 1.25x: waiting on a fair queue costs what it
  costs on any queue; it polled every 250 ms before), and 100 vs 1 on the fair queue (info:
  each waiter still leases once per 2 s chunk of its wait, on any queue).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from ..harness import CaseResult, Ctx, Row, log, median

Q = "wq"


def _cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _calls(client: Any) -> int:
    stats = client.info("commandstats")
    return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("fcall", "evalsha"))


def _fair_queue(client: Any) -> Any:
    from rq_cli.core.queue import WorkQueue

    q = WorkQueue(client, Q)
    q.push([b"first"], tenant="a")
    q.lease(1)
    return q


def _latency(server: Any, n: int) -> list[float]:
    from rq_cli.core.queue import WorkQueue

    client = server.client()
    q = _fair_queue(client)
    got: dict[bytes, float] = {}
    stop = threading.Event()

    def wait_loop() -> None:
        wq = WorkQueue(server.client(), Q)
        while not stop.is_set():
            for item in wq.lease(1, wait=1.0):
                got[item.data] = time.perf_counter()
                wq.complete([item])

    thread = threading.Thread(target=wait_loop)
    thread.start()
    time.sleep(0.2)
    sent: dict[bytes, float] = {}
    for i in range(n):
        data = b"%d" % i
        q.push([data], tenant=f"t{i % 10}")
        sent[data] = time.perf_counter()
        time.sleep(random.uniform(0.005, 0.015))
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join()
    return sorted(max(got[d] - sent[d], 0.0) for d in sent if d in got)


def _idle(server: Any, waiters: int, seconds: float, fair: bool) -> tuple[float, int]:
    """Server CPU seconds and script calls over ``seconds`` with ``waiters`` idle waiters."""
    from rq_cli.core.queue import WorkQueue

    client = server.client()
    if fair:
        _fair_queue(client)
    stop = threading.Event()

    def wait_loop() -> None:
        wq = WorkQueue(server.client(), Q)
        while not stop.is_set():
            wq.lease(1, wait=min(30.0, seconds + 5))

    threads = [threading.Thread(target=wait_loop) for _ in range(waiters)]
    for t in threads:
        t.start()
    time.sleep(2.5)  # every waiter blocked, past its first lease
    cpu0, calls0 = _cpu(client), _calls(client)
    time.sleep(seconds)
    cpu1, calls1 = _cpu(client), _calls(client)
    stop.set()
    WorkQueue(client, Q).push([b"stop"] * waiters)  # (wakes every waiter to see the stop)
    for t in threads:
        t.join()
    return cpu1 - cpu0, calls1 - calls0


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("wake")
    server = ctx.server
    server.flush()
    lat = _latency(server, ctx.scale(400, 100))
    server.flush()
    p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    log(f"wake: push to lease p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms "
        f"({len(lat)} items)")
    seconds = ctx.scale(10, 4)
    idle: dict[str, list[float]] = {"fair 1": [], "fair 100": [], "plain 100": []}
    calls: dict[str, list[float]] = {k: [] for k in idle}
    for _ in range(ctx.reps):
        for key in idle:
            server.flush()
            kind, waiters = key.split()
            cpu, n = _idle(server, int(waiters), seconds, kind == "fair")
            idle[key].append(cpu / seconds)
            calls[key].append(n / seconds)
            log(f"wake: {key} idle waiters: server cpu {cpu * 1000 / seconds:.2f} ms/s, "
                f"{n / seconds:.1f} script calls/s")
    server.flush()
    res.raw |= {"latency_s": lat, "idle_cpu_s_per_s": idle, "idle_calls_per_s": calls,
                "seconds": seconds}

    def ms(key: str) -> str:
        return f"{median(idle[key]) * 1000:.2f} ms/s"

    res.rows.append(Row("22 wake", "fair queue: push to lease --wait, p99",
                        f"{p50 * 1000:.2f} ms p50", "-", [p99 * 1000], "lt", 5, unit=" ms"))
    res.rows.append(Row("22 wake", "server CPU, 100 idle waiters: fair / plain queue",
                        ms("fair 100"), ms("plain 100"),
                        [f / p for f, p in zip(idle["fair 100"], idle["plain 100"],
                                               strict=True)], "max", 1.25))
    res.rows.append(Row("22 wake", "server CPU, idle waiters on a fair queue: 100 / 1",
                        ms("fair 100"), ms("fair 1"),
                        [m / o for m, o in zip(idle["fair 100"], idle["fair 1"], strict=True)],
                        "info", None, note=f"{median(calls['fair 100']):.0f} script calls/s"))
    return res
