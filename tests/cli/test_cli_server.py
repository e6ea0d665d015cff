"""rq-cli server status|stop, and the embedded: URL end to end."""

from __future__ import annotations

import pytest

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


@pytest.fixture
def data_dir(tmp_path_factory):
    # unix socket paths are short: keep the directory name small
    directory = tmp_path_factory.mktemp("emb")
    yield directory
    from rq_cli.connection import embedded

    embedded.stop(directory)


def test_embedded_server_life_cycle(cli, data_dir):
    url = f"embedded:{data_dir}"
    status = cli("server", "status", str(data_dir))
    assert status.exit_code == 3 and status.one["running"] is False
    assert cli("push", "q", "--id", "a", "{}", url=url).exit_code == 0
    status = cli("server", "status", url=url)
    assert status.exit_code == 0, status
    assert status.one["running"] is True
    assert cli("stats", "q", url=url).one["pending"] == 1
    stop = cli("server", "stop", str(data_dir))
    assert stop.exit_code == 0 and stop.one["stopped"] is True
    assert cli("server", "stop", str(data_dir)).exit_code == 3
    # the data survives a stop: the next command starts the server again
    assert cli("stats", "q", url=url).one["pending"] == 1


def test_status_warns_on_a_terminal_when_the_server_can_lose_work(cli, data_dir):
    import redis

    url = f"embedded:{data_dir}"
    assert cli("push", "q", "{}", url=url).exit_code == 0
    quiet = cli("server", "status", url=url, tty=True)  # AOF on, noeviction: nothing to say
    assert (quiet.exit_code, quiet.stderr) == (0, ""), quiet
    client = redis.Redis(unix_socket_path=str(data_dir / "redis.sock"))
    client.config_set("maxmemory-policy", "allkeys-lru")
    run = cli("server", "status", url=url, tty=True)
    assert run.exit_code == 0 and "running" in run.stdout
    assert run.stderr.startswith("rq-cli: warning: unix://")
    assert "evicts keys when full (maxmemory-policy allkeys-lru)" in run.stderr
    assert len(run.stderr.splitlines()) == 1
    assert cli("server", "status", url=url).stderr == ""  # piped: JSON, no warning
    client.config_set("maxmemory-policy", "noeviction")
    client.close()
