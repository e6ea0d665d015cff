"""Issue 13, filtered bulk repair: ``requeue-dead --match EXPR`` over N dead items (1M in a
full run) must not block the server: a second client (its own process, real-time priority
when allowed) sends PING every millisecond, and its worst round trip must stay under 50 ms;
SLOWLOG gives the longest server call (the scan's page reads and the requeue calls).

The filter is ``starts_with(user, 'user-1')`` over the fill's payloads
(``{"n": i, "user": "user-<i % 977>", ...}``): users user-1, user-10..19 and user-100..199
match, about 11% of the items, so the run both scans every item and moves a good share of
them (in calls of 200 ids). As reference rows: the same run's items scanned per second, and
the unfiltered ``requeue_dead()`` of the same number of items (a range move, no client-side
test), timed in the same repetition.
"""

from __future__ import annotations

from ..fill import fill
from ..harness import CaseResult, Ctx, Row, log, median, probed_run, summary

Q = "fq"
EXPR = "starts_with(user, 'user-1')"


def _matching(n: int) -> int:
    users = [u for u in range(977) if str(u).startswith("1")]
    return sum(1 for i in range(n) if i % 977 in set(users))


def run(ctx: Ctx) -> CaseResult:
    from rq_cli.core.filtering import FilterReport, ItemFilter, scan
    from rq_cli.core.queue import WorkQueue

    res = CaseResult("filter")
    n = ctx.scale(1_000_000, 100_000)
    want = _matching(n)
    server = ctx.server
    client = server.client()
    host, port = "127.0.0.1", server.port
    q = WorkQueue(client, Q)
    flt = ItemFilter(match=EXPR)

    times: dict[str, list[float]] = {"filtered": [], "all": []}
    worst: dict[str, list[float]] = {k: [] for k in times}
    p99: dict[str, list[float]] = {k: [] for k in times}
    slowest: dict[str, list[float]] = {k: [] for k in times}

    def probed(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        run = probed_run(client, host, port, fn)
        times[name].append(run.seconds)
        worst[name].append(run.pings["max_ms"])
        p99[name].append(run.pings["p99_ms"])
        slowest[name].append(run.slowest_ms)
        log(f"filter: {name}: {times[name][-1]:.2f} s, worst PING {worst[name][-1]:.1f} ms, "
            f"longest server call {slowest[name][-1]:.1f} ms")

    def filtered() -> None:
        report = FilterReport(Q, "dead", "requeue")
        for _ in scan(q, "dead", flt, report, action="requeue"):
            pass
        if report.scanned != n or report.done != want:
            raise RuntimeError(f"filtered requeue-dead: {report}")

    def everything() -> None:
        report = q.requeue_dead()
        if report.requeued != n:
            raise RuntimeError(f"requeue-dead: requeued {report.requeued} of {n}")

    for _ in range(ctx.reps):
        for name, fn in (("filtered", filtered), ("all", everything)):
            server.flush()
            fill(client, Q, "dead", n)
            probed(name, fn)
    server.flush()

    res.raw |= {"items": n, "matching": want, "expression": EXPR,
                "seconds": {k: summary(v) for k, v in times.items()},
                "worst_ping_ms": worst, "p99_ping_ms": p99, "longest_server_call_ms": slowest}
    label = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"
    what = f"requeue-dead --match over {label} dead ({want:,} match)"
    res.rows.append(Row("13 filter", f"worst PING during {what} (2nd client)",
                        f"{median(times['filtered']):.1f} s", "-", worst["filtered"], "lt", 50,
                        unit=" ms", note=f"p99 {median(p99['filtered']):.1f} ms"))
    res.rows.append(Row("13 filter", "  longest server call during it (SLOWLOG)", "-", "-",
                        slowest["filtered"], "lt", 20, unit=" ms"))
    res.rows.append(Row("13 filter", f"  items scanned per second ({label})", "-", "-",
                        [n / t for t in times["filtered"]], "info", None, unit="/s"))
    res.rows.append(Row("13 filter", f"filtered / unfiltered requeue-dead time ({label})",
                        f"{median(times['filtered']):.1f} s", f"{median(times['all']):.1f} s",
                        [f / a for f, a in zip(times["filtered"], times["all"], strict=True)],
                        "info", None))
    return res
