"""Case 4, work over a million items without blocking the server:

- deep clean of N items, 1% of them strays (data key, in no list), vs a bare ``SCAN MATCH
  P:item:* COUNT 1000`` over the same keys (redis-py ``scan_iter`` in this process);
- ``purge("all")`` of N pending items and ``requeue_dead()`` of N dead items (the CLI's
  ``purge --state all`` and ``requeue-dead --all`` run the same library calls);
- during each, a second client (its own process, real-time priority when allowed) sends PING
  every millisecond: the worst round trip must stay under 50 ms.

The queue looks like rq-cli left it: item keys, ``P:queue`` and ``P:enqueued`` (so deep
clean's bookkeeping sweep has a million hash fields to look at, as it would in real life).
Deep clean runs with ``grace_seconds=0`` (strays past their grace period): one pass.
"""

from __future__ import annotations

import time

from ..fill import fill
from ..harness import CaseResult, Ctx, Prober, Row, log, median, probed_run, summary

Q = "dq"
STRAY_EVERY = 100


def run(ctx: Ctx) -> CaseResult:
    from rq_cli.core.queue import WorkQueue

    res = CaseResult("deep")
    n = ctx.scale(1_000_000, 100_000)
    server = ctx.server
    client = server.client()
    host, port = "127.0.0.1", server.port
    q = WorkQueue(client, Q)

    times: dict[str, list[float]] = {"deep": [], "scan": [], "purge": [], "requeue": []}
    pings: dict[str, list[dict]] = {k: [] for k in times}
    pings["idle"] = []

    slowest: dict[str, list[float]] = {k: [] for k in times}

    def probed(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        run = probed_run(client, host, port, fn)
        times[name].append(run.seconds)
        pings[name].append(run.pings)
        slowest[name].append(run.slowest_ms)
        log(f"deep: {name}: {times[name][-1]:.2f} s, worst PING {pings[name][-1]['max_ms']:.1f} "
            f"ms, longest server call {slowest[name][-1]:.1f} ms")

    def deep() -> None:
        report = q.clean(deep=True, grace_seconds=0)
        if report.recovered != n // STRAY_EVERY or report.scanned != n:
            raise RuntimeError(f"deep clean: {report}")

    def scan() -> None:
        seen = sum(1 for _ in client.scan_iter(match=f"{Q}:item:*", count=1000))
        if seen != n:
            raise RuntimeError(f"SCAN saw {seen} of {n} keys")

    def purge() -> None:
        report = q.purge("all")
        if report.pending != n:
            raise RuntimeError(f"purge: {report}")
        res.raw.setdefault("keys_left_after_purge", []).append(client.dbsize())

    def requeue() -> None:
        report = q.requeue_dead()
        if report.requeued != n or client.llen(f"{Q}:queue") != n:
            raise RuntimeError(f"requeue-dead: requeued {report.requeued} of {n}")

    for rep in range(ctx.reps):
        server.flush()
        fill(client, Q, "pending", n, stray_every=STRAY_EVERY)
        with Prober(host, port) as p:  # the noise floor: nothing running
            time.sleep(1.0)
            pings["idle"].append(p.stop())
        pair = [("scan", scan), ("deep", deep)]
        for name, fn in (pair if rep % 2 == 0 else pair[::-1]):
            probed(name, fn)
        server.flush()
        fill(client, Q, "pending", n)
        probed("purge", purge)
        server.flush()
        fill(client, Q, "dead", n)
        probed("requeue", requeue)
    server.flush()

    res.raw |= {"items": n, "strays": n // STRAY_EVERY,
               "seconds": {k: summary(v) for k, v in times.items()}, "pings": pings,
               "longest_server_call_ms": slowest}
    worst = {k: [p["max_ms"] for p in v] for k, v in pings.items()}
    label = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"
    res.rows.append(Row("4 deep clean", f"deep clean {label} (1% strays) / bare SCAN COUNT 1000",
                        f"{median(times['deep']):.2f} s", f"{median(times['scan']):.2f} s",
                        [d / s for d, s in zip(times["deep"], times["scan"], strict=True)],
                        "max", 3))
    for key, what in (("deep", "deep clean"), ("purge", f"purge all {label}"),
                      ("requeue", f"requeue-dead all {label}")):
        res.rows.append(Row("4 deep clean", f"worst PING during {what} (2nd client)",
                            f"{median(times[key]):.2f} s", "-", worst[key], "lt", 50, unit=" ms",
                            note=f"p99 {median(p['p99_ms'] for p in pings[key]):.1f} ms"))
        res.rows.append(Row("4 deep clean", f"  longest server call during {what} (SLOWLOG)",
                            "-", "-", slowest[key], "info", None, unit=" ms"))
    res.rows.append(Row("4 deep clean", "worst PING during bare SCAN (reference)",
                        f"{median(times['scan']):.2f} s", "-", worst["scan"], "info", None,
                        unit=" ms"))
    res.rows.append(Row("4 deep clean", "worst PING, idle 1 s (noise floor)", "-", "-",
                        worst["idle"], "info", None, unit=" ms"))
    return res
