"""rq-cli peek: read-only, every state, --from, -n, --raw."""

from __future__ import annotations

import time

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_peek_pending_changes_nothing(cli, r):
    cli("push", "q", "--id", "a", '{"n": 1}')
    cli("push", "q", "--id", "b", '{"n": 2}')
    before = WorkQueue(r, "q").stats()
    rows = cli("peek", "q").json
    assert [row["id"] for row in rows] == ["a", "b"]  # head: the next to be leased first
    assert rows[0]["data"] == {"n": 1} and rows[0]["state"] == "pending"
    assert {"id", "state", "data", "attempts", "enqueued_at"} <= set(rows[0])
    after = WorkQueue(r, "q").stats()
    assert (before.pending, before.processing) == (after.pending, after.processing)


def test_peek_from_tail_and_count(cli):
    for i in range(5):
        cli("push", "q", "--id", str(i), "{}")
    assert [row["id"] for row in cli("peek", "q", "--from", "tail", "-n", "2").json] == ["4", "3"]


def test_peek_processing_shows_the_lease(cli):
    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q").one
    row = cli("peek", "q", "--state", "processing").one
    assert row["lease_session"] == leased["session"]
    assert row["lease_expires_at"] == leased["lease_expires_at"]


def test_peek_delayed_and_dead(cli):
    cli("push", "q", "--id", "later", "--delay", "100", "{}")
    assert "due_at" in cli("peek", "q", "--state", "delayed").one
    cli("push", "q", "--id", "d", "{}")
    cli("lease", "q")
    cli("fail", "q", "d", "--dead", "--error", "boom")
    row = cli("peek", "q", "--state", "dead").one
    assert row["id"] == "d" and row["dead_reason"] and "dead_at" in row


def test_peek_raw(cli):
    cli("push", "q", "--raw", "hello")
    assert cli("peek", "q", "--raw").stdout == "hello\n"


def test_peek_bad_state_is_a_usage_error(cli):
    assert cli("peek", "q", "--state", "lost").exit_code == 2


def test_peek_table(cli):
    cli("push", "q", "--id", "a", '{"n": 1}')
    run = cli("peek", "q", tty=True)
    assert "a" in run.stdout and '{"n": 1}' in run.stdout


def test_peek_processing_names_the_holder_of_an_abandoned_item(cli):
    import os
    import time

    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q", "--lease", "0.05").one
    time.sleep(0.1)  # the lease runs out: the worker died
    row = cli("peek", "q", "--state", "processing").one
    assert row["abandoned"] is True
    assert row["lease_session"] == leased["session"]
    host, pid, _ = row["lease_session"].split(":")
    assert host == os.uname().nodename and int(pid) > 0
    assert row["lease_expires_at"] == leased["lease_expires_at"]
    fresh = cli("push", "q", "--id", "b", "{}") and cli("lease", "q").one
    rows = {r["id"]: r for r in cli("peek", "q", "--state", "processing").json}
    assert "abandoned" not in rows[fresh["id"]]


def test_a_dead_item_keeps_its_enqueued_time(cli):
    """Dead-lettering keeps when the item was first pushed (peek --state dead, and the
    console's "enqueued"); requeue-dead stamps the time it is put back in line."""
    cli("push", "q", "--id", "d", "{}")
    pushed = cli("peek", "q").one["enqueued_at"]
    assert pushed is not None
    cli("lease", "q")
    cli("fail", "q", "d", "--dead", "--error", "boom")
    dead = cli("peek", "q", "--state", "dead").one
    assert dead["enqueued_at"] == pushed
    assert cli("peek", "q", "--id", "d").one["enqueued_at"] == pushed
    cli("requeue-dead", "q", "d")
    again = cli("peek", "q").one["enqueued_at"]
    assert again is not None and again >= pushed


def test_pushed_items_are_aged_by_their_ids_with_no_stamp(cli, r):
    """The ids push makes carry the push time (UUIDv7): peek, stats and --older-than show
    the age as before, and nothing is stored for it beside the item (issue 42)."""
    import uuid

    before = time.time()
    one = cli("push", "q", "{}").one["id"]
    cli("push", "q", "-", input="".join(f'{{"n": {i}}}\n' for i in range(1500)))
    after = time.time()
    assert uuid.UUID(one).version == 7 and not r.exists("q:enqueued")
    head = cli("peek", "q", "-n", "1").one
    assert head["id"] == one and before - 1 <= head["enqueued_at"] <= after + 1
    assert cli("stats", "q").one["oldest_pending_age_s"] >= 0
    older = cli("peek", "q", "--older-than", "0", "-n", "2000").json
    assert len(older) == 1501 and all(row["enqueued_at"] is not None for row in older)
