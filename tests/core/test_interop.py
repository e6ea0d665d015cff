"""Interoperability with the peer project's clients, on a real server.

- v0.1: the real PyPI ``redis-work-queue`` 0.1.5 package (lease key ``leased_by_session``, a
  ``cleaning`` journal), imported as ``PeerQueue``;
- v0.3: ``peer_v03.V03Queue``, a minimal client issuing exactly the commands of the peer
  README's "Technical details" (lease key ``lease``).

``KeyPrefix("jobs")`` gives the peer the keys ``jobs:queue``, ``jobs:item:<id>`` ..., the
same as rq-cli's queue with prefix ``jobs``. The peer's ``light_clean`` prints to stdout;
pytest captures it.
"""

from __future__ import annotations

import multiprocessing
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from peer_v03 import V03Queue
from redis_work_queue import Item, KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.core.contract.limits import JOURNAL_GRACE_MS
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem, QueueOptions

pytestmark = pytest.mark.filterwarnings(  # redis-py deprecates SETEX, which the peer uses
    "ignore:Call to deprecated setex:DeprecationWarning")

P = "jobs"
T0 = 1_800_000_000_000  # a fixed "now" (ms) for clean's grace period: no sleeping

#: Data that must survive the trip byte for byte: empty, NUL, invalid UTF-8, every byte
#: value, multi-byte UTF-8, JSON, line breaks, whitespace only, and a 1 MB payload.
SAMPLES = [
    b"",
    b"\x00",
    b"\xff\xfe\xfd not utf-8 \x80\xc3",
    bytes(range(256)),
    "h\u00e9llo w\u00f6rld \u2713 \U0001f600".encode(),
    b'{"json": [1, 2, {"a": null}]}',
    b"line\nbreak\r\n\ttab",
    b"   ",
    random.Random(7).randbytes(1 << 20),
]


def peer(prefix: str = P) -> PeerQueue:
    return PeerQueue(KeyPrefix(prefix))


def where(r: redis.Redis, prefix: str = P) -> dict[str, Counter[str]]:
    """How many times each id sits in the queue, processing and cleaning lists."""
    def ids(key: str) -> Counter[str]:
        return Counter(x.decode() if isinstance(x, bytes) else x for x in r.lrange(key, 0, -1))

    return {name: ids(f"{prefix}:{name}") for name in ("queue", "processing", "cleaning")}


def assert_each_once(r: redis.Redis, ids: Iterable[str], completed: Iterable[str] = (),
                     prefix: str = P) -> dict[str, Counter[str]]:
    """Every id is either completed (no data, in no list) or live and listed exactly once
    (queue or processing); the v0.1 cleaning journal is empty."""
    lists = where(r, prefix)
    done = set(completed)
    for i in ids:
        n = lists["queue"][i] + lists["processing"][i]
        live = bool(r.exists(f"{prefix}:item:{i}"))
        if i in done:
            assert (live, n) == (False, 0), f"completed {i}: live={live}, listed {n} times"
        else:
            assert (live, n) == (True, 1), f"{i}: live={live}, listed {n} times, {lists}"
    assert not lists["cleaning"], lists["cleaning"]
    return lists


def expire_lease(r: redis.Redis, item_id: str, prefix: str = P) -> None:
    """Make an item's lease run out now (both key names)."""
    r.delete(f"{prefix}:lease:{item_id}", f"{prefix}:leased_by_session:{item_id}")


# -- data written by one side is read byte for byte by the other ----------------------------
def test_peer_items_are_leased_and_completed_by_rq_cli(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    items = [Item(data) for data in SAMPLES]
    for item in items:
        p.add_item(r, item)

    leased = q.lease(count=len(items))
    # first added, first leased; ids and data as the peer wrote them
    assert [x.id for x in leased] == [i.id() for i in items]
    for got, sent in zip(leased, items, strict=True):
        assert type(got.data) is bytes and got.data == sent.data()
        assert got.attempt == 1
    assert where(r)["processing"] == Counter(i.id() for i in items)

    outcomes = q.complete([ItemRef(x.id, x.session) for x in leased])
    assert [o.outcome for o in outcomes] == ["completed"] * len(items)
    assert [o.outcome for o in q.complete([x.id for x in leased])] == ["missing"] * len(items)
    assert r.keys(f"{P}:item:*") == [] and r.keys(f"{P}:lease*") == []
    assert p.queue_len(r) == 0 and p.processing(r) == 0
    assert p.lease(r, 10, block=False) is None


def test_rq_cli_items_are_leased_and_completed_by_the_peer(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    pushed = q.push([NewItem(data) for data in SAMPLES])
    assert all(x.added for x in pushed)

    for sent, data in zip(pushed, SAMPLES, strict=True):
        item = p.lease(r, 30, block=False)
        assert item is not None and item.id() == sent.id
        assert type(item.data()) is bytes and item.data() == data
        # rq-cli sees the peer's lease (v0.1 key) and who holds it
        (held,) = q.peek("processing")
        assert (held.id, held.lease_session) == (sent.id, p._session)
        assert p.complete(r, item) is True
        assert p.complete(r, item) is False  # once only
        assert q.complete([sent.id])[0].outcome == "missing"
    assert p.lease(r, 30, block=False) is None
    assert r.keys(f"{P}:item:*") == []
    assert q.stats().pending == 0 and q.stats().processing == 0


def test_front_of_line_push_is_leased_next_by_the_peer(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    q.push([b"first", b"second"])
    p.add_item(r, Item(b"third"))
    q.push([b"urgent"], front=True)
    got = [p.lease(r, 30, block=False) for _ in range(4)]
    assert [i.data() for i in got if i] == [b"urgent", b"first", b"second", b"third"]


@pytest.mark.parametrize("item_id", ["plain", "with:colons:and spaces",
                                     "\u00fcnic\u00f8de-\u2713", "a*b?[c]\\d"])
def test_ids_round_trip_both_ways(r: redis.Redis, item_id: str) -> None:
    p, q = peer(), WorkQueue(r, P)
    p.add_item(r, Item(b"from the peer", id=item_id))
    (got,) = q.lease()
    assert (got.id, got.data) == (item_id, b"from the peer")
    assert q.complete([got.id])[0].outcome == "completed"

    q.push([NewItem(b"from rq-cli", id=item_id)])
    item = p.lease(r, 30, block=False)
    assert item is not None and (item.id(), item.data()) == (item_id, b"from rq-cli")
    assert p.complete(r, item) is True


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(st.binary(max_size=400), min_size=1, max_size=8))
def test_any_bytes_round_trip_both_ways(r: redis.Redis, payloads: list[bytes]) -> None:
    prefix = f"hyp:{uuid.uuid4().hex}"
    p, q = peer(prefix), WorkQueue(r, prefix)
    for data in payloads:
        p.add_item(r, Item(data))
    got = q.lease(count=len(payloads))
    assert [x.data for x in got] == payloads
    assert {o.outcome for o in q.complete([x.id for x in got])} == {"completed"}

    q.push(payloads)
    back = [p.lease(r, 30, block=False) for _ in payloads]
    assert [i.data() for i in back if i is not None] == payloads
    assert all(p.complete(r, i) for i in back if i is not None)


# -- cleaning side by side ------------------------------------------------------------------
def _mixed_queue(r: redis.Redis, q: WorkQueue, p: PeerQueue, n: int = 20,
                 k: int = 5) -> dict[str, list[str]]:
    """2n items, n added by each side; k leased live by each, k abandoned by each (lease run
    out), the rest pending. Returns the ids by group."""
    ids = [i.id for i in q.push([f"rq {i}" for i in range(n)])]
    for i in range(n):
        item = Item(f"peer {i}")
        p.add_item(r, item)
        ids.append(item.id())
    live, abandoned = [], []
    for _ in range(k):
        live.append(p.lease(r, 300, block=False).id())
    for _ in range(k):
        item = p.lease(r, 300, block=False)
        expire_lease(r, item.id())
        abandoned.append(item.id())
    live += [x.id for x in q.lease(count=k)]
    for x in q.lease(count=k):
        expire_lease(r, x.id)
        abandoned.append(x.id)
    pending = sorted(set(ids) - set(live) - set(abandoned))
    assert len(pending) == 2 * n - 4 * k
    return {"all": ids, "live": live, "abandoned": abandoned, "pending": pending}


def _drain(r: redis.Redis, q: WorkQueue, p: PeerQueue) -> Counter[str]:
    """Lease and complete everything pending, alternating rq-cli and the peer; returns the
    ids for which complete said True/completed."""
    done: Counter[str] = Counter()
    while True:
        progressed = False
        for got in q.lease():
            if q.complete([ItemRef(got.id, got.session)])[0].outcome == "completed":
                done[got.id] += 1
            progressed = True
        item = p.lease(r, 300, block=False)
        if item is not None:
            if p.complete(r, item):
                done[item.id()] += 1
            progressed = True
        if not progressed:
            return done


def test_light_clean_and_clean_interleaved(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    g = _mixed_queue(r, q, p)
    for _ in range(3):
        p.light_clean(r)
        q.clean(grace_seconds=0)
        q.clean(grace_seconds=0)
        p.light_clean(r)
        lists = assert_each_once(r, g["all"])
    # abandoned items are back in the queue, live leases untouched
    assert set(lists["processing"]) == set(g["live"])
    assert set(lists["queue"]) == set(g["abandoned"]) | set(g["pending"])
    for i in g["live"]:
        assert r.exists(f"{P}:leased_by_session:{i}")

    # the peer's live leases end, rq-cli's clean recovers them after its grace period
    for i in g["live"]:
        expire_lease(r, i)
    q.clean(grace_seconds=5, now_ms=T0)
    assert set(where(r)["processing"]) == set(g["live"])  # suspects, not yet re-queued
    p.light_clean(r)  # the peer has no grace period
    q.clean(grace_seconds=5, now_ms=T0 + 5000)
    assert_each_once(r, g["all"])
    assert not where(r)["processing"]

    done = _drain(r, q, p)
    assert done == Counter(g["all"])  # each item completed exactly once
    assert r.keys(f"{P}:item:*") == []


def _worker_thread(url: str, kind: str, stop: threading.Event, done: Counter[str],
                   abandoned: set[str], lock: threading.Lock, seed: int) -> None:
    r = redis.Redis.from_url(url)
    rnd = random.Random(seed)
    q, p = WorkQueue(r, P), peer()
    while not stop.is_set():
        if kind == "rq":
            got = q.lease(lease_seconds=60)
            item_id = got[0].id if got else None
        else:
            item = p.lease(r, 60, block=False)
            item_id = item.id() if item else None
        if item_id is None:
            time.sleep(0.005)
            continue
        with lock:
            abandon = item_id not in abandoned and rnd.random() < 0.25
            if abandon:
                abandoned.add(item_id)
        if abandon:  # the worker "crashes": its lease runs out
            expire_lease(r, item_id)
            continue
        session = got[0].session if kind == "rq" else p._session
        if kind == "rq":
            ok = q.complete([ItemRef(item_id, session)])[0].outcome == "completed"
        else:
            ok = p.complete(r, item)
        if ok:
            with lock:
                done[item_id] += 1
        else:
            # The worker gives up the item. The peer's light_clean can move an item out of
            # processing while its worker holds it (between its check and its LREM); the
            # peer's complete then returns False and leaves the item, still leased, to be
            # recovered when its lease runs out. Make that lease run out now (if it is still
            # this worker's), as 60 s would.
            _RELEASE_IF_HELD(keys=[f"{P}:lease:{item_id}", f"{P}:leased_by_session:{item_id}"],
                             args=[session], client=r)
    r.close()


_RELEASE_IF_HELD = redis.Redis().register_script(
    "for _, key in ipairs(KEYS) do\n"
    "  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end\n"
    "end")


def _cleaner_thread(url: str, kind: str, stop: threading.Event,
                    recovered: Counter[str]) -> None:
    r = redis.Redis.from_url(url)
    q, p = WorkQueue(r, P), peer()
    while not stop.is_set():
        if kind == "rq":
            recovered[kind] += q.clean(grace_seconds=0.5).recovered
            time.sleep(0.01)
        else:
            time.sleep(0.3)  # no grace period: running it less often lets rq-cli's turn come
            p.light_clean(r)
    r.close()


@pytest.mark.parametrize("workers", [
    pytest.param(("rq", "rq", "rq", "rq"), id="rq-workers"),
    pytest.param(("peer", "peer", "peer", "peer"), id="peer-workers"),
    pytest.param(("rq", "rq", "peer", "peer"), id="mixed-workers"),
])
def test_light_clean_and_clean_concurrently_with_workers(r: redis.Redis, server_url: str,
                                                         workers: tuple[str, ...]) -> None:
    """Threads: four workers (each abandoning a quarter of the items it leases first), one
    peer light_clean loop and two rq-cli clean loops, all at once, on 1040 items added by
    both sides. Each item is completed (True/completed) exactly once; none is lost."""
    p, q = peer(), WorkQueue(r, P)
    g = _mixed_queue(r, q, p)
    more = [x.id for x in q.push([f"rq more {n}" for n in range(500)])]
    for n in range(500):
        item = Item(f"peer more {n}")
        p.add_item(r, item)
        more.append(item.id())
    ids = g["all"] + more
    for i in g["live"]:
        expire_lease(r, i)  # nobody holds these any more: they must be recovered too

    stop = threading.Event()
    done: Counter[str] = Counter()
    abandoned: set[str] = set()
    lock = threading.Lock()
    threads = [threading.Thread(target=_worker_thread,
                                args=(server_url, kind, stop, done, abandoned, lock, n))
               for n, kind in enumerate(workers)]
    recovered: Counter[str] = Counter()
    threads += [threading.Thread(target=_cleaner_thread,
                                 args=(server_url, kind, stop, recovered))
                for kind in ["peer", "rq", "rq"]]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 40
    progress, last = 0, time.monotonic()
    try:
        while sum(done.values()) < len(ids) and time.monotonic() < deadline:
            time.sleep(0.05)
            if sum(done.values()) != progress:
                progress, last = sum(done.values()), time.monotonic()
            elif time.monotonic() - last > 8:  # stuck (a busy machine stalls for seconds): lost
                break
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not [i for i in ids if done[i] != 1], (
        f"completed {sum(done.values())} of {len(ids)}; "
        f"never: {[i for i in ids if not done[i]][:5]}, "
        f"twice: {[i for i in ids if done[i] > 1][:5]}, lists: {where(r)}")
    assert set(done) == set(ids)
    assert_each_once(r, ids, completed=ids)
    assert r.keys(f"{P}:item:*") == []
    assert abandoned  # the cleaners had work to do


def _cleaner_process(url: str, kind: str, seconds: float) -> None:
    r = redis.Redis.from_url(url)
    q, p = WorkQueue(r, P), peer()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if kind == "rq":
            q.clean(grace_seconds=0.5)
        else:
            p.light_clean(r)


def test_light_clean_and_clean_concurrently_from_processes(r: redis.Redis,
                                                           server_url: str) -> None:
    """One peer light_clean process and two rq-cli clean processes hammer a queue with live
    and abandoned leases for a second; nothing is lost or duplicated. (Two *peer* cleaners at
    once can duplicate an item by themselves -- their journal check races -- so one.)"""
    p, q = peer(), WorkQueue(r, P)
    g = _mixed_queue(r, q, p, n=200, k=50)
    ids, live, abandoned = g["all"], g["live"], g["abandoned"]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_cleaner_process, args=(server_url, kind, 1.5))
             for kind in ("peer", "rq", "rq")]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    lists = assert_each_once(r, ids)
    assert set(lists["processing"]) == set(live)
    assert set(abandoned) <= set(lists["queue"])
    # the holders of the live leases finish their work; the rest is leased and completed
    done = Counter(o.id for o in q.complete(live) if o.outcome == "completed")
    done += _drain(r, q, p)
    assert done == Counter(ids)


# -- dead letters ---------------------------------------------------------------------------
def test_dead_letters_are_invisible_to_the_peer(r: redis.Redis) -> None:
    """Every way into the dead letters: fail(dead=True); fail at max_attempts; clean of an
    abandoned item at max_attempts; lease of an item at max_attempts (re-queued by the peer's
    light_clean, which knows nothing of attempts). The peer leases none of them."""
    p = peer()
    q = WorkQueue(r, P, QueueOptions(max_attempts=2))

    (a,) = (x.id for x in q.push([b"a"]))
    assert q.fail([q.lease()[0].id], dead=True, error="boom")[0].outcome == "dead"

    (b,) = (x.id for x in q.push([b"b"]))
    assert q.fail([q.lease()[0].id], retry_in=0)[0].outcome == "retried"
    (lb,) = q.lease()
    assert (lb.id, lb.attempt) == (b, 2)
    assert q.fail([b], retry_in=0)[0].outcome == "dead"

    (c,) = (x.id for x in q.push([b"c"]))
    for attempt in (1, 2):
        (lc,) = q.lease()
        assert (lc.id, lc.attempt) == (c, attempt)
        expire_lease(r, c)  # the worker died
        q.clean(grace_seconds=0)  # re-queued after attempt 1, dead after attempt 2

    (x,) = (i.id for i in q.push([b"x"]))
    for _ in (1, 2):
        assert q.lease()[0].id == x
        expire_lease(r, x)
        p.light_clean(r)  # the peer re-queues it, whatever its attempts
    assert q.lease() == []  # ... and rq-cli's lease dead-letters it instead of leasing it

    dead = {i.id: i.dead_reason for i in q.peek("dead", count=10)}
    assert dead == {a: "failed", b: "max_attempts", c: "max_attempts", x: "max_attempts"}

    # the peer sees only the live items, and none of the dead
    (d,) = (i.id for i in q.push([b"d"]))
    p.add_item(r, Item(b"e", id="e"))
    assert p.queue_len(r) == 2 and p.processing(r) == 0
    seen = []
    while (item := p.lease(r, 30, block=False)) is not None:
        seen.append(item.id())
        assert p.complete(r, item)
    assert sorted(seen) == sorted([d, "e"])
    assert p.lease(r, 30, block=True, timeout=0.2) is None
    p.light_clean(r)
    assert p.lease(r, 30, block=False) is None
    for i in dead:
        assert not r.exists(f"{P}:item:{i}") and r.exists(f"{P}:dead_item:{i}")

    # requeued, a dead item is an item again, for the peer too
    q.requeue_dead([a])
    item = p.lease(r, 30, block=False)
    assert item is not None and (item.id(), item.data()) == (a, b"a")
    assert p.complete(r, item) is True


# -- the v0.1 cleaning journal --------------------------------------------------------------
def _crashed_peer_cleaner(r: redis.Redis, p: PeerQueue, data: bytes = b"job") -> str:
    """An item abandoned by a peer worker, then half cleaned by a peer cleaner that crashed
    after ``LPUSH cleaning`` + ``LREM processing``: its id is in no list, only in cleaning."""
    item = Item(data)
    p.add_item(r, item)
    assert p.lease(r, 60, block=False).id() == item.id()
    expire_lease(r, item.id())
    r.lpush(f"{P}:cleaning", item.id())
    assert r.lrem(f"{P}:processing", 0, item.id()) == 1
    lists = where(r)
    assert (lists["queue"][item.id()], lists["processing"][item.id()],
            lists["cleaning"][item.id()]) == (0, 0, 1)
    return str(item.id())


def test_clean_recovers_an_id_left_in_the_cleaning_journal_once(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    x = _crashed_peer_cleaner(r, p, b"\x00precious\xff")

    first = q.clean(grace_seconds=5, now_ms=T0)
    assert (first.recovered, first.suspects) == (0, 1)
    assert q.clean(grace_seconds=5, now_ms=T0 + 4999).recovered == 0
    assert where(r)["cleaning"][x] == 1  # left alone within the grace period
    # ... and within JOURNAL_GRACE_MS, whatever the grace: a live but slow peer cleaner may
    # still be between its LREM and its LPUSH, and would queue it a second time
    assert q.clean(grace_seconds=5, now_ms=T0 + JOURNAL_GRACE_MS - 1).recovered == 0
    assert q.clean(grace_seconds=0, now_ms=T0 + JOURNAL_GRACE_MS - 1).recovered == 0
    assert where(r)["cleaning"][x] == 1

    assert q.clean(grace_seconds=5, now_ms=T0 + JOURNAL_GRACE_MS).recovered == 1
    assert_each_once(r, [x])
    assert where(r)["queue"][x] == 1
    for later in (61_000, 120_000, 3_600_000):  # and only once
        assert q.clean(grace_seconds=5, now_ms=T0 + later).recovered == 0
    p.light_clean(r)
    assert_each_once(r, [x])

    (got,) = q.lease()
    assert (got.id, got.data) == (x, b"\x00precious\xff")
    assert q.complete([ItemRef(got.id, got.session)])[0].outcome == "completed"
    assert p.lease(r, 60, block=False) is None


@pytest.mark.parametrize("state", ["queued", "processing", "completed"])
def test_clean_leaves_a_journal_entry_that_needs_no_recovery(r: redis.Redis,
                                                             state: str) -> None:
    """The crashed cleaner got further (the id is back in the queue), or a worker leased the
    item meanwhile, or it was completed: the journal entry is dropped, nothing is pushed."""
    p, q = peer(), WorkQueue(r, P)
    x = _crashed_peer_cleaner(r, p)
    if state == "queued":  # crashed after LPUSH queue, before LREM cleaning
        r.lpush(f"{P}:queue", x)
    elif state == "processing":  # ... and a worker has leased it since
        r.lpush(f"{P}:queue", x)
        assert p.lease(r, 60, block=False).id() == x
    else:
        r.delete(f"{P}:item:{x}")
    for t in (0, 5000, 10_000):
        assert q.clean(grace_seconds=5, now_ms=T0 + t).recovered == 0
    lists = where(r)
    assert not lists["cleaning"]
    if state == "completed":
        assert not lists["queue"] and not lists["processing"]
    else:
        assert_each_once(r, [x])
        assert lists["queue" if state == "queued" else "processing"][x] == 1


# -- layouts --------------------------------------------------------------------------------
@pytest.mark.parametrize(("layout", "keys"), [
    ("compat", {"lease", "leased_by_session"}),
    ("v0.3", {"lease"}),
    ("v0.1", {"leased_by_session"}),
])
def test_layout_decides_which_lease_keys_are_written(r: redis.Redis, layout: str,
                                                     keys: set[str]) -> None:
    q = WorkQueue(r, P, QueueOptions(layout=layout))
    q.push([b"a", b"b"])
    (item,) = q.lease(lease_seconds=120)
    written = {name for name in ("lease", "leased_by_session")
               if r.exists(f"{P}:{name}:{item.id}")}
    assert written == keys
    for name in keys:
        assert r.get(f"{P}:{name}:{item.id}") == q.session.encode()
        assert 119_000 < r.pttl(f"{P}:{name}:{item.id}") <= 120_000
    # extend refreshes the same keys, and only those
    assert q.extend([item.id], lease_seconds=600)[0].outcome == "extended"
    for name in keys:
        assert 599_000 < r.pttl(f"{P}:{name}:{item.id}") <= 600_000
    assert {name for name in ("lease", "leased_by_session")
            if r.exists(f"{P}:{name}:{item.id}")} == keys
    assert q.complete([item.id])[0].outcome == "completed"
    assert r.keys(f"{P}:lease*") == []


@pytest.mark.parametrize(("layout", "honoured"), [
    ("compat", {"v0.1", "v0.3"}),
    ("v0.3", {"v0.3"}),
    ("v0.1", {"v0.1"}),
])
def test_layout_decides_whose_leases_clean_honours(r: redis.Redis, layout: str,
                                                   honoured: set[str]) -> None:
    q = WorkQueue(r, P, QueueOptions(layout=layout))
    p1, p3 = peer(), V03Queue(P)
    p1.add_item(r, Item(b"x"))
    x = p1.lease(r, 300, block=False)  # v0.1: leased_by_session only
    p3.add_item(r, b"y")
    y = p3.lease(r, 300)  # v0.3: lease only
    assert x is not None and y is not None
    held = {"v0.1": x.id(), "v0.3": y.id}
    for t in (0, 10_000):  # first sighting, then past the grace period
        q.clean(grace_seconds=5, now_ms=T0 + t)
    lists = where(r)
    for gen, item_id in held.items():
        expected = "processing" if gen in honoured else "queue"
        assert lists[expected][item_id] == 1, (gen, lists)
    assert_each_once(r, held.values())


# -- mixed v0.1 / v0.3 / rq-cli workers in processes ----------------------------------------
DONE_KEY = "test:interop:done"


def _mixed_worker(url: str, kind: str, add: int, total: int, out: Any) -> None:
    """Add ``add`` items the way ``kind`` does, then lease and complete until ``total`` items
    are completed overall. Reports (kind, added ids, leased ids, ids completed True)."""
    r = redis.Redis.from_url(url, socket_timeout=30)
    q, p1, p3 = WorkQueue(r, P), peer(), V03Queue(P)
    added: list[str] = []
    for _ in range(add):
        new_id = uuid.uuid4().hex
        payload = f"payload of {new_id} \u2713".encode() + b"\xff"
        if kind == "rq":
            q.push([NewItem(payload, id=new_id)])
        elif kind == "v0.1":
            p1.add_item(r, Item(payload, id=new_id))
        else:
            p3.add_item(r, payload, new_id)
        added.append(new_id)
    # every worker leases once all have added (an event, not a start-up race: a process that
    # started late would otherwise find the others done, and its kind would complete none)
    r.incr(f"{DONE_KEY}:added")
    ready = time.monotonic() + 60
    while int(r.get(f"{DONE_KEY}:added") or 0) < total // add and time.monotonic() < ready:
        time.sleep(0.005)
    leased: list[str] = []
    completed: list[str] = []
    corrupt: list[str] = []
    deadline = time.monotonic() + 40
    progress, last = -1, time.monotonic()
    item_id: str | None
    data: bytes | None
    while time.monotonic() < deadline:
        if kind == "rq":
            got = q.lease(lease_seconds=60)
            item_id, data = (got[0].id, got[0].data) if got else (None, None)
        elif kind == "v0.1":
            it = p1.lease(r, 60, block=False)
            item_id, data = (it.id(), it.data()) if it else (None, None)
        else:
            it3 = p3.lease(r, 60)
            item_id, data = (it3.id, it3.data) if it3 else (None, None)
        if item_id is None:
            done = int(r.get(DONE_KEY) or 0)
            if done >= total:
                break
            if done != progress:
                progress, last = done, time.monotonic()
            elif time.monotonic() - last > 5:  # nothing happens any more: give up
                break
            time.sleep(0.005)
            continue
        leased.append(item_id)
        if data != f"payload of {item_id} \u2713".encode() + b"\xff":
            corrupt.append(item_id)
        if kind == "rq":
            ok = q.complete([ItemRef(item_id, got[0].session)])[0].outcome == "completed"
        elif kind == "v0.1":
            ok = p1.complete(r, it)
        else:
            ok = p3.complete(r, item_id)
        if ok:
            completed.append(item_id)
            r.incr(DONE_KEY)
    out.put((kind, added, leased, completed, corrupt))
    r.close()


def _mixed_cleaner(url: str, total: int) -> None:
    r = redis.Redis.from_url(url, socket_timeout=30)
    q = WorkQueue(r, P)
    deadline = time.monotonic() + 40
    progress, last = -1, time.monotonic()
    while (done := int(r.get(DONE_KEY) or 0)) < total and time.monotonic() < deadline:
        if done != progress:
            progress, last = done, time.monotonic()
        elif time.monotonic() - last > 6:  # the workers have given up
            break
        q.clean(grace_seconds=1.0)
        time.sleep(0.02)
    r.close()


def test_mixed_v01_v03_and_rq_cli_workers_process_each_item_once(r: redis.Redis,
                                                                  server_url: str) -> None:
    """Six worker processes on one compat queue -- two each of the real v0.1 package, the
    v0.3 client and rq-cli -- each adding 150 items its own way, then leasing and completing
    until all are done, while an rq-cli cleaner process runs clean. Every item is leased
    once, completed (True) once, with its data intact; none is lost."""
    kinds = ["v0.1", "v0.1", "v0.3", "v0.3", "rq", "rq"]
    per, total = 150, 150 * len(kinds)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_mixed_worker, args=(server_url, kind, per, total, out))
             for kind in kinds]
    procs.append(ctx.Process(target=_mixed_cleaner, args=(server_url, total)))
    for proc in procs:
        proc.start()
    results = [out.get(timeout=60) for _ in kinds]
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    added = Counter(i for _, ids, _, _, _ in results for i in ids)
    leased = Counter(i for _, _, ids, _, _ in results for i in ids)
    completed = Counter(i for _, _, _, ids, _ in results for i in ids)
    assert len(added) == total and set(added.values()) == {1}
    assert not [c for *_, c in results if c], "data changed on the way"
    assert completed == added, "each item completed (True) exactly once"
    assert leased == added, "each item processed exactly once"
    by_kind: Counter[str] = Counter()
    for kind, _, _, c, _ in results:
        by_kind[kind] += len(c)
    assert set(by_kind) == {"v0.1", "v0.3", "rq"} and all(by_kind.values())
    assert r.keys(f"{P}:item:*") == [] and r.llen(f"{P}:queue") == 0
    assert r.llen(f"{P}:processing") == 0 and r.llen(f"{P}:cleaning") == 0


# -- core bugs found by these tests (kept failing until fixed) ------------------------------
def test_clean_grace_restarts_after_a_peer_light_clean(r: redis.Redis) -> None:
    """A lease-less sighting is forgotten once the item has left processing: a peer lease
    caught between its RPOPLPUSH and its SETEX is a fresh suspect, not an overdue one."""
    p, q = peer(), WorkQueue(r, P)
    x = q.push([b"x"])[0].id
    assert p.lease(r, 60, block=False).id() == x
    expire_lease(r, x)  # the peer worker died
    assert q.clean(grace_seconds=5, now_ms=T0).suspects == 1  # rq-cli notes it ...
    p.light_clean(r)  # ... but the peer's cleaner re-queues it first
    assert where(r)["queue"][x] == 1
    q.clean(grace_seconds=5, now_ms=T0 + 60_000)  # the next cron run: x is not in processing

    # an hour later a peer worker leases it: RPOPLPUSH done, SETEX not yet
    assert r.rpoplpush(f"{P}:queue", f"{P}:processing") == x.encode()
    report = q.clean(grace_seconds=5, now_ms=T0 + 3_600_000)
    assert (report.recovered, report.suspects) == (0, 1)  # a new suspect, not an overdue one
    assert where(r)["processing"][x] == 1
    # (Without a clean run between the peer's re-queue and the new lease, rq-cli cannot
    # tell that x left processing: README "Guarantees" states this limit.)


def test_lease_does_not_lose_a_held_item_that_is_only_in_the_queue(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    x = q.push([b"x"])[0].id
    # The peer's light_clean read "no lease" for x just before a peer worker's SETEX, then
    # moved x from processing to the queue: x is queued while a live lease holds it.
    assert r.rpoplpush(f"{P}:queue", f"{P}:processing") == x.encode()
    r.lrem(f"{P}:processing", 0, x)
    r.lpush(f"{P}:queue", x)
    r.setex(f"{P}:leased_by_session:{x}", 60, p._session)

    assert q.lease() == []  # held by someone: not leased again, fine
    lists = where(r)
    assert lists["queue"][x] + lists["processing"][x] == 1, lists  # actual: 0, x is lost
    # the holder finishes: the v0.1 complete needs x in processing
    assert p.complete(r, Item(b"x", id=x)) is True
    assert not r.exists(f"{P}:item:{x}")


def test_an_id_reused_after_a_peer_completed_it_is_leased(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    q.push([NewItem(b"v1", id="job-1")])
    (got,) = q.lease()
    assert p.complete(r, Item(got.data, id=got.id)) is True  # done by a peer-library worker
    q.push([NewItem(b"v2", id="job-1")])  # the same job again (e.g. push --id-from-data)
    leased = q.lease()
    assert [(i.id, i.data) for i in leased] == [("job-1", b"v2")]  # actual: []


def test_a_new_item_with_a_reused_id_starts_at_attempt_one(r: redis.Redis) -> None:
    p = peer()
    q = WorkQueue(r, P, QueueOptions(max_attempts=1))
    q.push([NewItem(b"v1", id="job-1")])
    (got,) = q.lease(lease_seconds=0.05)
    assert p.complete(r, Item(got.data, id=got.id)) is True
    time.sleep(0.1)  # (let the leftover v0.3 lease key run out: see the test above)
    q.push([NewItem(b"v2", id="job-1")])
    leased = q.lease()
    assert [(i.id, i.attempt) for i in leased] == [("job-1", 1)]  # actual: [], dead-lettered
    assert q.peek("dead") == []


def test_clean_does_not_race_a_live_peer_cleaner_with_a_stale_journal_sighting(
        r: redis.Redis) -> None:
    q = WorkQueue(r, P)
    x = q.push([b"x"])[0].id
    queue, processing, cleaning = f"{P}:queue", f"{P}:processing", f"{P}:cleaning"
    r.rpoplpush(queue, processing)  # a v0.1 lease whose worker died before SETEX
    r.lpush(cleaning, x)  # peer cleaner A, step 1 ...
    q.clean(grace_seconds=5, now_ms=T0)  # ... seen by rq-cli's clean
    r.lrem(processing, 0, x)  # A finishes: LREM processing, LPUSH queue, LREM cleaning
    r.lpush(queue, x)
    r.lrem(cleaning, 0, x)
    q.clean(grace_seconds=5, now_ms=T0 + 60_000)  # the next cron run: x is in no journal

    r.rpoplpush(queue, processing)  # an hour later: leased again, abandoned again
    r.lpush(cleaning, x)  # peer cleaner B, steps 1 and 2 ...
    r.lrem(processing, 0, x)
    assert q.clean(grace_seconds=5, now_ms=T0 + 3_600_000).recovered == 0  # actual: 1
    r.lpush(queue, x)  # ... and B's step 3
    r.lrem(cleaning, 0, x)
    assert_each_once(r, [x])  # actual: queued twice


def test_complete_is_true_once_when_an_id_was_leased_twice(r: redis.Redis) -> None:
    p, q = peer(), WorkQueue(r, P)
    x = q.push([b"x"])[0].id
    r.lpush(f"{P}:queue", x)  # a duplicate entry, as the peer cleaners' races leave them
    (mine,) = q.lease()
    theirs = p.lease(r, 60, block=False)
    assert mine.id == theirs.id() == x
    trues = [q.complete([ItemRef(mine.id, mine.session)])[0].outcome == "completed",
             p.complete(r, theirs)]
    assert trues.count(True) == 1, trues  # actual: [True, True]


def test_a_session_whose_item_a_peer_leased_again_holds_it_no_more(r: redis.Redis) -> None:
    """rq-cli leased x (both lease keys); the peer's light_clean, acting on a "no lease" it
    read earlier, moved x back to the queue; a v0.1 worker leased it again, writing only its
    own key. The first session no longer holds x: complete, fail and extend refuse it, so the
    peer's complete (whose first step, LREM, may already have run) is the one that counts."""
    p, q = peer(), WorkQueue(r, P)
    x = q.push([b"x"])[0].id
    (mine,) = q.lease()
    r.lrem(f"{P}:processing", 0, x)  # light_clean's stale decision: LREM, then LPUSH
    r.lpush(f"{P}:queue", x)
    theirs = p.lease(r, 60, block=False)
    assert theirs is not None and theirs.id() == x
    ref = ItemRef(x, mine.session)
    assert [o.outcome for o in q.extend([ref])] == ["conflict"]  # actual: extended
    assert [o.outcome for o in q.fail([ref])] == ["conflict"]  # actual: retried
    assert r.lrem(f"{P}:processing", 0, x) == 1  # the peer's complete, step 1: it counts
    assert [o.outcome for o in q.complete([ref])] == ["conflict"]  # actual: completed (twice)
    r.delete(f"{P}:item:{x}", f"{P}:leased_by_session:{x}")  # the peer's complete, step 2
    assert where(r) == {"queue": Counter(), "processing": Counter(), "cleaning": Counter()}
    # Without a session ("rq-cli complete ID"), complete is an operator's override: it works.
    y = q.push([b"y"])[0].id
    q.lease()
    r.setex(f"{P}:leased_by_session:{y}", 60, p._session)
    assert [o.outcome for o in q.complete([y])] == ["completed"]


@pytest.mark.parametrize("together", [1, 3], ids=["one", "pairs"])
def test_a_stale_v01_peer_complete_and_the_holders_complete_count_once(r: redis.Redis,
                                                                       together: int) -> None:
    """A v0.1 worker that lost x (its peer's light_clean re-queued it between the worker's
    RPOPLPUSH and its SETEX) still completes x while rq-cli's worker holds it live: the peer's
    complete decides by its LREM from processing, then deletes. rq-cli's complete that comes
    between the two steps finds x in no list: the peer's True is the one that counts, so
    rq-cli says missing, and leaves the data to the peer's second step. In the other order
    the peer's LREM finds nothing. And a peer's light_clean that took x back (journalled in
    P:cleaning) means the holder lost it: one at a time or batched, the data stays for the
    lease after. (Both were seen as an item completed twice in the workers campaign above,
    beside two CPU-bound processes: the second, traced with MONITOR.)"""
    p, q = peer(), WorkQueue(r, P)
    xs = [x.id for x in q.push([f"x{n}".encode() for n in range(together)])]
    held = q.lease(count=together)
    assert sorted(h.id for h in held) == sorted(xs)
    x = xs[0]
    assert r.lrem(f"{P}:processing", 0, x) == 1  # the stale peer's complete, step 1: True
    outcomes = {o.id: o.outcome for o in q.complete([ItemRef(h.id, h.session) for h in held])}
    assert outcomes == {i: "missing" if i == x else "completed" for i in xs}
    assert r.exists(f"{P}:item:{x}")  # (the peer's step 2 deletes it)
    r.delete(f"{P}:item:{x}", f"{P}:lease:{x}")  # step 2 (the peer returns True)
    assert where(r) == {"queue": Counter(), "processing": Counter(), "cleaning": Counter()}
    assert r.keys(f"{P}:item:*") == []
    assert q.stats().processing == 0

    # the other order: rq-cli's complete first, the peer's LREM then finds nothing
    (y,) = (i.id for i in q.push([b"y"]))
    (mine,) = q.lease()
    assert [o.outcome for o in q.complete([ItemRef(y, mine.session)])] == ["completed"]
    assert r.lrem(f"{P}:processing", 0, y) == 0  # the peer's complete: False
    # a lease run out and re-queued by a cleaner is still the holder's to complete
    (z,) = (i.id for i in q.push([b"z"]))
    (mine,) = q.lease()
    expire_lease(r, z)
    q.clean(grace_seconds=0)
    assert z in where(r)["queue"]
    assert [o.outcome for o in q.complete([ItemRef(z, mine.session)])] == ["completed"]
    assert where(r)["queue"] == Counter()
    # a peer's light_clean between its LREM and its LPUSH (the id in its journal) took the
    # item back: the holder lost it, and the item, data and all, is leased again, once
    ws = [i.id for i in q.push([f"w{n}".encode() for n in range(together)])]
    mine = q.lease(count=together)
    w = ws[-1]
    r.lpush(f"{P}:cleaning", w)
    assert r.lrem(f"{P}:processing", 0, w) == 1
    outcomes = {o.id: o.outcome for o in q.complete([ItemRef(m.id, m.session) for m in mine])}
    assert outcomes == {i: "conflict" if i == w else "completed" for i in ws}
    r.lpush(f"{P}:queue", w)
    r.lrem(f"{P}:cleaning", 0, w)
    again = p.lease(r, 60, block=False)
    assert (again.id(), again.data()) == (w, f"w{together - 1}".encode())
    assert p.complete(r, again)
    assert r.keys(f"{P}:item:*") == [] and q.stats().processing == 0


# -- a mixed fleet: what the peer's completions leave behind ------------------------------
def test_light_clean_prunes_bookkeeping_the_peer_left_behind_in_bounded_samples(
        r: redis.Redis) -> None:
    """rq-cli pushes (and leases some), the peer leases and completes: rq-cli's per-item
    bookkeeping of those ids stays behind. Each light clean drops that of a bounded random
    sample (PRUNE_SAMPLE ids per bookkeeping key) and leaves live and dead items' alone; a
    few runs leave the drained queue with only P:counters (and the history clean snapshots)."""
    from rq_cli.core.contract.keys import META_HASHES, META_ZSETS
    from rq_cli.core.contract.limits import PRUNE_SAMPLE

    p, q = peer(), WorkQueue(r, P)
    n = 3 * PRUNE_SAMPLE
    q.push([NewItem(b"x", f"i{k}") for k in range(n)], expire=3600)
    # rq-cli leases and fails half of them once (attempts, errors, holders), then the peer
    # leases and completes every one
    for item in q.lease(n // 2):
        q.fail([ItemRef(item.id, item.session)], error="boom", retry_in=0)
    done = 0
    while (item := p.lease(r, 30, block=False)) is not None:
        assert p.complete(r, item) is True
        done += 1
    assert done == n
    q.push([NewItem(b"dead", "dead-one")])
    (dead,) = q.lease(1)
    q.fail([ItemRef(dead.id, dead.session)], error="fatal", dead=True)
    q.push([NewItem(b"live", "live")], expire=3600)
    meta = [getattr(q.keys, name) for name in (*META_HASHES, *META_ZSETS)]
    assert r.hlen(q.keys.enqueued) >= n  # the leftovers

    def holding(item_id: str) -> set[str]:
        """The bookkeeping keys that name ``item_id``."""
        return {key for key in meta if (r.hexists(key, item_id) if r.type(key) == b"hash"
                                        else r.zscore(key, item_id) is not None)}

    kept = {"live": holding("live"), "dead-one": holding("dead-one")}
    assert kept["live"]

    runs = []
    while (pruned := q.clean(grace_seconds=0).pruned) and len(runs) < 20:
        runs.append(pruned)
        assert pruned <= PRUNE_SAMPLE * len(meta)
    assert runs[0] >= PRUNE_SAMPLE and sum(runs) == n, runs
    assert q.clean(grace_seconds=0).pruned == 0
    # live and dead items keep theirs; nothing of the peer-completed ids is left
    assert {"live": holding("live"), "dead-one": holding("dead-one")} == kept
    for key in meta:
        ids = set(r.hkeys(key) if r.type(key) == b"hash" else r.zrange(key, 0, -1))
        assert ids <= {b"live", b"dead-one"}, (key, sorted(ids)[:5])
    # completed and purged: a drained queue keeps only P:counters and the history clean took
    (live,) = q.lease(1)
    assert q.complete([ItemRef(live.id, live.session)])[0].outcome == "completed"
    q.purge("dead")
    assert {k.decode() for k in r.scan_iter(match=f"{P}:*")} == {
        q.keys.counters, q.keys.history, q.keys.history_hourly}


@pytest.mark.parametrize(("layout", "other"), [("v0.3", "v0.1"), ("v0.1", "v0.3")])
def test_stats_warns_when_a_single_generation_queue_shows_the_other_generations_keys(
        r: redis.Redis, tmp_path, layout: str, other: str) -> None:
    """A queue set to one generation's layout, shared with a peer of the other generation
    (the real v0.1 package, or the v0.3 client): stats says so on stderr, and its JSON is
    unchanged. compat never warns; neither does a queue only its own generation touches."""
    from cli_helpers import run_cli

    q = WorkQueue(r, P, QueueOptions(layout=layout))
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    url = f"redis://127.0.0.1:{r.connection_pool.connection_kwargs['port']}/0"
    config = tmp_path / "rq-cli.toml"
    config.write_text(f'[queues.q]\nprefix = "{P}"\nlayout = "{layout}"\n'
                      f'[queues.c]\nprefix = "{P}"\nlayout = "compat"\n')

    def stats(name: str):
        return run_cli(["--config", str(config), "stats", name, "--json"], url=url,
                       home=tmp_path)

    own = q.lease(1)
    assert own and q.stats().other_generation is None
    assert stats("q").stderr == ""
    peer_client = peer() if other == "v0.1" else V03Queue(P)
    assert peer_client.lease(r, 30, block=False) is not None  # writes its generation's key
    assert q.stats().other_generation == other
    run = stats("q")
    assert run.exit_code == 0, run
    assert run.stderr == (f"rq-cli: warning: queue q (layout {layout}) shows {other} keys: a "
                          f"{other} peer shares it, and its cleaner may hand out again items "
                          'rq-cli holds; set layout = "compat"\n')
    assert "other_generation" not in run.stdout and run.one["processing"] == 2
    assert stats("c").stderr == ""  # compat: both generations are its own


@pytest.mark.parametrize("deep", [False, True], ids=["clean", "clean-deep"])
def test_a_delayed_item_a_v03_peer_completed_leaves_no_ghost_after_clean(
        r: redis.Redis, deep: bool) -> None:
    """A v0.3 peer's deep clean hands out a delayed item at once (no list holds it); once a
    peer completes it, P:delayed still names it, without data: stats counted it delayed and
    peek showed it with data null. clean and clean --deep drop such ghosts from P:delayed
    and from every bookkeeping key, and leave a live delayed item alone (issue 29)."""
    from rq_cli.core.contract.keys import META_HASHES, META_ZSETS

    q, v03 = WorkQueue(r, P), V03Queue(P)
    q.push([NewItem(b"later", "ghost")], delay=3600, expire=7200)
    q.push([NewItem(b"kept", "kept")], delay=3600)
    r.hset(q.keys.errors, "ghost", "an old failure")
    assert v03.deep_clean(r) == 2  # both handed out at once
    r.lrem(q.keys.queue, 0, "kept")  # (only the ghost is the subject here)
    leased = v03.lease(r, 30)
    assert leased is not None and leased.id == "ghost"
    assert v03.complete(r, "ghost") is True
    assert q.stats().delayed == 2
    assert [i.data for i in q.peek("delayed")] == [None, b"kept"]

    report = q.clean(deep=deep, grace_seconds=0)
    assert report.pruned >= 1, report
    assert q.stats().delayed == 1
    assert [(i.id, i.data) for i in q.peek("delayed")] == [("kept", b"kept")]
    meta = [getattr(q.keys, name) for name in (*META_HASHES, *META_ZSETS)]
    for key in [*meta, q.keys.delayed]:
        held = r.hexists(key, "ghost") if r.type(key) == b"hash" else \
            r.zscore(key, "ghost") is not None
        assert not held, key
    assert r.hexists(q.keys.enqueued, "kept")  # a live delayed item keeps its own
    assert q.clean(deep=deep, grace_seconds=0).pruned == 0


def test_what_peers_do_not_see_as_the_readme_lists(r: redis.Redis) -> None:
    """README "Key schema and compatibility": a v0.1 peer leases an item whose push
    --expire has passed (rq-cli would dead-letter it), and a tenant's item that a peer's
    light_clean recovers goes to the default list, P:queue (issue 29)."""
    q, p = WorkQueue(r, P), peer()
    q.push([NewItem(b"stale", "stale")], expire=60, now_ms=int(time.time() * 1000) - 120_000)
    item = p.lease(r, 30, block=False)
    assert item is not None and item.id() == "stale"  # expired, leased all the same
    assert p.complete(r, item) is True
    q.push([NewItem(b"t", "tenanted")], tenant="acme")
    (held,) = q.lease(1)
    assert held.id == "tenanted"
    expire_lease(r, "tenanted")  # its worker died
    p.light_clean(r)
    assert r.lrange(f"{P}:queue", 0, -1) == [b"tenanted"]  # the default list
    assert r.llen(f"{P}:tenant:acme") == 0
