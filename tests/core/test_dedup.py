"""The de-dup window: push --dedup-window / dedup_window in the config, complete
remembering ids (one ZADD per call, nothing when no window is set), push refusing them as
"recently completed", push --summary's reasons, rq-cli dedup (list, --clear), pruning in
bounded batches, and bad window values."""

from __future__ import annotations

import json

import pytest
from redis.crc import key_slot

from rq_cli.core.contract.keys import DEDUP_WINDOW_FIELD, Keys
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]

NOW = 1_800_000_000_000


def zadds(r) -> int:  # type: ignore[no-untyped-def]
    return int(r.info("commandstats").get("cmdstat_zadd", {}).get("calls", 0))


def test_completed_ids_are_refused_for_the_window(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(60)
    q.push([NewItem(b'{"a": 1}', "a"), NewItem(b'{"b": 1}', "b")], now_ms=NOW)
    q.lease(2, now_ms=NOW)
    assert [o.outcome for o in q.complete(["a", "b"], now_ms=NOW)] == ["completed"] * 2
    again = q.push([NewItem(b"{}", "a"), NewItem(b"{}", "c")], now_ms=NOW + 59_999)
    assert [(p.added, p.reason) for p in again] == [(False, "recently completed"), (True, None)]
    assert not r.exists("q:item:a")
    # once the window is over the id is free again
    assert q.push([NewItem(b"{}", "a")], now_ms=NOW + 60_001)[0].added


def test_id_from_data_hashes_and_the_worker_path(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(3600)
    first = q.push([b'{"job": 1}'], id_from_data=True)[0]
    leased = q.lease(1)
    outcomes, _ = q.complete_and_lease(leased, 1)  # what `rq-cli work` does
    assert outcomes[0].outcome == "completed"
    again = q.push([b'{"job": 1}', b'{"job": 2}'], id_from_data=True)
    assert (again[0].id, again[0].added, again[0].reason) == (first.id, False,
                                                              "recently completed")
    assert again[1].added


def test_at_most_once_leases_are_remembered(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(60)
    q.push([NewItem(b"{}", "a")])
    assert [i.id for i in q.lease(1, at_most_once=True)] == ["a"]
    assert q.push([NewItem(b"{}", "a")])[0].reason == "recently completed"


def test_no_window_no_memory_and_one_zadd_per_call_with_one(r):
    q = WorkQueue(r, "q")
    q.push([NewItem(b"{}", f"i{k}") for k in range(100)])
    q.lease(100)
    r.config_resetstat()
    q.complete([f"i{k}" for k in range(50)])
    assert zadds(r) == 0 and not r.exists("q:dedup")
    q.set_dedup_window(60)
    r.config_resetstat()
    q.complete([f"i{k}" for k in range(50, 100)])  # one script call
    assert zadds(r) == 1 and r.zcard("q:dedup") == 50


def test_window_off_forgets_and_stats_hide_the_setting(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(60)
    q.push([NewItem(b"{}", "a")])
    q.lease(1)
    q.complete(["a"])
    assert DEDUP_WINDOW_FIELD not in q.stats().counters
    assert r.hget("q:counters", DEDUP_WINDOW_FIELD) == b"60000"
    q.set_dedup_window(0)
    assert not r.exists("q:dedup") and r.hget("q:counters", DEDUP_WINDOW_FIELD) is None
    assert q.push([NewItem(b"{}", "a")])[0].added


def test_pruned_in_bounded_batches_by_clean_and_push(r):
    q = WorkQueue(r, "q")
    r.zadd("q:dedup", {f"old{k}": 1 for k in range(2500)})  # long expired
    r.zadd("q:dedup", {"young": 10**15})
    assert q.set_dedup_window(60) == 1000  # the push's prune: one bounded batch
    assert r.zcard("q:dedup") == 1501
    report = q.clean(grace_seconds=0)
    assert report.pruned == 1500 and r.zrange("q:dedup", 0, -1) == [b"young"]


def test_dedup_ids_and_clear(r):
    q = WorkQueue(r, "q")
    assert q.dedup_ids() == (None, 0, [])
    q.set_dedup_window(100)
    q.push([NewItem(b"{}", "a"), NewItem(b"{}", "b")])
    q.lease(2)
    q.complete(["a"])
    window, total, ids = q.dedup_ids()
    assert window == 100 and total == 1 and [i for i, _, _ in ids] == ["a"]
    assert 99 < ids[0][2] <= 100
    assert q.clear_dedup(["a", "nope"]) == 1
    assert q.dedup_ids()[1:] == (0, [])


def test_dedup_ids_pages_and_counts(r):
    q = WorkQueue(r, "q")
    r.zadd("q:dedup", {f"id{k:04d}": 10**15 + k for k in range(2500)})
    r.zadd("q:dedup", {"gone": 1})  # expired, not yet pruned: not listed
    window, total, ids = q.dedup_ids(2100)
    assert (window, total, len(ids)) == (None, 2500, 2100)
    assert [i for i, _, _ in ids] == [f"id{k:04d}" for k in range(2100)]
    assert q.dedup_ids(0)[1:] == (2500, [])


def test_the_key_shares_the_queues_slot():
    k = Keys("app:{emails}")
    assert k.dedup == "app:{emails}:dedup"
    assert key_slot(k.dedup.encode()) == key_slot(k.queue.encode())


def test_purge_all_forgets_the_window(r):
    q = WorkQueue(r, "q")
    q.set_dedup_window(60)
    q.push([NewItem(b"{}", "a")])
    q.lease(1)
    q.complete(["a"])
    q.purge("all")
    assert not r.exists("q:dedup", "q:counters")


# -- the command line -------------------------------------------------------------------------
def test_cli_push_window_summary_and_dedup_command(cli, r):
    assert cli("push", "q", "--dedup-window", "120", "--id-from-data", '{"n": 1}').exit_code == 0
    leased = cli("lease", "q").stdout
    assert cli("complete", "q", input=leased).exit_code == 0
    item_id = json.loads(leased)["id"]
    run = cli("push", "q", "--id-from-data", '{"n": 1}', '{"n": 2}')
    assert run.json == [{"id": item_id, "added": False, "reason": "recently completed"},
                        {"id": run.json[1]["id"], "added": True}]
    row = cli("push", "q", "--id-from-data", "--summary", "-",
              input='{"n": 1}\n{"n": 2}\n{"n": 3}\n').one
    assert row == {"queue": "q", "items": 3, "added": 1, "duplicates": 2,
                   "reasons": {"duplicate": 1, "dead": 0, "recently completed": 1}}
    listed = cli("dedup", "q")
    assert [x["id"] for x in listed.json] == [item_id]
    assert 0 < listed.json[0]["remaining_s"] <= 120
    assert "window 120 s, 1 ids remembered" in listed.stderr
    assert cli("dedup", "q", "-n", "0").stderr.endswith("1 ids remembered (0 shown)\n")
    assert cli("dedup", "q", "--clear", item_id).one == {"queue": "q", "cleared": 1}
    assert cli("push", "q", "--id-from-data", '{"n": 1}').one["added"] is True


def test_cli_dedup_usage_errors(cli):
    assert cli("dedup", "q", "--clear").exit_code == 2
    assert cli("dedup", "q", "some-id").exit_code == 2
    run = cli("dedup", "q", "--clear", "unknown")
    assert run.exit_code == 3 and "none of the 1 ids is remembered" in run.stderr


@pytest.mark.parametrize("value", ["-1", "abc", "1e12", "nan"])
def test_cli_bad_window_values_store_nothing(cli, r, value):
    run = cli("push", "q", "--dedup-window", value, "{}")
    assert run.exit_code == 2, run
    assert run.stdout == "" and r.dbsize() == 0


def test_config_dedup_window(cli, r, tmp_path):
    from cli_helpers import write_config

    write_config(tmp_path, '[queues.jobs]\nprefix = "j"\ndedup_window = 30\n')
    assert cli("push", "jobs", "--id", "x", "{}").exit_code == 0
    assert r.hget("j:counters", DEDUP_WINDOW_FIELD) == b"30000"
    cli("lease", "jobs")
    cli("complete", "jobs", "x")
    assert cli("push", "jobs", "--id", "x", "{}").one["reason"] == "recently completed"


@pytest.mark.parametrize(("value", "message"), [
    ("-5", "must be 0 or more"), ('"1h"', "must be a number"), ("nan", "finite"),
    ("1e12", "at most")])
def test_config_bad_dedup_window(cli, r, tmp_path, value, message):
    from cli_helpers import write_config

    write_config(tmp_path, f'[queues.jobs]\nprefix = "j"\ndedup_window = {value}\n')
    run = cli("push", "jobs", "{}")
    assert run.exit_code == 78 and message in run.stderr and "dedup_window" in run.stderr
    assert r.dbsize() == 0
