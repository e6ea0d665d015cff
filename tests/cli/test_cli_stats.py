"""rq-cli stats: fields, configured queues, --discover, tables."""

from __future__ import annotations

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

FIELDS = {"queue", "prefix", "pending", "processing", "leased", "abandoned", "delayed", "due",
          "dead", "oldest_pending_age_s", "paused", "limits", "tenants", "counters"}


def test_stats_fields(cli):
    cli("push", "q", "1", "2")
    cli("lease", "q")
    row = cli("stats", "q").one
    assert set(row) == FIELDS
    assert (row["pending"], row["processing"], row["leased"], row["abandoned"]) == (1, 1, 1, 0)
    assert row["oldest_pending_age_s"] >= 0
    assert row["counters"]["pushed"] == 2 and row["counters"]["leased"] == 1
    assert row["paused"] is False


def test_stats_empty_queue(cli):
    row = cli("stats", "nothing").one
    assert row["pending"] == 0 and row["oldest_pending_age_s"] is None


def test_stats_of_configured_queues_by_default(cli, tmp_path):
    write_config(tmp_path, '[queues.emails]\nprefix = "app:{emails}"\n[queues.sms]\n')
    cli("push", "emails", "1")
    rows = cli("stats").json
    assert [(row["queue"], row["prefix"]) for row in rows] == [
        ("emails", "app:{emails}"), ("sms", "sms")]
    assert rows[0]["pending"] == 1


def test_stats_discover_finds_unconfigured_queues(cli, tmp_path):
    write_config(tmp_path, "[queues.emails]\n")
    cli("push", "other:{x}", "1")
    rows = cli("stats", "--discover").json
    assert {row["queue"] for row in rows} == {"emails", "other:{x}"}


def test_stats_without_config_discovers(cli):
    cli("push", "found", "1")
    assert [row["queue"] for row in cli("stats").json] == ["found"]


def test_stats_table(cli):
    cli("push", "q", "1")
    run = cli("stats", "q", tty=True)
    assert run.exit_code == 0
    assert "pending" in run.stdout and "q" in run.stdout
