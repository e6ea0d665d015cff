"""A first attempt writes no P:attempts field (issue 42: a leased item's memory): its
P:holders entry says the item was leased once. Every count stays exact: shown as 1 while
leased, kept when the holder entry goes (fail), given back by release, carried through a
peer cleaner's requeue to max_attempts, and in a dead item's details."""

from __future__ import annotations

import redis
from redis_work_queue import KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions

P = "jobs"


def test_a_first_lease_writes_no_attempts_field_and_shows_one(r: redis.Redis) -> None:
    q = WorkQueue(r, P)
    q.push([NewItem(b"x", "a"), NewItem(b"y", "b")])
    leased = q.lease(1) + q.lease(1)  # (the one-item path, then the batch path below)
    assert [i.attempt for i in leased] == [1, 1]
    assert not r.exists(q.keys.attempts)
    assert q.item("a").attempts == 1
    assert [p.attempts for p in q.peek("processing", count=10)] == [1, 1]
    # a fail keeps the count where the holder entry goes; the next lease is the second
    q.fail(["a", "b"], retry_in=0)
    assert r.hmget(q.keys.attempts, ["a", "b"]) == [b"1", b"1"]
    assert sorted(i.attempt for i in q.lease(2)) == [2, 2]
    assert r.hmget(q.keys.attempts, ["a", "b"]) == [b"2", b"2"]


def test_release_gives_the_first_attempt_back(r: redis.Redis) -> None:
    q = WorkQueue(r, P)
    q.push([NewItem(b"x", "a")])
    q.lease()
    assert not r.hexists(q.keys.attempts, "a")  # (its holder entry says it)
    assert [o.outcome for o in q.release(["a"])] == ["returned"]
    assert q.item("a").attempts == 0
    (again,) = q.lease()
    assert again.attempt == 1


def test_max_attempts_counts_a_first_lease_requeued_by_a_peer_cleaner(
        r: redis.Redis) -> None:
    q = WorkQueue(r, P, QueueOptions(max_attempts=1))
    q.push([NewItem(b"x", "a")])
    q.lease()
    assert not r.hexists(q.keys.attempts, "a")  # (its holder entry says it)
    # the worker died: its lease runs out, a v0.1 peer's light_clean puts the item back
    r.delete(q.keys.lease("a"), q.keys.leased_by_session("a"))
    PeerQueue(KeyPrefix(P)).light_clean(r)
    assert r.lrange(q.keys.queue, 0, -1) == [b"a"]
    assert q.lease() == []  # one attempt used: dead-lettered, not leased again
    (dead,) = q.peek("dead", count=10)
    assert (dead.id, dead.attempts, dead.dead_reason) == ("a", 1, "max_attempts")


def test_a_failed_first_attempt_dies_with_its_count(r: redis.Redis) -> None:
    q = WorkQueue(r, P, QueueOptions(max_attempts=1))
    q.push([NewItem(b"x", "a")])
    q.lease()
    assert not r.hexists(q.keys.attempts, "a")  # (its holder entry says it)
    assert [o.outcome for o in q.fail(["a"], error="boom")] == ["dead"]
    (dead,) = q.peek("dead", count=10)
    assert (dead.attempts, dead.error) == (1, "boom")
