"""The age of an item without a stamp per item (core/contract/ages.py, lua/_ages.lua; docs/DESIGN.md
section 2): the ids push makes carry their push time, a P:enqueued stamp is written only
where the id cannot tell it, and every kind of item shows its age as before through stats,
peek, ``--older-than`` filters, dead_info, error groups and the console's model."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from redis_work_queue import Item, KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.console.model import Browser
from rq_cli.core.contract.ages import V7_PATTERN, enqueued_ms, id_ms, new_ids
from rq_cli.core.contract.limits import PUSH_STAMP_SLACK_MS
from rq_cli.core.errgroups import group_errors
from rq_cli.core.filtering import FilterReport, ItemFilter, scan
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytestmark = pytest.mark.filterwarnings(  # redis-py deprecates SETEX, which the peer uses
    "ignore:Call to deprecated setex:DeprecationWarning")

T0 = 1_800_000_000_000  # a fixed "now" (ms): the scripts' NOW and the ids' time


def ages(q: WorkQueue, state: str = "pending") -> dict[str, float | None]:
    return {i.id: i.enqueued_at for i in q.peek(state, count=100)}


def older_than(q: WorkQueue, seconds: float, now_ms: int) -> set[str]:
    report = FilterReport(q.prefix, "pending", "peek")
    steps = scan(q, "pending", ItemFilter(older_than=seconds), report, now_ms=now_ms)
    return {i.id for s in steps for i in s.items}


def test_the_ids_push_makes_are_uuidv7_with_the_push_time_first():
    raw = new_ids(1000, T0)
    ids = [raw[i:i + 32].decode() for i in range(0, len(raw), 32)]
    assert len(set(ids)) == 1000
    for i in ids:
        u = uuid.UUID(i)
        assert (u.version, u.variant, u.hex) == (7, uuid.RFC_4122, i)
        assert id_ms(i) == T0 == enqueued_ms(i) == enqueued_ms(i.encode())
    assert {i[16] for i in ids} == set("89ab")  # (the variant digit, evenly made)
    # a stamp wins; no stamp and no v7 shape: unknown
    assert enqueued_ms(ids[0], b"5") == 5 and enqueued_ms(ids[0], b"not a time") == T0
    assert enqueued_ms(uuid.uuid4().hex) is None and enqueued_ms("given") is None


@pytest.mark.parametrize("case", [
    "v7", "upper", "v4", "variant", "short", "long", "dashes"])
def test_lua_and_python_read_the_same_shape(r, case):
    """An id stored without a stamp (as a v7 id is) is aged alike by the scripts (peek) and
    by Python (ages.enqueued_ms): both read V7_PATTERN."""
    v7 = new_ids(1, T0).decode()
    item_id = {"v7": v7, "upper": v7.upper(), "v4": uuid.uuid4().hex,
               "variant": v7[:16] + "c" + v7[17:], "short": v7[:-1], "long": v7 + "0",
               "dashes": str(uuid.UUID(v7))}[case]
    q = WorkQueue(r, "q")
    r.set(q.keys.item(item_id), b"x")
    r.lpush(q.keys.queue, item_id)
    known = enqueued_ms(item_id)
    assert (known == T0) == (case == "v7") and (known is None) == (case != "v7")
    assert ages(q) == {item_id: None if known is None else known / 1000}
    assert V7_PATTERN.startswith("^") and V7_PATTERN.endswith("$")


def test_generated_ids_carry_the_age_with_no_stamp(r):
    """One at a time (push.lua) and in bulk (the transactions): no P:enqueued field, and the
    age shown everywhere as before."""
    q = WorkQueue(r, "q")
    one = q.push([b"one"], now_ms=T0)[0].id
    bulk = [p.id for b in q.push_batches((b"%d" % i for i in range(1500)), now_ms=T0 + 1000)
            for p in b]
    assert not r.exists(q.keys.enqueued)
    assert id_ms(one) == T0 and {id_ms(i) for i in bulk} == {T0 + 1000}
    assert q.peek(count=1)[0].id == one and q.peek(count=1)[0].enqueued_at == T0 / 1000
    assert q.stats(now_ms=T0 + 5000).oldest_pending_age_s == 5.0
    assert older_than(q, 4.5, T0 + 5000) == {one}
    assert len(older_than(q, 3.5, T0 + 5000)) == 1501
    page = Browser("q", q).page("pending", 0, 10, total=1501)
    assert [row.enqueued_at for row in page.rows] == [T0 / 1000] + [(T0 + 1000) / 1000] * 9


def test_an_id_given_is_stamped_and_aged_by_the_stamp(r):
    """``--id``/``--id-from-data`` and a v7 id made elsewhere, long before: the id cannot
    tell the push time, so push stamps it; a v7 id made just now is not stamped."""
    q = WorkQueue(r, "q")
    elsewhere = new_ids(1, T0 - 3_600_000).decode()
    now = new_ids(1, T0 + PUSH_STAMP_SLACK_MS // 2).decode()
    q.push([NewItem(b"a", "given"), NewItem(b"b", elsewhere), NewItem(b"c", now)],
           now_ms=T0)
    from_data = q.push([b"d"], id_from_data=True, now_ms=T0)[0].id
    assert set(r.hkeys(q.keys.enqueued)) == {b"given", elsewhere.encode(), from_data.encode()}
    assert ages(q) == {"given": T0 / 1000, elsewhere: T0 / 1000, from_data: T0 / 1000,
                       now: (T0 + PUSH_STAMP_SLACK_MS // 2) / 1000}
    assert q.stats(now_ms=T0 + 2000).oldest_pending_age_s == 2.0


def test_a_client_clock_off_by_more_than_the_slack_costs_a_stamp_not_a_wrong_age(r):
    """push.lua's path (no now_ms: the client's reading of the server's clock): a reading
    far off is stamped with the server's time."""
    q = WorkQueue(r, "q")
    sec, usec = r.time()
    server = sec * 1000 + usec // 1000
    q.clock.sync(server - 3_600_000, time.monotonic())
    item_id = q.push([b"x"])[0].id
    assert id_ms(item_id) is not None and id_ms(item_id) < server - 3_000_000
    stamp = int(r.hget(q.keys.enqueued, item_id))
    assert abs(stamp - server) < 60_000  # (the server's clock: a generous bound, any load)
    assert ages(q)[item_id] == stamp / 1000


def test_a_requeued_item_keeps_its_first_push_time_and_writes_nothing(r):
    q = WorkQueue(r, "q")
    item_id = q.push([b"x"], now_ms=T0)[0].id
    q.lease(now_ms=T0 + 1000)
    q.fail([item_id], error="boom", retry_in=0, now_ms=T0 + 2000)
    assert not r.exists(q.keys.enqueued)
    assert ages(q) == {item_id: T0 / 1000}
    assert q.stats(now_ms=T0 + 3000).oldest_pending_age_s == 3.0
    # the retrying item's error group reads its age too (Python: errgroups)
    report = group_errors(q, ItemFilter(older_than=2.5), ("retrying",), now_ms=T0 + 3000)
    assert [g.count for g in report.groups] == [1]
    report = group_errors(q, ItemFilter(older_than=3.5), ("retrying",), now_ms=T0 + 3000)
    assert report.groups == []


def test_a_delayed_item_is_aged_from_its_push(r):
    q = WorkQueue(r, "q")
    item_id = q.push([b"x"], delay=60, now_ms=T0)[0].id
    assert not r.exists(q.keys.enqueued)
    assert ages(q, "delayed") == {item_id: T0 / 1000}
    q.lease(now_ms=T0 + 61_000)  # promotes it, leases it
    q.fail([item_id], retry_in=0, now_ms=T0 + 62_000)
    assert ages(q) == {item_id: T0 / 1000}


def test_a_dead_item_keeps_its_push_time_and_requeue_dead_stamps_a_new_one(r):
    q = WorkQueue(r, "q")
    item_id = q.push([b"x"], now_ms=T0)[0].id
    q.lease(now_ms=T0 + 1000)
    q.fail([item_id], dead=True, now_ms=T0 + 2000)
    assert ages(q, "dead") == {item_id: T0 / 1000}  # (dead_info's enqueued)
    q.requeue_dead([item_id], now_ms=T0 + 9000)
    assert ages(q) == {item_id: (T0 + 9000) / 1000}  # (its stamp wins over the id's time)


def test_a_peers_item_has_no_age_and_an_old_stamped_item_keeps_its_own(r):
    """The peer's uuid4 ids carry no time: unknown, as before. Items pushed before ids
    carried the time have stamps: read as before."""
    q = WorkQueue(r, "q")
    PeerQueue(KeyPrefix("q")).add_item(r, Item(b"peer"))
    peer_id = r.lindex(q.keys.queue, 0).decode()
    assert ages(q) == {peer_id: None}
    assert q.stats(now_ms=T0).oldest_pending_age_s is None
    old = uuid.uuid4().hex  # as rq-cli pushed before: SET, HSET P:enqueued, LPUSH
    r.set(q.keys.item(old), b"old")
    r.hset(q.keys.enqueued, old, T0 - 5000)
    r.lpush(q.keys.queue, old)
    assert ages(q) == {peer_id: None, old: (T0 - 5000) / 1000}
    assert q.stats(now_ms=T0).oldest_pending_age_s is None  # (the tail, the peer's: unknown)
    assert older_than(q, 4, T0) == {old}


def test_a_sharded_queue_ages_its_items_by_their_ids(r: redis.Redis):
    from rq_cli.core.sharding.resharding import reshard
    from rq_cli.core.sharding.sharded import ShardedQueue

    reshard(r, "sj", 3)
    sq = ShardedQueue(r, "sj")
    ids = [p.id for p in sq.push([b"%d" % i for i in range(30)], now_ms=T0)]
    assert {id_ms(i) for i in ids} == {T0}
    assert not any(r.exists(f"{s}:enqueued") for s in sq.meta.live)
    assert {i.enqueued_at for i in sq.peek(count=30)} == {T0 / 1000}
    assert sq.stats(now_ms=T0 + 7000).oldest_pending_age_s == 7.0
