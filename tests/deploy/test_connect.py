"""rq_cli.connection.connect against real servers: URL forms, passwords, masking, error
translation."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from servers import ServerProcess, free_port

from rq_cli.connection import connect as conn
from rq_cli.connection.connect import connect, mask_url, server_errors, translate_error
from rq_cli.errors import ClusterError, ExitCode, ServerError, UsageError, WrongTypeError

MakeServer = Callable[..., ServerProcess]
SECRET = "s3cr3t-Pa55"


# --- masking -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://user:hunter2@host:6379/0", "redis://user:***@host:6379/0"),
        ("redis://:hunter2@host:6379/0", "redis://:***@host:6379/0"),
        (
            "rediss://default:hunter2@cache.internal:6380/1",
            "rediss://default:***@cache.internal:6380/1",
        ),
        ("redis://user@host:6379", "redis://user@host:6379"),
        ("redis://:p@ss@host/0", "redis://:***@host/0"),  # unescaped @ in the password
        ("redis://:p%40ss@host/0", "redis://:***@host/0"),
        ("redis://u:a:b:c@host", "redis://u:***@host"),
        ("redis://u:pa/ss@host", "redis://u:***@host"),
        ("redis://u:pa?ss@host", "redis://u:***@host"),
        ("unix://:hunter2@/run/redis.sock?db=2", "unix://:***@/run/redis.sock?db=2"),
        ("unix:///run/redis.sock?password=hunter2", "unix:///run/redis.sock?password=***"),
        ("redis://host/0?password=hunter2&db=1", "redis://host/0?password=***&db=1"),
        ("redis://host/0?db=1&password=hunter2", "redis://host/0?db=1&password=***"),
        ("redis://host/0?Password=hunter2", "redis://host/0?Password=***"),
        ("redis+cluster://u:hunter2@node1:7000", "redis+cluster://u:***@node1:7000"),
        (
            "redis+sentinel://:hunter2@s1:26379,s2:26379/mymaster?sentinel_password=other",
            "redis+sentinel://:***@s1:26379,s2:26379/mymaster?sentinel_password=***",
        ),
        ("embedded:", "embedded:"),
        ("embedded:/var/lib/rq", "embedded:/var/lib/rq"),
        ("redis://[::1]:6379/0", "redis://[::1]:6379/0"),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    assert "hunter2" not in mask_url(url)
    assert mask_url(mask_url(url)) == masked  # idempotent


def test_url_password() -> None:
    assert conn.url_password("redis://u:p%40ss@h") == "p@ss"
    assert conn.url_password("redis://h?password=x") == "x"
    assert conn.url_password("redis://h") is None


def test_unsupported_scheme_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="must start with redis://") as info:
        connect("http://user:hunter2@host")
    assert "hunter2" not in str(info.value)
    with pytest.raises(UsageError):
        connect("localhost:6379")


# --- plain TCP and unix sockets --------------------------------------------------------------


def test_connect_tcp_bytes_responses(server_url: str) -> None:
    client = connect(server_url)
    client.set("k", "v")
    assert client.get("k") == b"v"
    options = client.connection_pool.connection_kwargs
    assert options["socket_connect_timeout"] == 5.0
    assert options["socket_timeout"] == 5.0 + conn.BLOCKING_HEADROOM
    assert options["health_check_interval"] == conn.HEALTH_CHECK_INTERVAL
    client.close()


def test_socket_timeout_outlasts_a_blocking_chunk(server_url: str) -> None:
    client = connect(server_url, timeout=0.5)
    started = time.monotonic()
    assert client.blmove("empty", "empty", 2, "RIGHT", "RIGHT") is None
    assert time.monotonic() - started >= 1.9
    client.close()


def test_url_query_selects_database(server: ServerProcess, r: redis.Redis) -> None:
    client = connect(f"redis://127.0.0.1:{server.port}/3")
    client.set("in-db-3", "1")
    assert r.get("in-db-3") is None
    assert r.execute_command("SELECT", 3) and r.get("in-db-3") == b"1"
    r.execute_command("SELECT", 0)
    client.close()


def test_connect_unix_socket(make_server: MakeServer) -> None:
    srv = make_server(unix_socket=True)
    client = connect(f"unix://{srv.unix_socket_path}")
    assert client.ping()
    client.set("k", "v")
    assert client.get("k") == b"v"
    client.close()


def test_unreachable_fails_fast_with_exit_69() -> None:
    url = f"redis://:{SECRET}@127.0.0.1:{free_port()}/0"
    client = connect(url, password=SECRET)
    started = time.monotonic()
    with pytest.raises(ServerError) as info, server_errors(url, password=SECRET):
        client.ping()
    assert time.monotonic() - started < 2.0
    message = str(info.value)
    assert message.startswith("cannot connect to redis://:***@127.0.0.1:")
    assert SECRET not in message
    assert "\n" not in message
    assert info.value.exit_code == ExitCode.UNAVAILABLE == 69


def test_missing_unix_socket_fails_fast(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/nothing.sock"
    started = time.monotonic()
    with pytest.raises(ServerError, match="cannot connect to unix://"), server_errors(url):
        connect(url).ping()
    assert time.monotonic() - started < 2.0


# --- passwords and ACLs ----------------------------------------------------------------------


@pytest.fixture
def auth_server(make_server: MakeServer) -> ServerProcess:
    srv = make_server(requirepass=SECRET)
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", "reader", "on", ">reader-pw-42", "~*", "+get", "+ping")
    admin.close()
    return srv


def test_password_in_url(auth_server: ServerProcess) -> None:
    client = connect(f"redis://:{SECRET}@127.0.0.1:{auth_server.port}/0")
    assert client.ping()
    client.close()


def test_explicit_password_overrides_url(auth_server: ServerProcess) -> None:
    for url in (
        f"redis://:wrong@127.0.0.1:{auth_server.port}/0",
        f"redis://127.0.0.1:{auth_server.port}/0?password=wrong",
        f"redis://127.0.0.1:{auth_server.port}/0",
    ):
        client = connect(url, password=SECRET)
        assert client.ping(), url
        client.close()


def test_wrong_password_says_authentication_failed(auth_server: ServerProcess) -> None:
    url = f"redis://:wrong-{SECRET}@127.0.0.1:{auth_server.port}/0"
    with pytest.raises(ServerError) as info, server_errors(url):
        connect(url).ping()
    message = str(info.value)
    assert message == f"authentication failed for redis://:***@127.0.0.1:{auth_server.port}/0"
    assert SECRET not in message and "wrong" not in message
    assert info.value.exit_code == 69


def test_wrong_user_password_names_the_user(auth_server: ServerProcess) -> None:
    url = f"redis://reader:nope-{SECRET}@127.0.0.1:{auth_server.port}/0"
    with pytest.raises(ServerError) as info, server_errors(url):
        connect(url).ping()
    assert str(info.value) == (
        f"authentication failed for redis://reader:***@127.0.0.1:{auth_server.port}/0"
    )


def test_no_password_given(auth_server: ServerProcess) -> None:
    url = f"redis://127.0.0.1:{auth_server.port}/0"
    with (
        pytest.raises(ServerError, match=r"^authentication failed for redis://127"),
        server_errors(url),
    ):
        connect(url).get("k")


def test_acl_permission_denied(auth_server: ServerProcess) -> None:
    url = f"redis://reader:reader-pw-42@127.0.0.1:{auth_server.port}/0"
    client = connect(url)
    assert client.get("k") is None  # allowed
    with pytest.raises(ServerError) as info, server_errors(url):
        client.set("k", "v")
    message = str(info.value)
    assert message.startswith("permission denied for redis://reader:***@")
    assert "reader-pw-42" not in message
    client.close()


# --- error translation -------------------------------------------------------------------------


def test_wrongtype(server_url: str, r: redis.Redis) -> None:
    r.set("jobs:queue", "not a list")
    with (
        pytest.raises(WrongTypeError, match=r"WRONGTYPE.*another prefix"),
        server_errors(server_url),
    ):
        connect(server_url).lpush("jobs:queue", "x")


def test_wrongtype_inside_a_script(server_url: str, r: redis.Redis) -> None:
    r.set("jobs:queue", "not a list")
    script = connect(server_url).register_script("return redis.call('LPUSH', KEYS[1], 'x')")
    with pytest.raises(WrongTypeError), server_errors(server_url):
        script(keys=["jobs:queue"])


def test_other_response_error(server_url: str) -> None:
    with (
        pytest.raises(ServerError, match=r"^server error from redis://127") as info,
        server_errors(server_url),
    ):
        connect(server_url).execute_command("NO-SUCH-COMMAND")
    assert type(info.value) is ServerError


def test_non_redis_errors_pass_through(server_url: str) -> None:
    with pytest.raises(KeyError), server_errors(server_url):
        raise KeyError("x")
    with pytest.raises(UsageError), server_errors(server_url):
        raise UsageError("mine")


def test_server_errors_as_decorator(server_url: str, r: redis.Redis) -> None:
    r.set("s", "1")

    @server_errors(server_url)
    def push() -> None:
        connect(server_url).lpush("s", "x")

    with pytest.raises(WrongTypeError):
        push()
    with pytest.raises(WrongTypeError):  # reusable
        push()


def test_translate_crossslot() -> None:
    err = redis.ResponseError("CROSSSLOT Keys in request don't hash to the same slot")
    translated = translate_error(err, "redis+cluster://:pw@h:7000")
    assert isinstance(translated, ClusterError)
    assert "hash tag" in str(translated) and "pw@" not in str(translated)


def test_translate_scrubs_password_from_reason() -> None:
    err = redis.ConnectionError(f"Error connecting with password {SECRET} to redis://:{SECRET}@h")
    translated = translate_error(err, f"redis://:{SECRET}@h:1/0")
    assert translated is not None and SECRET not in str(translated)


# --- cluster and sentinel ------------------------------------------------------------------------


def test_cluster_url(make_server: MakeServer) -> None:
    srv = make_server(cluster_enabled="yes", cluster_config_file="nodes.conf")
    admin = srv.client()
    try:
        admin.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    except redis.ResponseError:  # before Redis 7.0: one slot per argument
        admin.execute_command("CLUSTER", "ADDSLOTS", *range(16384))
    deadline = time.monotonic() + 10
    while b"cluster_state:ok" not in admin.execute_command("CLUSTER", "INFO"):
        assert time.monotonic() < deadline, "single-node cluster never became ok"
        time.sleep(0.05)
    admin.close()
    client = connect(f"redis+cluster://127.0.0.1:{srv.port}")
    assert type(client).__name__ == "RedisCluster"
    client.set("{q}:k", "v")
    assert client.get("{q}:k") == b"v"
    client.close()


def test_cluster_url_unreachable() -> None:
    url = f"redis+cluster://:{SECRET}@127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(ServerError) as info, server_errors(url):
        connect(url)
    assert time.monotonic() - started < 5.0
    assert SECRET not in str(info.value)


def test_sentinel_url(make_server: MakeServer, tmp_path: Path) -> None:
    master = make_server(requirepass=SECRET, masterauth=SECRET)
    conf = tmp_path / "sentinel.conf"
    conf.write_text(
        f"sentinel monitor mymaster 127.0.0.1 {master.port} 1\n"
        f"sentinel auth-pass mymaster {SECRET}\n"
    )
    sentinel = make_server(config_file=conf, extra_args=("--sentinel",))
    client = connect(f"redis+sentinel://:{SECRET}@127.0.0.1:{sentinel.port}/mymaster/2")
    client.set("via-sentinel", "1")
    admin = master.client(db=2)
    assert admin.get("via-sentinel") == b"1"
    admin.close()
    client.close()


def test_unreachable_sentinels_in_one_short_line() -> None:
    """redis-py's message repeats each sentinel client's repr; ours names the addresses."""
    a, b = free_port(), free_port()
    url = f"redis+sentinel://:{SECRET}@127.0.0.1:{a},localhost:{b}/mymaster"
    with pytest.raises(ServerError) as info, server_errors(url):
        connect(url).ping()
    assert str(info.value) == (
        f"cannot connect to redis+sentinel://:***@127.0.0.1:{a},localhost:{b}/mymaster: "
        f"no master found for 'mymaster': cannot reach sentinel 127.0.0.1:{a}, localhost:{b}")
    assert info.value.exit_code == ExitCode.UNAVAILABLE


def test_sentinel_without_that_master(make_server: MakeServer, tmp_path: Path) -> None:
    master = make_server()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"sentinel monitor mymaster 127.0.0.1 {master.port} 1\n")
    sentinel = make_server(config_file=conf, extra_args=("--sentinel",))
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/othermaster"
    with pytest.raises(ServerError) as info, server_errors(url):
        connect(url).ping()
    assert str(info.value) == (
        f"cannot connect to {url}: no master found for 'othermaster': "
        "no sentinel knows a healthy master of that name")


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://h:26379",
        "redis+sentinel://h:26379/",
        "redis+sentinel://h:x/mymaster",
        "redis+sentinel://h/mymaster/notadb",
    ],
)
def test_bad_sentinel_urls(url: str) -> None:
    with pytest.raises(UsageError, match="redis\\+sentinel://"):
        connect(url)


def test_parse_sentinel() -> None:
    addresses, service, db, options = conn._parse_sentinel(
        "redis+sentinel://u:p%40w@s1:26379,s2,[::1]:26380/my%20master/3?sentinel_password=sp"
    )
    assert addresses == [("s1", 26379), ("s2", 26379), ("::1", 26380)]
    assert (service, db) == ("my master", 3)
    assert options == {"username": "u", "password": "p@w", "sentinel_password": "sp"}


# --- start-up cost ---------------------------------------------------------------------------


def test_import_does_not_load_redis() -> None:
    code = ("import sys, rq_cli.connection.connect, rq_cli.connection.servers; "
            "print('redis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- a connection cut off during a command ------------------------------------------------------


def test_a_call_cut_off_mid_command_says_the_outcome_is_unknown(
        server: ServerProcess, r: redis.Redis, tmp_path: Path) -> None:
    """A connection that breaks after the command was sent is not "cannot connect": the
    command may have run. One line, exit 69."""
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server.url, "--no-config",
                             "lease", "q", "--wait", "20"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 20
        blocked: list[str] = []
        while not blocked and time.monotonic() < deadline:
            blocked = [c["id"] for c in r.client_list() if c.get("cmd") == "blmove"]
            time.sleep(0.02)
        assert blocked, "the lease never blocked on the server"
        r.client_kill_filter(_id=blocked[0])
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == ExitCode.UNAVAILABLE, (proc.returncode, err)
    assert err.startswith(f"rq-cli: lost the connection to {server.url} during the command, "
                          "so its outcome is unknown"), err
    assert len(err.splitlines()) == 1 and out == ""


def test_a_server_that_cannot_be_reached_is_cannot_connect(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    run = subprocess.run([sys.executable, "-m", "rq_cli", "--url", url, "--no-config",
                          "lease", "q"], capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert run.returncode == ExitCode.UNAVAILABLE
    assert run.stderr.startswith(f"rq-cli: cannot connect to {url}: "), run.stderr
    assert "outcome" not in run.stderr
