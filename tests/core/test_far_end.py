"""Settling the newest leases of a long processing list (issue 42): complete, fail and
cancel take an id out of processing with one LREM from the end it is likely near (its lease
deadline against the two ends', lua/_common.lua ``near_end``), so no call scans the list
once per id from its far end.

The checks read the server's SLOWLOG, not the wall time: the threshold is 400 ms, about six
times the slowest such call measured on a loaded 2-core machine (a fail of 1,000 ids: 20-70
ms, most of it fail's own work per item, whatever the list's length), and about a quarter of
what searching from the far end took there (1.3-1.5 s: 1,000 scans of 60,000 entries), so
a loaded machine cannot make either look like the other.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis

from rq_cli.core.contract.limits import UNLIST_SHORT
from rq_cli.core.queue import WorkQueue

IN_FLIGHT = 60_000
SETTLED = 1000
SLOW_US = 400_000


def leased_in_order(r: redis.Redis) -> tuple[WorkQueue, list[Any]]:
    q = WorkQueue(r, "q")
    for _ in q.push_batches(b"x" for _ in range(IN_FLIGHT)):
        pass
    leased: list[Any] = []
    while len(leased) < IN_FLIGHT:
        leased += q.lease(1000, lease_seconds=3600)
    assert r.llen(q.keys.processing) == IN_FLIGHT > UNLIST_SHORT
    return q, leased


def slow_calls(r: redis.Redis) -> list[Any]:
    return [e for e in r.slowlog_get(128) if int(e["duration"]) >= SLOW_US]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["complete", "fail", "cancel"])
def test_settling_the_newest_of_a_long_list_scans_from_their_end(r, how):
    q, leased = leased_in_order(r)
    newest = [i.id for i in leased[-SETTLED:]]
    r.config_set("slowlog-log-slower-than", SLOW_US)
    r.slowlog_reset()
    if how == "complete":
        outcomes = q.complete(newest)
    elif how == "fail":
        outcomes = q.fail(newest, error="boom", retry_in=0)
    else:
        outcomes = q.cancel(newest)
    assert len(outcomes) == SETTLED and len({o.outcome for o in outcomes}) == 1, outcomes[:3]
    assert slow_calls(r) == []
    # each left processing, the others stay in lease order
    assert r.llen(q.keys.processing) == IN_FLIGHT - SETTLED
    assert r.lrange(q.keys.processing, 0, 2) == [i.id.encode() for i in
                                                 reversed(leased[-SETTLED - 3:-SETTLED])]
    # the oldest still leave from their end, alike
    oldest = [i.id for i in leased[:SETTLED]]
    r.slowlog_reset()
    assert {o.outcome for o in q.complete(oldest)} == {"completed"}
    assert slow_calls(r) == [] and r.llen(q.keys.processing) == IN_FLIGHT - 2 * SETTLED
