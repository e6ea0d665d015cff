"""The embedded server: start, reuse, persistence, stop, concurrency, no TCP port."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rq_cli.connection import embedded
from rq_cli.connection.connect import connect
from rq_cli.errors import ServerError


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A short fresh directory (unix socket paths are limited); its server is always stopped."""
    base = Path(tempfile.mkdtemp(prefix="rqe-"))
    directory = base / "data"
    try:
        yield directory
    finally:
        try:
            embedded.stop(directory, timeout=5)
        finally:
            pid = embedded._read_pid(directory) if directory.exists() else None
            if pid is not None and embedded._is_server(pid):
                os.kill(pid, signal.SIGKILL)
            subprocess.run(["rm", "-rf", str(base)], check=False)


def _client(sock: Path) -> redis.Redis:
    return redis.Redis(unix_socket_path=str(sock))


def test_start_and_reuse(data_dir: Path) -> None:
    assert embedded.status(data_dir)["running"] is False
    sock = embedded.ensure_running(data_dir)
    assert sock == data_dir.resolve() / "redis.sock"
    first = embedded.status(data_dir)
    assert first["running"] is True
    assert isinstance(first["pid"], int)
    assert first["server"] in ("redis", "valkey") and first["version"]
    assert first["socket"] == str(sock) and first["dir"] == str(data_dir.resolve())
    assert embedded.ensure_running(data_dir) == sock
    assert embedded.status(data_dir)["pid"] == first["pid"]


def test_permissions(data_dir: Path) -> None:
    sock = embedded.ensure_running(data_dir)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(sock.stat().st_mode) == 0o700


def test_existing_open_directory_is_tightened(data_dir: Path) -> None:
    data_dir.mkdir(mode=0o755, parents=True)
    data_dir.chmod(0o755)
    embedded.ensure_running(data_dir)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


def test_outlives_the_starting_process(data_dir: Path) -> None:
    code = ("from rq_cli.connection import embedded; "
            f"print(embedded.ensure_running({str(data_dir)!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sock = Path(out.stdout.strip())
    assert _client(sock).ping()  # the starting process has exited; the server is still there


def test_data_survives_stop_and_start(data_dir: Path) -> None:
    sock = embedded.ensure_running(data_dir)
    _client(sock).rpush(b"q", b"job-1", b"job-2")
    pid = embedded.status(data_dir)["pid"]
    assert embedded.stop(data_dir) is True
    assert embedded.status(data_dir) == {
        "running": False,
        "pid": None,
        "socket": str(sock),
        "server": None,
        "version": None,
        "dir": str(data_dir.resolve()),
    }
    assert not sock.exists()
    embedded.ensure_running(data_dir)
    assert embedded.status(data_dir)["pid"] != pid
    assert _client(sock).lrange(b"q", 0, -1) == [b"job-1", b"job-2"]
    # the AOF: a directory of parts since Redis 7 (and in Valkey), one file before
    aof_dir = data_dir / "appendonlydir"
    assert list(aof_dir.iterdir()) if aof_dir.exists() else (data_dir / "appendonly.aof").stat()
    assert not list(data_dir.glob("*.rdb"))


def test_restarts_after_a_crash(data_dir: Path) -> None:
    sock = embedded.ensure_running(data_dir)
    client = _client(sock)
    client.set(b"k", b"v")
    client.execute_command("CONFIG", "SET", "appendfsync", "always")
    client.set(b"k2", b"v2")  # fsynced before the reply
    pid = embedded.status(data_dir)["pid"]
    os.kill(pid, signal.SIGKILL)
    assert embedded._wait_gone(pid, 5)
    assert (data_dir / "redis.pid").exists()  # stale pidfile left behind
    embedded.ensure_running(data_dir)
    assert _client(sock).get(b"k2") == b"v2"


def test_stop_when_not_running(data_dir: Path) -> None:
    assert embedded.stop(data_dir) is False
    data_dir.mkdir(parents=True)
    assert embedded.stop(data_dir) is False


def test_concurrent_first_calls_start_one_server(data_dir: Path) -> None:
    code = (
        "import sys; from rq_cli.connection import embedded; "
        "embedded.ensure_running(sys.argv[1]); print(embedded.status(sys.argv[1])['pid'])"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(data_dir)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    pids = {proc.communicate(timeout=90)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert len(pids) == 1
    assert _servers_in(data_dir) == [int(pids.pop())]


def test_no_tcp_port(data_dir: Path) -> None:
    sock = embedded.ensure_running(data_dir)
    client = _client(sock)
    assert client.config_get("port") == {"port": "0"}
    assert client.info("server")["tcp_port"] == 0
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp to list listening sockets")
    pid = embedded.status(data_dir)["pid"]
    assert _listening_tcp_inodes() & _socket_inodes(pid) == set()


def test_connect_embedded_url(data_dir: Path) -> None:
    client = connect(f"embedded:{data_dir}")
    client.set("k", "v")
    assert client.get("k") == b"v"
    assert embedded.status(data_dir)["running"]
    client.close()


def test_default_directory_is_relative_to_cwd(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    data_dir.mkdir(parents=True)
    monkeypatch.chdir(data_dir)
    try:
        client = connect("embedded:")
        assert client.ping()
        assert (data_dir / ".rq-cli" / "redis.sock").exists()
        client.close()
    finally:
        embedded.stop(data_dir / ".rq-cli")


def test_too_long_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match="too long"):
        embedded.ensure_running(tmp_path / ("x" * 120))


def test_no_binary_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    monkeypatch.setenv("RQ_CLI_SERVER_BIN", "/nonexistent/valkey-server")
    with pytest.raises(ServerError, match="RQ_CLI_SERVER_BIN"):
        embedded.ensure_running(data_dir)


def test_records_the_binary(data_dir: Path) -> None:
    embedded.ensure_running(data_dir)
    recorded = (data_dir / "server.bin").read_text().strip()
    assert os.access(recorded, os.X_OK)


# --- helpers --------------------------------------------------------------------------------------


def _servers_in(data_dir: Path) -> list[int]:
    """Pids of running processes whose working directory is ``data_dir``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == data_dir.resolve():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _listening_tcp_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes
