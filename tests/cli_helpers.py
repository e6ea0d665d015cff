"""The ``cli(...)`` fixture: run rq-cli in-process through Typer's CliRunner.

Every run is isolated from the user's environment: no config file is found unless a test
writes one (the working directory and $XDG_CONFIG_HOME are a temporary directory), the
rq-cli environment variables are cleared, and ``--url`` points at the test server.
stdout and stderr are kept apart; ``run.json`` parses stdout line by line.

Test modules load it as a plugin: ``pytest_plugins = ["cli_helpers"]``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rq_cli.cli import app
from rq_cli.core.contract.env import (
    ENV_CONFIG,
    ENV_DEBUG,
    ENV_JSON,
    ENV_NO_CONFIG,
    ENV_REDIS_URL,
    ENV_URL,
    ENV_XDG_CONFIG_HOME,
)
from rq_cli.output.render import Terminal

CLEARED_ENV = (ENV_URL, ENV_CONFIG, ENV_NO_CONFIG,
               ENV_JSON, ENV_DEBUG, ENV_REDIS_URL)


@dataclass
class Run:
    result: Result

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    @property
    def stdout(self) -> str:
        return self.result.stdout

    @property
    def stdout_bytes(self) -> bytes:
        return self.result.stdout_bytes

    @property
    def stderr(self) -> str:
        return self.result.stderr

    @property
    def json(self) -> list[Any]:
        """stdout parsed as JSON lines (every line must parse)."""
        return [json.loads(line) for line in self.stdout.splitlines() if line]

    @property
    def one(self) -> Any:
        rows = self.json
        assert len(rows) == 1, rows
        return rows[0]

    def __repr__(self) -> str:
        return (f"<Run exit={self.exit_code} stdout={self.stdout[:500]!r} "
                f"stderr={self.stderr[:500]!r} exception={self.result.exception!r}>")


Cli = Callable[..., Run]


def run_cli(args: Sequence[str], *, url: str | None, home: Path, input: bytes | str | None = None,
            env: Mapping[str, str | None] | None = None, tty: bool = False,
            stdin_tty: bool | None = None, stderr_tty: bool = False,
            width: int | None = 200) -> Run:
    full_env: dict[str, str | None] = {name: None for name in CLEARED_ENV}
    full_env[ENV_XDG_CONFIG_HOME] = str(home / "xdg")
    full_env.update(env or {})
    terminal = Terminal(stdout=tty, stderr=stderr_tty,
                        stdin=tty if stdin_tty is None else stdin_tty, width=width)
    prefix = ["--url", url] if url else []
    result = CliRunner().invoke(app, [*prefix, *args], input=input, env=full_env, obj=terminal,
                                catch_exceptions=False)
    return Run(result)


@pytest.fixture
def cli(server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli("push", "q", "{}")`` against the (flushed) test server; see the module docstring.

    Keywords: ``input`` (stdin), ``env``, ``tty`` (stdout and stdin are terminals: tables,
    questions), ``stdin_tty``, ``stderr_tty`` (progress bars), ``url`` (None: no --url).
    """
    monkeypatch.chdir(tmp_path)
    home = tmp_path

    def cli(*args: str, url: str | None = server_url, **kwargs: Any) -> Run:
        return run_cli(args, url=url, home=home, **kwargs)

    return cli


def write_config(directory: Path, text: str, name: str = "rq-cli.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def rq_cli_command() -> list[str]:
    """The installed ``rq-cli`` console script (``python -m rq_cli`` where there is none)."""
    exe = Path(sys.executable).with_name("rq-cli")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "rq_cli"]
