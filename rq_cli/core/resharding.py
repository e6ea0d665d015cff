"""Creating and resizing a sharded queue, and removing drained shards (docs/DESIGN.md
section 7, "Resize"). No Typer, no rich."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ClusterError
from .keys import glob_escape, has_hash_tag
from .limits import BATCH
from .queue import WorkQueue
from .shardfront import fronts_key
from .shardmeta import SHARD_SETTLE, Draining, ShardMeta, meta_key, place, placement, read, update
from .util import is_cluster, server_ms


@dataclass
class ReshardPlan:
    """What a reshard does (or did): the counts, the new live shards, those set draining."""

    queue: str
    before: int
    after: int
    live: list[str] = field(default_factory=list)
    draining: list[str] = field(default_factory=list)
    changed: bool = False
    dry_run: bool = False
    #: primary -> the new shards it serves ({} off a Cluster)
    placement: dict[str, list[str]] = field(default_factory=dict)


def reshard(client: Any, base: str, count: int, *, dry_run: bool = False) -> ReshardPlan:
    """Make ``base`` a queue of ``count`` shards: a new generation, the previous live shards
    (or the unsharded queue at ``base`` itself, if it has anything) set draining. Nothing is
    copied; the same count again changes nothing."""
    if is_cluster(client) and not has_hash_tag(base):
        raise ClusterError(f"queue prefix {base!r} has no hash tag, so its shards could not "
                           f"be placed; use a prefix like '{{{base}}}' or 'app:{{{base}}}'")
    plan = ReshardPlan(base, 0, count, dry_run=dry_run)
    unsharded = WorkQueue(client, base).exists()

    def change(meta: ShardMeta) -> ShardMeta | None:
        plan.before = meta.count
        if meta.count == count:
            plan.live = list(meta.live)
            return None
        gen = meta.gen + 1
        draining = list(meta.draining)
        if meta.live:
            draining.append(Draining(meta.gen, list(meta.live)))
        elif unsharded:
            draining.append(Draining(0, [base]))
        plan.live = place(client, base, gen, count)
        plan.draining = [p for d in draining[len(meta.draining):] for p in d.shards if p]
        plan.changed = True
        if dry_run:
            return None
        return ShardMeta(count=count, gen=gen, live=plan.live, draining=draining,
                         resized_ms=server_ms(client),
                         retired_counters=dict(meta.retired_counters))

    update(client, base, change)
    plan.placement = placement(client, plan.live)
    return plan


def settle(client: Any, base: str, *, settle_s: float = SHARD_SETTLE) -> list[str]:
    """Remove the draining shards that hold nothing (pending, delayed, processing or dead)
    once the last resize is ``settle_s`` old: their keys unlinked by SCAN in batches, their
    running totals kept in the record. Returns the prefixes removed."""
    meta = read(client, base)
    if not meta.draining or server_ms(client) - meta.resized_ms < settle_s * 1000:
        return []
    empty: dict[str, dict[str, int]] = {}
    for prefix in meta.draining_prefixes():
        s = WorkQueue(client, prefix).stats()
        if not (s.pending or s.processing or s.delayed or s.dead):
            empty[prefix] = s.counters

    def change(m: ShardMeta) -> ShardMeta | None:
        kept = []
        for d in m.draining:
            shards = [None if p in empty else p for p in d.shards]
            if any(shards):
                kept.append(Draining(d.gen, shards))
        if kept == m.draining:
            return None
        retired = dict(m.retired_counters)
        for prefix in m.draining_prefixes():
            for name, n in empty.get(prefix, {}).items():
                retired[name] = retired.get(name, 0) + n
        m.draining, m.retired_counters = kept, retired
        return m

    update(client, base, change)
    for prefix in empty:
        _unlink_all(client, prefix, keep=(meta_key(base), fronts_key(base)))
    return list(empty)


def _unlink_all(client: Any, prefix: str, *, keep: tuple[str, ...]) -> None:
    """UNLINK every key of ``prefix`` but ``keep`` (the queue's own, where ``prefix`` is
    its base: its old unsharded keys) (SCAN in batches, on its node on a Cluster)."""
    kwargs: dict[str, Any] = {}
    if is_cluster(client):
        kwargs["target_nodes"] = client.get_node_from_key(prefix + ":queue")
    batch: list[bytes] = []
    for key in client.scan_iter(match=glob_escape(prefix) + ":*", count=BATCH, **kwargs):
        if key.decode("utf-8", "replace") not in keep:
            batch.append(key)
        if len(batch) >= BATCH:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)
