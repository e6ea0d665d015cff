"""Every environment variable rq-cli reads, named here once, and the one way a flag is read.

The core reads :data:`ENV_FUNCTIONS`; ``rq_cli.settings.config`` the server and config file
ones; the
CLI the output and debugging ones; the embedded server's harness :data:`ENV_SERVER_BIN`.
This module imports nothing but ``os``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# -- rq_cli.settings.config -----------------------------------------------------------------
ENV_URL = "RQ_CLI_URL"  # server for every queue; overrides the config file
ENV_CONFIG = "RQ_CLI_CONFIG"  # path of the config file
ENV_NO_CONFIG = "RQ_CLI_NO_CONFIG"  # 1: read no config file
ENV_JSON = "RQ_CLI_JSON"  # 1: JSON output even on a terminal
ENV_DEBUG = "RQ_CLI_DEBUG"  # 1: show tracebacks
ENV_REDIS_URL = "REDIS_URL"  # the conventional fallback server
ENV_XDG_CONFIG_HOME = "XDG_CONFIG_HOME"
#: durability (the manual's "Guarantees"): replicas that must confirm every write, and how long
#: to wait for them (seconds); override every queue's wait_replicas and wait_timeout
ENV_WAIT_REPLICAS = "RQ_CLI_WAIT_REPLICAS"
ENV_WAIT_TIMEOUT = "RQ_CLI_WAIT_TIMEOUT"
# -- the engine ------------------------------------------------------------------------------
#: "0" (or "false", "no", "off") runs every script as EVALSHA, never FCALL.
ENV_FUNCTIONS = "RQ_CLI_FUNCTIONS"
# -- the CLI and the embedded server ----------------------------------------------------------
#: 1: every shortcut of rq_cli/cli/internals.py is off (plain Typer).
ENV_PLAIN_TYPER = "RQ_CLI_PLAIN_TYPER"
#: the redis-server or valkey-server binary the embedded server runs.
ENV_SERVER_BIN = "RQ_CLI_SERVER_BIN"
#: the token every request of ``rq-cli web`` must carry (overrides the config's [web] token)
ENV_WEB_TOKEN = "RQ_CLI_WEB_TOKEN"

#: the values that turn a flag off (compared stripped and in lower case)
_OFF = ("0", "false", "no", "off")


def env_bool(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """The flag ``name`` of the environment: ``default`` when unset or empty, False for
    "0", "false", "no" or "off" (any case, spaces around ignored), else True."""
    value = (os.environ if env is None else env).get(name, "").strip().lower()
    if not value:
        return default
    return value not in _OFF
