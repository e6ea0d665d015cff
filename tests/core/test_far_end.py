"""Settling 1,000 ids at either end of a long processing list (issue 42): no script call
over 20 ms of server time.

Two things keep each call short. complete, fail and cancel take an id out of processing with
one LREM from the end it is likely near (its lease deadline against the two ends',
lua/_common.lua ``near_end``), so no call scans the list once per id from its far end. And a
request of many ids is cut into calls of at most SETTLE_CHUNK (complete) or FAIL_CHUNK (fail,
cancel) ids (core/contract/limits.py), sent in one pipeline, so a call's work is bounded whatever
the request's size.

How the checks read time: the server's own clocks, never the client's wall time
(tests/server_time.py). A call's SLOWLOG duration is wall time on the server, which a loaded
2-core machine stretches whenever it deschedules the server mid-call; so the 20 ms budget is
checked on the server's CPU time (INFO cpu, main thread) per script call, which waiting does
not inflate, with the calls' sizes (each at most its chunk of ids: the call count); the
SLOWLOG's longest is only shown (a call of 4 ms CPU read 366 ms there beside a benchmark
running at nice -10). ``python -m bench.farend`` measures the calls' SLOWLOG times at
1,000,000 in flight (docs/performance.md).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import redis
from server_time import Spent, spent

from rq_cli.core.contract.limits import FAIL_CHUNK, SETTLE_CHUNK, UNLIST_SHORT
from rq_cli.core.queue import WorkQueue

IN_FLIGHT = 60_000
SETTLED = 1000
BUDGET_US = 20_000


def leased_in_order(r: redis.Redis) -> tuple[WorkQueue, list[Any]]:
    q = WorkQueue(r, "q")
    for _ in q.push_batches(b"x" for _ in range(IN_FLIGHT)):
        pass
    leased: list[Any] = []
    while len(leased) < IN_FLIGHT:
        leased += q.lease(1000, lease_seconds=3600)
    assert r.llen(q.keys.processing) == IN_FLIGHT > UNLIST_SHORT
    return q, leased


def assert_bounded(cost: Spent[Any], chunk: int) -> None:
    # each call carries a chunk of the ids at most...
    assert cost.calls >= math.ceil(SETTLED / chunk), cost
    # ... and costs the server under the budget
    assert cost.cpu_us / cost.calls <= BUDGET_US, cost


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["complete", "fail", "cancel"])
def test_settling_either_end_of_a_long_list_keeps_every_call_short(r, how):
    q, leased = leased_in_order(r)
    newest = [i.id for i in leased[-SETTLED:]]
    if how == "complete":
        settle, chunk = lambda: q.complete(newest), SETTLE_CHUNK
    elif how == "fail":
        settle, chunk = lambda: q.fail(newest, error="boom", retry_in=0), FAIL_CHUNK
    else:
        settle, chunk = lambda: q.cancel(newest), FAIL_CHUNK
    cost = spent(r, settle)
    outcomes = cost.result
    # every id settled, each reported once, in the order given
    assert [o.id for o in outcomes] == newest
    assert {o.outcome for o in outcomes} == {{"complete": "completed", "fail": "retried",
                                              "cancel": "dead"}[how]}, outcomes[:3]
    assert_bounded(cost, chunk)
    # the counts exact across the calls
    counters = r.hgetall(q.keys.counters)
    counted = {"complete": [b"completed"], "fail": [b"failed", b"retried"],
               "cancel": [b"dead"]}[how]
    assert [int(counters[c]) for c in counted] == [SETTLED] * len(counted), counters
    # each left processing, the others stay in lease order
    assert r.llen(q.keys.processing) == IN_FLIGHT - SETTLED
    assert r.lrange(q.keys.processing, 0, 2) == [i.id.encode() for i in
                                                 reversed(leased[-SETTLED - 3:-SETTLED])]
    # the oldest alike, from their end
    oldest = [i.id for i in leased[:SETTLED]]
    cost = spent(r, lambda: q.complete(oldest))
    assert {o.outcome for o in cost.result} == {"completed"} and len(cost.result) == SETTLED
    assert_bounded(cost, SETTLE_CHUNK)
    assert r.llen(q.keys.processing) == IN_FLIGHT - 2 * SETTLED



@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["extend", "retake", "release"])
def test_holding_calls_at_the_far_end_of_a_long_list_keep_every_call_short(r, how):
    # extend, retake and release of the newest leases (the far end from where release's
    # LREM looked before): cut into calls of their chunk, each under the budget
    q, leased = leased_in_order(r)
    newest = [i.id for i in leased[-SETTLED:]]
    chunk = {"extend": SETTLE_CHUNK, "retake": SETTLE_CHUNK, "release": FAIL_CHUNK}[how]
    cost = spent(r, lambda: getattr(q, how)(newest))
    assert [o.id for o in cost.result] == newest
    assert {o.outcome for o in cost.result} == {"returned" if how == "release"
                                                else "extended"}, cost.result[:3]
    assert_bounded(cost, chunk)
    if how == "release":  # each back at the front of the line, out of processing, once
        assert r.llen(q.keys.processing) == IN_FLIGHT - SETTLED
        assert r.llen(q.keys.queue) == SETTLED
        assert r.lrange(q.keys.processing, 0, 2) == [i.id.encode() for i in
                                                     reversed(leased[-SETTLED - 3:-SETTLED])]


@pytest.mark.timeout(300)
def test_complete_and_lease_of_many_at_the_far_end_keeps_every_call_short(r):
    q, leased = leased_in_order(r)
    newest = [i.id for i in leased[-SETTLED:]]
    q.push([b"next"])
    cost = spent(r, lambda: q.complete_and_lease(newest, 1))
    done, got = cost.result
    assert [o.id for o in done] == newest and {o.outcome for o in done} == {"completed"}
    assert [i.data for i in got] == [b"next"]
    assert_bounded(cost, SETTLE_CHUNK)
    assert int(r.hget(q.keys.counters, "completed")) == SETTLED
    assert r.llen(q.keys.processing) == IN_FLIGHT - SETTLED + 1
