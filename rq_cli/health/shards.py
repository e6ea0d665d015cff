"""``doctor``'s check of a sharded queue (docs/DESIGN.md section 7): where its shards live.

Two live shards served by one Cluster primary share its core: a warning naming them. On a
single server (or Sentinel) every shard shares the one core: a sharded queue brings no scale
there, which is said too (a warning: nothing is wrong, but nothing is gained).
"""

from __future__ import annotations

from typing import Any

from ..core.contract.util import is_cluster
from ..core.sharding.shardmeta import ShardMeta, placement, read
from .doctor import OK, WARN, Check


def shard_checks(client: Any, prefix: str, configured: int | None = None) -> list[Check]:
    """The ``shards`` checks of queue ``prefix``, or none when it is not sharded: a config
    count that is not the server's (followed: a warning), then placement."""
    meta = read(client, prefix)
    if not meta.count:
        return []
    if configured is not None and configured != meta.count:
        return [Check("shards", WARN, f"the config says shards = {configured} but the "
                      f"server has {meta.count}: clients follow the server's count",
                      f"set shards = {meta.count} in the config (or run 'rq-cli reshard' "
                      f"to {configured})"), *_placed(client, meta)]
    return _placed(client, meta)


def _placed(client: Any, meta: ShardMeta) -> list[Check]:
    if not is_cluster(client):
        return [Check("shards", WARN, f"{meta.count} shards on one server: a sharded queue "
                      f"brings no scale there (every shard shares its one core)",
                      "use a Redis Cluster with a primary per shard, or shards = 1")]
    by_node = placement(client, meta.live)
    shared = {node: shards for node, shards in by_node.items() if len(shards) > 1}
    primaries = len({str(n.name) for n in client.get_primaries()})
    if shared and len(by_node) < min(meta.count, primaries):
        detail = "; ".join(f"{', '.join(shards)} share primary {node}"
                           for node, shards in sorted(shared.items()))
        return [Check("shards", WARN, detail,
                      "re-run 'rq-cli reshard' to another count and back, or move the slots "
                      "of one of them to a primary that has none (CLUSTER SETSLOT)")]
    detail = f"{meta.count} shards on {len(by_node)} of {primaries} primaries"
    if meta.draining:
        detail += f"; {len(meta.draining_prefixes())} retired shards draining"
    return [Check("shards", OK, detail)]
