"""Copies of a sharded queue's record, so a client can open the queue while the record's own
primary is down (docs/DESIGN.md section 7, "Copies of the record"). No Typer, no rich.

On a Cluster every write of ``P:shards`` is followed by a copy at RECORD_COPIES fixed places a
client names without the record: ``P:shards`` of the bases whose tag ``{T}`` is ``{T~r.k}``
(:func:`copy_base`), most likely on other primaries. Each copy carries the record's
``version`` and is written only over an older one. A client that cannot reach the record reads
the copies on the other primaries and follows the highest version.
"""

from __future__ import annotations

from typing import Any

from ..contract.keys import shards_key
from ..contract.limits import RECORD_COPIES
from ..contract.util import is_cluster
from .shardmeta import ShardMeta, marked, parse
from .shardwait import shard_down


def copy_base(base: str, k: int) -> str:
    """The base prefix whose ``:shards`` key holds copy ``k`` of ``base``'s record."""
    return marked(base, f"~r.{k}")


def write_copies(client: Any, base: str, meta: ShardMeta) -> int:
    """Write ``meta`` over each copy of an older version (one WATCH/MULTI on each copy's key);
    a copy whose primary is down is left (the record is the truth). Returns the copies
    written. Nothing off a Cluster (one server: the record and its copies would fail
    together)."""
    import redis

    if not is_cluster(client):
        return 0
    written = 0
    for k in range(RECORD_COPIES):
        key = shards_key(copy_base(base, k))
        try:
            with client.pipeline(transaction=True) as pipe:
                pipe.watch(key)
                older = parse(pipe.hgetall(key), key).version < meta.version
                if older:
                    pipe.multi()
                    pipe.delete(key)
                    pipe.hset(key, mapping=meta.fields())
                    pipe.execute()
                    written += 1
                else:
                    pipe.unwatch()
        except redis.WatchError:
            continue  # another writer's copy, of a version at least as new
        except Exception as e:
            if not shard_down(e):
                raise
    return written


def read_copies(client: Any, base: str) -> ShardMeta | None:
    """The copy of the highest version among those on another primary than the record's (that
    one is down) which answer, or None (none answers, or off a Cluster)."""
    if not is_cluster(client):
        return None
    record_node = _node(client, shards_key(base))
    best: ShardMeta | None = None
    for k in range(RECORD_COPIES):
        key = shards_key(copy_base(base, k))
        if _node(client, key) == record_node:
            continue
        try:
            meta = parse(client.hgetall(key), key)
        except Exception as e:
            if not shard_down(e):
                raise
            continue
        if meta.count and (best is None or meta.version > best.version):
            best = meta
    return best


def _node(client: Any, key: str) -> str:
    from redis.crc import key_slot

    try:
        return str(client.nodes_manager.slots_cache[key_slot(key.encode())][0].name)
    except (KeyError, IndexError):
        return ""
