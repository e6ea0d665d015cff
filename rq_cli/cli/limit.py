"""``rq-cli limit``: a queue's fleet-wide limits, a rate and an in-flight cap that every rq-cli
lease obeys (kept on the server: docs/limits.md)."""

from typing import Annotated

import typer

from ..core.operations.limiting import QueueLimits, parse_rate
from ..errors import UsageError
from .common import JsonOpt, QueueArg, state


def limit(
    ctx: typer.Context,
    queue: QueueArg,
    rate: Annotated[str | None, typer.Option(
        "--rate", metavar="N/s|N/m|N/h",
        help="At most N leases a second, minute or hour, over all workers together.",
        show_default=False)] = None,
    burst: Annotated[int | None, typer.Option(
        "--burst", metavar="B", min=1,
        help="With --rate: up to B items at once after a quiet spell (default 1: evenly "
             "spaced).", show_default=False)] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        "--max-in-flight", metavar="N", min=0,
        help="At most N items leased at once, over all workers together (0: no cap).",
        show_default=False)] = None,
    tenant: Annotated[str | None, typer.Option(
        "--tenant", metavar="T",
        help="Fair queues: tenant T's own rate (--rate, --burst, --clear, or shown), within "
             "the queue's limits.", show_default=False)] = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Remove every limit of the queue (with --tenant: that tenant's "
                        "rate).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Set, clear or show a queue's fleet-wide limits (with no option: show them).

    Example: rq-cli limit api-calls --rate 50/s --max-in-flight 10
    """
    st = state(ctx)
    out = st.output(as_json)
    setting = rate is not None or burst is not None or max_in_flight is not None
    if clear and setting:
        raise UsageError("--clear removes every limit: give it alone")
    parsed = parse_rate(rate) if rate is not None else None
    wq = st.queue(queue)
    if clear:
        got = wq.clear_limits(tenant)
    elif setting:
        got = wq.set_limits(rate=parsed, burst=burst, max_in_flight=max_in_flight,
                            tenant=tenant)
    else:
        got = wq.limits(tenant)
    if not got.any:
        out.message(f"rq-cli: limit {queue}: no limits (leases are not held back)")
    out.record(limits_row(queue, got, tenant))


def limits_row(queue: str, got: QueueLimits, tenant: str | None) -> dict[str, object]:
    """``limit``'s line (rq_cli/schemas/limit.schema.json): with a tenant, its own rate."""
    return {"queue": queue, **({"tenant": tenant} if tenant is not None else {}),
            "rate": got.rate, "per_second": got.per_second, "burst": got.burst,
            "max_in_flight": got.max_in_flight, "in_flight": got.in_flight}

