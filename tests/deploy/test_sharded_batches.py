"""push --after / --after-ok on a sharded queue (docs/DESIGN.md section 8, docs/batches.md) on
a real local Cluster of three primaries: each held item waits in its own shard for the whole
batch (not its shard's part), the client that sees every part done releases them shard by
shard, each exactly once, and clean finishes a release that a SIGKILL cut short."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from cli_helpers import Run, rq_cli_command, run_cli
from test_cluster import Cluster, cluster, nodes  # noqa: F401 (fixtures)

from rq_cli.connection.connect import connect
from rq_cli.core.operations import batchops
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import ItemRef, QueueOptions

BASE = "app:{bjobs}"
CONFIG = '[queues.jobs]\nprefix = "app:{{bjobs}}"\nurl = "{url}"\nshards = 3\n'
OPTS = QueueOptions(lease_seconds=60, grace_seconds=0)


@pytest.fixture
def rc(cluster: Cluster, nodes: list[redis.Redis]) -> Any:  # noqa: F811
    for node in nodes:  # (each test starts from an empty cluster)
        node.flushall()
    client = connect(cluster.url)
    reshard(client, BASE, 3)
    yield client
    client.close()


@pytest.fixture
def cli(rc: Any, cluster: Cluster, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rq-cli.toml").write_text(CONFIG.format(url=cluster.url))

    def cli(*args: str, **kwargs: Any) -> Run:
        return run_cli(args, url=None, home=tmp_path, **kwargs)

    return cli


def spawn(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*rq_cli_command(), *args], cwd=tmp_path,
                            env={**os.environ, "HOME": str(tmp_path)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def held(q: ShardedQueue, name: str) -> list[int]:
    """How many items each shard holds for batch ``name``."""
    return [p.client.llen(p.keys.after(name)) for p in q.shards]


def _ids_by_shard(q: ShardedQueue, per_shard: int) -> list[str]:
    """Ids that land ``per_shard`` in each shard."""
    got: dict[str, list[str]] = {p.prefix: [] for p in q.live}
    n = 0
    while any(len(v) < per_shard for v in got.values()):
        i = f"h{n}"
        n += 1
        if len(got[q.shard_for(i).prefix]) < per_shard:
            got[q.shard_for(i).prefix].append(i)
    return [i for v in got.values() for i in v]


def test_after_items_wait_for_the_whole_batch_not_their_shards_part(rc: Any) -> None:
    q = ShardedQueue(rc, BASE, OPTS, shards=3)
    batch = [r.id for r in q.push([b"%d" % n for n in range(30)], batch="b")]
    after = _ids_by_shard(q, 2)
    ok = [f"ok-{i}" for i in after]
    from rq_cli.core.types import NewItem

    q.push([NewItem(b"after", i) for i in after], after="b")
    q.push([NewItem(b"after-ok", i) for i in ok], after="b", after_ok=True)
    assert sum(held(q, "b")) == 12 and all(held(q, "b"))  # each in its own shard
    got = q.lease(100)
    assert sorted(x.id for x in got) == sorted(batch)  # the held ones are not leasable
    # every part but one finishes: nothing is released (the batch is not done)
    last = q.shard_for(got[0].id)
    rest = [x for x in got if q.shard_for(x.id) is not last]
    q.complete([ItemRef(x.id, x.session) for x in rest])
    mine = [x for x in got if q.shard_for(x.id) is last]
    q.complete([ItemRef(x.id, x.session) for x in mine[1:]])
    assert sum(held(q, "b")) == 12 and not q.lease(10)
    assert batchops.release(q, "b") == 0  # (the client's step: not done either)
    q.fail([ItemRef(mine[0].id, mine[0].session)], error="boom", dead=True)
    # the last part's own finishing step leaves them to the client that sees it all
    assert sum(held(q, "b")) == 12
    row = batchops.wait(q, "b", timeout=60)  # sees the whole batch done: releases
    assert row is not None and row["done"] and row["dead"] == 1
    assert sum(held(q, "b")) == 0
    assert sorted(x.id for x in q.lease(100)) == sorted(after)
    for i in ok:  # --after-ok: dead, reason after_failed (one batch item died)
        p = q.shard_for(i)
        info = p.client.hget(p.keys.dead_info, i)
        assert info is not None and json.loads(info)["reason"] == "after_failed", info
    for p in q.shards:  # nothing left: no list of names, no record holding items only
        assert not p.client.exists(p.keys.afters)
        assert p.client.hget(p.keys.batch("b"), "after_wide") is None
    assert batchops.release(q, "b") == 3  # again: one call per shard, nothing released
    assert q.stats().dead == 1 + len(ok)


def test_after_on_a_batch_done_already_is_released_by_the_push(rc: Any) -> None:
    q = ShardedQueue(rc, BASE, OPTS, shards=3)
    q.push([b"1"], batch="b")
    got = q.lease(1)
    q.complete([ItemRef(got[0].id, got[0].session)])
    late = [r.id for r in q.push([b"%d" % n for n in range(9)], after="b")]
    assert sum(held(q, "b")) == 0
    assert sorted(x.id for x in q.lease(20)) == sorted(late)


def test_a_push_into_the_batch_releases_what_waits_if_it_ends_done(rc: Any) -> None:
    """Workers faster than a push --batch: the batch is done when the push lets it go, and
    the push's end is the step that sees it so."""
    q = ShardedQueue(rc, BASE, OPTS, shards=3)
    q.push([b"1"], batch="b")
    waiting = [r.id for r in q.push([b"w%d" % n for n in range(6)], after="b")]
    got = q.lease(10)
    q.complete([ItemRef(x.id, x.session) for x in got])  # (a library call: no release)
    assert sum(held(q, "b")) == 6
    q.push([], batch="b")  # (a push whose items were all done by its end)
    assert sum(held(q, "b")) == 0
    assert sorted(x.id for x in q.lease(10)) == sorted(waiting)


def test_clean_finishes_a_release_a_sigkill_cut_short(rc: Any, cli: Any,
                                                      tmp_path: Path) -> None:
    """A release is atomic per shard: one SIGKILLed between shards (or anywhere) leaves
    whole shards held; clean releases them; every held item is queued exactly once."""
    from rq_cli.core.contract.limits import AFTER_BATCH

    q = ShardedQueue(rc, BASE, OPTS, shards=3)
    q.push([b"x"], batch="b")
    n = 3 * AFTER_BATCH + 30  # (more than one call's worth in each shard)
    for _ in q.push_batches((b"a" for _ in range(n)), after="b"):
        pass
    got = q.lease(1)
    q.complete([ItemRef(got[0].id, got[0].session)])  # done: nobody released yet
    assert sum(held(q, "b")) == n
    # a release killed after its first shard's first call
    first = q.shards[0]
    first.call("batch_after", {"name": "b", "verdict": "0"})
    assert 0 < sum(held(q, "b")) < n
    # and a real rq-cli wait, SIGKILLed wherever it is
    waiter = spawn(tmp_path, "wait", "jobs", "b", "--timeout", "60")
    before = sum(held(q, "b"))
    deadline = time.monotonic() + 120  # (generous: a loaded 2-core machine)
    while waiter.poll() is None and sum(held(q, "b")) == before and \
            time.monotonic() < deadline:
        time.sleep(0.005)
    # (a fast machine may let wait release everything and exit first: nothing to kill then,
    # and clean finds nothing held)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(waiter.pid, signal.SIGKILL)
    waiter.wait()
    run = cli("clean", "jobs", "--grace", "0")
    assert run.exit_code == 0, run
    assert sum(held(q, "b")) == 0
    queued = Counter(i.decode() for p in q.shards
                     for i in p.client.lrange(p.keys.queue, 0, -1))
    assert len(queued) == n and set(queued.values()) == {1}
    assert q.stats().pending == n


def test_the_batches_check_on_a_sharded_queue(cli: Any, tmp_path: Path) -> None:
    """Issue 39's check, scaled down, on a sharded queue: 60 items in b1 (3 fail for good),
    one pushed --after b1 and one --after-ok b1; wait, started first, exits 5 and says 57
    completed and 3 dead; the --after item runs only after every item of b1 has finished,
    the --after-ok one is dead, reason after_failed."""
    run = cli("push", "jobs", "--batch", "b1", "-", input="".join(f"{i}\n" for i in range(1, 61)))
    assert run.exit_code == 0, run
    assert cli("push", "jobs", "--after", "b1", "--id", "then", "1001").exit_code == 0
    assert cli("push", "jobs", "--after-ok", "b1", "--id", "then-ok", "1002").exit_code == 0
    waiter = spawn(tmp_path, "wait", "jobs", "b1", "--timeout", "300")
    done = tmp_path / "done.txt"  # each job appends its number as it ends
    script = f'read x; [ $((x % 20)) -ne 0 ] || exit 100; echo "$x" >> {done}; echo "$x"'
    worker = spawn(tmp_path, "work", "jobs", "-c", "2", "--idle-exit", "2", "--result",
                   "stdout", "--", "sh", "-c", script)
    try:
        out, err = waiter.communicate(timeout=300)
        worker.communicate(timeout=300)
    finally:
        for p in (waiter, worker):
            if p.poll() is None:
                p.kill()
    assert waiter.returncode == 5, err
    line = json.loads(out)
    assert (line["completed"], line["dead"], line["done"]) == (57, 3, True)
    # wait released them (the worker may have gone idle first: run one again)
    again = spawn(tmp_path, "work", "jobs", "--idle-exit", "1", "--", "sh", "-c", script)
    again.communicate(timeout=300)
    finished = [int(x) for x in done.read_text().split()]
    assert len(finished) == 58 and finished[-1] == 1001, finished
    dead = cli("peek", "jobs", "--id", "then-ok").one
    assert dead["state"] == "dead" and dead["dead_reason"] == "after_failed", dead
    assert len(cli("results", "jobs", "b1").json) == 57


def test_push_after_on_a_sharded_queue_refuses_what_a_plain_one_does(cli: Any) -> None:
    assert cli("push", "jobs", "--batch", "b", "1").exit_code == 0
    run = cli("push", "jobs", "--after", "nope", "x")
    assert run.exit_code == 3 and len(run.stderr.strip().splitlines()) == 1, run
    run = cli("push", "jobs", "--after", "b", "--delay", "5", "x")
    assert run.exit_code == 2 and len(run.stderr.strip().splitlines()) == 1, run
    assert cli("stats", "jobs").one["pending"] == 1  # nothing stored


def test_every_shard_follows_one_after_ok_verdict_across_a_requeue_dead(rc: Any) -> None:
    """The --after-ok verdict is recorded once: a release cut short after one shard with
    the batch's item dead, a requeue-dead that reopens the batch, the item completed (the
    batch done again, no dead item now), a second release of the rest: every shard's
    held items follow the first verdict (dead, after_failed), none is queued."""
    from rq_cli.core.types import NewItem

    q = ShardedQueue(rc, BASE, OPTS, shards=3)
    q.push([b"x"], batch="b")
    ok = _ids_by_shard(q, 2)
    q.push([NewItem(b"after-ok", i) for i in ok], after="b", after_ok=True)
    got = q.lease(1)
    q.fail([ItemRef(got[0].id, got[0].session)], error="boom", dead=True)
    assert sum(held(q, "b")) == 6  # (nobody released yet)
    first = q.shards[0]
    assert batchops.release(q, "b", only=[first]) == 1  # cut short after one shard
    assert held(q, "b")[0] == 0 and sum(held(q, "b")) == 4
    assert q.requeue_dead([got[0].id]) is not None  # the batch open again
    row = batchops.read(q, "b")
    assert row is not None and not row["done"] and row["dead"] == 0
    again = q.lease(1)
    q.complete([ItemRef(again[0].id, again[0].session)])
    row = batchops.read(q, "b")
    assert row is not None and row["done"] and row["dead"] == 0
    assert batchops.release(q, "b") == 3  # the rest, by the verdict recorded first
    assert sum(held(q, "b")) == 0 and not q.lease(10)
    for i in ok:
        p = q.shard_for(i)
        info = p.client.hget(p.keys.dead_info, i)
        assert info is not None and json.loads(info)["reason"] == "after_failed", (i, info)
    # nothing held any more: the verdict is dropped, a later round decides anew
    assert not rc.exists(f"{BASE}:batch_verdict:b")


def test_a_recorded_verdict_lives_with_the_batch(rc: Any) -> None:
    """The verdict is kept batch_ttl (a release killed before it finished leaves it for
    the next), and batch --forget drops it with the batch's other keys."""
    q = ShardedQueue(rc, BASE, QueueOptions(lease_seconds=60, grace_seconds=0,
                                            batch_ttl=3600), shards=3)
    q.push([b"x"], batch="b")
    assert batchops.verdict(q, "b") is None  # (not done: nothing recorded)
    assert not rc.exists(f"{BASE}:batch_verdict:b")
    got = q.lease(1)
    q.complete([ItemRef(got[0].id, got[0].session)])
    assert batchops.verdict(q, "b") == "0"
    assert 0 < rc.pttl(f"{BASE}:batch_verdict:b") <= 3600 * 1000
    assert batchops.forget(q, "b") >= 2
    assert not rc.exists(f"{BASE}:batch_verdict:b")
