"""rq_cli.core.history against a real server: snapshots written once per bucket however many
writers, by the history script and by clean (not a dry run), trimmed past 7 days / 90 days,
read as deltas (gaps, a counter reset, hourly buckets); and a worker that snapshots."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rq_cli.core import history
from rq_cli.core.contract.limits import HISTORY_HOURS, HISTORY_MINUTES, MAX_SINCE
from rq_cli.core.history import read_history, snapshot
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import UsageError

MIN = 60_000
T0 = 1_800_000_000_000 - 1_800_000_000_000 % 3_600_000  # an hour's start (2027)


@pytest.fixture
def q(r):  # type: ignore[no-untyped-def]
    return WorkQueue(r, "jobs", session="worker-a")


def counts(q: WorkQueue, pushed: int = 0, completed: int = 0, failed: int = 0,
           dead: int = 0, requeued: int = 0) -> None:
    """Set the counters (as the scripts count them)."""
    q.client.hset(q.keys.counters, mapping={"pushed": pushed, "completed": completed,
                                            "failed": failed, "dead": dead,
                                            "requeued": requeued})


def since_t0(r, key: str = "jobs:history", size: int = MIN) -> list[bytes]:  # type: ignore[no-untyped-def]
    """The snapshots from T0's bucket on (a push snapshots the present's too: before T0)."""
    return list(r.zrangebyscore(key, T0 // size, "+inf"))


def test_each_bucket_is_written_once_whoever_writes(q, r) -> None:  # type: ignore[no-untyped-def]
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    others = [WorkQueue(r, "jobs", session=f"w{k}") for k in range(3)]
    assert snapshot(q, now_ms=T0 + 1000) is True
    q.push([NewItem(b"3", "c")])
    # later in the same minute, other writers: nothing changes
    assert [snapshot(w, now_ms=T0 + 2000 + k) for k, w in enumerate(others)] == [False] * 3
    assert since_t0(r) == [f"{T0 // MIN}:2:0:0:0:0".encode()]
    assert since_t0(r, "jobs:history_hourly", 3_600_000) == \
        [f"{T0 // 3_600_000}:2:0:0:0:0".encode()]
    # the next minute: a new snapshot; the hour's stays the first one
    assert snapshot(others[0], now_ms=T0 + MIN + 5) is True
    assert len(since_t0(r)) == 2 and len(since_t0(r, "jobs:history_hourly", 3_600_000)) == 1


def test_clean_snapshots_but_not_a_dry_run(q, r) -> None:  # type: ignore[no-untyped-def]
    q.push([NewItem(b"1", "a")])
    q.clean(dry_run=True, now_ms=T0)
    assert since_t0(r) == []
    q.clean(now_ms=T0)
    q.clean(now_ms=T0 + 10)
    assert since_t0(r) == [f"{T0 // MIN}:1:0:0:0:0".encode()]


def test_a_queue_that_counted_nothing_gets_no_history(q, r) -> None:  # type: ignore[no-untyped-def]
    assert snapshot(q, now_ms=T0) is False
    q.clean(now_ms=T0)
    assert list(r.scan_iter(match="jobs:*")) == []


def test_old_snapshots_are_trimmed(q, r) -> None:  # type: ignore[no-untyped-def]
    counts(q, pushed=1)
    snapshot(q, now_ms=T0)
    snapshot(q, now_ms=T0 + MIN)
    # 7 days and a minute later: the first minute falls out, the second is just kept
    snapshot(q, now_ms=T0 + (HISTORY_MINUTES + 1) * MIN)
    assert [int(s) for _, s in r.zrange("jobs:history", 0, -1, withscores=True)] == [
        T0 // MIN + 1, T0 // MIN + HISTORY_MINUTES + 1]
    snapshot(q, now_ms=T0 + (HISTORY_HOURS + 1) * 3_600_000)
    hour = T0 // 3_600_000  # the first hour falls out; the one 7 days later is kept
    assert [int(s) for _, s in r.zrange("jobs:history_hourly", 0, -1, withscores=True)] == [
        hour + HISTORY_MINUTES // 60, hour + HISTORY_HOURS + 1]


def test_read_as_deltas_with_gaps_and_resets(q) -> None:  # type: ignore[no-untyped-def]
    assert read_history(q, 3600, now_ms=T0) == []  # no snapshot yet: no history
    counts(q, pushed=10)
    snapshot(q, now_ms=T0 + 100)
    counts(q, pushed=25, completed=8, failed=2)
    snapshot(q, now_ms=T0 + MIN + 100)
    counts(q, pushed=30, completed=20, failed=3, dead=1, requeued=4)
    snapshot(q, now_ms=T0 + 4 * MIN)  # minutes 2 and 3: nobody snapshotted
    counts(q, pushed=2)  # purge --state all dropped the counters, then 2 were pushed
    got = read_history(q, 3600, now_ms=T0 + 4 * MIN + 30_000)
    assert [(b.at, b.seconds, b.deltas) for b in got] == [
        (T0 / 1000, 60.0, {"pushed": 15, "completed": 8, "failed": 2, "dead": 0,
                           "requeued": 0}),
        ((T0 + MIN) / 1000, 180.0, {"pushed": 5, "completed": 12, "failed": 1, "dead": 1,
                                    "requeued": 4}),
        ((T0 + 4 * MIN) / 1000, 30.0, {"pushed": 2, "completed": 0, "failed": 0, "dead": 0,
                                       "requeued": 0})]
    # since: only the buckets that start in it
    assert [b.at for b in read_history(q, 60, now_ms=T0 + 4 * MIN + 30_000)] == \
        [(T0 + 4 * MIN) / 1000]
    # past 7 days: per hour
    hourly = read_history(q, 8 * 86400, now_ms=T0 + 4 * MIN + 30_000)
    assert [(b.at, b.deltas["pushed"]) for b in hourly] == [(T0 / 1000, 2)]
    for bad in (0, -1, MAX_SINCE + 1):
        with pytest.raises(UsageError, match="since"):
            read_history(q, bad)


def test_paging_reads_every_snapshot(q, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(history, "HISTORY_PAGE", 3)
    for k in range(8):
        counts(q, pushed=k * 2)
        snapshot(q, now_ms=T0 + k * MIN)
    got = read_history(q, 3600, now_ms=T0 + 8 * MIN)
    assert len(got) == 8 and all(b.deltas["pushed"] == 2 for b in got[:-1])


def test_a_worker_snapshots_its_queues(server_url, r) -> None:  # type: ignore[no-untyped-def]
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"1", "a")])
    r.delete("w:history", "w:history_hourly")  # (the push recorded its minute: gone)
    first = int(r.time()[0]) // 60
    proc = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url,
                           "work", "w", "--idle-exit", "0.2", "--", "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    last = int(r.time()[0]) // 60
    # one bucket a minute, in the minutes the worker ran (two where it ran at a minute's turn)
    minutes = [int(m) for _, m in r.zrange("w:history", 0, -1, withscores=True)]
    assert minutes and set(minutes) <= set(range(first, last + 1)) and \
        len(set(minutes)) == len(minutes), (minutes, first, last)
    assert 1 <= r.zcard("w:history_hourly") <= len(minutes)
