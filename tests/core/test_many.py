"""core/fleet/many.py: the stats (and history snapshots) of many queues in one round trip per
server, measured on the wire (tests/core/test_round_trips.py's Meter); a queue's failure is
its own."""

from __future__ import annotations

from typing import Any

import redis
from test_round_trips import meter as meter  # (the fixture)

from rq_cli.core.fleet.many import run_each, stats_each
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem


def test_the_stats_of_200_queues_are_one_round_trip(meter: Any, r: redis.Redis) -> None:
    queues = [WorkQueue(meter.client, f"q{i:03d}") for i in range(200)]
    for i, wq in enumerate(queues[:20]):
        wq.push([NewItem(b"x", f"i{n}") for n in range(i + 1)])
    stats_each(queues)  # (warm: the script cached)
    got: list[Any] = []
    trips = meter.measure(lambda: got.extend(stats_each(queues)))
    assert trips.writes == 1, trips
    assert trips.names == ["EVALSHA"] * 200
    assert [s.pending for s in got] == [WorkQueue(r, f"q{i:03d}").stats().pending
                                        for i in range(200)]
    assert got[19].pending == 20 and got[20].pending == 0


def test_a_queue_that_cannot_be_read_fails_alone(r: redis.Redis) -> None:
    good, bad = WorkQueue(r, "good"), WorkQueue(r, "bad")
    good.push([NewItem(b"x", "a")])
    r.set("bad:queue", "not a list")
    got = stats_each([good, bad, good])
    assert got[0].pending == 1 and got[2].pending == 1  # type: ignore[union-attr]
    assert isinstance(got[1], redis.ResponseError)
    assert isinstance(stats_each([bad])[0], Exception)


def test_a_script_the_server_lost_is_loaded_and_sent_again(r: redis.Redis) -> None:
    queues = [WorkQueue(r, f"q{i}") for i in range(3)]
    r.script_flush()
    assert [s.pending for s in stats_each(queues)] == [0, 0, 0]  # type: ignore[union-attr]
    r.hset("q0:counters", "pushed", 1)  # (a queue with counters: its minute is written)
    replies = run_each(queues, "history", lambda q: None)
    assert [int(x) for x in replies] == [1, 0, 0], replies


def test_a_sharded_queue_is_read_by_its_own_call_beside_the_pipeline(r: redis.Redis) -> None:
    from rq_cli.core.sharding.resharding import reshard
    from rq_cli.core.sharding.sharded import ShardedQueue

    reshard(r, "sj", 2)
    sq = ShardedQueue(r, "sj")
    sq.push([NewItem(b"x", f"i{n}") for n in range(5)])
    plain = WorkQueue(r, "plain")
    plain.push([NewItem(b"x", "a")])
    got = stats_each([sq, plain])
    assert [s.pending for s in got] == [5, 1]  # type: ignore[union-attr]


def test_more_queues_than_a_pipeline_carries_are_sent_in_bounded_pipelines(
        meter: Any, r: redis.Redis) -> None:
    from rq_cli.core.contract.limits import PIPELINE_QUEUES

    queues = [WorkQueue(meter.client, f"q{i:04d}") for i in range(PIPELINE_QUEUES + 1)]
    stats_each(queues)
    trips = meter.measure(lambda: stats_each(queues))
    assert trips.writes == 2 and len(trips.names) == PIPELINE_QUEUES + 1, trips.writes
