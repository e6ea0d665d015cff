"""Start and stop private Redis/Valkey server processes, for the tests and bench/.

Not shipped in the wheel: rq_cli/connection/servers.py holds what the embedded server needs
(finding a
binary, its arguments, its version), and this module builds the test harness on it. Test
modules import it as ``servers`` (pytest puts tests/ on ``sys.path``); bench/ as
``tests.servers``.

:class:`ServerProcess` runs one server on a free TCP port of 127.0.0.1 (never 6379) or on a
unix socket only, in a given directory, with no RDB snapshots and no AOF unless asked::

    with ServerProcess(tmp_dir, config={"appendonly": "yes"}) as server:
        client = redis.Redis.from_url(server.url)
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from rq_cli.connection.servers import (
    ENV_SERVER_BIN,
    ConfigValue,
    ServerStartError,
    ServerVersion,
    config_args,
    find_server_binary,
    log_tail,
    missing_binary_message,
    no_retry,
    version_from_info,
)

__all__ = ["ENV_SERVER_BIN", "ConfigValue", "ServerProcess", "ServerStartError",
           "ServerVersion", "binary_version", "config_args", "find_server_binary", "free_port",
           "log_tail", "missing_binary_message", "no_retry", "version_from_info",
           "wait_until_ready"]

_FORBIDDEN_PORTS = frozenset({6379, 6380})  # the ports a developer's own server is likely on
_MAX_UNIX_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS
_DEFAULT_CONFIG: dict[str, str] = {
    "save": "",  # no RDB snapshots
    "appendonly": "no",
    "protected-mode": "yes",
    "loglevel": "notice",
    "enable-debug-command": "local",  # DEBUG SLEEP etc. for tests; accepted by Redis 7+ and Valkey
}
# Options that servers older than Redis 7 refuse at start-up (DEBUG is open there anyway).
_SINCE_REDIS_7 = ("enable-debug-command",)

# Every ServerProcess started in this interpreter, so none outlives it (see _stop_all).
_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


def free_port(*, cluster_bus: bool = False) -> int:
    """A TCP port on 127.0.0.1 that is free right now (never 6379 or 6380).

    With ``cluster_bus`` the port + 10000 (Redis Cluster's bus port) is free and valid too.
    """
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port in _FORBIDDEN_PORTS:
            continue
        if cluster_bus and not (port + 10000 <= 65535 and _port_is_free(port + 10000)):
            continue
        return port
    raise ServerStartError("could not find a free TCP port on 127.0.0.1")


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@functools.cache
def binary_version(binary: str) -> tuple[int, ...]:
    """The version ``binary --version`` prints (``v=6.2.14`` -> ``(6, 2, 14)``); () if unknown."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = re.search(r"\bv=(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(part) for part in found.groups()) if found else ()


class ServerProcess:
    """One private Redis/Valkey server process, in ``directory``, on a free port or a unix socket.

    ``config`` adds or overrides server options (``{"appendonly": "yes", "appendfsync":
    "always", "requirepass": "secret"}``); ``extra_args`` are appended verbatim. With
    ``unix_socket=True`` the server listens on ``directory/redis.sock`` only (``port 0``).
    ``config_file`` is passed first (a sentinel needs one: ``extra_args=["--sentinel"]``).
    The log goes to ``directory/server.log``. Use as a context manager, or call
    :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        config: Mapping[str, ConfigValue] | None = None,
        extra_args: Iterable[str] = (),
        port: int | None = None,
        unix_socket: bool = False,
        binary: str | None = None,
        config_file: str | os.PathLike[str] | None = None,
        startup_timeout: float = 20.0,
    ) -> None:
        if directory is None:
            directory = tempfile.mkdtemp(prefix="rqcli-server-")
            self._owns_directory = True
        else:
            self._owns_directory = False
        self.directory = Path(directory).resolve()
        self.config: dict[str, ConfigValue] = {
            **_DEFAULT_CONFIG,
            **{name.replace("_", "-"): value for name, value in (config or {}).items()},
        }
        self.extra_args = list(extra_args)
        self.binary = binary or find_server_binary()
        if (0,) < binary_version(self.binary) < (7,):
            for name in _SINCE_REDIS_7:
                if name not in (config or {}) and name.replace("-", "_") not in (config or {}):
                    self.config.pop(name, None)
        self.config_file = None if config_file is None else Path(config_file)
        self.startup_timeout = startup_timeout
        self.unix_socket_path: Path | None = self.directory / "redis.sock" if unix_socket else None
        if port is not None and port in _FORBIDDEN_PORTS:
            raise ValueError(f"refusing to start a test server on port {port}")
        self._fixed_port = port
        self.port: int = 0 if unix_socket else (port or 0)
        self.log_path = self.directory / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._version: ServerVersion | None = None
        if self.unix_socket_path and len(str(self.unix_socket_path)) > _MAX_UNIX_PATH:
            raise ServerStartError(
                f"unix socket path too long ({len(str(self.unix_socket_path))} > "
                f"{_MAX_UNIX_PATH} characters): {self.unix_socket_path}; use a shorter directory"
            )

    # -- addresses ------------------------------------------------------------------------

    @property
    def password(self) -> str | None:
        """The ``requirepass`` the server was configured with, if any."""
        value = self.config.get("requirepass")
        return None if value is None else str(value)

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0`` or ``unix:///path/redis.sock?db=0`` (no password in it)."""
        if self.unix_socket_path is not None:
            return f"unix://{self.unix_socket_path}?db=0"
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def version(self) -> ServerVersion:
        """Which server runs and its version, read from INFO server at start."""
        if self._version is None:
            raise ServerStartError("the server has not been started")
        return self._version

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self.process.pid if self.process is not None else None

    def flushed_client(self) -> Any:
        """A client of database 0 after FLUSHALL (every database emptied): what each test's
        ``r`` fixture is (conftest.py)."""
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, db=0, socket_timeout=30)
        client.flushall()
        return client

    def client(self, **kwargs: Any) -> Any:
        """A ``redis.Redis`` client for this server (bytes responses unless told otherwise)."""
        import redis

        kwargs.setdefault("password", self.password)
        kwargs.setdefault("socket_connect_timeout", 2.0)
        kwargs.setdefault("socket_timeout", 10.0)
        kwargs.setdefault("retry", no_retry())
        if self.unix_socket_path is not None:
            return redis.Redis(unix_socket_path=str(self.unix_socket_path), **kwargs)
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    # -- life cycle -----------------------------------------------------------------------

    def is_running(self) -> bool:
        """True while the server process exists (it may not answer yet)."""
        return self.process is not None and self.process.poll() is None

    def args(self) -> list[str]:
        """The full command line the server is started with."""
        listen: dict[str, ConfigValue]
        if self.unix_socket_path is not None:
            listen = {
                "port": 0,
                "unixsocket": str(self.unix_socket_path),
                "unixsocketperm": "700",
            }
        else:
            listen = {"port": self.port, "bind": "127.0.0.1"}
        fixed = {"dir": str(self.directory), "daemonize": "no", "logfile": ""}
        first = [] if self.config_file is None else [str(self.config_file)]
        options = config_args({**self.config, **listen, **fixed})
        return [self.binary, *first, *options, *self.extra_args]

    def start(self) -> ServerProcess:
        """Start the server and wait until it answers PING; returns ``self``.

        A randomly chosen port that turns out to be taken is replaced and retried.
        """
        if self.is_running():
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        attempts = 1 if (self._fixed_port or self.unix_socket_path or self.port) else 5
        for attempt in range(attempts):
            if self.unix_socket_path is None and not self.port:
                self.port = free_port(cluster_bus=_truthy(self.config.get("cluster-enabled")))
            try:
                self._spawn_and_wait()
                return self
            except ServerStartError:
                in_use = "Address already in use" in log_tail(self.log_path, 50)
                if not in_use or attempt == attempts - 1:
                    raise
                self.port = 0
        return self  # not reached

    def _spawn_and_wait(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.args(),
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in a terminal reaches pytest, not the server
            )
        _RUNNING.add(self)
        try:
            self._version = wait_until_ready(
                self._probe_address(),
                password=self.password,
                timeout=self.startup_timeout,
                process=self.process,
                log_path=self.log_path,
            )
        except BaseException:
            self.kill()
            raise

    def _probe_address(self) -> tuple[str, int] | str:
        if self.unix_socket_path is not None:
            return str(self.unix_socket_path)
        return ("127.0.0.1", self.port)

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down: SIGTERM (it flushes the AOF), then SIGKILL after ``timeout``."""
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would; nothing more is written."""
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        proc.wait()
        self.process = None

    def restart(self) -> ServerProcess:
        """Stop (gracefully) and start again on the same port and directory, keeping AOF data."""
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop the server, and remove the directory if this object created it."""
        self.stop()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<ServerProcess {self.url} {state} in {self.directory}>"


@atexit.register
def _stop_all() -> None:
    """Kill servers still running when the interpreter exits (a test run that crashed)."""
    for server in list(_RUNNING):
        server.kill()


def _truthy(value: ConfigValue) -> bool:
    return value is True or str(value).lower() == "yes"


def wait_until_ready(
    address: tuple[str, int] | str,
    *,
    password: str | None = None,
    timeout: float = 20.0,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
) -> ServerVersion:
    """Wait until the server at ``address`` (host/port or unix socket path) answers PING.

    Returns its version. Raises :class:`ServerStartError` with the log's tail if the process
    exits or ``timeout`` seconds pass first.
    """
    import redis

    # No retries inside redis-py: this loop is the retry, and its default backoff of seconds
    # would make a refused connection (the server not listening yet) slow to notice.
    options: dict[str, Any] = {
        "password": password,
        "socket_timeout": 2,
        "socket_connect_timeout": 1,
        "retry": no_retry(),
        "protocol": 2,  # no HELLO: servers older than Redis 6 do not know it
    }
    if isinstance(address, str):
        client = redis.Redis(unix_socket_path=address, **options)
    else:
        client = redis.Redis(host=address[0], port=address[1], **options)
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    try:
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise ServerStartError(
                    f"server exited with status {process.returncode} during start-up"
                    + _tail_note(log_path)
                )
            try:
                client.ping()
                return version_from_info(client.info("server"))
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as err:
                last_error = err
                time.sleep(0.02)
    finally:
        client.close()
    raise ServerStartError(
        f"server at {address} did not answer PING within {timeout:g} s ({last_error})"
        + _tail_note(log_path)
    )


def _tail_note(log_path: Path | None) -> str:
    if log_path is None:
        return ""
    tail = log_tail(log_path)
    return f"\n--- {log_path} (last lines) ---\n{tail}" if tail else f" (no log at {log_path})"
