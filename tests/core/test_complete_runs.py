"""Completing a batch takes its ids out of processing as one run (unlist_all, _common.lua)
where they are one: the list left is the one an LREM per id leaves, in the same order."""

from __future__ import annotations

from typing import Any

import pytest

from rq_cli.core.contract.limits import UNPACK_CHUNK
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef


def _lease(r: Any, name: str, count: int) -> list[ItemRef]:
    """``count`` items leased by a worker of its own (one batch: one run in processing)."""
    worker = WorkQueue(r, "q", session=f"worker-{name}")
    return [ItemRef(i.id, i.session) for i in worker.lease(count)]


def _without(processing: list[bytes], ids: list[str]) -> list[bytes]:
    """What an LREM (count -1: the rightmost copy) of each id leaves."""
    left = list(processing)
    for id_ in ids:
        at = len(left) - 1 - left[::-1].index(id_.encode())
        del left[at]
    return left


def _complete(r: Any, refs: list[ItemRef], outcomes: list[str] | None = None) -> dict[str, int]:
    """Complete ``refs`` in one call, each with its outcome (default: all completed); the
    list commands it ran (calls, by name)."""
    r.config_resetstat()
    got = WorkQueue(r, "q").complete(refs)
    assert [o.outcome for o in got] == (outcomes or ["completed"] * len(refs))
    stats = r.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0)
            for name in ("lrem", "ltrim", "rpush", "lrange", "del")}


@pytest.mark.parametrize("which", ["oldest", "middle", "newest"])
def test_a_batch_completed_in_lease_order_leaves_as_an_lrem_each_does(r, which):
    WorkQueue(r, "q").push([b"%d" % n for n in range(30)])
    batches = {name: _lease(r, name, 10) for name in ("oldest", "middle", "newest")}
    before = r.lrange("q:processing", 0, -1)
    done = batches[which]
    calls = _complete(r, done)
    assert r.lrange("q:processing", 0, -1) == _without(before, [d.id for d in done])
    assert len(r.lrange("q:processing", 0, -1)) == 20
    # one run: no LREM; the run and what is right of it are cut with one LTRIM (a DEL when
    # the run is the left end), and what was right of it goes back with one RPUSH
    assert calls["lrem"] == 0 and calls["ltrim"] == (0 if which == "newest" else 1)
    assert calls["rpush"] == (0 if which == "oldest" else 1)


def test_the_whole_of_processing_as_one_run(r):
    WorkQueue(r, "q").push([b"%d" % n for n in range(5)])
    done = _lease(r, "only", 5)
    calls = _complete(r, done)
    assert not r.exists("q:processing")
    assert calls["lrem"] == 0 and calls["ltrim"] == 0


@pytest.mark.parametrize("order", ["reversed", "interleaved"])
def test_ids_that_are_not_one_run_are_taken_one_by_one(r, order):
    WorkQueue(r, "q").push([b"%d" % n for n in range(20)])
    first, second = _lease(r, "a", 10), _lease(r, "b", 10)
    before = r.lrange("q:processing", 0, -1)
    done = first[::-1] if order == "reversed" else first[:3] + second[:3]
    calls = _complete(r, done)
    assert r.lrange("q:processing", 0, -1) == _without(before, [d.id for d in done])
    assert calls["lrem"] == len(done) and calls["ltrim"] == 0


def test_a_second_copy_of_an_id_leaves_one_copy(r):
    """Two copies of an id in processing (two clients leased it at once): completing takes
    one, as an LREM does; the other stays behind, a ghost for light clean."""
    WorkQueue(r, "q").push([b"%d" % n for n in range(10)])
    done = _lease(r, "a", 10)
    r.lpush("q:processing", done[4].id)  # a second copy, left of the run
    _complete(r, done)
    assert r.lrange("q:processing", 0, -1) == [done[4].id.encode()]


def test_a_run_deeper_than_the_bound_is_taken_one_by_one(r):
    """LPOS looks at most UNPACK_CHUNK + 1 ids from the right: a run further in is unlisted
    an id at a time, and at most that many ids are moved back."""
    q = WorkQueue(r, "q")
    q.push([b"%d" % n for n in range(UNPACK_CHUNK + 10)])
    done = _lease(r, "a", 5)
    _lease(r, "b", UNPACK_CHUNK + 1)  # left of the run (newer): moved right of it
    r.rpush("q:processing", *r.lrange("q:processing", 0, UNPACK_CHUNK))
    r.ltrim("q:processing", UNPACK_CHUNK + 1, -1)
    before = r.lrange("q:processing", 0, -1)
    assert before[:5] == [d.id.encode() for d in done[::-1]]  # the run, left of the others
    calls = _complete(r, done)
    assert r.lrange("q:processing", 0, -1) == _without(before, [d.id for d in done])
    assert calls["lrem"] == 5 and calls["rpush"] == 0


def test_a_run_with_one_id_twice_and_another_missing_is_not_taken_whole(r):
    """The run must hold each id once: [b, b, a] for the ids a, b, c (c no longer in
    processing) is not their run; each is unlisted (one b stays)."""
    WorkQueue(r, "q").push([b"1", b"2", b"3"])
    a, b, c = _lease(r, "a", 3)
    r.lset("q:processing", 0, b.id)  # [c, b, a] -> [b, b, a]
    # (c, held but in no list, as a peer's complete leaves it: that peer's complete counts)
    calls = _complete(r, [a, b, c], ["completed", "completed", "missing"])
    assert r.lrange("q:processing", 0, -1) == [b.id.encode()]
    assert calls["ltrim"] == 0
