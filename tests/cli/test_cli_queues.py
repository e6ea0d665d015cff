"""rq-cli queues: configured and discovered."""

from __future__ import annotations

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_queues_lists_configured_and_discovered(cli, tmp_path, server_url):
    write_config(tmp_path, '[queues.emails]\nprefix = "app:emails"\n')
    cli("push", "emails", "1")
    cli("push", "loose", "1")
    rows = {row["queue"]: row for row in cli("queues").json}
    assert rows["emails"]["configured"] and rows["emails"]["discovered"]
    assert rows["emails"]["prefix"] == "app:emails"
    assert not rows["loose"]["configured"] and rows["loose"]["discovered"]


def test_queues_no_discover_never_connects(cli, tmp_path):
    write_config(tmp_path, "[queues.emails]\n")
    run = cli("queues", "--no-discover", url="redis://127.0.0.1:1/0")
    assert run.exit_code == 0
    assert [row["queue"] for row in run.json] == ["emails"]


def test_discovery_does_not_match_other_prefixes_glob(cli, r):
    cli("push", "a*b", "1")
    cli("push", "axb", "1")
    assert {row["queue"] for row in cli("queues").json} == {"a*b", "axb"}
