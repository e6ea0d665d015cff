"""The one-item paths of the engine (``complete_one`` in _common.lua, and lease.lua's path for
one item on a queue with none of the rare keys) against the general loop they shorten.

The same steps run on two queues with the same session and clock: queue ``one`` is quiet, so
a lease of one item and a complete of one pair take the short paths; queue ``loop`` holds one
rare key that changes nothing (an unrelated field of ``P:errors``), so every call takes the
general loop. The outcomes, the items leased and every key left must be the same. The steps
cover each case the short paths hand back to the loop: an id with no data, a second copy of a
held id, a peer's lease, an item out of attempts, and the completes that are not "completed".
"""

from __future__ import annotations

from typing import Any

import pytest

from rq_cli.core.contract.fields import LEASE, carried
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem, QueueOptions

NOW = 1_700_000_000_000
SESSION = "s-one-at-a-time"
#: the unrelated field that makes queue ``loop`` take the general loop
UNRELATED = "not-an-item"


def _steps(q: WorkQueue, r: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """Run the steps on ``q``: what each returned (outcomes and items, as plain values), and
    the queue's keys after each."""
    k = q.keys
    seen: list[Any] = []
    states: list[dict[str, Any]] = []

    def lease(at: int) -> list[Any]:
        got = q.lease(1, now_ms=NOW + at)
        seen.append([(i.id, i.data, i.attempt) for i in got])
        states.append(_state(r, q.prefix))
        return got

    def done(refs: list[Any], at: int) -> list[Any]:
        outcomes, got = q.complete_and_lease(refs, 1, now_ms=NOW + at)
        seen.append(([o.outcome for o in outcomes], [(i.id, i.data, i.attempt) for i in got]))
        states.append(_state(r, q.prefix))
        return got

    q.push([NewItem(b"%d" % n, f"i{n}") for n in range(8)], now_ms=NOW)
    (a,) = lease(1)  # i0: a plain item
    r.rpush(k.queue, "ghost")  # an id with no data, next in line
    (b,) = done([ItemRef(a.id, a.session)], 2)  # completes i0; the ghost is dropped; i1
    r.rpush(k.queue, b.id)  # a second copy of the held i1, next in line
    (c,) = done([ItemRef(b.id, "another-session")], 3)  # conflict; the copy is dropped; i2
    # a peer holds i3 (not in processing), by the lease key of the layout's generation
    peer_key = k.leased_by_session("i3") if q.options.layout == "v0.1" else k.lease("i3")
    r.set(peer_key, "peer", px=60_000)
    # completes i2; i3 goes back, to the loop, which puts it in processing; i4
    (d,) = done([ItemRef(c.id, c.session)], 4)
    (e,) = done([ItemRef(d.id, "")], 5)  # completes i4 without a session; i5
    done(["i7", "nope"], 6)  # two pairs (the loop, on both queues): not leased, missing; i6
    done(["i0"], 7)  # missing: completed before; i7
    done(["i1"], 8)  # completes i1 (no session given: the conflict above had one)
    r.rpush(k.queue, "i3")  # the peer's item in line again, its lease still held
    done([ItemRef(e.id, e.session)], 9)  # completes i5; i3 is dropped (in processing)
    done(["i8"], 10)  # missing (not pushed yet)
    q.push([NewItem(b"8", "i8"), NewItem(b"9", "i9")], now_ms=NOW)
    done(["i8"], 11)  # not leased: a pending item stays as it is; i8 leased
    # the last steps make the queue loud (a dead letter): the loop from then on, on both
    r.hset(k.attempts, "i9", 5)  # i9 has used its attempts (max 5): dead-lettered
    lease(12)
    done(["i9"], 13)  # dead
    return seen, states


def _state(r: Any, prefix: str) -> dict[str, Any]:
    """Every key of queue ``prefix``: its type and value (TTLs as whether they are set)."""
    out: dict[str, Any] = {}
    for key in r.scan_iter(match=f"{prefix}:*", count=1000):
        name = key.decode()[len(prefix):]
        kind = r.type(key).decode()
        if kind == "string":
            value: Any = (r.get(key), r.pttl(key) > 0)
        elif kind == "list":
            value = r.lrange(key, 0, -1)
        elif kind == "hash":
            value = {f: v for f, v in r.hgetall(key).items() if f != UNRELATED.encode()}
            if not value:
                continue  # (only the unrelated field)
        elif kind == "zset":
            value = r.zrange(key, 0, -1, withscores=True)
        else:
            value = kind
        out[name] = (kind, value)
    return out


@pytest.mark.parametrize("layout", ["compat", "v0.3", "v0.1"])
def test_one_item_paths_leave_what_the_loop_leaves(r, layout):
    options = QueueOptions(layout=layout)
    one = WorkQueue(r, "one", options, session=SESSION)
    loop = WorkQueue(r, "loop", options, session=SESSION)
    r.hset(loop.keys.errors, UNRELATED, "x")  # a rare key: no call of `loop` is quiet
    (seen_one, states_one), (seen_loop, states_loop) = _steps(one, r), _steps(loop, r)
    assert seen_one == seen_loop
    for step, (state_one, state_loop) in enumerate(zip(states_one, states_loop, strict=True)):
        assert (step, state_one) == (step, state_loop)
    # (the steps reached each case: checked on one queue)
    assert seen_one == [
        [("i0", b"0", 1)],
        (["completed"], [("i1", b"1", 1)]),
        (["conflict"], [("i2", b"2", 1)]),
        (["completed"], [("i4", b"4", 1)]),
        (["completed"], [("i5", b"5", 1)]),
        (["not_leased", "missing"], [("i6", b"6", 1)]),
        (["missing"], [("i7", b"7", 1)]),
        (["completed"], []),
        (["completed"], []),
        (["missing"], []),
        (["not_leased"], [("i8", b"8", 1)]),
        [],
        (["already_dead"], []),
    ]
    last = states_one[-1]
    assert last[":dead"][1] == [(b"i9", float(NOW + 12))]
    assert last[":processing"][1] == [b"i8", b"i7", b"i6", b"i3"]
    assert last[":holders"][1] == {i: SESSION.encode() for i in (b"i6", b"i7", b"i8")}
    assert last[":counters"][1][b"completed"] == b"5"


def test_one_item_lease_takes_the_short_path(r):
    """On a quiet queue, a worker's complete-and-lease of one item takes lease.lua's short
    path: it reads the item's attempts with an HGET, where the loop makes an HMGET (the
    outcomes are the same: the test above)."""
    q = WorkQueue(r, "short", session=SESSION)
    q.push([b"1", b"2", b"3"])
    (item,) = q.lease()
    r.config_resetstat()
    outcomes, leased = q.complete_and_lease([ItemRef(item.id, item.session)], 1)
    assert [o.outcome for o in outcomes] == ["completed"] and len(leased) == 1
    stats = r.info("commandstats")
    assert stats["cmdstat_hget"]["calls"] >= 1
    assert "cmdstat_hmget" not in stats
    r.hset(q.keys.errors, UNRELATED, "x")  # no longer quiet: the loop
    r.config_resetstat()
    q.complete_and_lease([ItemRef(leased[0].id, leased[0].session)], 1)
    # (an HMGET of P:attempts and one of P:holders (a first attempt has only its holder
    # entry), one per per-item field lease carries: core/contract/fields.py; and the read of the
    # queue's fleet-wide limits, P:limits, made where a rare key exists)
    assert r.info("commandstats")["cmdstat_hmget"]["calls"] == 2 + len(carried(LEASE)) + 1
