"""Case 2, lease + complete through the library, one item at a time, 1 and 4 processes, vs
redis-work-queue 0.1.5 doing the same (its lease is RPOPLPUSH + GET + SETEX, its complete
LREM + DEL + DEL); and ``lease(count=100)`` + one batched ``complete`` vs the peer's one-at-a-
time rate (1 process). Worker processes are forked; each times its own loop and the wall time
is from the first start to the last finish (CLOCK_MONOTONIC is shared by all processes).
"""

from __future__ import annotations

import time
from typing import Any

from ..fill import fill
from ..harness import (
    CaseResult,
    Ctx,
    Row,
    drain,
    drain_peer,
    log,
    median,
    rotated,
    run_workers,
    summary,
)

RQ_Q = "lq"
PEER_Q = "pq"


def _rq_worker(port: int, quota: int, batch: int, go: Any, out: Any) -> None:
    import redis

    from rq_cli.core.queue import WorkQueue

    c = redis.Redis(host="127.0.0.1", port=port)
    q = WorkQueue(c, RQ_Q)
    for name in ("lease", "complete"):  # load the scripts before the clock starts
        q.script(name)
        c.script_load(q.script(name).script)
    go.wait()
    t0 = time.perf_counter()
    # the worker loop: complete what was leased and lease the next, one call
    done = drain(q, quota, batch, combined=True)
    out.put((done, t0, time.perf_counter()))


def _peer_worker(port: int, quota: int, batch: int, go: Any, out: Any) -> None:
    import redis
    from redis_work_queue import KeyPrefix
    from redis_work_queue import WorkQueue as PeerQueue

    db = redis.Redis(host="127.0.0.1", port=port)
    wq = PeerQueue(KeyPrefix(PEER_Q))
    db.ping()
    go.wait()
    t0 = time.perf_counter()
    done = drain_peer(wq, db, quota)
    out.put((done, t0, time.perf_counter()))


def _run_workers(target: Any, port: int, procs: int, total: int, batch: int) -> tuple[int, float]:
    """Run ``procs`` workers sharing ``total`` items; returns (items done, wall seconds)."""
    ran = run_workers(target, (port, total // procs, batch), procs)
    return ran.done, ran.wall


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("lease")
    server = ctx.server
    port = server.port
    client = server.client()
    # Item counts sized so each measurement takes a few seconds.
    sizes = {
        "rq 1p": ctx.scale(10_000, 2_000), "rq 4p": ctx.scale(16_000, 4_000),
        "peer 1p": ctx.scale(3_000, 800), "peer 4p": ctx.scale(6_000, 1_600),
        "rq 1p batch100": ctx.scale(200_000, 20_000),
    }
    plans = {
        "rq 1p": (_rq_worker, RQ_Q, "pending", 1, 1),
        "rq 4p": (_rq_worker, RQ_Q, "pending", 4, 1),
        "peer 1p": (_peer_worker, PEER_Q, "peer_pending", 1, 1),
        "peer 4p": (_peer_worker, PEER_Q, "peer_pending", 4, 1),
        "rq 1p batch100": (_rq_worker, RQ_Q, "pending", 1, 100),
    }
    rates: dict[str, list[float]] = {k: [] for k in plans}
    names = list(plans)
    for rep in range(ctx.reps + 2):  # short measurements: more repetitions, steadier medians
        order = rotated(names, rep)
        for name in order:
            target, prefix, kind, procs, batch = plans[name]
            n = sizes[name]
            server.flush()
            fill(client, prefix, kind, n)
            done, wall = _run_workers(target, port, procs, n, batch)
            if done != n - n % procs:
                raise RuntimeError(f"{name}: {done} of {n} items completed")
            rates[name].append(done / wall)
            log(f"lease rep {rep + 1}: {name}: {done / wall:,.0f} items/s")
    server.flush()
    rtt = []
    for _ in range(2000):
        t0 = time.perf_counter()
        client.ping()
        rtt.append(time.perf_counter() - t0)
    res.raw = {"items": sizes, "items_per_s": {k: summary(v) for k, v in rates.items()},
               "ping_rtt_us_median": median(rtt) * 1e6,
               "round_trips_per_item": {"peer": 5, "rq-cli lease+complete": 2,
                                        "rq-cli batch of 100": 0.02}}

    def row(measure: str, ours: str, base: str, budget: float) -> Row:
        return Row("2 lease+complete", measure, f"{median(rates[ours]):,.0f} items/s",
                   f"{median(rates[base]):,.0f} items/s",
                   [o / b for o, b in zip(rates[ours], rates[base], strict=True)], "min", budget)

    res.rows.append(row("1 at a time, 1 process / redis-work-queue", "rq 1p", "peer 1p", 3))
    res.rows.append(row("1 at a time, 4 processes / redis-work-queue", "rq 4p", "peer 4p", 3))
    res.rows.append(row("lease(count=100) + batched complete / peer 1 process", "rq 1p batch100",
                        "peer 1p", 30))
    return res
