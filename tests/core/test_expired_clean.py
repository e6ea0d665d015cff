"""clean dead-letters expired items (push --expire) in bounded batches, not only a lease
that reaches them; complete and push keep the de-dup window's key to about one window.

Time is a parameter (now_ms): nothing sleeps.
"""

from __future__ import annotations

import json

from rq_cli.core.contract.limits import DEDUP_PRUNE, EXPIRED_BATCH, EXPIRED_REACH
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

NOW = 1_800_000_000_000
LATER = NOW + 61_000  # past the 60 s expiry and the 60 s de-dup window


def test_clean_dead_letters_expired_pending_and_delayed_items_in_batches(r):
    q = WorkQueue(r, "q")
    n = 3 * EXPIRED_BATCH + 7
    q.push([NewItem(b"{}", f"e{k}") for k in range(n)], expire=60, now_ms=NOW)
    q.push([NewItem(b"{}", "keep")], now_ms=NOW)  # no expiry
    q.push([NewItem(b"{}", "later")], expire=3600, now_ms=NOW)  # not expired yet
    q.push([NewItem(b"{}", "d1")], delay=30, expire=60, now_ms=NOW)
    report = q.clean(grace_seconds=0, now_ms=LATER)
    assert report.dead == n + 1
    stats = q.stats(now_ms=LATER)
    assert (stats.pending, stats.delayed, stats.dead) == (2, 0, n + 1)
    assert stats.counters["expired"] == n + 1
    assert set(r.lrange("q:queue", 0, -1)) == {b"keep", b"later"}
    info = json.loads(r.hget("q:dead_info", "e0"))
    assert info["reason"] == "expired"
    assert r.zscore("q:dead", "e0") == NOW + 60_000  # dead at its expiry, as a lease does
    assert not r.exists("q:item:e0") and r.get("q:dead_item:e0") == b"{}"
    assert r.zcard("q:expires") == 1  # "later" only


def test_clean_keeps_held_and_far_expired_items_and_ends(r):
    """A leased expired item stays with its worker; one farther in line than EXPIRED_REACH
    waits for a lease (its LREM would scan the line); clean still ends."""
    q = WorkQueue(r, "q")
    q.push([NewItem(b"{}", "held")], expire=60, now_ms=NOW)
    assert [i.id for i in q.lease(lease_seconds=3600, now_ms=NOW)] == ["held"]
    q.push([NewItem(b"{}", f"k{k}") for k in range(EXPIRED_REACH + 5)], now_ms=NOW)
    q.push([NewItem(b"{}", "far")], expire=60, now_ms=NOW)  # the left end: last in line
    q.push([NewItem(b"{}", f"e{k}") for k in range(2 * EXPIRED_BATCH)], expire=60,
           now_ms=NOW + 1)
    report = q.clean(grace_seconds=0, now_ms=LATER)
    assert report.dead == 0  # all but "held" and "far" are farther in line than the reach
    stats = q.stats(now_ms=LATER)
    assert stats.processing == 1 and r.exists("q:item:held")
    # once the line in front of them is leased, clean reaches them
    q.lease(EXPIRED_REACH + 5, lease_seconds=3600, now_ms=NOW)
    report = q.clean(grace_seconds=0, now_ms=LATER)
    assert report.dead == 1 + 2 * EXPIRED_BATCH
    assert r.exists("q:item:held") and not r.exists("q:item:far")


def test_an_abandoned_expired_item_is_dead_lettered_not_requeued(r):
    q = WorkQueue(r, "q")
    q.push([NewItem(b"{}", "a")], expire=60, now_ms=NOW)
    q.lease(lease_seconds=1, now_ms=NOW)
    r.delete("q:lease:a", "q:leased_by_session:a")  # its lease ran out
    report = q.clean(grace_seconds=0, now_ms=LATER)
    assert (report.dead, report.recovered) == (1, 0)
    assert q.stats(now_ms=LATER).pending == 0
    assert json.loads(r.hget("q:dead_info", "a"))["reason"] == "expired"


def test_complete_and_push_forget_the_ids_whose_window_is_over(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(60)

    def cycle(prefix: str, n: int, now: int) -> None:
        q.push([NewItem(b"{}", f"{prefix}{k}") for k in range(n)], now_ms=now)
        q.complete([i.id for i in q.lease(n, now_ms=now)], now_ms=now)

    cycle("a", 200, NOW)
    assert r.zcard("q:dedup") == 200
    cycle("b", 200, LATER)  # the a's are over: forgotten as the b's are remembered
    assert r.zcard("q:dedup") == 200
    q.push([NewItem(b"{}", "c")], now_ms=LATER + 61_000)  # a push forgets a few
    assert r.zcard("q:dedup") == 200 - DEDUP_PRUNE


def test_a_tenants_expired_items_are_dead_lettered_and_the_ring_kept(r):
    """Fair queues: an expired item leaves its tenant's sub-queue; a tenant left with none
    leaves the ring, so leases and stats go on as before."""
    q = WorkQueue(r, "q")
    q.push([NewItem(b"{}", f"a{k}") for k in range(3)], tenant="acme", expire=60, now_ms=NOW)
    q.push([NewItem(b"{}", "b0")], tenant="beta", expire=60, now_ms=NOW)
    q.push([NewItem(b"{}", "b1")], tenant="beta", now_ms=NOW)  # no expiry
    report = q.clean(grace_seconds=0, now_ms=LATER)
    assert report.dead == 4
    stats = q.stats(now_ms=LATER)
    assert (stats.pending, stats.dead, stats.tenants) == (1, 4, 1)
    assert not r.exists("q:tenant:acme") and r.lrange("q:tenant:beta", 0, -1) == [b"b1"]
    assert json.loads(r.hget("q:dead_info", "a0"))["tenant"] == "acme"
    assert [i.id for i in q.lease(5, now_ms=LATER)] == ["b1"]
