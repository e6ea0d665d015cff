"""``lease --wait`` on a fair queue: a waiter blocks on the wake-up tokens (P:wake) that
every item put in line leaves, so it wakes at once for a tenant's push, and costs the server
nothing while it waits (it no longer polls every 250 ms)."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from rq_cli.core.contract.limits import BLOCK_CHUNK, WAKE_TOKENS, WAKE_TTL_MS
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem


def script_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("fcall", "evalsha"))


def fair_queue(r: redis.Redis, name: str = "q") -> WorkQueue:
    """A queue that has had tenants, empty now."""
    wq = WorkQueue(r, name)
    wq.push([b"first"], tenant="a")
    assert wq.lease(1)
    return wq


def waiter(r: redis.Redis, name: str, wait: float, out: list) -> threading.Thread:
    def run() -> None:
        client = redis.Redis(connection_pool=r.connection_pool)
        started = time.monotonic()
        items = WorkQueue(client, name).lease(1, wait=wait)
        out.append((items, time.monotonic() - started, time.monotonic()))
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_waiter_wakes_for_a_tenant_push_and_costs_nothing_while_it_waits(r):
    wq = fair_queue(r)
    out: list = []
    before = script_calls(r)
    thread = waiter(r, "q", 10, out)
    time.sleep(1.5)
    idle_calls = script_calls(r) - before
    pushed_at = time.monotonic()
    wq.push([b"late"], tenant="b")
    thread.join(5)
    [(items, _, returned_at)] = out
    assert [i.data for i in items] == [b"late"]
    assert returned_at - pushed_at < BLOCK_CHUNK / 2  # woken, not a poll or a chunk's end
    # one lease before blocking (the old way polled every 250 ms: about six in 1.5 s)
    assert idle_calls <= 2


def put_plain(wq: WorkQueue):
    return lambda: wq.push([b"plain"])  # the default tenant's list, on a fair queue


def put_requeued(wq: WorkQueue):
    wq.push([NewItem(b"dead", "d1")], tenant="c")
    [item] = wq.lease(1)
    wq.fail([item.id], dead=True)
    return lambda: wq.requeue_dead(None)  # back into its tenant's sub-queue


def put_recovered(wq: WorkQueue):
    wq.push([NewItem(b"lost", "l1")], tenant="c")
    wq.lease(1, lease_seconds=0.2)
    time.sleep(0.3)
    return lambda: wq.clean(grace_seconds=0)  # an expired lease, back in line


def waited_for(r: redis.Redis, setup) -> tuple[list, float]:
    """On a fair queue, ``setup``'s put while a client waits: the items the waiter got, and
    the seconds from the put to its lease's return."""
    put = setup(fair_queue(r))
    out: list = []
    thread = waiter(r, "q", 10, out)
    time.sleep(0.5)
    put_at = time.monotonic()
    put()
    thread.join(5)
    [(items, _, returned_at)] = out
    return items, returned_at - put_at


@pytest.mark.parametrize("setup", [put_plain, put_requeued, put_recovered])
def test_a_default_push_a_requeue_and_a_recovery_wake_waiters_too(r, setup):
    items, waited = waited_for(r, setup)
    assert len(items) == 1 and waited < BLOCK_CHUNK / 2


def put_delayed(wq: WorkQueue):
    return lambda: wq.push([b"soon"], tenant="d", delay=0.4)


def put_retried(wq: WorkQueue):
    wq.push([NewItem(b"again", "r1")], tenant="c")
    [item] = wq.lease(1)
    return lambda: wq.fail([item.id], retry_in=0.4)  # back in 0.4 s, through P:delayed


@pytest.mark.parametrize("setup", [put_delayed, put_retried])
def test_a_waiter_gets_a_delayed_item_when_it_falls_due(r, setup):
    """A delayed item, pushed or retried while a client waits, leaves one token: the waiter
    leases again, learns when it falls due and waits that long, not to its chunk's end."""
    items, waited = waited_for(r, setup)
    assert len(items) == 1 and 0.4 <= waited < 0.4 + BLOCK_CHUNK / 2


def test_every_waiter_gets_an_item_of_one_push(r):
    wq = fair_queue(r)
    out: list = []
    threads = [waiter(r, "q", 10, out) for _ in range(8)]
    time.sleep(0.5)
    wq.push([NewItem(f"{i}".encode(), f"i{i}") for i in range(8)], tenant="t")
    for thread in threads:
        thread.join(5)
    assert sorted(items[0].id for items, _, _ in out) == [f"i{i}" for i in range(8)]
    assert max(waited for _, waited, _ in out) < 0.5 + BLOCK_CHUNK / 2


def test_the_tokens_are_bounded_and_expire(r):
    wq = fair_queue(r)
    wq.push([NewItem(b"x", f"i{i}") for i in range(1000)], tenant="t")
    assert r.llen(wq.keys.wake) == WAKE_TOKENS
    wq.push([NewItem(b"x", f"j{i}") for i in range(10)], tenant="u")  # more: still bounded
    assert r.llen(wq.keys.wake) == WAKE_TOKENS
    assert 0 < r.pttl(wq.keys.wake) <= WAKE_TTL_MS
    time.sleep(WAKE_TTL_MS / 1000 + 0.2)
    assert r.exists(wq.keys.wake) == 0
    assert wq.stats().pending == 1010  # (tokens are only a signal: nothing else changed)


def test_a_queue_without_tenants_writes_no_tokens(r):
    wq = WorkQueue(r, "plain")
    wq.push([b"a", b"b", b"c"])
    wq.push([b"later"], delay=5)
    first, second = wq.lease(2)
    wq.fail([first.id], retry_in=0)
    wq.fail([second.id], retry_in=5)
    wq.clean()
    assert r.exists(wq.keys.wake) == 0


def test_purge_all_removes_the_tokens(r):
    wq = fair_queue(r)
    wq.push([b"x"], tenant="t")
    assert r.exists(wq.keys.wake) == 1
    wq.purge("all")
    assert r.keys("q:*") == []


def test_whether_a_queue_is_fair_is_read_afresh_by_each_call(r):
    # (the Functions library keeps its values between calls: a plain queue's "not fair"
    # must not carry over to the next call, nor the other way round)
    plain, fair = WorkQueue(r, "plain"), fair_queue(r)
    for _ in range(2):
        plain.push([b"p"])
        fair.push([b"f"], tenant="t")
        assert r.exists(plain.keys.wake) == 0 and r.llen(fair.keys.wake) >= 1
        r.delete(fair.keys.wake)
    fresh = WorkQueue(r, "fresh")
    fresh.push([b"x"], tenant="t")  # its first tenant push makes it fair, in the same call
    assert r.llen(fresh.keys.wake) == 1


def test_a_wait_for_a_delayed_item_goes_by_the_servers_clock(r):
    """A waiter waits for a delayed item by the server's clock, not its own: here the
    scripts' clock (``now_ms``) is 10 s behind the client's, and stands still, so the item
    never falls due; the waiter leases once per 0.5 s (the time left, by that clock), where
    waiting by its own clock it would lease as often as the server ends a blocking call
    (10 ms asked; about 12 calls in 1.2 s on Redis 7, whose timeouts are served by hz)."""
    wq = fair_queue(r)
    behind = int(time.time() * 1000) - 10_000
    wq.push([b"soon"], tenant="d", delay=0.5, now_ms=behind)
    r.delete(wq.keys.wake)  # (its token: a first lease at once, not what is measured)
    before = script_calls(r)
    assert wq.lease(1, wait=1.2, now_ms=behind) == []
    assert 2 <= script_calls(r) - before <= 5
