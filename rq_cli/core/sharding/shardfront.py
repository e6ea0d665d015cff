"""The front-of-line hint of a sharded queue (docs/DESIGN.md section 7, "Front of the line"):
``P:fronts``, a hash beside the record ``P:shards`` (the base tag's slot), per shard prefix
the items pushed to the front there not yet known to be leased. Lease passes visit those
shards first, so an item pushed with ``--front`` goes before every ordinary item of the
queue, not only of its shard. A hint: it may count too many (harmless: those shards' next
items go first), never too few for longer than a client's refresh of it. No Typer, no rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contract.keys import fronts_key, shards_key
from ..types import NewItem
from .shardmeta import ShardMeta, parse
from .shardwait import shard_down


def read_with_fronts(client: Any, base: str) -> tuple[ShardMeta, dict[str, int]]:
    """The record and the hint (counts above 0 only), in one round trip (one slot)."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(shards_key(base))
    pipe.hgetall(fronts_key(base))
    raw, fronts = pipe.execute()
    counts = {k.decode("utf-8", "replace"): int(v) for k, v in fronts.items() if int(v) > 0}
    return parse(raw, shards_key(base)), counts


def to_front(kw: dict[str, Any], items: Sequence[NewItem]) -> bool:
    """Whether a push of ``items`` with ``kw`` (WorkQueue.push's arguments) puts them at the
    front of a shard's own line (not delayed, not a tenant's line): the hint counts those."""
    return bool(kw.get("front")) and not kw.get("delay") and not kw.get("tenant") and \
        not any(item.tenant for item in items)


def pushed(client: Any, base: str, shard: str, added: int) -> None:
    """``added`` items were pushed to the front of ``shard``: one HINCRBY. They are stored
    already: where the hint's server cannot be reached (its primary failing over), the push
    still succeeds, its items first in their own shard only."""
    if added:
        try:
            client.hincrby(fronts_key(base), shard, added)
        except Exception as e:
            if not shard_down(e):
                raise


def taken(client: Any, base: str, shard: str, n: int) -> None:
    """``n`` front items of ``shard`` were leased: one HINCRBY (a second, rarely, where two
    clients took the same items off: the count goes back to 0, never below). The hint's
    server being down leaves it counting too many, which is harmless."""
    if n <= 0:
        return
    try:
        left = int(client.hincrby(fronts_key(base), shard, -n))
        if left < 0:
            client.hincrby(fronts_key(base), shard, -left)
    except Exception as e:
        if not shard_down(e):
            raise


def flags(page_len: int, hinted: int, from_end: str, length: int | None) -> list[bool]:
    """Which items of one shard's peek page (``page_len`` items read from ``from_end``) are
    its front items: the first ``hinted`` of its list from the head (at most its
    ``length``, needed from the tail only)."""
    if from_end == "head":
        return [n < hinted for n in range(page_len)]
    front = min(hinted, length or 0)
    return [(length or 0) - 1 - n < front for n in range(page_len)]
