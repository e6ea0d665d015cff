"""TOML config discovery and resolution: a queue name -> :class:`QueueSpec` (docs/DESIGN.md 5).

The file used is the first found of ``--config PATH``, ``$RQ_CLI_CONFIG``, ``./rq-cli.toml``,
``$XDG_CONFIG_HOME/rq-cli/config.toml`` (default ``~/.config/rq-cli/config.toml``); ``--no-config``
uses none. The server of a queue is ``--url``, else ``$RQ_CLI_URL`` (both override every queue's
server), else the queue's ``url``, else the file's top-level ``url``, else ``$REDIS_URL``, else
``redis://localhost:6379/0``.

Every environment variable rq-cli reads is named once, in ``core/contract/env.py``. This module
imports neither redis nor rich, and tomllib only when a file is actually read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

from ..core.contract.env import (
    ENV_CONFIG,
    ENV_REDIS_URL,
    ENV_URL,
    ENV_WEB_TOKEN,
    ENV_XDG_CONFIG_HOME,
)
from ..core.types import NO_TLS, QueueOptions, TlsOptions
from ..errors import ConfigError, UsageError
from .rules import CHECK_RULES, INTEGER_KEYS, OPTION_RULES, TLS_KEYS, Validator
from .tomlspots import Locator, table_name

DEFAULT_URL = "redis://localhost:6379/0"
LOCAL_FILE = "rq-cli.toml"


SECRET_HINT = "(hidden)"
SECRET_IN_URL = "(hidden, in the url)"
NOT_SET = "(not set)"


@dataclass(frozen=True)
class QueueSpec:
    """Everything needed to open one queue: where it lives and how it behaves."""

    name: str  # as the user wrote it (a config name, or the prefix itself)
    url: str
    prefix: str
    password: str | None = field(default=None, repr=False)
    options: QueueOptions = field(default_factory=QueueOptions)
    configured: bool = False  # the name is a [queues.NAME] of the config file
    url_source: str = "default"  # flag | env:RQ_CLI_URL | queue | file | env:REDIS_URL | default
    tls: TlsOptions = NO_TLS
    #: ``shards = N``: a sharded queue (docs/DESIGN.md section 7) whose server must say N
    shards: int | None = None


class Candidate(NamedTuple):  # (NamedTuple: cheaper to create than a dataclass at start-up)
    """A place where a config file is looked for (``rq-cli config path``)."""

    path: Path
    source: str  # --config | $RQ_CLI_CONFIG | ./rq-cli.toml | $XDG_CONFIG_HOME | ~/.config
    exists: bool


def candidates(explicit: str | os.PathLike[str] | None = None, *,
               env: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[Candidate]:
    """The places searched, in order. An explicit path (flag or env) is the only candidate."""
    env = os.environ if env is None else env
    if explicit:
        return [_candidate(Path(explicit), "--config")]
    if env.get(ENV_CONFIG):
        return [_candidate(Path(env[ENV_CONFIG]), f"${ENV_CONFIG}")]
    found = [_candidate((cwd or Path.cwd()) / LOCAL_FILE, f"./{LOCAL_FILE}")]
    xdg = env.get(ENV_XDG_CONFIG_HOME, "")
    if xdg and os.path.isabs(xdg):  # the XDG spec says relative values are to be ignored
        found.append(_candidate(Path(xdg) / "rq-cli" / "config.toml", f"${ENV_XDG_CONFIG_HOME}"))
    else:
        found.append(_candidate(Path.home() / ".config" / "rq-cli" / "config.toml", "~/.config"))
    return found


def _candidate(path: Path, source: str) -> Candidate:
    return Candidate(path=path, source=source, exists=path.is_file())


def find(explicit: str | os.PathLike[str] | None = None, *, no_config: bool = False,
         env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path | None:
    """The config file to use, or None. A path named explicitly must exist."""
    if no_config:
        return None
    env = os.environ if env is None else env
    for cand in candidates(explicit, env=env, cwd=cwd):
        if cand.exists:
            return cand.path
        if cand.source in ("--config", f"${ENV_CONFIG}") and cand.path.is_dir():
            raise ConfigError(f"config file {cand.path} (from {cand.source}) is a directory: "
                              f"name the file itself, for example {cand.path / LOCAL_FILE}")
        if cand.source in ("--config", f"${ENV_CONFIG}") and cand.path.exists():
            raise ConfigError(f"config file {cand.path} (from {cand.source}) is not a regular "
                              "file (a device, a pipe or a socket): name a file")
        if cand.source in ("--config", f"${ENV_CONFIG}"):
            raise ConfigError(f"config file {cand.path} (from {cand.source}) does not exist")
    return None


@dataclass
class Config:
    """A parsed, validated config file (or the empty config when there is none)."""

    path: Path | None = None
    url: str | None = None
    password_env: str | None = None
    tls: dict[str, Any] = field(default_factory=dict)  # top-level tls_* keys
    defaults: dict[str, Any] = field(default_factory=dict)
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    dash_read_only: bool = False  # [dash] read_only: the console hides every action
    web_read_only: bool = False  # [web] read_only: the web view hides and refuses actions
    web_token: str | None = None  # [web] token: required on every request of the web view

    # -- resolution -----------------------------------------------------------------------
    def resolve(self, name: str, *, url: str | None = None, raw_prefix: bool = False,
                env: Mapping[str, str] | None = None) -> QueueSpec:
        """Resolve a QUEUE argument. ``url`` is the ``--url`` flag; ``raw_prefix`` is ``--prefix``.

        A name the config does not know (or any name with ``raw_prefix``) is the key prefix.
        """
        env = os.environ if env is None else env
        if not name:
            raise UsageError("a queue name cannot be empty")
        section = None if raw_prefix else self.queues.get(name)
        queue = section or {}
        server, source, password_env = self._server(queue, url, env)
        tls = self._tls(queue, source)
        password = None
        if password_env:  # the same at both levels: unset is an error, empty no password
            password = env.get(password_env)
            if password is None:
                table = ("queues", name) if queue.get("password_env") else ()
                raise ConfigError(
                    f"{self._where(table, 'password_env')}: password_env = {password_env!r} "
                    f"(in {table_name(table)}) names an environment variable that is not set; "
                    f"export {password_env} (empty for a server without a password)")
            password = password or None
        return QueueSpec(
            name=name,
            url=server,
            prefix=queue.get("prefix", name),
            password=password,
            options=self.options(None if section is None else name),
            configured=section is not None,
            url_source=source,
            tls=tls,
            shards=queue.get("shards"),
        )

    def _tls(self, queue: Mapping[str, Any], source: str) -> TlsOptions:
        """The TLS settings of the server a queue uses: like ``password_env``, the queue's own
        keys, then the top level's for the file's servers; none for --url and $RQ_CLI_URL."""
        if source in ("flag", f"env:{ENV_URL}"):
            return NO_TLS
        top = self.tls if source in ("queue", "file") else {}
        values = {key: queue.get(key, top.get(key)) for key in TLS_KEYS}
        return TlsOptions(ca_file=values["tls_ca_file"], cert_file=values["tls_cert_file"],
                          key_file=values["tls_key_file"],
                          insecure=bool(values["tls_insecure"]))

    def _server(self, queue: Mapping[str, Any], url: str | None,
                env: Mapping[str, str]) -> tuple[str, str, str | None]:
        """(url, where it came from, the password variable that applies to it)."""
        if url:
            return url, "flag", None
        if env.get(ENV_URL):
            return env[ENV_URL], f"env:{ENV_URL}", None
        if queue.get("url"):
            return queue["url"], "queue", queue.get("password_env", self.password_env)
        if self.url:
            return self.url, "file", queue.get("password_env", self.password_env)
        # (password_env, at either level, applies to every server but --url/$RQ_CLI_URL)
        if env.get(ENV_REDIS_URL):
            return env[ENV_REDIS_URL], f"env:{ENV_REDIS_URL}", \
                queue.get("password_env", self.password_env)
        return DEFAULT_URL, "default", queue.get("password_env", self.password_env)

    def default_url(self, *, url: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """The server a name the config does not know would use."""
        env = os.environ if env is None else env
        return self._server({}, url, env)[0]

    def options(self, name: str | None = None) -> QueueOptions:
        """Built-in defaults < ``[defaults]`` < ``[queues.NAME]``."""
        merged: dict[str, Any] = dict(self.defaults)
        if name is not None:
            merged.update({k: v for k, v in self.queues[name].items() if k in OPTION_RULES})
        known = {f.name for f in fields(QueueOptions)}
        kwargs: dict[str, Any] = {
            k: (float(v) if type(v) is int and k not in INTEGER_KEYS else v)
            for k, v in merged.items() if k in known}
        if "tenant_weights" in kwargs:  # (a frozen dataclass holds pairs, not a dict)
            kwargs["tenant_weights"] = tuple(sorted(kwargs["tenant_weights"].items()))
        return QueueOptions(**kwargs)

    def url_error(self, spec: QueueSpec, problem: str) -> ConfigError:
        """The config error for a server URL of this file that cannot be used: ``problem``,
        naming the file and the line of the ``url`` key (``spec.url_source`` says which)."""
        table = ("queues", spec.name) if spec.url_source == "queue" else ()
        return ConfigError(f"{self._where(table, 'url')}: url in {table_name(table)}: {problem}")

    def _where(self, table: tuple[str, ...], key: str) -> str:
        """``FILE line N`` of ``key`` in ``[table]`` (just ``FILE`` when it cannot tell)."""
        line = None
        if self.path is not None:
            try:
                line = Locator(self.path.read_text(encoding="utf-8"))(table, key)
            except (OSError, UnicodeDecodeError):
                line = None
        return f"{self._file()} line {line}" if line else self._file()

    def thresholds(self, name: str | None = None) -> dict[str, float]:
        """The ``stats --check`` limits set in the file: ``[defaults]`` < ``[queues.NAME]``
        (keys ``max_pending``, ``max_age``, ``max_dead``, ``max_abandoned``)."""
        merged = {k: v for k, v in self.defaults.items() if k in CHECK_RULES}
        if name is not None and name in self.queues:
            merged.update({k: v for k, v in self.queues[name].items() if k in CHECK_RULES})
        return merged

    # -- display --------------------------------------------------------------------------
    def _file(self) -> str:
        return str(self.path) if self.path else "config"

    def show(self, *, url: str | None = None, env: Mapping[str, str] | None = None,
             mask: Callable[[str], str] = str,
             password_of: Callable[[str], str | None] = lambda url: None) -> dict[str, Any]:
        """The effective configuration, secrets hidden (``rq-cli config show``).

        ``mask`` masks passwords in URLs (``rq_cli.connection.connect.mask_url``);
        ``password_of`` finds the password a URL carries
        (``rq_cli.connection.connect.url_password``), shown as set, hidden.
        """
        env = os.environ if env is None else env
        queues = {}
        for name, section in self.queues.items():
            server, source, password_env = self._server(section, url, env)
            entry: dict[str, Any] = {"prefix": section.get("prefix", name),
                                     "url": mask(server), "url_source": source}
            if password_env:
                entry["password_env"] = password_env
                entry["password"] = (SECRET_HINT if env.get(password_env) else
                                     NOT_SET if password_env not in env else
                                     "(empty: no password)")
            elif password_of(server):
                entry["password"] = SECRET_IN_URL
            tls = self._tls(section, source)
            entry.update({key: value for key, value in zip(TLS_KEYS, tls, strict=True) if value})
            entry.update(_options_dict(self.options(name)))
            entry.update(self.thresholds(name))
            queues[name] = entry
        shown: dict[str, Any] = {
            "path": str(self.path) if self.path else None,
            "url": mask(self.default_url(url=url, env=env)),
            "defaults": {**_options_dict(self.options()), **self.thresholds()},
            "queues": queues,
        }
        token_from = (f"env:{ENV_WEB_TOKEN}" if env.get(ENV_WEB_TOKEN) else
                      "file" if self.web_token else None)
        shown["web"] = {"read_only": self.web_read_only,
                        "token": SECRET_HINT if token_from else NOT_SET,
                        **({"token_source": token_from} if token_from else {})}
        shown["dash"] = {"read_only": self.dash_read_only}
        if self.password_env:
            shown["password_env"] = self.password_env
        if password_of(self.default_url(url=url, env=env)):
            shown["password"] = SECRET_IN_URL
        return shown


def _options_dict(options: QueueOptions) -> dict[str, Any]:
    out = {f.name: getattr(options, f.name) for f in fields(QueueOptions)}
    out["tenant_weights"] = dict(options.tenant_weights)
    return out


# -- loading and validation ----------------------------------------------------------------------
def load(explicit: str | os.PathLike[str] | None = None, *, no_config: bool = False,
         env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Config:
    """Find and parse the config file; the empty Config when there is none."""
    path = find(explicit, no_config=no_config, env=env, cwd=cwd)
    return Config() if path is None else parse_file(path)


def parse_file(path: Path) -> Config:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    return parse_text(text, path)


def parse_text(text: str, path: Path | None = None) -> Config:
    """Parse and validate TOML ``text``; errors name the file, the line and the key."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    where = str(path) if path else "config"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:  # (the parser recurses per level of nested arrays or tables)
        raise ConfigError(f"{where}: invalid TOML: arrays or inline tables nested too deep "
                          "(over about 1000 levels)") from None
    return Config(path=path, **Validator(text, where).fields(data))


