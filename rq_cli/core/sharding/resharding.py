"""Creating and resizing a sharded queue, and removing drained shards (docs/DESIGN.md
section 7, "Resize"). No Typer, no rich."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError, UsageError
from ..contract.keys import DEDUP_WINDOW_FIELD, fronts_key, glob_escape, has_hash_tag, shards_key
from ..contract.limits import BATCH, SHARD_SETTLE
from ..contract.util import is_cluster, server_ms
from ..operations.audit import note
from ..queue import WorkQueue
from .shardcopies import write_copies
from .shardlimits import check_cap, respread, totals
from .shardmeta import (
    Draining,
    ShardMeta,
    place,
    placement,
    read,
    shard_of,
    update,
)


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


def reshard(client: Any, base: str, count: int, *, dry_run: bool = False,
            create: bool = True, replace: bool = False) -> ReshardPlan:
    """Make ``base`` a queue of ``count`` shards: a new generation, the previous live shards
    (or the unsharded queue at ``base`` itself, if it has anything) set draining. Nothing is
    copied but the de-dup window setting; the same count again changes nothing.

    Refused before anything is written: an untagged base on a Cluster (ConfigError); a
    queue that exists nowhere when ``create`` is False (UsageError: a typo must not make a
    queue);
    a record that cannot be read unless ``replace`` (BadInputError)."""
    if is_cluster(client) and not has_hash_tag(base):
        raise ConfigError(f"queue prefix {base!r} has no hash tag, so its shards could not "
                          f"be placed; use a prefix like '{{{base}}}' or 'app:{{{base}}}'")
    plan = ReshardPlan(base, 0, count, dry_run=dry_run)
    unsharded = WorkQueue(client, base).exists()
    before: list[str] = []

    def change(meta: ShardMeta) -> ShardMeta | None:
        if not meta.count and not unsharded and not create:
            raise UsageError(f"no queue at prefix {base!r} on the server (nothing sharded, "
                             f"nothing stored): add --create to make it a queue of {count} "
                             f"shards")
        # (a cap smaller than the new count: refused before anything is written)
        check_cap(totals([WorkQueue(client, p) for p in meta.live or [base]]).max_in_flight,
                  count, base)
        return _resized(client, base, count, meta, plan, unsharded, before)

    update(client, base, change, replace=replace, written=_copies(client, base))
    if plan.changed and not dry_run:
        retire(client, plan.draining)
        _carry_window(client, before, plan.live)
        note("reshard", count)  # (the audit trail, if open: the shards the queue now has)
        respread([WorkQueue(client, p) for p in before],
                 [WorkQueue(client, p) for p in plan.live], base)
    plan.placement = placement(client, plan.live)
    return plan


def create(client: Any, base: str, count: int) -> ShardMeta:
    """Create the record of a queue of ``count`` shards unless one exists (the first push of
    a queue a config names with ``shards = count``); returns the record in force."""
    plan = ReshardPlan(base, 0, count)
    unsharded = WorkQueue(client, base).exists()
    return update(client, base, lambda meta: None if meta.count else
                  _resized(client, base, count, meta, plan, unsharded, []),
                  written=_copies(client, base))


def _copies(client: Any, base: str) -> Callable[[ShardMeta], int]:
    """What follows each write of the record: its copies (on a Cluster, shardcopies.py)."""
    return lambda meta: write_copies(client, base, meta)


def _resized(client: Any, base: str, count: int, meta: ShardMeta, plan: ReshardPlan,
             unsharded: bool, before: list[str]) -> ShardMeta | None:
    """The record after resizing ``meta`` to ``count`` (None: nothing to write)."""
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
    before[:] = list(meta.live) or [base]
    plan.live = place(client, base, gen, count)
    plan.draining = [p for d in draining[len(meta.draining):] for p in d.shards if p]
    plan.changed = True
    if plan.dry_run:
        return None
    return ShardMeta(count=count, gen=gen, live=plan.live, draining=draining,
                     resized_ms=server_ms(client), retired_counters=dict(meta.retired_counters))


def _carry_window(client: Any, before: list[str], live: list[str]) -> None:
    """Give the new shards the de-dup window the previous live shards had (if any)."""
    if not before:
        return
    raw = client.hget(WorkQueue(client, before[0]).keys.counters, DEDUP_WINDOW_FIELD)
    if raw is not None:
        for prefix in live:
            WorkQueue(client, prefix).set_dedup_window(int(raw) / 1000)


def retire(client: Any, prefixes: list[str]) -> None:
    """Set the tombstone ``S:retired`` of each shard in ``prefixes`` (push.lua then refuses to
    write there; docs/DESIGN.md section 7). One pipeline."""
    if prefixes:
        pipe = client.pipeline(transaction=False)
        for prefix in prefixes:
            pipe.set(WorkQueue(client, prefix).keys.retired, b"1")
        pipe.execute()


def settle(client: Any, base: str, *, settle_s: float = SHARD_SETTLE) -> list[str]:
    """Remove the draining shards that hold nothing (pending, delayed, processing or dead)
    once the last resize is ``settle_s`` old: tombstoned first (so nothing is pushed there
    after it is found empty), their de-dup ids carried into their live shards, their keys
    but the tombstone unlinked by SCAN in batches, their running totals kept in the record.
    Returns the prefixes removed."""
    meta = read(client, base)
    if not meta.draining or server_ms(client) - meta.resized_ms < settle_s * 1000:
        return []
    retire(client, meta.draining_prefixes())
    empty: dict[str, dict[str, int]] = {}
    for prefix in meta.draining_prefixes():
        s = WorkQueue(client, prefix).stats()
        if not (s.pending or s.processing or s.delayed or s.dead):
            empty[prefix] = s.counters
    for prefix in empty:
        _carry_dedup(client, prefix, meta.live)

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

    update(client, base, change, written=_copies(client, base))
    for prefix in empty:
        _unlink_all(client, prefix, keep={shards_key(base), fronts_key(base),
                                             WorkQueue(client, prefix).keys.retired})
    return list(empty)


def _carry_dedup(client: Any, prefix: str, live: list[str]) -> None:
    """Copy the de-dup ids of shard ``prefix`` into the live shard each hashes to, with the
    same forget time (ZADD GT: a later one there is kept): ZSCAN in batches, one pipeline
    per batch."""
    if not live:
        return
    source = WorkQueue(client, prefix).keys.dedup
    targets = [WorkQueue(client, p).keys.dedup for p in live]
    batch: list[tuple[bytes, float]] = []
    for member in client.zscan_iter(source, count=BATCH):
        batch.append(member)
        if len(batch) >= BATCH:
            _add_dedup(client, batch, targets)
            batch = []
    _add_dedup(client, batch, targets)


def _add_dedup(client: Any, batch: list[tuple[bytes, float]], targets: list[str]) -> None:
    by_target: dict[str, dict[bytes, float]] = {}
    for member, score in batch:
        item_id = member.decode("utf-8", "surrogateescape")
        by_target.setdefault(targets[shard_of(item_id, len(targets))], {})[member] = score
    if by_target:
        pipe = client.pipeline(transaction=False)
        for key, members in by_target.items():
            pipe.zadd(key, members, gt=True)
        pipe.execute()


def _unlink_all(client: Any, prefix: str, *, keep: set[str]) -> None:
    """UNLINK every key of ``prefix`` but ``keep`` (the queue's own, where ``prefix`` is
    its base: its old unsharded keys; a retired shard's tombstone) (SCAN in batches, on its
    node on a Cluster)."""
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
