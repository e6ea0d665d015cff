"""Case `limits` (issue 40): what a queue's fleet-wide limits cost the server per item.

The same items drained one at a time (``complete_and_lease``, one round trip per item) and
batched (``lease(100)`` + one ``complete``) from a queue without limits and from one with a
rate and an in-flight cap set high enough never to hold a lease back (``1000000/s``, burst
10000, cap 1000000000): both checks run on every lease, and the cap's wake-up token on every
complete. The server's whole CPU per item (``INFO cpu``) of each, side by side in the same
repetition, order rotating (budget: limited <= 1.2x plain). A queue without limits pays
nothing: `python -m bench.ab REV` against a revision before the limits shows it.
"""

from __future__ import annotations

from functools import partial

from ..harness import CaseResult, Ctx, Row, log, median, per_rep, rotated
from ..nested import drain_batched, drain_one_at_a_time, measure

LOOPS = ("plain 1", "limited 1", "plain 100", "limited 100")
BUDGET = 1.2


def run(ctx: Ctx) -> CaseResult:
    from rq_cli.core.operations.limiting import parse_rate
    from rq_cli.core.queue import WorkQueue

    res = CaseResult("limits")
    items = ctx.scale(20_000, 4_000)
    data = [b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items
    figures: dict[str, list[dict[str, float]]] = {loop: [] for loop in LOOPS}
    for rep in range(ctx.reps):
        for loop in rotated(LOOPS, rep):
            ctx.server.flush()
            client = ctx.server.client()
            q = WorkQueue(client, "lq")
            if loop.startswith("limited"):
                q.set_limits(rate=parse_rate("1000000/s"), burst=10_000,
                             max_in_flight=1_000_000_000)
            q.push(data)
            drain = drain_one_at_a_time if loop.endswith(" 1") else drain_batched
            f = measure(client, items, partial(drain, q))
            figures[loop].append(f)
            log(f"limits rep {rep + 1}: {loop}: {f['cpu_us_per_item']:.1f} us/item server cpu, "
                f"{f['nested_per_item']:.2f} nested commands/item")
    ctx.server.flush()
    res.raw = {"items": items, "per_rep": figures}

    def us(loop: str) -> str:
        return f"{median(f['cpu_us_per_item'] for f in figures[loop]):.1f} us"

    for n, what in (("1", "1 at a time"), ("100", "lease(100)+complete")):
        res.rows.append(Row("40 limits", f"server CPU/item, {what}: rate + cap / no limits",
                            us(f"limited {n}"), us(f"plain {n}"),
                            per_rep(figures[f"limited {n}"], figures[f"plain {n}"],
                                    "cpu_us_per_item"), "max", BUDGET))
    return res
