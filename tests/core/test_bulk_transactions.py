"""Bulk push as transactions (core/pushing/bulk_tx.py ``Transactions``): a stream of plain items
with fresh random ids is stored by plain commands in one MULTI/EXEC per batch, and
push_commit.lua checks, counts and, on a key of the wrong type, undoes the batch in the same
transaction. What push.lua guarantees holds here too: a batch is stored whole or not at all,
the push time is the server's (carried by the v7 ids: no stamp per item), the counters and a
fair queue's waiters see every item."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from rq_cli.core.contract.ages import id_ms
from rq_cli.core.contract.limits import PUSH_STAMP_SLACK_MS, WAKE_TOKENS
from rq_cli.core.pushing.bulk_tx import Transactions
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem


def calls(r: redis.Redis, command: str) -> int:
    return int(r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def server_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def item_keys(r: redis.Redis, wq: WorkQueue) -> set[bytes]:
    return set(r.scan_iter(match=wq.keys.item("*"), count=1000))


def test_a_stream_is_stored_by_one_transaction_per_batch_aged_by_the_servers_time(r):
    wq = WorkQueue(r, "q")
    before, execs = server_ms(r), calls(r, "exec")
    out = [p for batch in wq.push_batches(b'{"n":%d}' % i for i in range(2500))
           for p in batch]
    after = server_ms(r)
    assert len(out) == 2500 and all(p.added for p in out)
    # a probe, then three batches (1,000, 1,000, 500): each one EXEC, none a push.lua call
    assert calls(r, "exec") - execs == 4
    assert r.llen(wq.keys.queue) == 2500 and len(item_keys(r, wq)) == 2500
    assert wq.stats().counters["pushed"] == 2500
    # no stamp per item: each id carries its push time, the server's clock as the client
    # read it (within the slack, which push_commit enforces)
    assert not r.exists(wq.keys.enqueued)
    times = {id_ms(p.id) for p in out}
    assert None not in times
    assert before - PUSH_STAMP_SLACK_MS <= min(times) and max(times) <= after + PUSH_STAMP_SLACK_MS
    # in line in input order (the back of the line), each with its data
    leased = wq.lease(2500)
    assert [i.data for i in leased] == [b'{"n":%d}' % i for i in range(2500)]
    assert [i.id for i in leased] == [p.id for p in out]


def test_items_of_every_length_are_stored_exactly(r):
    """The lengths in the packed commands come from a table up to LENGTH_HEADS bytes and are
    formatted past it: items on either side of it, empty ones and text, stored as given."""
    from rq_cli.core.contract.limits import LENGTH_HEADS

    sizes = [0, 1, 9, 10, 99, LENGTH_HEADS - 1, LENGTH_HEADS, LENGTH_HEADS + 1, 70_000]
    items: list[bytes | str] = [b"x" * size for size in sizes * 120]
    items[-1] = "t\u00e9xt"
    wq = WorkQueue(r, "q")
    execs = calls(r, "exec")
    ids = [p.id for batch in wq.push_batches(items) for p in batch]
    assert calls(r, "exec") - execs == 3  # a probe, then two transactions
    stored = r.mget([wq.keys.item(i) for i in ids])
    assert stored == [i.encode() if isinstance(i, str) else i for i in items]


def test_a_delayed_stream_is_packed_as_push_lua_calls_of_the_same_items(r):
    """A delay is push.lua's work: the stream's batches of plain bytes are packed as EVALSHA
    calls (bulk.py's hot path: ids cut from one urandom call, one join), stored exactly."""
    wq = WorkQueue(r, "q")
    execs, evals = calls(r, "exec"), calls(r, "evalsha")
    items = [b'{"n":%d}' % i + b"x" * (i % 50) for i in range(2500)]
    ids = [p.id for batch in wq.push_batches(items, delay=60) for p in batch]
    assert calls(r, "exec") == execs and calls(r, "evalsha") - evals == 3
    assert len(set(ids)) == 2500 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert r.mget([wq.keys.item(i) for i in ids]) == items
    assert r.zcard(wq.keys.delayed) == 2500 and r.llen(wq.keys.queue) == 0


def test_front_puts_the_stream_at_the_front_of_the_line(r):
    wq = WorkQueue(r, "q")
    wq.push([b"older"])
    list(wq.push_batches((b"%d" % i for i in range(1500)), front=True))
    leased = [i.data for i in wq.lease(1501)]
    # each batch at the front, its last item first, as push.lua puts a batch (RPUSH)
    assert leased == [b"%d" % i for i in [*range(1499, 999, -1), *range(999, -1, -1)]] + [
        b"older"]
    other = WorkQueue(r, "p")
    other.push([b"a", b"b", b"c"], front=True)  # (one push.lua call)
    assert [i.data for i in other.lease(3)] == [b"c", b"b", b"a"]


def test_text_items_and_items_with_ids_in_one_stream(r):
    """Batches of items that name their id go through push.lua, the others as transactions;
    every item is stored and reported in input order."""
    wq = WorkQueue(r, "q")

    def items() -> Iterator[bytes | str | NewItem]:
        yield from (f"text {i}" for i in range(1000))
        yield from (NewItem(b"named", f"id-{i}") for i in range(1000))
        yield from (b"bytes %d" % i for i in range(1000))

    execs = calls(r, "exec")
    out = [p for batch in wq.push_batches(items()) for p in batch]
    assert calls(r, "exec") - execs == 3  # the probe, the first and the last batch
    assert [p.id for p in out[1000:2000]] == [f"id-{i}" for i in range(1000)]
    assert all(p.added for p in out) and r.llen(wq.keys.queue) == 3000
    assert r.get(wq.keys.item(out[0].id)) == b"text 0"
    assert r.get(wq.keys.item(out[2999].id)) == b"bytes 999"
    # a stamp only for the ids that carry no push time (those given)
    assert set(r.hkeys(wq.keys.enqueued)) == {f"id-{i}".encode() for i in range(1000)}
    assert wq.stats().counters["pushed"] == 3000


def test_ids_off_by_more_than_the_slack_get_stamps_of_the_servers_time(r):
    """The ids carry the client's reading of the server's clock; push_commit.lua stamps the
    items with the server's own time when that reading is off (a clock that jumped
    meanwhile), and the stamp is the age every reader shows."""
    wq = WorkQueue(r, "q")
    conn = r.connection_pool.get_connection()
    try:
        flags = {"front": "0", "delay_ms": "0", "expire_ms": "0"}
        tx = Transactions.start(wq, conn, flags, None)
        assert tx is not None
        # a reading ten slacks behind
        wq.clock.sync(server_ms(r) - 10 * PUSH_STAMP_SLACK_MS, time.monotonic())
        before = server_ms(r)
        ids, command = tx.packed([b"a", b"b", b"c"])
        conn.send_packed_command(command)
        tx.read()  # (stored, else it raises)
        after = server_ms(r)
    finally:
        r.connection_pool.release(conn)
    assert all(id_ms(i) < before - 5 * PUSH_STAMP_SLACK_MS for i in ids)
    stamps = [int(v) for v in r.hmget(wq.keys.enqueued, ids)]
    assert all(before <= s <= after for s in stamps), (before, stamps, after)
    shown = [round(p.enqueued_at * 1000) for p in wq.peek(count=3)]
    assert sorted(shown) == sorted(stamps)


def wrong_type_after_the_first_batch(r: redis.Redis, key: str) -> Iterator[bytes]:
    """2,500 items; once the first batch is stored, ``key`` becomes a string (another
    program using the prefix), before the second batch is sent."""
    yield from (b"first %d" % i for i in range(1000))
    deadline = time.monotonic() + 10
    while r.hget("q:counters", "pushed") != b"1000" and time.monotonic() < deadline:
        time.sleep(0.005)
    r.set(key, "not ours")
    yield from (b"second %d" % i for i in range(1500))


@pytest.mark.parametrize("key", ["q:enqueued", "q:queue", "q:counters"])
def test_a_key_of_the_wrong_type_undoes_the_batch(r, key):
    wq = WorkQueue(r, "q")
    stored = []
    with pytest.raises(redis.ResponseError, match="WRONGTYPE key " + key):
        for batch in wq.push_batches(wrong_type_after_the_first_batch(r, key)):
            stored.extend(batch)
    assert [p.id for p in stored] == [p.id for p in stored[:1000]] and len(stored) == 1000
    first = {wq.keys.item(p.id).encode() for p in stored}
    # nothing of the later batches is left: no data, no stamp, no place in line
    assert item_keys(r, wq) == first
    if key != "q:enqueued":
        assert not r.exists("q:enqueued")  # (the ids carry the push time)
    if key != "q:queue":
        assert set(r.lrange("q:queue", 0, -1)) == {p.id.encode() for p in stored}
    if key != "q:counters":
        assert r.hget("q:counters", "pushed") == b"1000"
    assert r.get(key) == b"not ours"  # (and the other program's key as it left it)


def test_an_untenanted_stream_wakes_the_waiters_of_a_fair_queue(r):
    wq = WorkQueue(r, "q")
    wq.push([b"first"], tenant="a")  # the queue has had tenants: waiters block on P:wake
    assert wq.lease(1)
    r.delete(wq.keys.wake)
    list(wq.push_batches(b"%d" % i for i in range(1500)))
    assert r.llen(wq.keys.wake) == WAKE_TOKENS
