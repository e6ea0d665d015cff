"""rq_cli.core.contract.errnorm and errgroups: the normaliser (one cause, one pattern; two causes,
two), the keys, and the grouping of dead and retrying items against a real server, filters
included, in pages smaller than the hash (so HSCAN takes several calls)."""

from __future__ import annotations

import json

import pytest

from rq_cli.core import errgroups
from rq_cli.core.contract import errnorm
from rq_cli.core.contract.errnorm import check_group_key, group_key, normalise
from rq_cli.core.errgroups import group_errors
from rq_cli.core.filtering import ItemFilter
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import UsageError

NOW = 1_800_000_000_000


@pytest.mark.parametrize("one, other", [
    ("connection refused: 10.0.0.12:6379", "connection refused: 10.1.7.3:6380"),
    ("connection refused: redis-3.internal:6379", "connection refused: [::1]:6379"),
    ("job 3f2a9c1e7b8d4e6f timed out", "job 00aa11bb22cc33dd44 timed out"),
    ("user 8c0d6b5e-2a41-4d8f-9a77-1e2b3c4d5e6f not found",
     "user 11111111-2222-3333-4444-555555555555 not found"),
    ("timeout after 30s", "timeout after 1m30s"),
    ("took 250ms", "took 1.5 seconds"),
    ("row id=123456 failed at 2026-11-26T22:10:00Z", "row id=7 failed at 2025-01-02 03:04:05"),
    ("HTTP 502 from billing after 3.2s", "HTTP 502  from billing after 12s"),
    # realistic ids: an 8-hex-digit id that happens to be all digits is still one
    ("request 00024bbd failed", "request 00019223 failed"),
    ("request 9f86d081 failed", "request 12345678 failed"),
    ("object 507f1f77bcf86cd799439011 gone", "object 507f191e810c19729de860ea gone"),
    ("job 01ARZ3NDEKTSV4RRFFQ69G5FAV lost", "job 01HF8Z2K4Q9M7X3C5V6B8N0P1R lost"),
    ("charge ch_3MmlLrLkdIwHu7ix0snN0B15 declined", "charge ch_1Nq2Xy8ZabCdEf9012GhIjKl declined"),
    ("pod worker-7d9f8c6b5-x2kqz evicted", "pod worker-5c4b3a2d1-q9rtz evicted"),
    ("token V1StGXR8_Z5jdHi6B-myT expired", "token 4f90d13a42_Bc7Kx-Lm91 expired"),
    ("user 8c0d6b5e2a414d8f9a771e2b3c4d5e6f", "user 0d6b5e2a-414d-8f9a-771e-2b3c4d5e6f8c"),
    ("order 1700000000123 stuck", "order 1700000004567 stuck"),
])
def test_one_cause_is_one_pattern(one: str, other: str) -> None:
    assert normalise(one) == normalise(other)
    assert group_key(one) == group_key(other)


@pytest.mark.parametrize("one, other", [
    ("HTTP 502 from billing", "HTTP 503 from billing"),  # a status names the cause
    ("exit code 1", "exit code 137"),
    ("killed by signal 9", "killed by signal 15"),
    ("s3 upload failed", "s4 upload failed"),  # digits inside a word are kept
    ("in handle_request_v2", "in handle_request_v3"),  # a name, not an id: kept
    ("request 00024bbd failed", "request 00024bbd refused"),
    ("timeout", "connection refused"),
])
def test_two_causes_are_two_patterns(one: str, other: str) -> None:
    assert group_key(one) != group_key(other)


def test_the_20_request_errors_of_one_cause_are_one_group(q) -> None:  # type: ignore[no-untyped-def]
    ids = ["00024bbd", "00019223", "7f3a9c01", "00000042", "a1b2c3d4", "31415926",
           "0badf00d", "27182818", "c0ffee00", "16180339", "deadbe3f", "00ab12cd",
           "99999999", "5e5e5e5e", "10000000", "abc12345", "44444444", "0f0f0f0f",
           "12121212", "fedcba98"]
    failing(q, [f"request {i}: upstream reset" for i in ids], dead=True)
    [group] = group_errors(q).groups
    assert group.count == 20 and group.pattern == "request <hex>: upstream reset"


def test_an_error_of_invalid_utf8_is_its_own_group_with_its_time(q, r) -> None:  # type: ignore[no-untyped-def]
    failing(q, ["boom"] * 2, dead=True)
    bad = b"cannot decode \xff\xfe here"
    q.push([NewItem(b"{}", "bad")])
    q.lease(1)
    q.fail(["bad"], error=bad, dead=True, now_ms=NOW + 99)  # type: ignore[arg-type]
    q.push([NewItem(b"{}", "none")])
    q.lease(1)
    q.fail(["none"], dead=True, now_ms=NOW + 100)  # no error at all
    groups = {g.error: g for g in group_errors(q).groups}
    assert set(groups) == {"boom", "cannot decode \ufffd\ufffd here", None}
    got = groups["cannot decode \ufffd\ufffd here"]
    assert got.count == 1 and got.last_at == (NOW + 99) / 1000
    assert got.key != groups[None].key and groups[None].count == 1


def test_patterns_and_keys() -> None:
    assert normalise("connection refused: 10.0.0.1:6379 after 2s (attempt 3)") == \
        "connection refused: <addr> after <duration> (attempt <n>)"
    assert normalise(None) == normalise("") == ""
    key = group_key("boom")
    assert len(key) == errnorm.KEY_LEN and check_group_key(key) == key
    for bad in ("", "xyz", key.upper(), key + "0"):
        with pytest.raises(UsageError, match="not an error group key"):
            check_group_key(bad)
    with pytest.raises(UsageError, match="not an error group key"):
        ItemFilter(error_group="nope")


@pytest.fixture
def q(r):  # type: ignore[no-untyped-def]
    return WorkQueue(r, "jobs", session="worker-a")


def failing(q: WorkQueue, errors: list[str], *, dead: bool, start: int = 0,
            base: int = NOW) -> list[str]:
    """Items e<start>.. {"k": k}, failed one by one with ``errors[k]`` (dead: dead-lettered
    at base + k ms, in order)."""
    ids = [f"e{start + k:04d}" for k in range(len(errors))]
    q.push([NewItem(json.dumps({"k": start + k}).encode(), i) for k, i in enumerate(ids)])
    q.lease(len(ids))
    for k, (i, error) in enumerate(zip(ids, errors, strict=True)):
        q.fail([i], error=error, dead=dead, retry_in=None if dead else 600,
               now_ms=base + start + k)
    return ids


def test_groups_dead_and_retrying_in_pages(q, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(errgroups, "ERRGROUP_SCAN_COUNT", 5)  # (several HSCAN calls; 5 is a hint)
    dead = failing(q, [f"connection refused: 10.0.{k}.1:6379" for k in range(30)] +
                   [f"HTTP 502 from billing after {k}s" for k in range(12)], dead=True)
    failing(q, [f"HTTP 502 from billing after {k}ms" for k in range(4)], dead=False,
            start=100)
    report = group_errors(q)
    got = [(g.state, g.count, g.pattern) for g in report.groups]
    assert got == [("dead", 30, "connection refused: <addr>"),
                   ("dead", 12, "HTTP 502 from billing after <duration>"),
                   ("retrying", 4, "HTTP 502 from billing after <duration>")]
    refused, billing, retrying = report.groups
    assert (report.scanned, report.matched) == (46, 46)
    assert refused.first_at == NOW / 1000 and refused.last_at == (NOW + 29) / 1000
    assert refused.sample_id == dead[29] and refused.error == "connection refused: 10.0.29.1:6379"
    assert billing.key == retrying.key == group_key("HTTP 502 from billing after 1s")
    assert retrying.first_at is None and retrying.last_at is None
    # one state only
    assert [g.state for g in group_errors(q, states=("retrying",)).groups] == ["retrying"]


def test_filters_and_items_without_an_error(q, r) -> None:  # type: ignore[no-untyped-def]
    past = 1_700_000_000_000  # (2023: the server's clock is later)
    failing(q, ["boom"] * 4, dead=True, base=past)
    q.push([NewItem(b"not json", "raw")])
    q.lease(1)
    q.fail(["raw"], dead=True, now_ms=past + 50)  # no error at all
    failing(q, ["slow"] * 3, dead=False, start=10)
    groups = group_errors(q).groups
    assert {(g.state, g.error, g.count) for g in groups} == {
        ("dead", "boom", 4), ("dead", None, 1), ("retrying", "slow", 3)}
    matched = group_errors(q, ItemFilter(match="k >= `2`"))
    assert {(g.state, g.count) for g in matched.groups} == {("dead", 2), ("retrying", 3)}
    assert matched.not_json == 1
    assert [g.count for g in group_errors(q, ItemFilter(error="^bo")).groups] == [4]
    assert group_errors(q, ItemFilter(min_attempts=2)).groups == []
    assert [g.count for g in group_errors(q, ItemFilter(min_attempts=1),
                                          states=("retrying",)).groups] == [3]
    # older than an hour, by the server's clock: the dead (in 2023) are; the retrying,
    # pushed just now, are not
    old = group_errors(q, ItemFilter(older_than=3600))
    assert {(g.state, g.count) for g in old.groups} == {("dead", 4), ("dead", 1)}
    with pytest.raises(UsageError, match="group the dead ones only"):
        group_errors(q, ItemFilter(reasons=["failed"]))
    assert [g.count for g in group_errors(q, ItemFilter(reasons=["failed"]),
                                          states=("dead",)).groups] == [4, 1]
    assert r.hlen("jobs:dead_info") == 5  # nothing written


def test_error_group_filter_matches_its_items(q) -> None:  # type: ignore[no-untyped-def]
    failing(q, ["timeout after 3s", "timeout after 9s", "bad request"], dead=True)
    key = group_key("timeout after 1s")
    flt = ItemFilter(error_group=key)
    assert [g.count for g in group_errors(q, flt).groups] == [2]


def test_an_error_left_behind_by_a_peer_is_not_a_retrying_item(q, r) -> None:  # type: ignore[no-untyped-def]
    failing(q, ["boom", "boom"], dead=False)
    r.delete("jobs:item:e0000")  # a peer client completed it: P:errors keeps its entry
    assert r.hexists("jobs:errors", "e0000")
    assert [(g.state, g.count) for g in group_errors(q).groups] == [("retrying", 1)]
    assert [g.count for g in group_errors(q, ItemFilter(match="k >= `0`")).groups] == [1]
