"""A settle cut into calls sent in one pipeline, of which the server refuses some: the
calls that ran are reported, exactly, and the error names the items not done
(errors.PartlyDone). The refusal is a real one: the server's maxmemory, reached by the
error texts the first calls of a fail store (each call is refused whole, at its start)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import redis

from rq_cli.core.contract.limits import FAIL_CHUNK
from rq_cli.core.queue import WorkQueue
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import ExitCode, PartlyDone

ITEMS = 10 * FAIL_CHUNK
ERROR = "e" * 20_000  # (each call stores FAIL_CHUNK of these: 2 MB)


def test_a_refused_call_in_a_pipelined_fail_reports_exactly_what_was_done(r):
    if int(str(r.info("server")["redis_version"]).split(".")[0]) < 7:
        # (before Redis 7 a script is checked against maxmemory only at its first deny-oom
        # write, and fail's first write, an LREM, is none: no call is refused)
        pytest.skip("this server refuses no script call at maxmemory")
    q = WorkQueue(r, "q")
    q.push([f"x{i}".encode() for i in range(ITEMS)])
    ids = [i.id for i in q.lease(ITEMS, lease_seconds=3600)]
    used = int(r.info("memory")["used_memory"])
    # room for the first two calls' errors (each starts under the limit), not a third's
    r.config_set("maxmemory", used + 3 * 1024 * 1024)
    try:
        with pytest.raises(PartlyDone) as caught:
            q.fail(ids, error=ERROR, retry_in=3600)
    finally:
        r.config_set("maxmemory", 0)
    exc = caught.value
    assert exc.exit_code == ExitCode.UNAVAILABLE
    done = exc.result
    assert 0 < len(done) < ITEMS and len(done) % FAIL_CHUNK == 0, len(done)
    # the outcomes of the calls that ran, in the order given; the rest named, none twice
    assert [o.id for o in done] == ids[:len(done)]
    assert {o.outcome for o in done} == {"retried"}
    assert exc.ids == ids[len(done):]
    assert "OOM" in str(exc) or "maxmemory" in str(exc)
    assert f"{len(done)} of the items were done, {ITEMS - len(done)} not" in str(exc)
    assert "\n" not in str(exc)
    # the server agrees: those retried, the others still leased, nothing half-written
    assert r.zcard(q.keys.delayed) == len(done)
    assert r.llen(q.keys.processing) == ITEMS - len(done)
    assert r.hlen(q.keys.errors) == len(done)
    # the rest fail now, each once
    rest = q.fail(exc.ids, error="again", retry_in=3600)
    assert {o.outcome for o in rest} == {"retried"} and len(rest) == len(exc.ids)
    assert r.zcard(q.keys.delayed) == ITEMS and r.llen(q.keys.processing) == 0



def test_a_refused_call_in_a_cancel_reports_exactly_what_was_done(r):
    # cancel's calls go one after another (each counted in the audit): a refusal after
    # some ran is the same PartlyDone as a pipelined settle's, the outcomes of those kept.
    # The refusal is the server's ACL: this user may touch the item keys of ids a... only,
    # so the third call is refused at its first id, before it writes anything.
    q = WorkQueue(r, "q")
    ids = [f"a{i:04d}" for i in range(2 * FAIL_CHUNK)] + \
        [f"b{i:04d}" for i in range(2 * FAIL_CHUNK, ITEMS)]
    q.push([NewItem(b"x", id=i) for i in ids])
    keys = ["~q:[^i]*", "~q:i[^t]*", "~q:it[^e]*", "~q:ite[^m]*", "~q:item[^:]*", "~q:item:a*"]
    with limited(r, keys) as part, pytest.raises(PartlyDone) as caught:
        WorkQueue(part, "q").cancel(ids, error="stop")
    exc = caught.value
    assert exc.exit_code == ExitCode.UNAVAILABLE
    done = exc.result
    assert [o.id for o in done] == ids[:2 * FAIL_CHUNK] and {o.outcome for o in done} == {"dead"}
    assert exc.ids == ids[2 * FAIL_CHUNK:]
    assert f"{2 * FAIL_CHUNK} of the items were done, {ITEMS - 2 * FAIL_CHUNK} not: b0200, " \
        in str(exc) and "\n" not in str(exc)
    # the server agrees: those dead, the others pending as they were
    assert r.zcard(q.keys.dead) == 2 * FAIL_CHUNK and r.llen(q.keys.queue) == ITEMS - 2 * FAIL_CHUNK
    rest = q.cancel(exc.ids, error="again")
    assert {o.outcome for o in rest} == {"dead"} and r.zcard(q.keys.dead) == ITEMS


@contextlib.contextmanager
def limited(r: redis.Redis, keys: list[str]) -> Iterator[redis.Redis]:
    """A client of ``r``'s server as a user who may touch only the keys ``keys`` match."""
    r.execute_command("ACL", "SETUSER", "part", "reset", "on", "nopass", *keys, "+@all")
    kwargs = r.connection_pool.connection_kwargs
    part = redis.Redis(host=kwargs["host"], port=kwargs["port"], username="part")
    try:
        yield part
    finally:
        part.close()
        r.execute_command("ACL", "DELUSER", "part")


@pytest.mark.parametrize("how", ["cancel", "complete"])
def test_a_shard_that_refuses_stops_none_of_the_others(r, how):
    # one queue's request over three shards, one of which refuses this user every item
    # key: the other two shards' outcomes are reported exactly, that shard's ids named
    reshard(r, "sj", 3)
    sq = ShardedQueue(r, "sj")
    ids = [p.id for p in sq.push([b"%d" % i for i in range(60)])]
    refused = sq.meta.live[2]
    theirs = [i for i in ids if sq.shard_for(i).prefix == refused]
    assert 0 < len(theirs) < len(ids)
    keys = ["~sj:*", *(f"~{p}:*" for p in sq.meta.live[:2]), f"~{refused}:[^i]*"]
    refs = ids if how == "cancel" else sq.lease(60, lease_seconds=600)
    assert len(refs) == 60
    with limited(r, keys) as part:
        mine = ShardedQueue(part, "sj")
        with pytest.raises(PartlyDone) as caught:
            getattr(mine, how)(refs)
    exc = caught.value
    others = [i for i in (ids if how == "cancel" else [x.id for x in refs]) if i not in theirs]
    assert [o.id for o in exc.result] == others
    assert {o.outcome for o in exc.result} == {"dead" if how == "cancel" else "completed"}
    assert sorted(exc.ids) == sorted(theirs)
    assert f"{len(others)} of the items were done, {len(theirs)} not: " in str(exc)
    assert "access" in str(exc) and "\n" not in str(exc)  # (the server's words)
    assert str(exc).count("server error") == 1
    # the server agrees: the refused shard's items untouched, the others settled once
    q = WorkQueue(r, refused)
    assert r.exists(*(q.keys.item(i) for i in theirs)) == len(theirs)
    assert sq.stats().dead == (len(others) if how == "cancel" else 0)
    assert sq.stats().counters["completed"] == (0 if how == "cancel" else len(others))
