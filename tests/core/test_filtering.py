"""rq_cli.core.filtering, the filter of peek/requeue-dead/purge, against a real server:
each condition, JMESPath truth, non-JSON payloads, paging while items leave (small pages),
limits, rates, interrupted runs and re-runs that move nothing twice, and purge_ids' window."""

from __future__ import annotations

import json
import time

import pytest

from rq_cli.core import filtering
from rq_cli.core.filtering import FilterReport, ItemFilter, scan, truthy
from rq_cli.core.queue import WorkQueue
from rq_cli.errors import UsageError

NOW = 1_800_000_000_000


def dead_letters(q: WorkQueue, n: int, *, error: str = "boom", prefix: str = "d") -> list[str]:
    """n dead items {"i": k, "user": "u-<k % 3>"}, ids d000..; dead in id order."""
    ids = [f"{prefix}{k:03d}" for k in range(n)]
    from rq_cli.core.types import NewItem

    q.push([NewItem(json.dumps({"i": k, "user": f"u-{k % 3}"}).encode(), i)
            for k, i in enumerate(ids)])
    q.lease(n)
    for k, i in enumerate(ids):  # one at a time: distinct times of death, in id order
        q.fail([i], error=error, dead=True, now_ms=NOW + k)
    return ids


def run(q: WorkQueue, state, flt, **kw) -> tuple[FilterReport, list]:  # type: ignore[no-untyped-def]
    report = FilterReport(q.prefix, state, kw.get("action", "peek"))
    steps = list(scan(q, state, flt, report, **kw))
    return report, steps


def moved(steps) -> list[str]:  # type: ignore[no-untyped-def]
    return [i for s in steps for i in s.ids]


def test_truthy_is_jmespaths():
    assert [truthy(v) for v in (0, 0.0, "x", [0], {"a": None}, True)] == [True] * 6
    assert [truthy(v) for v in (None, False, "", [], {})] == [False] * 5


@pytest.mark.parametrize("expr", ["user ==", "a ! b", "foo[", '"open', "nosuch(user)"])
def test_bad_expression_is_a_usage_error(expr):
    with pytest.raises(UsageError, match="not a JMESPath expression"):
        ItemFilter(match=expr)


def test_bad_bounds_and_regex():
    with pytest.raises(UsageError, match="not a regular expression"):
        ItemFilter(error="((")
    with pytest.raises(UsageError):
        ItemFilter(older_than=-1)
    with pytest.raises(UsageError):
        ItemFilter(min_attempts=-1)
    with pytest.raises(UsageError, match="dead"):
        ItemFilter(reasons=["expired"]).check_state("pending")


def test_match_counts_non_json_and_ghosts_never_match(r):
    q = WorkQueue(r, "q")
    q.push([b'{"user": "u-1"}', b"not json", b"\xff\xfe", b'{"user": "u-2"}', b"0"])
    report, steps = run(q, "pending", ItemFilter(match="user == 'u-1'"), limit=100)
    assert [i.data for s in steps for i in s.items] == [b'{"user": "u-1"}']
    assert (report.scanned, report.matched, report.not_json) == (5, 1, 2)
    # a number is JSON: `@` of 0 is truthy in JMESPath
    report, steps = run(q, "pending", ItemFilter(match="@"), limit=100)
    assert report.matched == 3 and report.not_json == 2


def test_each_condition(r):
    q = WorkQueue(r, "q")
    dead_letters(q, 6, error="timeout after 30s")
    # two more, cancelled (reason cancelled), with another error
    from rq_cli.core.types import NewItem

    q.push([NewItem(b'{"user": "u-9"}', "c1"), NewItem(b'{"user": "u-9"}', "c2")])
    q.cancel(["c1", "c2"], error="operator", now_ms=NOW + 100)

    def ids(flt: ItemFilter, **kw) -> list[str]:  # type: ignore[no-untyped-def]
        return [i.id for s in run(q, "dead", flt, limit=100, **kw)[1] for i in s.items]

    assert ids(ItemFilter(error=r"timeout after \d+s")) == [f"d{k:03d}" for k in range(6)]
    assert ids(ItemFilter(reasons=["cancelled"])) == ["c1", "c2"]
    assert ids(ItemFilter(reasons=["failed", "cancelled"], match="user == 'u-9'")) == \
        ["c1", "c2"]
    assert ids(ItemFilter(min_attempts=1)) == [f"d{k:03d}" for k in range(6)]
    assert ids(ItemFilter(min_attempts=2)) == []
    # dead longer than 50 ms before NOW + 53: d000..d003 (dead at NOW+0..3)
    assert ids(ItemFilter(older_than=0.05), now_ms=NOW + 53) == ["d000", "d001", "d002",
                                                                  "d003"]
    # sorted by time of death: the scan stops at the first item dead too recently
    report, _ = run(q, "dead", ItemFilter(older_than=0.05), now_ms=NOW + 53, limit=100)
    assert report.scanned == 5


def test_older_than_for_pending_reads_the_push_time(r):
    q = WorkQueue(r, "q")
    q.push([b"{}"], now_ms=NOW)
    q.push([b"{}"], now_ms=NOW + 10_000)
    r.lpush("q:queue", "peer-pushed")  # a peer's item: no push time, never "older"
    r.set("q:item:peer-pushed", "{}")
    report, _ = run(q, "pending", ItemFilter(older_than=5), now_ms=NOW + 12_000, limit=10)
    assert (report.scanned, report.matched) == (3, 1)


def test_paging_with_a_cursor_while_items_leave(r, monkeypatch):
    """Small pages and chunks: every third of 50 dead items is requeued exactly once, and the
    items between stay dead and are each scanned once."""
    monkeypatch.setattr(filtering, "FILTER_PAGE", 7)
    monkeypatch.setattr(filtering, "FILTER_CHUNK", 2)
    q = WorkQueue(r, "q")
    ids = dead_letters(q, 50)
    report, steps = run(q, "dead", ItemFilter(match="user == 'u-0'"), action="requeue")
    want = [i for k, i in enumerate(ids) if k % 3 == 0]
    assert moved(steps) == want
    assert (report.scanned, report.matched, report.done) == (50, 17, 17)
    assert r.zcard("q:dead") == 33 and r.llen("q:queue") == 17
    # a re-run finds nothing more to move
    report, steps = run(q, "dead", ItemFilter(match="user == 'u-0'"), action="requeue")
    assert (report.scanned, report.matched, moved(steps)) == (33, 0, [])


def test_limit_dry_run_and_sample(r, monkeypatch):
    monkeypatch.setattr(filtering, "FILTER_PAGE", 4)
    q = WorkQueue(r, "q")
    ids = dead_letters(q, 30)
    report, steps = run(q, "dead", ItemFilter(match="user == 'u-1'"), action="requeue",
                        dry_run=True)
    assert report.matched == 10 and report.done == 0 and moved(steps) == []
    assert report.sample == [i for k, i in enumerate(ids) if k % 3 == 1][:filtering.FILTER_SAMPLE]
    assert r.zcard("q:dead") == 30
    report, steps = run(q, "dead", ItemFilter(match="user == 'u-1'"), action="requeue",
                        limit=4)
    assert moved(steps) == ["d001", "d004", "d007", "d010"] and report.done == 4
    report, steps = run(q, "dead", ItemFilter(match="user == 'u-1'"), action="requeue",
                        limit=0)
    assert report.scanned == 0 and moved(steps) == []


def test_interrupted_run_then_rerun_moves_everything_once(r, monkeypatch):
    monkeypatch.setattr(filtering, "FILTER_PAGE", 5)
    monkeypatch.setattr(filtering, "FILTER_CHUNK", 2)
    q = WorkQueue(r, "q")
    dead_letters(q, 40)
    flt = ItemFilter(match="user != 'u-2'")
    report = FilterReport("q", "dead", "requeue")
    steps = scan(q, "dead", flt, report, action="requeue")
    first = [i for _, s in zip(range(4), steps, strict=False) for i in s.ids]
    steps.close()  # the caller stopped (Ctrl-C) between two steps
    assert first and len(first) == report.done == r.llen("q:queue")
    _, rest = run(q, "dead", flt, action="requeue")
    everything = first + moved(rest)
    assert len(everything) == len(set(everything)) == 27  # k % 3 != 2 of 40
    assert r.llen("q:queue") == 27 and r.zcard("q:dead") == 13


def test_rate_limits_items_per_second(r):
    q = WorkQueue(r, "q")
    dead_letters(q, 6)
    t0 = time.monotonic()
    report, steps = run(q, "dead", ItemFilter(), action="requeue", rate=20)
    assert report.done == 6
    assert time.monotonic() - t0 >= 6 / 20 - 0.05
    assert all(len(s.ids) <= 2 for s in steps)  # chunks of rate/10 items
    with pytest.raises(UsageError):
        run(q, "dead", ItemFilter(), action="requeue", rate=0)


def test_requeue_into_another_queue_and_skips_a_live_id(r):
    q, other = WorkQueue(r, "q"), WorkQueue(r, "other")
    dead_letters(q, 3)
    from rq_cli.core.types import NewItem

    other.push([NewItem(b"{}", "d001")])  # a live item of the target has the id
    report, steps = run(q, "dead", ItemFilter(), action="requeue", to=other)
    assert moved(steps) == ["d000", "d002"] and report.skipped == 1
    assert r.zrange("q:dead", 0, -1) == [b"d001"]
    with pytest.raises(UsageError):
        run(q, "pending", ItemFilter(), action="requeue")


@pytest.mark.parametrize("state", ["pending", "delayed", "dead", "processing"])
def test_purge_matching_each_state(r, monkeypatch, state):
    monkeypatch.setattr(filtering, "FILTER_PAGE", 3)
    q = WorkQueue(r, "q")
    from rq_cli.core.types import NewItem

    items = [NewItem(json.dumps({"k": k, "bad": k % 2 == 0}).encode(), f"i{k}")
             for k in range(10)]
    if state == "dead":
        dead_letters(q, 10)
        flt = ItemFilter(match="user == 'u-0'")
        want = {"d000", "d003", "d006", "d009"}
    else:
        q.push(items, delay=60 if state == "delayed" else 0)
        if state == "processing":
            q.lease(10)
        flt = ItemFilter(match="bad")
        want = {f"i{k}" for k in range(0, 10, 2)}
    report, steps = run(q, state, flt, action="purge")
    assert set(moved(steps)) == want and report.done == len(want)
    left = q.peek(state, count=100)
    assert {i.id for i in left}.isdisjoint(want) and len(left) == 10 - len(want)
    for item_id in want:  # data and bookkeeping gone
        assert not r.exists(f"q:item:{item_id}", f"q:dead_item:{item_id}")
        assert r.hget("q:enqueued", item_id) is None
    report, steps = run(q, state, flt, action="purge")
    assert report.matched == 0


def test_purge_ids_looks_around_the_window_only(r):
    q = WorkQueue(r, "q")
    q.push([f'{{"k": {k}}}'.encode() for k in range(3000)])
    ids = [x.decode() for x in r.lrange("q:queue", 0, -1)]
    # read at index 2000; 500 pushes since shifted it to 2500: still found (slack 1000)
    q.push([b"{}"] * 500)
    assert q.purge_ids("pending", [ids[2000]], window=(2000, 2000)) == [ids[2000]]
    # an id far outside the window is left alone (it moved on: the caller counts it)
    assert q.purge_ids("pending", [ids[10]], window=(3000, 3000)) == []
    assert r.exists(f"q:item:{ids[10]}") and r.llen("q:queue") == 3499
    # an id someone leased meanwhile is not pending any more
    got = q.lease(1)[0]
    assert q.purge_ids("pending", [got.id], window=(0, 3500)) == []
    assert r.exists(f"q:item:{got.id}")
