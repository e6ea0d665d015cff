"""A settle cut into calls sent in one pipeline, of which the server refuses some: the
calls that ran are reported, exactly, and the error names the items not done
(errors.PartlyDone). The refusal is a real one: the server's maxmemory, reached by the
error texts the first calls of a fail store (each call is refused whole, at its start)."""

from __future__ import annotations

import pytest

from rq_cli.core.contract.limits import FAIL_CHUNK
from rq_cli.core.queue import WorkQueue
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
