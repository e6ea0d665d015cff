"""A sharded queue's fleet-wide limits (docs/DESIGN.md section 9, "Sharded queues"): a script
sees one shard, so each live shard holds a share. The rate: each shard's interval is the
queue's times N (``rate/N`` each); the burst and the in-flight cap: whole shares that add up
to the queue's (the burst at least 1 per shard); a cap smaller than the shard count is
refused (a shard with no share would never lease). ``reshard`` spreads the limits over the
new live shards once it has published them. No Typer, no rich."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ..operations.limiting import QueueLimits, Rate, parse_rate, rate_share, share

if TYPE_CHECKING:
    from ..queue import WorkQueue


def check_cap(cap: int | None, shards: int, queue: str) -> None:
    """ConfigError (exit 78) for an in-flight cap smaller than the shard count."""
    if cap and cap < shards:
        raise ConfigError(f"an in-flight cap of {cap} cannot be shared by the {shards} shards "
                          f"of {queue} (each needs a place of its own, or it never leases): "
                          f"set at least {shards}, or reshard to {cap} shards or fewer")


def spread(live: Sequence[WorkQueue], queue: str, *, rate: Rate | None = None,
           burst: int | None = None, max_in_flight: int | None = None,
           tenant: str | None = None) -> None:
    """Write each live shard's share of the limits given (those not given stay as they are;
    with ``tenant``, that tenant's own rate)."""
    n = len(live)
    check_cap(max_in_flight, n, queue)
    for i, q in enumerate(live):
        q.set_limits(
            rate=rate_share(rate, n) if rate else None,
            burst=max(share(burst or 1, n, i), 1) if rate else None,
            max_in_flight=None if max_in_flight is None else
            share(max_in_flight, n, i) if max_in_flight else 0, tenant=tenant)


def totals(live: Sequence[WorkQueue], draining: Sequence[WorkQueue] = (),
           tenant: str | None = None) -> QueueLimits:
    """The queue's limits from its live shards' shares: the rate as set (its text, each
    shard's being the queue's), the bursts' and caps' sums; and the leases in flight in every
    shard (``draining`` too: a draining shard keeps the shares it had until it is empty);
    with ``tenant``, that tenant's own rate. (A tenant's rate is not spread again by a
    resize: set it again after one.)"""
    got = [q.limits(tenant) for q in live]
    rate = next((g.rate for g in got if g.rate), None)
    caps = [g.max_in_flight for g in got if g.max_in_flight is not None]
    bursts = [g.burst for g in got if g.burst is not None]
    return QueueLimits(rate, parse_rate(rate).interval_us if rate else None,
                       sum(bursts) if bursts else None, sum(caps) if caps else None,
                       sum(g.in_flight for g in got) + sum(q.limits().in_flight
                                                           for q in draining))


def respread(before: Sequence[WorkQueue], live: Sequence[WorkQueue], queue: str) -> None:
    """After a resize: the limits the previous live shards held, spread over the new ones."""
    lim = totals(before)
    if lim.any:
        spread(live, queue, rate=parse_rate(lim.rate) if lim.rate else None,
               burst=lim.burst if lim.rate else None, max_in_flight=lim.max_in_flight)
