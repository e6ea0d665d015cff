"""Issue 10, "states and messages that mislead": what complete/fail/extend/push/requeue-dead
and lease do with ids that are dead, pending and never leased, or shared by a live and a dead
item, and what they say about it."""

from __future__ import annotations

import json

from redis_work_queue import Item, KeyPrefix
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def _kill(cli, queue: str, item_id: str, data: str = '{"a":1}') -> None:
    """Push, lease and dead-letter item_id."""
    assert cli("push", queue, "--id", item_id, data).exit_code == 0
    assert cli("lease", queue).one["id"] == item_id
    assert cli("fail", queue, item_id, "--dead", "--error", "boom").one["outcome"] == "dead"


# -- an id names one item at a time: live or dead ------------------------------------------
def test_push_of_a_dead_id_is_refused_and_the_dead_item_is_untouched(cli, r):
    _kill(cli, "dq", "job-1")
    before = cli("peek", "dq", "--state", "dead").one
    run = cli("push", "dq", "--id", "job-1", '{"a":2}')
    assert run.exit_code == 0
    assert run.one == {"id": "job-1", "added": False, "reason": "dead"}
    assert r.get("dq:item:job-1") is None  # nothing live was made
    assert cli("peek", "dq", "--state", "dead").one == before  # same data, times, reason
    # requeue-dead frees the id, then a push of it is a duplicate of the live item
    assert cli("requeue-dead", "dq", "job-1").one["requeued"] == 1
    assert cli("push", "dq", "--id", "job-1", "{}").one["reason"] == "duplicate"
    assert r.get("dq:item:job-1") == b'{"a":1}'


def test_requeue_dead_of_an_id_that_a_peer_made_live_says_so(cli, r):
    _kill(cli, "dq", "job-1")
    PeerQueue(KeyPrefix("dq")).add_item(r, Item(b'"peer"', id="job-1"))  # peers know no dead
    run = cli("requeue-dead", "dq", "job-1")
    assert run.exit_code == 3
    assert run.one["skipped"] == 1
    assert len(run.stderr.strip().splitlines()) == 1
    assert "live item" in run.stderr and "same id" in run.stderr
    assert "none of the" not in run.stderr
    assert r.get("dq:dead_item:job-1") == b'{"a":1}'  # still dead, data kept
    assert r.get("dq:item:job-1") == b'"peer"'


# -- complete / fail / extend on a dead id -------------------------------------------------
def test_complete_fail_extend_on_a_dead_id_say_it_is_dead(cli, r):
    _kill(cli, "dq", "job-1")
    counters = dict(WorkQueue(r, "dq").stats().counters)
    for verb in ("complete", "fail", "extend"):
        run = cli(verb, "dq", "job-1")
        assert run.exit_code == 3, (verb, run)
        assert run.one["outcome"] == "already_dead"
        assert len(run.stderr.strip().splitlines()) == 1
        assert "dead-lettered" in run.stderr and "requeue-dead" in run.stderr
        assert "never pushed" not in run.stderr
    assert r.get("dq:dead_item:job-1") == b'{"a":1}'
    assert dict(WorkQueue(r, "dq").stats().counters) == counters  # nothing counted


# -- a pending item that no worker ever leased ---------------------------------------------
def test_complete_fail_extend_leave_a_never_leased_item_alone(cli, r):
    cli("push", "q", "--id", "p1", '{"b":1}')
    for verb in ("complete", "fail", "extend"):
        run = cli(verb, "q", "p1")
        assert run.exit_code == 3, (verb, run)
        assert run.one["outcome"] == "not_leased"
        assert len(run.stderr.strip().splitlines()) == 1
        assert "never leased" in run.stderr
        assert "lost" not in run.stderr
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.processing, stats.dead) == (1, 0, 0)
    assert stats.counters.get("failed", 0) == 0 and stats.counters.get("retried", 0) == 0
    assert stats.counters.get("completed", 0) == 0
    assert r.get("q:item:p1") == b'{"b":1}'
    # once leased, all three work as before
    cli("lease", "q")
    assert cli("extend", "q", "p1").one["outcome"] == "extended"
    assert cli("complete", "q", "p1").one["outcome"] == "completed"


def test_a_never_leased_delayed_item_is_left_alone_too(cli, r):
    cli("push", "q", "--id", "later", "--delay", "100", "{}")
    assert cli("complete", "q", "later").one["outcome"] == "not_leased"
    assert r.zscore("q:delayed", "later") is not None


def test_a_late_worker_still_completes_an_item_clean_put_back(cli, r):
    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q", "--lease", "0.05").one
    import time

    time.sleep(0.1)
    WorkQueue(r, "q").clean(grace_seconds=0)  # back in line, leased before: attempts 1
    assert WorkQueue(r, "q").stats().pending == 1
    run = cli("complete", "q", "-", input=json.dumps(leased) + "\n")
    assert run.exit_code == 0 and run.one["outcome"] == "completed"
    assert WorkQueue(r, "q").stats().pending == 0


def test_an_item_a_peer_leased_completes(cli, r):
    peer = PeerQueue(KeyPrefix("pq"))
    peer.add_item(r, Item(b'"x"', id="x"))
    assert peer.lease(r, 30, block=False).id() == "x"  # no attempts recorded by a peer
    assert cli("complete", "pq", "x").one["outcome"] == "completed"


# -- lease --------------------------------------------------------------------------------
def test_at_most_once_prints_no_lease(cli, r):
    cli("push", "q", "--id", "a", "{}")
    run = cli("lease", "q", "--at-most-once")
    assert run.one == {"queue": "q", "id": "a", "data": {}, "attempt": 1}
    assert r.get("q:item:a") is None


def test_lease_on_a_paused_queue_says_paused(cli):
    cli("push", "q", "{}")
    cli("pause", "q")
    run = cli("lease", "q")
    assert run.exit_code == 3
    assert "paused" in run.stderr and "resume" in run.stderr
    assert "empty" not in run.stderr
    cli("resume", "q")
    assert cli("lease", "q").exit_code == 0
