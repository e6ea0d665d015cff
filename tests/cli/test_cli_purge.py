"""rq-cli purge: asks on a terminal, refuses without --yes otherwise, --state, --dry-run."""

from __future__ import annotations

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def fill(cli) -> None:
    cli("push", "q", "1", "2", "3")
    cli("push", "q", "--delay", "100", "4")


def test_purge_refuses_without_yes_when_not_a_terminal(cli, r):
    fill(cli)
    run = cli("purge", "q")
    assert run.exit_code == 2
    assert "--yes" in run.stderr
    assert run.stdout == ""
    assert WorkQueue(r, "q").stats().pending == 3  # data intact


def test_purge_yes_deletes_pending_only_by_default(cli, r):
    fill(cli)
    row = cli("purge", "q", "--yes").one
    assert row["pending"] == 3 and row["delayed"] == 0 and row["total"] == 3
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.delayed) == (0, 1)


def test_purge_state_all(cli, r):
    fill(cli)
    cli("purge", "q", "--state", "all", "--yes")
    assert r.keys("q:*") == [b"q:audit"]  # the audit trail stays, with the purge in it
    (entry,) = WorkQueue(r, "q").client.lrange("q:audit", 0, -1)
    assert b'"action":"purge"' in entry and b"--state all" in entry


def test_purge_dry_run(cli, r):
    fill(cli)
    row = cli("purge", "q", "--state", "all", "--dry-run").one
    assert row["dry_run"] is True and row["total"] == 4
    assert WorkQueue(r, "q").stats().pending == 3


def test_purge_asks_on_a_terminal(cli, r):
    fill(cli)
    declined = cli("purge", "q", tty=True, input="n\n")
    assert declined.exit_code == 3
    assert "Delete 3 items" in declined.stdout + declined.stderr
    assert WorkQueue(r, "q").stats().pending == 3
    accepted = cli("purge", "q", tty=True, input="y\n")
    assert accepted.exit_code == 0
    assert WorkQueue(r, "q").stats().pending == 0


def test_purge_bad_state(cli):
    assert cli("purge", "q", "--state", "everything", "--yes").exit_code == 2
