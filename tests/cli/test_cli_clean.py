"""rq-cli clean: recovers abandoned items after the grace period, --dry-run, --deep, --all."""

from __future__ import annotations

import time

from cli_helpers import write_config

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

REPORT = {"queue", "recovered", "dropped", "dead", "suspects", "promoted", "pruned", "scanned",
          "dry_run"}


def abandon(cli, prefix: str = "q") -> None:
    cli("push", prefix, "{}")
    cli("lease", prefix, "--lease", "0.05")
    time.sleep(0.1)


def test_clean_recovers_after_grace(cli, r):
    abandon(cli)
    row = cli("clean", "q", "--grace", "0").one
    assert set(row) == REPORT
    assert row["recovered"] == 1
    assert WorkQueue(r, "q").stats().pending == 1


def test_clean_respects_the_grace_period(cli, r):
    abandon(cli)
    # a grace period longer than clean waits out itself (a minute): noted, left for a later run
    row = cli("clean", "q", "--grace", "3600").one
    assert row["recovered"] == 0 and row["suspects"] == 1
    assert WorkQueue(r, "q").stats().pending == 0


def test_clean_waits_out_a_short_grace_period_and_recovers(cli, r):
    abandon(cli)
    started = time.monotonic()
    row = cli("clean", "q", "--grace", "0.5").one
    assert time.monotonic() - started >= 0.5
    assert row["recovered"] == 1 and row["suspects"] == 0
    assert WorkQueue(r, "q").stats().pending == 1


def test_clean_dry_run_changes_nothing(cli, r):
    abandon(cli)
    row = cli("clean", "q", "--grace", "0", "--dry-run").one
    assert row["dry_run"] is True
    assert WorkQueue(r, "q").stats().pending == 0


def test_clean_deep_finds_strays(cli, r):
    r.set("q:item:stray", b"{}")  # data with no list entry, as a crashed peer might leave it
    cli("clean", "q", "--deep", "--grace", "0")
    row = cli("clean", "q", "--deep", "--grace", "0").one
    assert row["scanned"] >= 1
    assert "stray" in {i.id for i in WorkQueue(r, "q").peek("pending")}


def test_clean_all_cleans_every_configured_queue(cli, r, tmp_path):
    write_config(tmp_path, "[queues.a]\n[queues.b]\n")
    abandon(cli, "a")
    abandon(cli, "b")
    rows = cli("clean", "--all", "--grace", "0").json
    assert [(row["queue"], row["recovered"]) for row in rows] == [("a", 1), ("b", 1)]


def test_clean_needs_queues_or_all(cli):
    assert cli("clean").exit_code == 2
    run = cli("clean", "--all")  # no config, no queue on the server: nothing to clean
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def test_clean_never_asks(cli):
    abandon(cli)
    run = cli("clean", "q", "--grace", "0", tty=True)
    assert run.exit_code == 0 and "recovered" in run.stdout


def test_clean_quiet_prints_only_what_needs_a_human(cli, r, tmp_path):
    """--quiet (for cron, which mails what a job prints): nothing when nothing was
    recovered or dead-lettered; a queue's line when something was; errors always."""
    write_config(tmp_path, "[queues.a]\n[queues.b]\n[queues.c]\n")
    cli("push", "c", "{}")
    run = cli("clean", "--all", "--grace", "0", "--quiet")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")
    abandon(cli, "b")
    rows = cli("clean", "--all", "--grace", "0", "-q").json
    assert [(row["queue"], row["recovered"]) for row in rows] == [("b", 1)]
    r.set("a:queue", b"not a list")  # a queue it cannot clean: the error is said
    run = cli("clean", "--all", "-q")
    assert run.exit_code != 0 and "a:queue" in run.stderr
    assert [row["queue"] for row in run.json] == ["a"]
