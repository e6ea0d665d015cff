"""Batches (docs/DESIGN.md section 8, docs/batches.md): the record kept at every transition
an item makes, the finishing step, a push stream's hold, a peer completing a batch item, and
an item in no batch paying nothing. Real servers, the real peer client."""

from __future__ import annotations

import pytest
import redis
from redis_work_queue import KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.core.operations import batchops
from rq_cli.core.pushing import bulk
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions
from rq_cli.errors import UsageError

pytestmark = pytest.mark.filterwarnings(  # redis-py deprecates SETEX, which the peer uses
    "ignore:Call to deprecated setex:DeprecationWarning")

T0 = 1_800_000_000_000  # a fixed "now" (ms) where a test moves time: no sleeping


def counts(q: WorkQueue, name: str = "b") -> dict[str, object]:
    row = batchops.read(q, name)
    assert row is not None
    assert row["total"] == sum(row[s] for s in ("pending", "processing", "delayed",
                                                "completed", "dead")), row
    return {k: row[k] for k in ("total", "pending", "processing", "delayed", "completed",
                                "dead", "done")}


def state(total=0, pending=0, processing=0, delayed=0, completed=0, dead=0, done=False):
    return {"total": total, "pending": pending, "processing": processing, "delayed": delayed,
            "completed": completed, "dead": dead, "done": done}


def test_the_record_follows_every_transition_and_the_last_one_finishes_it(r) -> None:
    q = WorkQueue(r, "q", QueueOptions(max_attempts=2))
    ids = [p.id for p in q.push([b"1", b"2", b"3", b"4"], batch="b")]
    q.push([b"late"], batch="b", delay=3600)
    q.push([b"other"])  # in no batch: not counted
    assert counts(q) == state(total=5, pending=4, delayed=1)
    leased = q.lease(4)
    assert sorted(x.id for x in leased) == sorted(ids)
    assert counts(q) == state(total=5, processing=4, delayed=1)
    q.complete([ids[0]])
    q.fail([ids[1]], error="again", retry_in=0)  # back in line
    q.fail([ids[2]], error="later", retry_in=600)  # delayed
    q.fail([ids[3]], error="boom", dead=True)
    assert counts(q) == state(total=5, pending=1, delayed=2, completed=1, dead=1)
    # the delayed items fall due (a lease with a later now promotes them), then finish
    again = q.lease(5, now_ms=T0 * 2)
    assert sorted(x.id for x in again) != []
    assert counts(q)["delayed"] == 0
    rest = [x for x in again if x.data != b"other"]
    assert len(rest) == 3
    q.complete(rest[:-1])
    assert counts(q) == state(total=5, processing=1, completed=3, dead=1)
    assert not r.exists("q:batch_wake:b") and r.hget("q:batch:b", "finished_ms") is None
    q.complete(rest[-1:])  # the last open item: the step that finishes the batch
    row = batchops.read(q, "b")
    assert row is not None and row["done"] and row["finished_at"] is not None
    assert (row["completed"], row["dead"]) == (4, 1)
    assert r.llen("q:batch_wake:b") == 1
    assert 0 < r.pttl("q:batch:b") <= 7 * 86400 * 1000
    assert 0 < r.pttl("q:batch_wake:b") <= 7 * 86400 * 1000
    # a requeued dead item counts as pending again: the batch is open, kept, not woken
    assert q.requeue_dead([ids[3]]).requeued == 1
    assert counts(q) == state(total=5, pending=1, completed=4)
    assert r.pttl("q:batch:b") == -1 and not r.exists("q:batch_wake:b")
    assert r.hget("q:batch:b", "finished_ms") is None
    # a purged item leaves the batch's total, and the batch finishes
    assert q.purge("pending").pending == 1
    assert counts(q) == state(total=4, completed=4, done=True)
    assert r.llen("q:batch_wake:b") == 1
    assert not r.hexists("q:item_batch", ids[3])


def test_dead_letters_from_lease_and_clean_count_dead(r) -> None:
    q = WorkQueue(r, "q", QueueOptions(max_attempts=1, grace_seconds=0))
    q.push([b"x"], batch="b", expire=1)
    q.push([b"y"], batch="b")
    # a lease past the first one's expiry dead-letters it (reason expired)
    got = q.lease(2, now_ms=T0 * 2)
    assert [x.data for x in got] == [b"y"]
    assert counts(q) == state(total=2, processing=1, dead=1)
    # its lease runs out; clean finds it at max_attempts: dead, and the batch is done
    r.delete(f"q:lease:{got[0].id}", f"q:leased_by_session:{got[0].id}")
    q.clean(grace_seconds=0, now_ms=T0 * 2)
    q.clean(grace_seconds=0, now_ms=T0 * 2 + 1)
    assert counts(q) == state(total=2, dead=2, done=True)


def test_clean_recovers_an_abandoned_batch_item_to_pending(r) -> None:
    q = WorkQueue(r, "q", QueueOptions(grace_seconds=0))
    q.push([b"x"], batch="b")
    got = q.lease(1)
    r.delete(f"q:lease:{got[0].id}", f"q:leased_by_session:{got[0].id}")  # a killed worker
    q.clean(grace_seconds=0, now_ms=T0)
    q.clean(grace_seconds=0, now_ms=T0 + 1)
    assert counts(q) == state(total=1, pending=1)
    again = q.lease(1)
    assert [x.id for x in again] == [got[0].id]
    assert q.complete(again)[0].outcome == "completed"
    assert counts(q) == state(total=1, completed=1, done=True)
    assert r.llen("q:batch_wake:b") == 1  # finished once


def test_a_peer_completing_a_batch_item_leaves_the_batch_correct_after_a_clean(r) -> None:
    q = WorkQueue(r, "jobs")
    peer = PeerQueue(KeyPrefix("jobs"))
    pushed = q.push([b"a", b"b"], batch="b")
    for _ in pushed:  # the v0.1 peer leases and completes both (it knows nothing of batches)
        item = peer.lease(r, 30, block=False)
        assert item is not None
        assert peer.complete(r, item)
    assert not counts(q, "b")["done"]
    report = q.clean()
    assert report.pruned >= 2
    assert counts(q, "b") == state(total=2, completed=2, done=True)
    assert r.hlen("jobs:item_batch") == 0


def test_a_push_stream_holds_its_batch_open_until_it_ends(r) -> None:
    q = WorkQueue(r, "q")
    stream = bulk.stream(q, (b"%d" % i for i in range(5)), batch_size=2, batch="b")
    first = next(stream)  # two items stored, three to come
    got = q.lease(2)
    assert sorted(x.id for x in got) == sorted(first.ids)
    q.complete(got)  # workers faster than the input: every item so far completed
    row = batchops.read(q, "b")
    assert row is not None and not row["done"] and row["completed"] == 2
    assert r.hget("q:batch:b", "finished_ms") is None
    rest = list(stream)
    assert sum(len(p.ids) for p in rest) == 3
    assert r.hget("q:batch:b", "holds") is None  # let go at the end
    q.complete(q.lease(3))
    assert counts(q) == state(total=5, completed=5, done=True)


def test_an_item_in_no_batch_leaves_no_batch_key(r) -> None:
    q = WorkQueue(r, "q", QueueOptions(max_attempts=1))
    q.push([b"a", b"b", b"c"])
    q.complete(q.lease(1))
    q.fail(q.lease(1), error="x", dead=True)
    q.requeue_dead()
    q.purge("pending")
    q.clean()
    assert r.keys("q:*batch*") == []


def test_bad_batch_names_are_refused_before_anything_is_stored(r) -> None:
    q = WorkQueue(r, "q")
    for bad in ("", "a:b", "queue", "-x", "x" * 300, "sp ace"):
        with pytest.raises(UsageError):
            q.push([b"1"], batch=bad)
    assert r.keys("*") == []


def test_forget_drops_the_record_and_the_items_go_on(r) -> None:
    q = WorkQueue(r, "q")
    q.push([b"1", b"2"], batch="b")
    assert batchops.forget(q, "b") == 1
    assert batchops.read(q, "b") is None
    q.complete(q.lease(2))
    assert batchops.read(q, "b") is None  # not made again by the items' moves
    assert r.hlen("q:item_batch") == 0


def test_a_batch_of_100000_items_finishes_in_one_bounded_call(r: redis.Redis) -> None:
    """The finishing step does a constant amount of work: the call that completes the last
    of 100,000 items is one script call of no more than 20 ms on the server (SLOWLOG: not
    wall time, which a loaded machine stretches)."""
    q = WorkQueue(r, "q")
    n = 100_000
    for _ in q.push_batches((b"x" for _ in range(n)), batch="b"):
        pass
    leased = []
    while len(leased) < n:
        leased += q.lease(5000)
    q.complete(leased[:-1])
    assert counts(q)["processing"] == 1
    r.config_set("slowlog-log-slower-than", 20_000)
    r.slowlog_reset()
    r.config_resetstat()
    q.complete(leased[-1:])
    assert counts(q) == state(total=n, completed=n, done=True)
    assert r.slowlog_get(128) == []
    calls = {k: v for k, v in r.info("commandstats").items()
             if k in ("cmdstat_evalsha", "cmdstat_fcall")}
    assert sum(v["calls"] for v in calls.values()) == 1, calls
    assert max(v["usec_per_call"] for v in calls.values()) < 20_000
    r.config_set("slowlog-log-slower-than", 10_000)


def test_push_after_holds_items_until_the_batch_is_done(r) -> None:
    q = WorkQueue(r, "q")
    ids = [p.id for p in q.push([b"1", b"2"], batch="b")]
    after = q.push([b"after"], after="b")[0].id
    after_ok = q.push([b"after-ok"], after="b", after_ok=True)[0].id
    assert r.llen("q:queue") == 2 and r.exists(f"q:item:{after}")  # held: in no list
    got = q.lease(10)
    assert sorted(x.id for x in got) == sorted(ids)  # the held ones are not leasable
    q.complete(got[:1])
    q.fail(got[1:], error="boom", dead=True)  # the step that finishes b: releases them
    released = q.lease(10)
    assert [x.id for x in released] == [after]
    dead = r.hget("q:dead_info", after_ok)
    assert dead is not None and b'"reason":"after_failed"' in dead
    assert not r.exists("q:after:b") and not r.exists("q:afters")
    # a batch already done: --after pushes at once, --after-ok dead-letters at once
    assert q.push([b"late"], after="b")[0].added and r.llen("q:queue") == 1
    late_ok = q.push([b"late-ok"], after="b", after_ok=True)[0].id
    assert r.zscore("q:dead", late_ok) is not None


def test_a_long_after_list_is_released_in_bounded_steps(r) -> None:
    from rq_cli.core.contract.limits import AFTER_BATCH

    q = WorkQueue(r, "q")
    q.push([b"x"], batch="b")
    for _ in q.push_batches((b"a" for _ in range(AFTER_BATCH + 10)), after="b"):
        pass
    assert r.llen("q:after:b") == AFTER_BATCH + 10
    assert q.clean(deep=True, grace_seconds=0).recovered == 0  # held items are not strays
    q.complete(q.lease(1))
    assert r.llen("q:queue") == AFTER_BATCH and r.llen("q:after:b") == 10
    q.clean()  # the rest
    assert r.llen("q:queue") == AFTER_BATCH + 10 and not r.exists("q:after:b")
    assert not r.exists("q:afters")


def test_a_lease_releases_a_bounded_part_of_a_long_after_list(r) -> None:
    """Items held beyond what the finishing step released go into the line as workers
    lease (AFTER_LEASE per lease call), not only at the next clean."""
    from rq_cli.core.contract.limits import AFTER_BATCH, AFTER_LEASE

    q = WorkQueue(r, "q")
    q.push([b"x"], batch="b")
    for _ in q.push_batches((b"a" for _ in range(AFTER_BATCH + AFTER_LEASE + 10)),
                            after="b"):
        pass
    q.push([b"y"], batch="open")  # an open batch's held items stay held
    q.push([b"held"], after="open")
    q.complete(q.lease(1))
    assert r.llen("q:after:b") == AFTER_LEASE + 10
    leased = q.lease(1)
    assert len(leased) == 1 and r.llen("q:after:b") in (10, AFTER_LEASE + 10)
    while r.exists("q:after:b"):  # (one batch at random each lease: "open" is not due)
        assert q.lease(1)
    assert r.llen("q:after:open") == 1 and r.smembers("q:afters") == {b"open"}
    queued = r.lrange("q:queue", 0, -1) + r.lrange("q:processing", 0, -1)
    assert len(set(queued)) == len(queued)  # each released once


def test_a_lease_releases_what_waits_for_a_forgotten_batch(r) -> None:
    q = WorkQueue(r, "q")
    q.push([b"x"], batch="b")
    after = q.push([b"after"], after="b")[0].id
    batchops.forget(q, "b")
    got = sorted(x.id for x in q.lease(10))  # (released first, in the same script)
    assert after in got and not r.exists("q:after:b") and not r.exists("q:afters")


def test_every_script_and_the_library_load_on_the_server(r) -> None:
    """Lua's limits (60 upvalues a function, 200 locals a chunk) hold for every script as
    built, with the batches' helpers (they call each other in a cycle through dead_letter)."""
    from rq_cli.core.contract.specs import SCRIPTS
    from rq_cli.core.scripting import scripts

    for name in SCRIPTS:
        r.script_load(scripts.source(name))
    if int(r.info("server")["redis_version"].split(".")[0]) >= 7:  # (Functions: Redis 7+)
        r.function_load(scripts.library().code, replace=True)


def test_the_list_of_batches_drops_expired_ones_as_batches_are_made(r) -> None:
    q = WorkQueue(r, "q")
    q.push([b"1"], batch="old", now_ms=T0)  # (made in this order, each a ms apart)
    q.push([b"2"], batch="mid", now_ms=T0 + 1)
    r.delete("q:batch:old")  # (as its batch_ttl would, once finished)
    q.push([b"3"], batch="new", now_ms=T0 + 2)
    assert [x.decode() for x in r.zrange("q:batches", 0, -1)] == ["mid", "new"]
    assert [row["batch"] for row in batchops.listed(q, 10)] == ["new", "mid"]


def test_an_id_a_peer_completed_pushed_again_counts_its_earlier_item_completed(r) -> None:
    q = WorkQueue(r, "jobs")
    peer = PeerQueue(KeyPrefix("jobs"))
    q.push([NewItem(b"a", "same")], batch="b")
    item = peer.lease(r, 30, block=False)
    assert item is not None and peer.complete(r, item)  # (its entry left in P:item_batch)
    q.push([NewItem(b"again", "same")])  # before any clean: the same id, in no batch
    assert counts(q) == state(total=1, completed=1, done=True)
    q.complete(q.lease(1))
    assert counts(q) == state(total=1, completed=1, done=True)  # the new item is not b's
