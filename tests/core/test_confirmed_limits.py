"""The limits a console's confirmed count becomes (docs/console.md): ``purge(limit=)`` and
``requeue_dead(limit=)`` take at most that many, the oldest first, each script call told
how many it may still take; a mapping gives each shard of a sharded queue its own."""

from __future__ import annotations

import pytest

from rq_cli.core.contract.limits import SLOW_BATCH
from rq_cli.core.queue import WorkQueue
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import UsageError


def test_purge_takes_at_most_its_limit_oldest_first_across_batches(r):
    q = WorkQueue(r, "jobs")
    n = SLOW_BATCH * 2 + 7
    q.push([NewItem(b"{}", f"p{i:05d}") for i in range(n)])
    assert q.purge("pending", dry_run=True, limit=SLOW_BATCH + 1).pending == SLOW_BATCH + 1
    assert q.purge("pending", limit=SLOW_BATCH + 1).pending == SLOW_BATCH + 1
    left = [i.id for i in q.peek("pending", count=n)]
    assert left == [f"p{i:05d}" for i in range(SLOW_BATCH + 1, n)]  # the oldest went
    assert q.purge("pending", limit=0).pending == 0
    assert q.purge("pending", limit={"jobs": 3, "other": 50}).pending == 3
    assert q.purge("pending", limit={"other": 50}).pending == 0  # not named: nothing


def test_purge_limits_each_state_and_a_fair_queues_tenants(r):
    q = WorkQueue(r, "jobs")
    for tenant in ("a", "b"):
        q.push([NewItem(b"{}", f"{tenant}{i}") for i in range(5)], tenant=tenant)
    q.push([NewItem(b"{}", f"d{i}") for i in range(4)], delay=600)
    assert q.purge("pending", limit=7).pending == 7
    assert q.stats().pending == 3
    assert q.purge("delayed", limit=3).delayed == 3 and q.stats().delayed == 1
    with pytest.raises(UsageError, match="negative"):
        q.purge("pending", limit=-1)
    with pytest.raises(UsageError, match="no limit"):
        q.purge("all", limit=5)


def test_requeue_dead_takes_a_limit_per_prefix(r):
    q = WorkQueue(r, "jobs")
    q.push([NewItem(b"{}", f"d{i}") for i in range(6)])
    for item in q.lease(6):
        q.fail([item.id], dead=True)
    assert q.requeue_dead(limit={"jobs": 2}).requeued == 2
    assert q.requeue_dead(limit={"else": 2}).requeued == 0
    assert (q.stats().pending, q.stats().dead) == (2, 4)


def test_a_sharded_queue_takes_each_shards_own_limit(r):
    reshard(r, "jobs", 3)
    sq = ShardedQueue(r, "jobs")
    sq.push([NewItem(b"{}", f"i{n}") for n in range(60)])
    per = {q.prefix: q.stats().pending for q in sq.shards}
    caps = {prefix: count // 2 for prefix, count in per.items()}
    assert sq.purge("pending", limit=caps).pending == sum(caps.values())
    assert {q.prefix: q.stats().pending for q in sq.shards} == {
        prefix: per[prefix] - caps[prefix] for prefix in per}
    assert sq.purge("pending", limit=5).pending == 5  # a number: the whole's
    for item in sq.lease(100):
        sq.fail([item.id], dead=True)
    dead = {q.prefix: q.stats().dead for q in sq.shards}
    first = sq.shards[0].prefix
    assert sq.requeue_dead(limit={first: 1}).requeued == 1
    assert sq.shards[0].stats().dead == dead[first] - 1
    assert sum(q.stats().dead for q in sq.shards[1:]) == sum(dead.values()) - dead[first]
