"""The config file's keys and their checks: which keys each table takes, the bounds of each
value (the same bounds as the CLI's options and the engine's, from rq_cli.core.contract.limits), and
the :class:`Validator` that reads a parsed file against them, naming the file, the line and
the key of what is wrong. :mod:`rq_cli.settings.config` finds and resolves the file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..core.codes import LAYOUTS, REQUEUE_ENDS
from ..core.contract.counts import AGE, THRESHOLDS
from ..core.contract.keys import prefix_collision
from ..core.contract.limits import (
    ALL_REPLICAS,
    MAX_ATTEMPTS,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    MAX_LEASE_SECONDS,
    MAX_LEASE_TEXT,
    MAX_WAIT_REPLICAS,
    MAX_WAIT_TIMEOUT,
)
from ..core.contract.util import check_tenant, check_weight
from ..errors import ConfigError, UsageError
from .tomlspots import Locator, quote, table_name, toml_type

# Bounds of the durations (seconds) and counts a config file may set: rq_cli.core.contract.limits,
# the same bounds as the CLI's options and the engine's checks. nan and inf are refused (tomllib
# reads both as floats).


def _between(lo: float, hi: float, hi_name: str, *,
             low_open: bool = False) -> Callable[[float], Any]:
    """A check: ``lo <= v <= hi`` (``lo < v`` with ``low_open``), else why it fails."""
    def check(value: float) -> Any:
        if not math.isfinite(value):
            return "must be a finite number"
        if value < lo or (low_open and value == lo):
            return f"must be greater than {lo:g}" if low_open else f"must be {lo:g} or more"
        if value > hi:
            return f"must be at most {hi:.0f} seconds ({hi_name})"
        return True
    return check


#: What ``wait_replicas`` takes: a count, or every replica.
WAIT_REPLICAS_KIND = f'an integer or "{ALL_REPLICAS}"'
# Option keys allowed in [defaults] and [queues.NAME], with their checks.
_NUMBER = "a number"
_DELAY = _between(0, MAX_DELAY, MAX_DELAY_TEXT)
OPTION_RULES: dict[str, tuple[str, Any]] = {
    "lease_seconds": (_NUMBER, _between(0, MAX_LEASE_SECONDS, MAX_LEASE_TEXT, low_open=True)),
    "max_attempts": ("an integer", lambda v: (0 <= v <= MAX_ATTEMPTS) or
                     f"must be 0 (unlimited) or more, and at most {MAX_ATTEMPTS}"),
    "grace_seconds": (_NUMBER, _DELAY),
    "retry_backoff": (_NUMBER, _DELAY),
    "retry_backoff_max": (_NUMBER, _DELAY),
    "layout": ("a string", lambda v: v in LAYOUTS or f"must be one of {', '.join(LAYOUTS)}"),
    "requeue": ("a string", lambda v: v in REQUEUE_ENDS or "must be back or front"),
    "tenant_weights": ("a table", lambda v: _weights_verdict(v)),
    "dedup_window": (_NUMBER, _DELAY),
    "batch_ttl": (_NUMBER, _between(0, MAX_DELAY, MAX_DELAY_TEXT, low_open=True)),
    # durability: how many replicas (and whether their disks) confirm each write
    "wait_replicas": (WAIT_REPLICAS_KIND, lambda v: wait_replicas_verdict(v)),
    "wait_timeout": (_NUMBER, lambda v: wait_timeout_verdict(v)),
    "wait_fsync": ("a boolean", lambda v: True),
}
#: Option keys whose integer values stay integers (the others' are read as seconds).
INTEGER_KEYS = ("max_attempts", "wait_replicas")


def wait_replicas_verdict(value: int | str) -> Any:
    """``wait_replicas``: True, or why the value cannot be used (the config file's check,
    and the flag's and the environment's)."""
    return value == ALL_REPLICAS or (0 <= int(value) <= MAX_WAIT_REPLICAS) or \
        f'must be 0 (off) or more, at most {MAX_WAIT_REPLICAS}, or "{ALL_REPLICAS}"'


def parse_wait_replicas(text: str) -> int | str:
    """``--wait-replicas`` (or $RQ_CLI_WAIT_REPLICAS) as given: ``all`` or a whole number,
    checked; a UsageError (exit 2) otherwise."""
    value = text.strip()
    parsed: int | str = ALL_REPLICAS if value.lower() == ALL_REPLICAS else \
        int(value) if value.lstrip("-").isdigit() else ""
    verdict = "must be a whole number or all" if parsed == "" else \
        wait_replicas_verdict(parsed)
    if verdict is not True:
        raise UsageError(f"--wait-replicas {verdict} (got {text!r})")
    return parsed


def wait_timeout_verdict(value: float) -> Any:
    """``wait_timeout``: True, or why the seconds cannot be used (WAIT's 0 waits forever)."""
    if not math.isfinite(value) or not 0 < value <= MAX_WAIT_TIMEOUT:
        return (f"must be more than 0 and at most {MAX_WAIT_TIMEOUT:g} seconds (the "
                "connection's timeout is longer)")
    return True


def _weights_verdict(weights: dict[str, Any]) -> Any:
    """tenant_weights = {T = 3}: valid tenant names, whole-number weights in range."""
    for tenant, weight in weights.items():
        try:
            check_tenant(tenant)
            check_weight(tenant, weight)
        except UsageError as exc:
            return f"is wrong: {exc}"
    return True


# The thresholds of ``stats --check``, ``max_<key>`` for each count of core/contract/counts.py with
# a threshold (THRESHOLDS), also per queue: not engine options (QueueOptions), read by
# Config.thresholds. An age is seconds (a number); a count, an integer.
CHECK_RULES: dict[str, tuple[str, Any]] = {
    f"max_{key}": (_NUMBER, _DELAY) if count.kind == AGE
    else ("an integer", lambda v: v >= 0 or "must be 0 or more")
    for key, (count, _) in THRESHOLDS.items()}
RULES = {**OPTION_RULES, **CHECK_RULES}
# The server's TLS settings: paths (strings), and tls_insecure (a boolean).
TLS_FILE_KEYS = ("tls_ca_file", "tls_cert_file", "tls_key_file")
TLS_KEYS = (*TLS_FILE_KEYS, "tls_insecure")
QUEUE_ONLY_KEYS = ("prefix", "url", "password_env")
TOP_LEVEL_KEYS = ("url", "password_env", *TLS_KEYS, "defaults", "queues", "dash", "web")
#: Keys of the [dash] table (``rq-cli dash``): booleans.
DASH_KEYS = ("read_only",)
#: Keys of the [web] table (``rq-cli web``): read_only (a boolean), token (a string: the
#: secret every request must carry; $RQ_CLI_WEB_TOKEN overrides it).
WEB_KEYS = ("read_only", "token")
QUEUE_KEYS = (*QUEUE_ONLY_KEYS, "shards", *TLS_KEYS, *RULES)


class Validator:
    """Checks a parsed TOML document key by key; each error names the file, the line and the
    key (:meth:`fields`: the checked values, as :class:`~rq_cli.settings.config.Config`'s
    fields)."""


    def __init__(self, text: str, where: str) -> None:
        self.where = where
        self.locate = Locator(text)

    def fail(self, table: tuple[str, ...], key: str | None, message: str) -> ConfigError:
        line = self.locate(table, key)
        at = f" line {line}" if line else ""
        return ConfigError(f"{self.where}{at}: {message}")

    def fields(self, data: dict[str, Any]) -> dict[str, Any]:
        self.unknown((), data, TOP_LEVEL_KEYS)
        cfg: dict[str, Any] = {"queues": {}}
        cfg["url"] = self.string((), data, "url")
        cfg["password_env"] = self.string((), data, "password_env")
        cfg["tls"] = self.tls((), data)
        defaults = self.table((), data, "defaults")
        self.unknown(("defaults",), defaults, tuple(RULES))
        cfg["defaults"] = self.options(("defaults",), defaults)
        dash = self.table((), data, "dash")
        self.unknown(("dash",), dash, DASH_KEYS)
        cfg["dash_read_only"] = self.boolean(("dash",), dash, "read_only")
        web = self.table((), data, "web")
        self.unknown(("web",), web, WEB_KEYS)
        cfg["web_read_only"] = self.boolean(("web",), web, "read_only")
        cfg["web_token"] = self.string(("web",), web, "token") or None
        queues = self.table((), data, "queues")
        for name, section in queues.items():
            table = ("queues", name)
            if not isinstance(section, dict):
                raise self.fail(("queues",), name, f"queues.{name} must be a table "
                                                   f"([queues.{quote(name)}])")
            self.unknown(table, section, QUEUE_KEYS)
            entry = self.options(table, section)
            for key in QUEUE_ONLY_KEYS:
                value = self.string(table, section, key)
                if value is not None:
                    entry[key] = value
            entry.update(self.tls(table, section))
            if "shards" in section:
                entry["shards"] = self.shards(table, section["shards"])
            if entry.get("prefix") == "":
                raise self.fail(table, "prefix", "prefix cannot be empty")
            why = prefix_collision(entry.get("prefix", name))
            if why:
                raise self.fail(table, "prefix" if "prefix" in entry else None,
                                f"queue prefix {entry.get('prefix', name)!r} cannot be used: "
                                f"{why}")
            cfg["queues"][name] = entry
        return cfg

    def unknown(self, table: tuple[str, ...], data: Mapping[str, Any],
                allowed: tuple[str, ...]) -> None:
        for key in data:
            if key not in allowed:
                import difflib

                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else \
                    f"; valid keys: {', '.join(allowed)}"
                raise self.fail(table, key, f"unknown key {key!r} in {table_name(table)}{hint}")

    def shards(self, table: tuple[str, ...], value: Any) -> int:
        from ..core.contract.limits import MAX_SHARDS

        if isinstance(value, bool) or not isinstance(value, int) or \
                not 1 <= value <= MAX_SHARDS:
            raise self.fail(table, "shards", f"shards in {table_name(table)} must be a whole "
                                              f"number from 1 to {MAX_SHARDS}")
        return value

    def boolean(self, table: tuple[str, ...], data: Mapping[str, Any], key: str) -> bool:
        """A boolean key (false when absent)."""
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(table, key, f"{key} in {table_name(table)} must be a boolean "
                                        f"(true or false), not {toml_type(value)}")
        return value

    def string(self, table: tuple[str, ...], data: Mapping[str, Any], key: str) -> str | None:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(table, key, f"{key} in {table_name(table)} must be a string, "
                                        f"not {toml_type(value)}")
        return value

    def tls(self, table: tuple[str, ...], data: Mapping[str, Any]) -> dict[str, Any]:
        """The ``tls_*`` keys of a table: file paths (non-empty strings), tls_insecure a boolean."""
        out: dict[str, Any] = {}
        for key in TLS_FILE_KEYS:
            value = self.string(table, data, key)
            if value == "":
                raise self.fail(table, key, f"{key} cannot be empty")
            if value is not None:
                out[key] = os.path.expanduser(value)
        insecure = data.get("tls_insecure")
        if insecure is not None:
            if not isinstance(insecure, bool):
                raise self.fail(table, "tls_insecure",
                                f"tls_insecure in {table_name(table)} must be a boolean "
                                f"(true or false), not {toml_type(insecure)}")
            out["tls_insecure"] = insecure
        return out

    def table(self, table: tuple[str, ...], data: Mapping[str, Any], key: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(table, key, f"{key} must be a table ([{key}]), "
                                        f"not {toml_type(value)}")
        return value

    def options(self, table: tuple[str, ...], data: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, (kind, check) in RULES.items():
            if key not in data:
                continue
            value = data[key]
            if kind == "a boolean":
                if not isinstance(value, bool):
                    raise self.fail(table, key, f"{key} in {table_name(table)} must be a "
                                                f"boolean (true or false), not {toml_type(value)}")
                out[key] = value
                continue
            ok_type = (isinstance(value, str) if kind == "a string" else
                       isinstance(value, int) if kind == "an integer" else
                       (isinstance(value, int) or value == ALL_REPLICAS)
                       if kind == WAIT_REPLICAS_KIND else
                       isinstance(value, dict) if kind == "a table" else
                       isinstance(value, (int, float)))
            if isinstance(value, bool) or not ok_type:
                raise self.fail(table, key, f"{key} in {table_name(table)} must be {kind}, "
                                            f"not {toml_type(value)}")
            verdict = check(value)
            if verdict is not True:
                raise self.fail(table, key, f"{key} in {table_name(table)} {verdict} "
                                            f"(got {value!r})")
            out[key] = value
        return out
