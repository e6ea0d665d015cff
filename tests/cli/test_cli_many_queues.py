"""Many queues: one server down must not hide or stop the others.

Multi-queue ``stats``, ``queues`` and ``clean --all`` go on per queue: a queue whose server
fails is an error row (JSON: an ``error`` field), the live queues' rows still print, and
the exit code is 69 with one stderr line. ``clean --all`` with only ``RQ_CLI_URL`` (no
config file) cleans the queues found on the server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from cli_helpers import write_config
from servers import ServerProcess

pytest_plugins = ["cli_helpers"]

UNAVAILABLE = 69


@pytest.fixture
def down_url(make_server: Callable[..., ServerProcess]) -> str:
    """The URL of a real server that was started, then stopped: connections are refused."""
    proc = make_server()
    url = proc.url
    proc.stop()
    return url


@pytest.fixture
def two_servers(cli, tmp_path: Path, server_url: str, down_url: str) -> Path:
    """Config: queue ``down`` on the stopped server (listed first), ``live`` on the live one."""
    path = write_config(tmp_path, f'url = "{server_url}"\n\n'
                                  f'[queues.down]\nurl = "{down_url}"\n\n'
                                  f'[queues.live]\n')
    assert cli("push", "live", "{}", url=None).exit_code == 0
    return path


def abandon(cli, queue: str, **kwargs: object) -> None:
    """An item of ``queue`` whose lease has run out (with the config, unless ``url=`` says)."""
    kwargs.setdefault("url", None)
    assert cli("push", queue, "{}", **kwargs).exit_code == 0
    assert cli("lease", queue, "--lease", "0.001", **kwargs).exit_code == 0


def one_error_line(run) -> str:
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rq-cli: "), run
    return lines[0]


def test_stats_shows_the_live_queue_and_an_error_row(cli, two_servers: Path,
                                                     down_url: str) -> None:
    run = cli("stats", url=None)
    assert run.exit_code == UNAVAILABLE, run
    rows = {row["queue"]: row for row in run.json}
    assert rows["live"]["pending"] == 1 and "error" not in rows["live"]
    assert set(rows["down"]) == {"queue", "error"}
    assert "cannot connect to" in rows["down"]["error"]
    line = one_error_line(run)
    assert line.startswith("rq-cli: stats: 1 of 2 failed"), line


def test_stats_table_has_an_error_column_only_when_needed(cli, two_servers: Path) -> None:
    run = cli("stats", url=None, tty=True)
    assert run.exit_code == UNAVAILABLE
    assert "error" in run.stdout and "cannot connect" in run.stdout
    assert "live" in run.stdout
    ok = cli("stats", "live", url=None, tty=True)
    assert ok.exit_code == 0 and "error" not in ok.stdout


def test_clean_all_goes_on_past_a_down_server(cli, two_servers: Path, r: redis.Redis) -> None:
    abandon(cli, "live")
    run = cli("clean", "--all", "--grace", "0", url=None)
    assert run.exit_code == UNAVAILABLE, run
    rows = {row["queue"]: row for row in run.json}
    assert rows["live"]["recovered"] == 1
    assert "cannot connect to" in rows["down"]["error"]
    assert one_error_line(run).startswith("rq-cli: clean: 1 of 2 failed")


def test_queues_lists_configured_and_discovered_past_a_down_server(
        cli, two_servers: Path, down_url: str) -> None:
    run = cli("queues", url=None)
    assert run.exit_code == UNAVAILABLE, run
    rows = run.json
    assert {row["queue"] for row in rows if row.get("configured")} == {"down", "live"}
    errors = [row for row in rows if "error" in row]
    assert len(errors) == 1 and errors[0]["url"] == down_url
    assert one_error_line(run).startswith("rq-cli: queues: 1 of ")


def test_stats_discovery_on_a_down_server_is_an_error_row(cli, down_url: str) -> None:
    run = cli("stats", url=None, env={"RQ_CLI_URL": down_url})
    assert run.exit_code == UNAVAILABLE, run
    assert [set(row) for row in run.json] == [{"queue", "url", "error"}]
    one_error_line(run)


def test_clean_all_with_only_a_url_cleans_the_discovered_queues(cli, server_url: str) -> None:
    abandon(cli, "a", url=server_url)
    abandon(cli, "b", url=server_url)
    run = cli("clean", "--all", "--grace", "0", url=None, env={"RQ_CLI_URL": server_url})
    assert run.exit_code == 0, run
    assert sorted((row["queue"], row["recovered"]) for row in run.json) == [("a", 1), ("b", 1)]
