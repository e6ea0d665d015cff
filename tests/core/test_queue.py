"""The queue engine, operation by operation, against a real server (docs/DESIGN.md section 3)."""

from __future__ import annotations

import json
import time

import pytest

from rq_cli.core.contract.keys import COUNTER_FIELDS, Keys
from rq_cli.core.contract.util import data_id
from rq_cli.core.queue import WorkQueue, lease_many
from rq_cli.core.types import ItemRef, NewItem, QueueOptions
from rq_cli.errors import ClusterError, UsageError

T0 = 1_800_000_000_000  # a fixed "now" in ms, for tests that move time by hand


@pytest.fixture
def q(r):
    return WorkQueue(r, "jobs", session="worker-a")


def other_worker(q: WorkQueue, session: str = "worker-b") -> WorkQueue:
    return WorkQueue(q.client, q.prefix, q.options, session=session)


def live_ids(r, prefix: str = "jobs") -> set[bytes]:
    k = Keys(prefix)
    return {key[k.item_key_offset:] for key in r.scan_iter(match=k.item_pattern)}


# -- push ------------------------------------------------------------------------------
def test_push_stores_data_verbatim_and_lines_up_ids(q, r):
    results = q.push([b'{"n": 1}', NewItem(b"\x00\xffbinary", "bin"), "text"])
    assert [p.added for p in results] == [True, True, True]
    assert results[1].id == "bin"
    assert r.get(q.keys.item("bin")) == b"\x00\xffbinary"
    assert r.get(q.keys.item(results[0].id)) == b'{"n": 1}'
    # new ids go to the left; leases take from the right: first pushed, first leased
    assert r.lrange(q.keys.queue, 0, -1) == [p.id.encode() for p in reversed(results)]
    assert len(results[0].id) == 32


def test_push_dedups_by_id_within_and_across_batches(q, r):
    first = q.push([NewItem(b"1", "a"), NewItem(b"2", "a"), NewItem(b"3", "b")])
    assert [p.added for p in first] == [True, False, True]
    again = q.push([NewItem(b"new data", "a")])
    assert again[0].added is False
    assert r.get(q.keys.item("a")) == b"1"  # the stored item is untouched
    assert r.llen(q.keys.queue) == 2
    assert q.stats().counters == {**dict.fromkeys(COUNTER_FIELDS, 0), "pushed": 2,
                                  "duplicates": 2}


def test_push_id_from_data_collapses_equal_payloads(q):
    results = q.push([b"same", b"same", b"other"], id_from_data=True)
    assert results[0].id == data_id(b"same") == results[1].id
    assert [p.added for p in results] == [True, False, True]


def test_push_front_is_leased_next(q):
    q.push([NewItem(b"1", "one"), NewItem(b"2", "two")])
    q.push([NewItem(b"urgent", "urgent")], front=True)
    assert [i.id for i in q.lease(3)] == ["urgent", "one", "two"]


def test_push_with_delay_waits_until_due(q):
    q.push([NewItem(b"x", "later")], delay=60, now_ms=T0)
    assert q.lease(now_ms=T0 + 59_000) == []
    s = q.stats(now_ms=T0 + 59_000)
    assert (s.pending, s.delayed, s.due) == (0, 1, 0)
    assert q.stats(now_ms=T0 + 60_000).due == 1
    assert [i.id for i in q.lease(now_ms=T0 + 60_000)] == ["later"]


def test_push_with_expiry_dead_letters_unleased_items(q, r):
    q.push([NewItem(b"x", "stale"), NewItem(b"y", "fresh")], expire=10, now_ms=T0)
    q.push([NewItem(b"z", "forever")], now_ms=T0)
    leased = q.lease(3, now_ms=T0 + 10_000)
    assert [i.id for i in leased] == ["forever"]
    dead = q.peek("dead", count=5)
    assert {d.id for d in dead} == {"stale", "fresh"}
    assert {d.dead_reason for d in dead} == {"expired"}
    assert r.get(q.keys.item("stale")) is None  # peers see it as gone
    assert r.get(q.keys.dead_item("stale")) == b"x"
    assert q.stats().counters["expired"] == 2


def test_push_batches_streams_and_stores_what_came_before_an_error(q, r):
    def lines():
        for i in range(2500):
            yield NewItem(str(i).encode(), f"id{i}")
        raise ValueError("bad line 2501")

    seen = []
    with pytest.raises(ValueError, match="2501"):
        for batch in q.push_batches(lines(), batch_size=1000):
            seen.extend(batch)
    assert len(seen) == 2500
    assert r.llen(q.keys.queue) == 2500


@pytest.mark.parametrize("bad", [dict(delay=-1), dict(expire=0), dict(batch_size=0)])
def test_push_rejects_bad_options_without_storing(q, r, bad):
    with pytest.raises(UsageError):
        q.push([b"x"], **bad) if "batch_size" not in bad else list(
            q.push_batches([b"x"], **bad))
    assert r.dbsize() == 0


def test_push_rejects_empty_ids(q, r):
    with pytest.raises(UsageError, match="empty"):
        q.push([NewItem(b"x", "")])
    assert r.dbsize() == 0


@pytest.mark.parametrize("item_id", ["with space", "a:b:c", "line\nbreak", "glob*?[x]\\", "é"])
def test_odd_ids_round_trip(q, item_id):
    q.push([NewItem(b"d", item_id)])
    (leased,) = q.lease()
    assert leased.id == item_id
    assert q.complete([leased.id])[0].outcome == "completed"


# -- lease -----------------------------------------------------------------------------
def test_lease_moves_to_processing_with_lease_keys(q, r):
    q.push([NewItem(b"d", "a")])
    (item,) = q.lease(lease_seconds=30, now_ms=T0)
    assert (item.id, item.data, item.attempt, item.session) == ("a", b"d", 1, "worker-a")
    assert item.lease_expires_at == (T0 + 30_000) / 1000
    assert r.lrange(q.keys.processing, 0, -1) == [b"a"]
    assert r.get(q.keys.lease("a")) == b"worker-a"
    assert r.get(q.keys.leased_by_session("a")) == b"worker-a"
    assert 29_000 < r.pttl(q.keys.lease("a")) <= 30_000


def test_lease_count_and_empty(q):
    q.push([b"1", b"2", b"3"])
    assert len(q.lease(2)) == 2
    assert len(q.lease(5)) == 1
    assert q.lease(5) == []


def test_lease_skips_and_drops_ghosts(q, r):
    q.push([NewItem(b"1", "ghost"), NewItem(b"2", "real")])
    r.delete(q.keys.item("ghost"))  # completed elsewhere; its id lingers in the queue
    assert [i.id for i in q.lease(5)] == ["real"]
    assert r.llen(q.keys.queue) == 0


def test_lease_drops_a_second_copy_of_a_held_item(q, r):
    q.push([NewItem(b"1", "a")])
    q.lease()
    r.lpush(q.keys.queue, "a")  # a duplicate entry, as a racing peer cleaner could leave
    assert q.lease() == []
    assert r.lrange(q.keys.processing, 0, -1) == [b"a"]


def test_lease_counts_attempts_and_dead_letters_at_max(r):
    q = WorkQueue(r, "jobs", QueueOptions(max_attempts=2))
    q.push([NewItem(b"1", "a")])
    for attempt in (1, 2):
        (item,) = q.lease(lease_seconds=1, now_ms=T0)
        assert item.attempt == attempt
        # the lease is lost: a cleaner puts it back
        r.delete(q.keys.lease("a"), q.keys.leased_by_session("a"))
        q.clean(grace_seconds=0, now_ms=T0)
    s = q.stats()
    assert (s.pending, s.processing, s.dead) == (0, 0, 1)
    assert q.peek("dead")[0].dead_reason == "max_attempts"


def test_lease_of_a_paused_queue_gives_nothing(q):
    q.push([b"x"])
    q.pause()
    assert q.is_paused() and q.stats().paused
    assert q.lease(wait=0.2) == []
    q.resume()
    assert len(q.lease()) == 1


def test_lease_waits_for_an_item_pushed_meanwhile(q, r):
    import threading
    import time

    timer = threading.Timer(0.3, lambda: WorkQueue(r, "jobs").push([NewItem(b"x", "late")]))
    timer.start()
    start = time.monotonic()
    items = q.lease(wait=5)
    timer.join()  # (its push done, retries included, before the next test flushes)
    assert [i.id for i in items] == ["late"]
    assert time.monotonic() - start < 3
    assert r.llen(q.keys.processing) == 1 and r.llen(q.keys.queue) == 0


def test_lease_wait_gives_up_in_time(q):
    import time

    start = time.monotonic()
    assert q.lease(wait=0.3) == []
    assert 0.25 < time.monotonic() - start < 2


@pytest.mark.parametrize("bad", [dict(lease_seconds=0), dict(lease_seconds=-5),
                                 dict(count=0), dict(count=10**9)])
def test_lease_rejects_bad_arguments(q, r, bad):
    q.push([NewItem(b"x", "a")])
    with pytest.raises(UsageError):
        q.lease(**bad)
    assert r.llen(q.keys.queue) == 1  # nothing taken


def test_lease_many_strict_and_fair(r):
    a, b = WorkQueue(r, "a"), WorkQueue(r, "b")
    b.push([b"b1", b"b2"])
    items = lease_many([a, b], count=5)
    assert [i.queue for i in items] == ["b", "b"]
    a.push([b"a1"])
    b.push([b"b3"])
    assert lease_many([a, b])[0].queue == "a"
    seen = set()
    for _ in range(40):
        a.push([b"x"])
        b.push([b"y"])
        seen.update(i.queue for i in lease_many([a, b], order="fair"))
    assert seen == {"a", "b"}
    with pytest.raises(UsageError):
        lease_many([a, b], order="random")


# -- complete --------------------------------------------------------------------------
def test_complete_is_true_once_and_cleans_up(q, r):
    q.push([NewItem(b"x", "a")])
    (item,) = q.lease()
    first = q.complete([ItemRef(item.id, item.session)])
    second = other_worker(q).complete(["a"])
    assert [o.outcome for o in first + second] == ["completed", "missing"]
    assert first[0].ok and not second[0].ok
    assert sorted(r.keys("jobs:*")) == [b"jobs:counters", b"jobs:history",  # (and its history)
                                        b"jobs:history_hourly"]


def test_complete_refuses_while_another_session_holds_the_lease(q, r):
    q.push([NewItem(b"x", "a")])
    q.lease(lease_seconds=1, now_ms=T0)
    r.delete(q.keys.lease("a"), q.keys.leased_by_session("a"))  # worker-a's lease expired
    q.clean(grace_seconds=0, now_ms=T0)
    other_worker(q).lease()  # and worker-b has it now
    assert q.complete([ItemRef("a", "worker-a")])[0].outcome == "conflict"
    assert r.exists(q.keys.item("a"))
    assert other_worker(q).complete([ItemRef("a", "worker-b")])[0].outcome == "completed"


def test_complete_of_an_item_requeued_meanwhile_removes_it_from_the_queue(q, r):
    q.push([NewItem(b"x", "a")])
    q.lease(now_ms=T0)
    r.delete(q.keys.lease("a"), q.keys.leased_by_session("a"))
    q.clean(grace_seconds=0, now_ms=T0)
    assert r.lrange(q.keys.queue, 0, -1) == [b"a"]
    # the worker whose lease expired finishes anyway: nobody else holds it, so it counts
    assert q.complete([ItemRef("a", "worker-a")])[0].outcome == "completed"
    assert r.llen(q.keys.queue) == 0 and r.llen(q.keys.processing) == 0


def test_complete_of_a_delayed_item_removes_it(q, r):
    # a worker whose item was failed for a later retry (e.g. by a watchdog) finishes it anyway
    q.push([NewItem(b"x", "a")])
    q.lease()
    assert q.fail(["a"], retry_in=100)[0].outcome == "retried"
    assert q.complete(["a"])[0].outcome == "completed"
    assert r.zcard(q.keys.delayed) == 0


def test_complete_many_in_batches(q, r):
    pushed = q.push([str(i).encode() for i in range(2500)])
    q.lease(2500)
    outcomes = q.complete([p.id for p in pushed] + ["nope"])
    assert [o.outcome for o in outcomes].count("completed") == 2500
    assert outcomes[-1].outcome == "missing"
    assert r.llen(q.keys.processing) == 0


# -- fail ------------------------------------------------------------------------------
def test_fail_retries_with_exponential_backoff_and_keeps_the_error(r):
    q = WorkQueue(r, "jobs", QueueOptions(retry_backoff=2, retry_backoff_max=300))
    q.push([NewItem(b"x", "a")])
    delays = []
    for _ in range(3):
        (item,) = q.lease(now_ms=T0)
        (out,) = q.fail([ItemRef(item.id, item.session)], error="boom", now_ms=T0)
        assert out.outcome == "retried"
        delays.append(out.retry_at - T0 / 1000)
        assert q.stats(now_ms=T0).delayed == 1
        q.promote_for_test = None
        # make it due now
        r.zadd(q.keys.delayed, {"a": T0})
    for delay, base in zip(delays, (2, 4, 8), strict=True):
        assert base * 0.75 <= delay <= base * 1.25
    assert q.peek("delayed")[0].error == "boom"


def test_fail_with_retry_in_and_zero(q, r):
    q.push([NewItem(b"x", "a")])
    q.lease(now_ms=T0)
    (out,) = q.fail(["a"], retry_in=0, now_ms=T0)
    assert out.retry_at == T0 / 1000
    assert r.lrange(q.keys.queue, 0, -1) == [b"a"]
    q.lease(now_ms=T0)
    (out,) = q.fail(["a"], retry_in=30, now_ms=T0)
    assert out.retry_at == T0 / 1000 + 30
    assert r.zscore(q.keys.delayed, "a") == T0 + 30_000


def test_fail_dead_letters_on_request_and_at_max_attempts(r):
    q = WorkQueue(r, "jobs", QueueOptions(max_attempts=1))
    q.push([NewItem(b"x", "a"), NewItem(b"y", "b")])
    q.lease(2)
    outcomes = q.fail(["a"], error="fatal", dead=True) + q.fail(["b"], error="flaky")
    assert [o.outcome for o in outcomes] == ["dead", "dead"]
    dead = {d.id: d for d in q.peek("dead", count=5)}
    assert dead["a"].dead_reason == "failed" and dead["a"].error == "fatal"
    assert dead["b"].dead_reason == "max_attempts" and dead["b"].error == "flaky"
    assert dead["a"].data == b"x" and dead["a"].attempts == 1
    assert r.llen(q.keys.processing) == 0


def test_fail_missing_and_conflict(q):
    q.push([NewItem(b"x", "a")])
    other_worker(q).lease()
    outcomes = q.fail([ItemRef("a", "worker-a"), "nope"])
    assert [o.outcome for o in outcomes] == ["conflict", "missing"]


def test_fail_takes_a_leased_item_whatever_its_id(q, r):
    """A leased item itself is failed by the id the server gave: one a peer stored longer
    than an id rq-cli takes (or with a NUL byte, which no command line can carry) is settled
    all the same, while such an id typed in is refused."""
    from rq_cli.core.contract.limits import MAX_ID_BYTES

    long_id, nul_id = "x" * (MAX_ID_BYTES + 1), "a\0b"
    for peer_id in (long_id, nul_id):  # (as a peer client stores them)
        r.set(q.keys.item(peer_id), b"x")
        r.lpush(q.keys.queue, peer_id)
    items = q.lease(2)
    assert {i.id for i in items} == {long_id, nul_id}
    with pytest.raises(UsageError):
        q.fail([long_id], dead=True)
    outcomes = q.fail(items, error="unrunnable", dead=True)
    assert [o.outcome for o in outcomes] == ["dead", "dead"]
    assert {i.id: i.error for i in q.peek("dead")} == {long_id: "unrunnable",
                                                       nul_id: "unrunnable"}


def test_fail_rejects_negative_retry(q):
    with pytest.raises(UsageError):
        q.fail(["a"], retry_in=-1)


# -- extend ----------------------------------------------------------------------------
def test_extend_pushes_the_deadline_and_reports_lost_leases(q, r):
    q.push([NewItem(b"x", "a"), NewItem(b"y", "b")])
    q.lease(2, lease_seconds=5, now_ms=T0)
    r.delete(q.keys.lease("b"), q.keys.leased_by_session("b"))
    outcomes = q.extend([ItemRef("a", "worker-a"), "b", "nope"], lease_seconds=60, now_ms=T0)
    assert [o.outcome for o in outcomes] == ["extended", "lost", "missing"]
    assert outcomes[0].lease_expires_at == T0 / 1000 + 60
    assert r.pttl(q.keys.lease("a")) > 55_000
    assert other_worker(q).extend([ItemRef("a", "worker-b")])[0].outcome == "conflict"


# -- clean -----------------------------------------------------------------------------
def abandon(q, r, *ids):
    for item_id in ids:
        r.delete(q.keys.lease(item_id), q.keys.leased_by_session(item_id))


def test_clean_waits_for_the_grace_period_before_requeueing(q, r):
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    q.lease(2, now_ms=T0)
    abandon(q, r, "a")
    first = q.clean(grace_seconds=5, now_ms=T0)
    assert (first.recovered, first.suspects) == (0, 1)
    assert q.clean(grace_seconds=5, now_ms=T0 + 4_999).recovered == 0
    later = q.clean(grace_seconds=5, now_ms=T0 + 5_000)
    assert later.recovered == 1
    assert r.lrange(q.keys.queue, 0, -1) == [b"a"]
    assert r.lrange(q.keys.processing, 0, -1) == [b"b"]
    assert r.hlen(q.keys.suspects) == 0


def test_clean_never_requeues_an_item_leased_again_within_grace(q, r):
    """A peer leases in two steps (RPOPLPUSH, then SETEX): a cleaner must not race it."""
    r.set(q.keys.item("p"), b"x")
    r.lpush(q.keys.processing, "p")  # step one of a peer lease, no lease key yet
    assert q.clean(grace_seconds=5, now_ms=T0).recovered == 0
    r.set(q.keys.leased_by_session("p"), "peer", ex=60)  # step two
    assert q.clean(grace_seconds=5, now_ms=T0 + 10_000).recovered == 0
    assert r.lrange(q.keys.processing, 0, -1) == [b"p"]


def test_clean_drops_ghosts_and_promotes_due_items(q, r):
    q.push([NewItem(b"1", "ghost")])
    q.lease()
    r.delete(q.keys.item("ghost"))
    q.push([NewItem(b"2", "later")], delay=1, now_ms=T0)
    report = q.clean(now_ms=T0 + 1_000)
    assert (report.dropped, report.promoted) == (1, 1)
    assert r.llen(q.keys.processing) == 0
    assert r.lrange(q.keys.queue, 0, -1) == [b"later"]


def test_clean_of_many_abandoned_items_in_batches(q, r):
    q.push([str(i).encode() for i in range(2500)])
    leased = q.lease(2500, now_ms=T0)
    abandon(q, r, *[i.id for i in leased[:1800]])
    report = q.clean(grace_seconds=0, now_ms=T0)
    assert report.recovered == 1800
    assert r.llen(q.keys.queue) == 1800 and r.llen(q.keys.processing) == 700
    assert q.clean(grace_seconds=0, now_ms=T0).recovered == 0  # idempotent


def test_clean_dry_run_changes_nothing(q, r):
    q.push([b"1", b"2"])
    leased = q.lease(2, now_ms=T0)
    abandon(q, r, leased[0].id)
    before = {k: r.dump(k) for k in r.scan_iter()}
    report = q.clean(grace_seconds=0, dry_run=True, now_ms=T0)
    assert report.recovered == 1 and report.dry_run
    assert {k: r.dump(k) for k in r.scan_iter()} == before


def test_clean_requeue_front(r):
    q = WorkQueue(r, "jobs", QueueOptions(requeue="front"))
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    q.lease(1)
    abandon(q, r, "a")
    q.clean(grace_seconds=0)
    assert q.lease()[0].id == "a"


def test_deep_clean_requeues_strays_after_grace(q, r):
    q.push([NewItem(b"1", "listed")])
    r.set(q.keys.item("stray"), b"lost")  # a data key in no list: a crashed peer add
    r.set(q.keys.item("held"), b"x")
    r.set(q.keys.lease("held"), "peer", ex=60)  # leased, between RPOPLPUSH and... fine
    first = q.clean(deep=True, grace_seconds=5, now_ms=T0)
    assert first.scanned == 3 and first.recovered == 0 and first.suspects == 1
    second = q.clean(deep=True, grace_seconds=5, now_ms=T0 + 5_000)
    assert second.recovered == 1
    assert sorted(r.lrange(q.keys.queue, 0, -1)) == [b"listed", b"stray"]
    assert q.clean(deep=True, grace_seconds=0, now_ms=T0 + 6_000).recovered == 0


def test_deep_clean_sleeps_out_the_grace_period_itself(q, r):
    r.set(q.keys.item("stray"), b"lost")
    report = q.clean(deep=True, grace_seconds=0.2)
    assert report.recovered == 1
    assert r.lrange(q.keys.queue, 0, -1) == [b"stray"]


def test_deep_clean_prunes_metadata_of_items_completed_by_peers(q, r):
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    q.lease(now_ms=T0)
    r.delete(q.keys.item("a"))  # a peer completed it: our bookkeeping stays behind
    r.lrem(q.keys.processing, 0, "a")
    report = q.clean(deep=True, grace_seconds=0, now_ms=T0)
    assert report.pruned == 1
    assert r.hkeys(q.keys.enqueued) == [b"b"]
    assert r.hget(q.keys.attempts, "a") is None


def test_deep_clean_scan_pattern_does_not_match_other_queues(r):
    weird = WorkQueue(r, "a*[b]?")
    other = WorkQueue(r, "aXbY")
    r.set(other.keys.item("o"), b"other's stray")
    r.set(weird.keys.item("w"), b"mine")
    report = weird.clean(deep=True, grace_seconds=0, now_ms=T0)
    assert report.scanned == 1 and report.recovered == 1
    assert r.llen(other.keys.queue) == 0


# -- dead letters ----------------------------------------------------------------------
def make_dead(q, ids, now_ms):
    q.push([NewItem(i.encode(), i) for i in ids], now_ms=now_ms)
    q.lease(len(ids), now_ms=now_ms)
    q.fail(ids, dead=True, error="x", now_ms=now_ms)


def test_requeue_dead_by_id_all_limit_and_age(q, r):
    make_dead(q, ["old1", "old2"], T0)
    make_dead(q, ["new1", "new2"], T0 + 60_000)
    report = q.requeue_dead(older_than=30, now_ms=T0 + 61_000)
    assert sorted(report.ids) == ["old1", "old2"]
    assert q.requeue_dead(["new2", "nope"]).missing == 1
    assert q.requeue_dead(limit=5).ids == ["new1"]
    assert r.zcard(q.keys.dead) == 0 and r.llen(q.keys.queue) == 4
    item = next(i for i in q.lease(4) if i.id == "old1")
    assert item.data == b"old1" and item.attempt == 1  # attempts start afresh


def test_requeue_dead_oldest_n_and_dry_run(q, r):
    make_dead(q, ["a"], T0)
    make_dead(q, ["b"], T0 + 1)
    make_dead(q, ["c"], T0 + 2)
    dry = q.requeue_dead(limit=2, dry_run=True)
    assert dry.ids == ["a", "b"] and r.zcard(q.keys.dead) == 3
    assert q.requeue_dead(limit=2).ids == ["a", "b"]


def test_requeue_dead_into_another_queue_skips_live_ids(q, r):
    make_dead(q, ["a", "b"], T0)
    target = WorkQueue(r, "retry")
    target.push([NewItem(b"already", "b")])
    report = q.requeue_dead(to=target)
    assert (report.requeued, report.skipped) == (1, 1)
    assert r.get(target.keys.item("a")) == b"a"
    assert r.zrange(q.keys.dead, 0, -1) == [b"b"]  # still dead, not lost


# -- purge -----------------------------------------------------------------------------
def test_purge_each_state(q, r):
    make_dead(q, ["x"], T0)
    q.push([NewItem(b"1", "p1"), NewItem(b"2", "p2"), NewItem(b"3", "l")])
    q.push([NewItem(b"4", "d")], delay=60)
    q.lease(1)  # p1, the oldest
    assert q.purge("pending").pending == 2
    assert live_ids(r) == {b"p1", b"d"}
    assert q.purge("processing").processing == 1
    assert q.purge("delayed").delayed == 1
    assert q.purge("dead").dead == 1
    assert live_ids(r) == set() and r.zcard(q.keys.dead) == 0


def test_purge_pending_keeps_a_leased_item_with_a_stray_copy(q, r):
    q.push([NewItem(b"1", "a")])
    q.lease()
    r.lpush(q.keys.queue, "a")
    q.purge("pending")
    assert r.exists(q.keys.item("a"))


def test_purge_all_leaves_nothing_and_dry_run_counts(q, r):
    make_dead(q, ["dead-one"], T0)
    q.push([str(i).encode() for i in range(1500)])
    q.lease(10)
    r.set(q.keys.item("stray"), b"s")
    q.pause()
    dry = q.purge("all", dry_run=True)
    assert (dry.pending, dry.processing, dry.dead, dry.strays) == (1490, 10, 1, 1)
    assert r.llen(q.keys.queue) == 1490
    report = q.purge("all")
    assert report.total == 1502
    assert list(r.scan_iter(match="jobs*")) == []


def test_purge_rejects_unknown_state(q):
    with pytest.raises(UsageError):
        q.purge("everything")  # type: ignore[arg-type]


# -- stats and peek --------------------------------------------------------------------
def test_stats_counts_every_state(q, r):
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b"), NewItem(b"3", "c")], now_ms=T0)
    q.push([NewItem(b"4", "d")], delay=10, now_ms=T0)
    q.lease(2, lease_seconds=30, now_ms=T0)
    s = q.stats(now_ms=T0 + 31_000)  # both leases have run out
    assert (s.pending, s.processing, s.leased, s.abandoned) == (1, 2, 0, 2)
    assert (s.delayed, s.due, s.dead) == (1, 1, 0)
    assert s.oldest_pending_age_s == 31.0
    s = q.stats(now_ms=T0 + 1_000)
    assert (s.leased, s.abandoned) == (2, 0)
    assert s.counters["pushed"] == 4 and s.counters["leased"] == 2


def test_stats_on_an_empty_queue(q):
    s = q.stats()
    assert (s.pending, s.processing, s.dead, s.oldest_pending_age_s) == (0, 0, 0, None)
    assert s.counters == dict.fromkeys(COUNTER_FIELDS, 0)  # every counter, 0 when zero


def test_peek_pages_each_state_without_changing_anything(q, r):
    q.push([NewItem(json.dumps(i).encode(), f"i{i}") for i in range(30)], now_ms=T0)
    q.lease(2, now_ms=T0)
    before = {k: r.dump(k) for k in r.scan_iter()}
    head = q.peek("pending", count=3)
    assert [p.id for p in head] == ["i2", "i3", "i4"]
    assert [p.id for p in q.peek("pending", count=2, offset=3)] == ["i5", "i6"]
    assert [p.id for p in q.peek("pending", count=2, from_end="tail")] == ["i29", "i28"]
    proc = q.peek("processing", count=5)
    assert [p.id for p in proc] == ["i0", "i1"]
    assert proc[0].lease_session == "worker-a" and proc[0].attempts == 1
    assert head[0].enqueued_at == T0 / 1000 and head[0].data == b"2"
    assert len(q.peek("pending", count=2500)) == 28
    assert {k: r.dump(k) for k in r.scan_iter()} == before


def test_peek_delayed_and_dead(q):
    q.push([NewItem(b"x", "soon")], delay=5, now_ms=T0)
    q.push([NewItem(b"y", "late")], delay=50, now_ms=T0)
    assert [(p.id, p.due_at) for p in q.peek("delayed")] == [
        ("soon", T0 / 1000 + 5), ("late", T0 / 1000 + 50)]
    make_dead(q, ["gone"], T0)
    (dead,) = q.peek("dead")
    assert (dead.id, dead.dead_at, dead.data) == ("gone", T0 / 1000, b"gone")


def test_peek_rejects_bad_arguments(q):
    for kwargs in (dict(state="nope"), dict(from_end="middle"), dict(count=-1)):
        with pytest.raises(UsageError):
            q.peek(**kwargs)  # type: ignore[arg-type]


# -- options and layout ----------------------------------------------------------------
def test_bad_options_are_refused(r):
    with pytest.raises(UsageError):
        WorkQueue(r, "jobs", QueueOptions(layout="v9"))
    with pytest.raises(UsageError):
        WorkQueue(r, "jobs", QueueOptions(requeue="middle"))
    with pytest.raises(UsageError):
        WorkQueue(r, "")
    for clash in ("jobs:item:x", "jobs:item"):  # would mix with queue "jobs"'s item keys
        with pytest.raises(UsageError, match=":item:"):
            WorkQueue(r, clash)


def test_cluster_needs_a_hash_tag():
    class RedisCluster:  # only the type's name is looked at; no server is involved
        pass

    with pytest.raises(ClusterError, match="hash tag"):
        WorkQueue(RedisCluster(), "emails")
    WorkQueue(RedisCluster(), "app:{emails}")


def test_the_core_imports_neither_typer_nor_rich():
    import subprocess
    import sys

    code = ("import sys, rq_cli.core.queue, rq_cli.core.operations.deep; "
            "print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('typer', 'rich', 'click')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lua_and_keys_agree_on_key_names(q, r):
    """Keys the scripts derive from the prefix are the ones keys.py names."""
    q.push([NewItem(b"x", "a")])
    q.lease()
    names = {k.decode() for k in r.scan_iter(match="jobs*")}
    # (a first attempt has no P:attempts field: its P:holders entry says it)
    assert {q.keys.item("a"), q.keys.lease("a"), q.keys.leased_by_session("a"),
            q.keys.processing, q.keys.enqueued, q.keys.counters,
            q.keys.leases, q.keys.holders, q.keys.history, q.keys.history_hourly} == names
    q.fail(["a"], retry_in=0)
    assert r.hget(q.keys.attempts, "a") == b"1"
    q.lease()
    q.fail(["a"], dead=True)
    assert r.exists(q.keys.dead_item("a"), q.keys.dead, q.keys.dead_info) == 3


def test_lease_at_most_once_completes_in_the_same_step(q, r):
    q.push([NewItem(b"x", "a"), NewItem(b"y", "b")])
    (item,) = q.lease(at_most_once=True)
    assert (item.id, item.data, item.attempt) == ("a", b"x", 1)
    assert not r.exists(q.keys.item("a")) and r.llen(q.keys.processing) == 0
    assert q.complete(["a"])[0].outcome == "missing"  # it is never handed out again
    assert q.stats().counters["completed"] == 1
    assert [i.id for i in lease_many([q], at_most_once=True)] == ["b"]


def test_complete_and_lease_in_one_step(q, r):
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    (first,) = q.lease()
    done, leased = q.complete_and_lease([ItemRef(first.id, first.session), "nope"])
    assert [o.outcome for o in done] == ["completed", "missing"]
    assert [(i.id, i.attempt) for i in leased] == [("b", 1)]
    assert not r.exists(q.keys.item("a"))
    done, leased = q.complete_and_lease([ItemRef("b", "someone-else")])
    assert [o.outcome for o in done] == ["conflict"] and leased == []
    q.pause()  # completing still works on a paused queue; leasing gives nothing
    done, leased = q.complete_and_lease(["b"])
    assert [o.outcome for o in done] == ["completed"] and leased == []
    assert q.stats().counters["completed"] == 2


def test_push_the_largest_batch_size(q, r):
    """5000 items per script call: every multi-value command stays within Lua's stack."""
    results = [p for b in q.push_batches((b"%d" % i for i in range(5000)), batch_size=5000)
               for p in b]
    assert len(results) == 5000 and all(p.added for p in results)
    assert r.llen(q.keys.queue) == 5000 and r.hlen(q.keys.enqueued) == 0  # (v7 ids)


def test_lease_and_complete_the_largest_count(q, r):
    pushed = q.push([b"%d" % i for i in range(10_000)])
    leased = q.lease(10_000)
    assert len(leased) == 10_000 and len({i.id for i in leased}) == 10_000
    assert r.llen(q.keys.processing) == 10_000 and r.zcard(q.keys.leases) == 10_000
    outcomes = q.complete([ItemRef(i.id, i.session) for i in leased])
    assert {o.outcome for o in outcomes} == {"completed"} and len(pushed) == 10_000
    assert r.llen(q.keys.processing) == 0


def test_fixed_keys_is_the_one_definition():
    """Every FIXED_KEYS entry is a Keys property naming P:<name>, and every fixed-key
    property of Keys is in FIXED_KEYS (so Python, Lua, deep clean and purge agree)."""
    from rq_cli.core.contract.keys import AUDIT, FIXED_KEYS, META_HASHES, META_ZSETS
    from rq_cli.core.contract.specs import SPECS
    from rq_cli.core.scripting.scripts import source

    lua = "".join(source(name) for name in SPECS)

    k = Keys("p")
    names = {f.name for f in FIXED_KEYS}
    for f in FIXED_KEYS:
        assert getattr(k, f.name) == f"p:{f.name}"
        assert f"local K_{f.name.upper()} = " in lua
    props = {n for n, v in vars(Keys).items() if isinstance(v, property)}
    fixed_props = {n for n in props if isinstance(getattr(k, n), str)
                   and getattr(k, n).startswith("p:") and ":" not in getattr(k, n)[2:]}
    # (P:audit: rq-cli's, no script's: core/operations/audit.py)
    assert fixed_props == names | {AUDIT}
    assert set(META_HASHES) == {"attempts", "enqueued", "errors", "holders", "item_tenant"}
    assert set(META_ZSETS) == {"expires", "leases"}


def test_completing_or_purging_leaves_no_bookkeeping_of_any_meta_key(q, r):
    """A drained queue keeps only its counters: every per-item key (FIXED_KEYS role meta) is
    dropped with the item, whichever script ends it."""
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b"), NewItem(b"3", "c")], expire=60)
    q.lease(3)
    q.fail(["a"], error="boom", retry_in=0)
    q.lease()
    q.complete(["a", "b"])
    q.fail(["c"], dead=True)
    q.purge("all")
    left = {key.decode() for key in r.scan_iter(match=f"{q.prefix}:*")}
    assert left <= {f"{q.prefix}:counters"}, left


def test_an_abandoned_item_names_its_last_holder(q, r):
    q.push([NewItem(b'"x"', "a")])
    (item,) = q.lease(lease_seconds=0.05)
    time.sleep(0.1)
    (peeked,) = q.peek("processing")
    assert peeked.abandoned
    assert peeked.lease_session == item.session  # host:pid:random of the worker that died
    assert peeked.lease_expires_at == item.lease_expires_at
    q.clean(grace_seconds=0)  # back in line; then leased and completed: nothing left behind
    (again,) = q.lease()
    assert not q.peek("processing")[0].abandoned
    q.complete([again])
    assert r.hlen(q.keys.holders) == 0


def test_scripts_take_named_arguments_and_give_named_replies(q):
    """Every script's arguments and reply fields are named once (specs.SPECS); a call with
    a missing or unknown argument is refused before anything is sent."""
    import os
    import re

    from rq_cli.core.contract.specs import SPECS
    from rq_cli.core.scripting.scripts import LUA_DIR, source

    for name, spec in SPECS.items():
        lua = source(name)
        for a in spec.args:
            assert f"local A_{a.upper()} = ARGV[" in lua
        # the script itself reads its arguments by name: no ARGV[<number>] past the head
        with open(os.path.join(LUA_DIR, f"{name}.lua")) as f:
            code = re.sub(r"--.*", "", f.read())
        assert not re.search(r"ARGV\[([4-9]|\d\d)\]", code), name
    with pytest.raises(TypeError, match="takes"):
        q.call("lease", {"count": 1})
    with pytest.raises(TypeError, match="takes"):
        q.call("extend", {"lease_ms": 1, "nope": 2})
    with pytest.raises(TypeError, match="repeated"):
        q.call("extend", {"lease_ms": 1000}, ["only-an-id"])
    q.push([NewItem(b"d", "a")])
    fields, rows = q.decoded("stats")
    assert fields["pending"] == 1 and fields["paused"] == 0
    assert dict(rows)[b"pushed"] == b"1"
    fields, rows = q.decoded("lease", {"count": 5, "lease_ms": 1000, "session": "s",
                                       "max_attempts": 0, "at_most_once": "0"})
    assert int(fields["status"]) == 0 and [r[:3] for r in rows] == [(b"a", b"d", 1)]
    assert rows[0]._fields == SPECS["lease"].rows  # (then the per-item fields: fields.py)
