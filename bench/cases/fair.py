"""Case `fair` (issue 13): fair queues, per-tenant sub-queues leased round-robin.

- Fairness: one tenant pushes 100,000 items, then ten others 100 each. Leasing 100 at a time,
  how many leases until every small tenant's item has been leased: with tenants (budget: all
  within the first 1,100 leases) and, side by side, the same items in one plain FIFO queue
  (info).
- Lease cost: the server's execution time per ``lease(1)`` script call (SLOWLOG with every
  call logged; the median of the calls) of a queue with 10,000 tenants vs one with 10
  (budget <= 1.2x), 1,000 vs 1 and 10 vs none (info). The two queues of a pair live on the
  server together and their leases alternate one by one, so both see the same machine at
  the same moments (this machine is shared: a run-after-run comparison of totals was noise).
  Every tenant has items for the whole measurement, so each lease is a turn of the ring.
  (Logging every call, and Redis 7 logs a script's commands too, inflates the absolute
  figures alike for both queues: only the ratios are quoted.)
"""

from __future__ import annotations

from typing import Any

from ..harness import CaseResult, Ctx, Row, log, median, summary

Q = "fq"
BIG, SMALL, SMALL_ITEMS = 100_000, 10, 100


def _queue(client: Any) -> Any:
    from rq_cli.core.queue import WorkQueue

    return WorkQueue(client, Q)


def _fairness(client: Any, tenants: bool, big: int) -> int:
    """Leases until the last small tenant's item was leased."""
    from rq_cli.core.types import NewItem

    q = _queue(client)
    q.push([b"big"] * big, tenant="big" if tenants else None)
    for t in range(SMALL):
        q.push([NewItem(b"small")] * SMALL_ITEMS, tenant=f"t{t}" if tenants else None)
    seen = small = 0
    while small < SMALL * SMALL_ITEMS:
        items = q.lease(100, lease_seconds=600)
        if not items:
            raise RuntimeError("the queue ran dry before every small item was leased")
        for item in items:
            seen += 1
            small += item.data == b"small"
    return seen


def _fill(client: Any, prefix: str, tenants: int, leases: int) -> Any:
    """A queue whose every tenant has items for ``leases`` leases (0 tenants: plain)."""
    from rq_cli.core.queue import WorkQueue

    q = WorkQueue(client, prefix)
    if tenants == 0:
        q.push([b"x"] * (leases + 2))
    else:
        per = leases // tenants + 2
        for t in range(tenants):
            q.push([b"x"] * per, tenant=f"tenant{t}")
    q.lease(1)  # scripts loaded, first turn taken
    return q


def _paired_cost(client: Any, many: int, few: int, leases: int) -> tuple[float, float]:
    """Median server us per lease(1) (SLOWLOG, every call logged) of a queue with ``many``
    tenants and one with ``few``, their leases interleaved one by one, so both see the same
    machine at the same moments."""
    client.flushall()
    qs = {many: _fill(client, "fm", many, leases), few: _fill(client, "ff", few, leases)}
    by_key = {qs[many].keys.queue.encode(): many, qs[few].keys.queue.encode(): few}
    old = client.config_get("slowlog-*")
    client.config_set("slowlog-max-len", 50_000)  # (Redis 7 logs a script's commands too)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    times: dict[int, list[float]] = {many: [], few: []}

    def drain() -> None:
        for entry in client.slowlog_get(50_000):
            args = entry["command"].split()
            # (EVALSHA sha 1 KEY ..., or FCALL function 1 KEY ... where the server has
            # Functions: rq_cli/core/scripting/calling.py)
            if args[:1] in ([b"EVALSHA"], [b"FCALL"]) and len(args) > 3 and args[3] in by_key:
                times[by_key[args[3]]].append(entry["duration"])
        client.slowlog_reset()

    try:
        for i in range(leases):
            order = (many, few) if i % 2 == 0 else (few, many)
            for t in order:
                if not qs[t].lease(1, lease_seconds=600):
                    raise RuntimeError("the queue ran dry")
            if i % 300 == 299:
                drain()
        drain()
    finally:
        client.config_set("slowlog-log-slower-than", old["slowlog-log-slower-than"])
        client.config_set("slowlog-max-len", old["slowlog-max-len"])
    if min(len(v) for v in times.values()) < leases * 0.9:
        raise RuntimeError(f"SLOWLOG kept too few entries: {[len(v) for v in times.values()]}")
    return median(times[many]), median(times[few])


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("fair")
    server = ctx.server
    client = server.client()
    big = ctx.scale(BIG, 20_000)
    fair_n: list[float] = []
    fifo_n: list[float] = []
    for rep in range(ctx.reps):
        for tenants in ((True, False) if rep % 2 == 0 else (False, True)):
            server.flush()
            n = _fairness(client, tenants, big)
            (fair_n if tenants else fifo_n).append(n)
            log(f"fair rep {rep + 1}: {'tenants' if tenants else 'FIFO'}: the last small "
                f"item was lease {n:,}")
    leases = ctx.scale(10_000, 3_000)
    pairs = {"10,000 vs 10 tenants": (10_000, 10), "1,000 vs 1 tenant": (1_000, 1),
             "10 tenants vs none": (10, 0)}
    if ctx.quick:
        pairs["10,000 vs 10 tenants"] = (2_000, 10)
    cost: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in pairs}
    ratios: dict[str, list[float]] = {k: [] for k in pairs}
    for rep in range(ctx.reps):
        for name, (many, few) in pairs.items():
            got_many, got_few = _paired_cost(client, many, few, leases)
            cost[name][0].append(got_many)
            cost[name][1].append(got_few)
            ratios[name].append(got_many / got_few)
            log(f"fair rep {rep + 1}: {many:,} tenants {got_many:.1f} us, {few:,} tenants "
                f"{got_few:.1f} us per lease (medians)")
    server.flush()
    total_small = SMALL * SMALL_ITEMS
    res.raw = {"big_items": big, "small_tenants": SMALL, "small_items_each": SMALL_ITEMS,
               "leases_until_small_served": {"tenants": summary(fair_n),
                                             "fifo": summary(fifo_n)},
               "leases_measured": leases,
               "server_us_per_lease": {name: {"many": summary(m), "few": summary(f)}
                                       for name, (m, f) in cost.items()}}
    res.rows.append(Row(
        "fair", f"leases until all {total_small:,} small-tenant items are leased "
                f"({big:,} of one tenant first)",
        f"{median(fair_n):,.0f} leases", f"FIFO {median(fifo_n):,.0f} leases", fair_n, "max",
        1100, unit=""))
    res.rows.append(Row(
        "fair", "the same, tenants / plain FIFO", f"{median(fair_n):,.0f}",
        f"{median(fifo_n):,.0f}", [f / b for f, b in zip(fair_n, fifo_n, strict=True)], "info",
        None))
    for name in pairs:
        budget = 1.2 if name.startswith("10,000") and not ctx.quick else None
        res.rows.append(Row(
            "fair", f"server us per lease(1), {name}",
            f"{median(cost[name][0]):.1f} us", f"{median(cost[name][1]):.1f} us", ratios[name],
            "max" if budget else "info", budget))
    return res
