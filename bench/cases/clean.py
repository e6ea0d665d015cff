"""Case 3, light clean of N abandoned items (in processing, no lease) vs the peer's
``light_clean`` (its stdout, a line per item, goes to /dev/null). rq-cli's clean runs with
``grace_seconds=0``: the items have been lease-less for longer than the grace period, so one
pass re-queues them all (first sighting and recovery in the same call).
"""

from __future__ import annotations

import contextlib
import os
import time

from ..fill import fill
from ..harness import CaseResult, Ctx, Row, log, median, summary

RQ_Q = "cq"
PEER_Q = "cp"


def run(ctx: Ctx) -> CaseResult:
    from redis_work_queue import KeyPrefix
    from redis_work_queue import WorkQueue as PeerQueue

    from rq_cli.core.queue import WorkQueue

    res = CaseResult("clean")
    n = ctx.scale(10_000, 2_000)
    server = ctx.server
    client = server.client()

    def ours() -> float:
        server.flush()
        fill(client, RQ_Q, "processing", n)
        q = WorkQueue(client, RQ_Q)
        t0 = time.perf_counter()
        report = q.clean(grace_seconds=0)
        dt = time.perf_counter() - t0
        if report.recovered != n or client.llen(f"{RQ_Q}:queue") != n:
            raise RuntimeError(f"rq-cli clean recovered {report.recovered} of {n}")
        return dt

    def peer() -> float:
        server.flush()
        fill(client, PEER_Q, "peer_processing", n)
        wq = PeerQueue(KeyPrefix(PEER_Q))
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
            t0 = time.perf_counter()
            wq.light_clean(client)
            dt = time.perf_counter() - t0
        if client.llen(f"{PEER_Q}:queue") != n:
            raise RuntimeError("redis-work-queue light_clean did not re-queue every item")
        return dt

    times: dict[str, list[float]] = {"rq-cli": [], "peer": []}
    for rep in range(ctx.reps):
        pair = [("rq-cli", ours), ("peer", peer)]
        for name, fn in (pair if rep % 2 == 0 else pair[::-1]):
            times[name].append(fn())
            log(f"clean rep {rep + 1}: {name}: {times[name][-1]:.3f} s")
    server.flush()
    res.raw = {"items": n, "seconds": {k: summary(v) for k, v in times.items()}}
    res.rows.append(Row("3 light clean", f"{n:,} abandoned: redis-work-queue time / rq-cli time",
                        f"{median(times['rq-cli']) * 1000:.0f} ms",
                        f"{median(times['peer']):.1f} s",
                        [p / o for o, p in zip(times["rq-cli"], times["peer"], strict=True)],
                        "min", 40))
    return res
