"""rq-cli holders, and peek --id: who holds what, live and abandoned; one item in any state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from waiting import wait_for

from rq_cli.core.contract.limits import HOLDERS_PAGE
from rq_cli.core.contract.util import session_origin
from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

HOST = os.uname().nodename


def test_a_worker_killed_with_sigkill_shows_as_abandoned_with_its_host_and_pid(
        cli, server_url, r):
    cli("push", "q", "--id", "a", '{"n": 1}')
    cli("push", "q", "--id", "b", '{"n": 2}')
    worker = subprocess.Popen(
        [sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url, "work", "q",
         "--lease", "1", "--concurrency", "2", "--", "sleep", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        live = wait_for(lambda: [row for row in cli("holders", "q").json if row["items"] == 2])
        assert live[0]["pid"] == worker.pid and live[0]["host"] == HOST
        assert (live[0]["live"], live[0]["abandoned"]) == (2, 0)
        assert live[0]["nearest_deadline"] > time.time()
    finally:
        os.kill(worker.pid, signal.SIGKILL)  # (its guard process then stops the commands)
        worker.wait()
    time.sleep(1.2)  # the last lease it took runs out (it extended them every third of a second)
    rows = cli("holders", "q", "--ids").json
    assert len(rows) == 1
    row = rows[0]
    assert (row["host"], row["pid"]) == (HOST, worker.pid)
    assert row["session"].startswith(f"{HOST}:{worker.pid}:")
    assert (row["items"], row["live"], row["abandoned"]) == (2, 0, 2)
    assert sorted(row["ids"]) == ["a", "b"] and row["oldest_id"] in ("a", "b")
    assert row["nearest_deadline"] < time.time()
    # peek names the same last holder, item by item
    for item in cli("peek", "q", "--state", "processing").json:
        assert item["abandoned"] is True and item["lease_session"] == row["session"]
    # once clean has put the items back in line, nobody holds them
    cli("clean", "q", "--grace", "0")
    assert cli("holders", "q").json == []


def test_holders_counts_live_and_abandoned_per_session(r):
    q1 = WorkQueue(r, "q", session=f"{HOST}:111:aaaa")
    q2 = WorkQueue(r, "q", session="othermachine:222:bbbb")
    q1.push([b"1", b"2", b"3"])
    first = q1.lease(2, lease_seconds=0.05)
    second = q2.lease(1, lease_seconds=100)
    time.sleep(0.1)  # q1's leases run out, q2's runs
    found = {h.session: h for h in q1.holders()}
    assert set(found) == {f"{HOST}:111:aaaa", "othermachine:222:bbbb"}
    one, two = found[f"{HOST}:111:aaaa"], found["othermachine:222:bbbb"]
    assert (one.host, one.pid, one.items, one.live, one.abandoned) == (HOST, 111, 2, 0, 2)
    assert one.nearest_deadline == one.oldest_deadline == first[0].lease_expires_at
    assert one.oldest_id == first[0].id and one.ids == [i.id for i in first]
    assert (two.host, two.pid, two.items, two.live, two.abandoned) == ("othermachine", 222, 1,
                                                                        1, 0)
    assert two.nearest_deadline == second[0].lease_expires_at


def test_holders_reads_more_than_one_page(r):
    q = WorkQueue(r, "q", session=f"{HOST}:1:x")
    q.push([b"{}"] * (2 * HOLDERS_PAGE + 5))
    q.lease(2 * HOLDERS_PAGE + 5, lease_seconds=60)
    (h,) = q.holders()
    assert h.items == 2 * HOLDERS_PAGE + 5 == len(set(h.ids))


def test_holders_of_a_peer_lease_and_of_a_ghost(r):
    """A peer client's lease (its session is a random id, deadline in the key's TTL) and an
    id in processing that nobody holds."""
    q = WorkQueue(r, "q")
    r.set("q:item:p", b"{}")
    r.lpush("q:processing", "p")
    r.set("q:lease:p", b"5f0c2e", px=30_000)
    r.lpush("q:processing", "ghost")
    found = {h.session: h for h in q.holders()}
    assert set(found) == {"5f0c2e", None}
    assert (found["5f0c2e"].host, found["5f0c2e"].pid, found["5f0c2e"].live) == (None, None, 1)
    assert found["5f0c2e"].nearest_deadline > time.time() + 20
    assert found[None].abandoned == 1 and found[None].ids == ["ghost"]


def test_session_origin():
    assert session_origin("web-1.internal:4242:ab12") == ("web-1.internal", 4242)
    assert session_origin("host:12:mailer-1") == ("host", 12)
    assert session_origin("a1b2c3") == (None, None)
    assert session_origin(None) == (None, None)


def test_holders_table_and_empty_queue(cli):
    run = cli("holders", "q", tty=True)
    assert run.exit_code == 0 and run.stdout == ""
    assert "no items in processing" in run.stderr
    cli("push", "q", "{}")
    cli("lease", "q")
    run = cli("holders", "q", tty=True)
    assert run.exit_code == 0
    assert "oldest lease" in run.stdout and "nearest deadline" in run.stdout
    assert HOST in run.stdout


def test_holders_refuses_a_wrong_key_type(cli, r):
    r.set("q:processing", "not a list")
    run = cli("holders", "q")
    assert run.exit_code == 69 and "WRONGTYPE" in run.stderr.upper()
    assert len(run.stderr.strip().splitlines()) == 1
    assert r.get("q:processing") == b"not a list"


# -- peek --id ------------------------------------------------------------------------------------
def test_peek_id_in_every_state(cli, r):
    cli("push", "q", "--id", "p", '{"n": 1}')
    cli("push", "q", "--id", "d", "--delay", "60", '{"n": 2}')
    cli("push", "q", "--id", "x", '{"n": 3}')
    cli("push", "q", "--id", "l", '{"n": 4}')
    assert cli("lease", "q", "-n", "2").exit_code == 0  # the two oldest pending: p and x
    leased = {row["id"]: row for row in cli("peek", "q", "--state", "processing").json}
    assert set(leased) == {"p", "x"}
    cli("fail", "q", "x", "--dead", "--error", "bad address")
    row = cli("peek", "q", "--id", "p").one
    assert (row["state"], row["data"], row["attempts"]) == ("processing", {"n": 1}, 1)
    assert row["lease_session"].startswith(f"{HOST}:")
    assert "abandoned" not in row
    row = cli("peek", "q", "--id", "d").one
    assert row["state"] == "delayed" and row["due_at"] > time.time() + 50
    row = cli("peek", "q", "--id", "x").one
    assert (row["state"], row["dead_reason"], row["error"]) == ("dead", "failed", "bad address")
    assert row["data"] == {"n": 3} and row["attempts"] == 1
    row = cli("peek", "q", "--id", "l").one
    assert (row["state"], row["attempts"]) == ("pending", 0)


def test_peek_id_of_an_abandoned_item_names_its_last_holder(cli):
    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q", "--lease", "0.05").one
    time.sleep(0.1)
    row = cli("peek", "q", "--id", "a").one
    assert row["state"] == "processing" and row["abandoned"] is True
    assert row["lease_session"] == leased["session"]
    assert row["lease_expires_at"] == leased["lease_expires_at"]


def test_peek_id_unknown_is_nothing_to_do(cli):
    run = cli("peek", "q", "--id", "nope")
    assert run.exit_code == 3 and run.stdout == ""
    assert "nope" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_peek_id_refuses_state_options(cli):
    run = cli("peek", "q", "--id", "a", "--state", "dead")
    assert run.exit_code == 2 and "--id" in run.stderr


def test_peek_id_table(cli):
    cli("push", "q", "--id", "a", '{"to": "ann"}')
    run = cli("peek", "q", "--id", "a", tty=True)
    assert run.exit_code == 0 and "pending" in run.stdout and "ann" in run.stdout

