"""A console asks a real ``rq-cli work`` to drain or stop through its control key
(rq_cli/core/operations/control.py): the worker logs who asked and does as a first (drain) or second
(stop) SIGTERM would."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from test_cli_work import log, outcomes, start
from waiting import wait_for

from rq_cli.core.codes import Ask
from rq_cli.core.contract.keys import Keys
from rq_cli.core.operations.control import ask_worker, take_asks
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytestmark = pytest.mark.timeout(60)


def holder_session(wq: WorkQueue) -> str:
    holders = wait_for(lambda: [h for h in wq.holders() if h.live])
    return str(holders[0].session)


def test_asked_to_drain_it_finishes_its_item_logs_who_asked_and_exits_0(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "running"), NewItem(b"{}", "waiting")])
    proc = start(server_url, "w", "--", "sh", "-c", f"touch {tmp_path}/$RQ_ITEM_ID; sleep 1")
    wait_for(lambda: (tmp_path / "running").exists())
    ask_worker(wq, holder_session(wq), Ask.DRAIN, "alice@laptop")
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert outcomes(err) == {"running": "completed"}
    assert [i.id for i in wq.peek("pending")] == ["waiting"]  # not leased after the ask
    (asked,) = [e for e in log(err) if e.get("asked_by")]
    assert asked == {"event": "draining", "ask": "drain", "asked_by": "alice@laptop",
                     "running": 1}
    assert len(set(r.scan_iter("w:control:*"))) == 1  # left to expire (10 minutes)


def test_asked_to_stop_it_stops_its_commands_and_puts_their_items_back_at_once(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "i0")])
    proc = start(server_url, "w", "--lease", "300", "--grace", "0.5",
                 "--", "sh", "-c", f"touch {tmp_path}/$RQ_ITEM_ID; sleep 30")
    wait_for(lambda: (tmp_path / "i0").exists())
    session = holder_session(wq)
    started = time.monotonic()
    ask_worker(wq, session, Ask.STOP, "bob@phone")
    _, err = proc.communicate(timeout=20)
    assert time.monotonic() - started < 10  # not the command's 30 s
    assert proc.returncode == 0, err
    assert outcomes(err) == {"i0": "returned"}
    stats = wq.stats()
    assert (stats.pending, stats.processing) == (1, 0)  # back in line now, not in 300 s
    assert [e["asked_by"] for e in log(err) if e.get("event") == "stopping"] == ["bob@phone"]
    assert len([e for e in log(err) if e.get("asked_by")]) == 1  # acted on once


def test_an_ask_expires_names_its_asker_and_a_stop_outranks_a_drain(r: redis.Redis) -> None:
    a, b = WorkQueue(r, "a"), WorkQueue(r, "b")
    ask_worker(a, "h:1:x", Ask.DRAIN, "alice@laptop", ttl=30)
    ask_worker(b, "h:1:x", Ask.STOP, "bob@phone")
    assert 0 < r.ttl(Keys("a").control("h:1:x")) <= 30
    assert take_asks([a, b], "h:2:y") is None  # another session's keys are not its own
    seen: dict[str, bytes] = {}
    asked = take_asks([a, b], "h:1:x", seen)
    assert asked is not None and (asked.ask, asked.by) == (Ask.STOP, "bob@phone")
    assert take_asks([a, b], "h:1:x", seen) is None  # seen: not again
    ask_worker(a, "h:1:x", Ask.DRAIN, "alice@laptop")  # a new ask (its id differs)
    again = take_asks([a, b], "h:1:x", seen)
    assert again is not None and again.ask == Ask.DRAIN
    r.set(Keys("a").control("h:1:x"), b"not json")
    assert take_asks([a], "h:1:x", seen) is None


def test_the_control_key_cannot_be_another_queues_key() -> None:
    # a session reads <host>:<pid>:<tail>; its key's last segment is a digest, never a
    # fixed key's name (a worker --name queue would otherwise spell a queue's list)
    key = Keys("w").control("host:1:queue")
    assert key.startswith("w:control:") and ":" not in key[len("w:control:"):]
    assert len(key.rsplit(":", 1)[1]) == 16


def test_a_sharded_queues_holder_is_asked_on_the_key_its_worker_reads(r: redis.Redis) -> None:
    from rq_cli.core.sharding.resharding import reshard
    from rq_cli.core.sharding.sharded import ShardedQueue

    reshard(r, "sj", 2)
    sq = ShardedQueue(r, "sj")
    sq.push([NewItem(b"{}", f"i{n}") for n in range(4)])
    assert len(sq.lease(4, lease_seconds=60)) == 4
    (holder,) = sq.holders()  # one row for the session, over both shards
    ask_worker(sq, str(holder.session), Ask.STOP, "carol@desk")
    asked = take_asks([sq], sq.session)
    assert asked is not None and (asked.ask, asked.by) == (Ask.STOP, "carol@desk")
