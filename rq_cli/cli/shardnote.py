"""What to say when a command reads a sharded queue's base prefix as a plain queue (a name
the config does not mark ``shards = N``, or ``--prefix``): the prefix holds none of the
queue's items (they are in its shards, docs/sharded-queues.md), so it reads as empty."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .common import State


def sharded_note(st: State, name: str, wq: Any) -> str | None:
    """The one-line note when the server records ``wq``'s prefix as a sharded queue and
    ``wq`` reads it as one plain queue; None otherwise (one HGET: call it only where the
    queue read as empty or unused)."""
    from ..core.contract.keys import shards_key
    from ..core.sharding.sharded import ShardedQueue

    if isinstance(wq, ShardedQueue):  # read as the sharded queue it is
        return None
    raw = wq.client.hget(shards_key(wq.prefix), "count")
    count = int(raw) if raw is not None else 0
    if not count:
        return None
    named = [n for n, table in st.config.queues.items()
             if table.get("prefix", n) == wq.prefix and table.get("shards")]
    fix = (f"read it by its configured name {named[0]} (without --prefix)" if named else
           f"set shards = {count} on its [queues.{name}] table in the config")
    return (f"queue {name} is sharded on the server ({count} shards): its prefix {wq.prefix} "
            f"holds none of its items, they are in its shards; {fix}")
