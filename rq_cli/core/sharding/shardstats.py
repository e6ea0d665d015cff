"""Reports of a sharded queue made from its shards' (docs/DESIGN.md section 7): totals of
stats, merged peeks and holders. No Typer, no rich."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..codes import ItemState
from ..contract.counts import combined
from ..contract.keys import COUNTER_FIELDS

if TYPE_CHECKING:
    from ..reports import Holder, PeekedItem, Stats


def total(prefix: str, parts: Sequence[Stats], retired: dict[str, int]) -> Stats:
    """One Stats for the whole queue: counts (counts.py ``combined``: summed, the oldest
    pending age the largest, paused if any shard is) and counters summed (with ``retired``,
    the counters of shards already removed)."""
    from ..reports import Stats

    counts = combined(parts)
    counters = {name: sum(s.counters.get(name, 0) for s in parts) + int(retired.get(name, 0))
                for name in COUNTER_FIELDS}
    by_tenant: dict[str, int] | None = None
    if parts and parts[0].by_tenant is not None:
        by_tenant = {}
        for s in parts:
            for tenant, n in (s.by_tenant or {}).items():
                by_tenant[tenant] = by_tenant.get(tenant, 0) + n
    other = next((s.other_generation for s in parts if s.other_generation), None)
    return Stats(queue=prefix, counters=counters, by_tenant=by_tenant,
                 other_generation=other, **counts)


def _order(state: str, item: PeekedItem) -> float:
    when = {ItemState.PENDING: item.enqueued_at, ItemState.PROCESSING: item.lease_expires_at,
            ItemState.DELAYED: item.due_at, ItemState.DEAD: item.dead_at}.get(ItemState(state))
    return when if when is not None else float("inf")


def merged(state: str, pages: Sequence[list[PeekedItem]], from_end: str,
           fronts: Sequence[list[bool]] | None = None) -> list[PeekedItem]:
    """The shards' items in one order: each shard's own order kept (``pages``, one per
    shard in the queue's shard order, each read from ``from_end``), the shards' items
    interleaved by the state's time (enqueued, lease deadline, due time, death), soonest
    first from the head, latest first from the tail. Items of several shards with one time
    (a bulk push stamps a batch with one millisecond) go in shard order from the head and
    the reverse from the tail, so the tail is the head read backwards and a console's
    pages, some read from each end, neither overlap nor skip. ``fronts``: per page, which
    of its items are front items (shardfront.py): from the head they come first, latest
    pushed first (the order leases take); from the tail, last."""
    sign = -1 if from_end == "tail" else 1
    keyed = []
    for n, page in enumerate(pages):
        front = fronts[n] if fronts is not None else [False] * len(page)
        keyed.append([((0, -sign * when) if up else (sign, sign * when), sign * n, item)
                      for item, up in zip(page, front, strict=True)
                      for when in [_order(state, item)]])
    return [item for _, _, item in heapq.merge(*keyed, key=lambda entry: entry[:2])]

def merged_holders(parts: Sequence[list[Holder]]) -> list[Holder]:
    """One Holder per session over every shard."""
    out: dict[str | None, Holder] = {}
    for holders in parts:
        for h in holders:
            seen = out.get(h.session)
            if seen is None:
                out[h.session] = replace(h, ids=list(h.ids))
                continue
            seen.items += h.items
            seen.live += h.live
            seen.abandoned += h.abandoned
            seen.ids.extend(h.ids)
            if h.oldest_deadline is not None and (seen.oldest_deadline is None
                                                  or h.oldest_deadline < seen.oldest_deadline):
                seen.oldest_id, seen.oldest_deadline = h.oldest_id, h.oldest_deadline
            if h.nearest_deadline is not None and (seen.nearest_deadline is None or
                                                   h.nearest_deadline < seen.nearest_deadline):
                seen.nearest_deadline = h.nearest_deadline
    return sorted(out.values(), key=lambda h: -h.items)
