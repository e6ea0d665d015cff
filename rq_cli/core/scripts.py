"""The Lua scripts: one file per atomic operation in ``lua/``, sent with the key table's
prelude in front (:func:`rq_cli.core.keys.lua_header`)."""

from __future__ import annotations

import os
from functools import cache

from .keys import lua_header

LUA_DIR = os.path.join(os.path.dirname(__file__), "lua")  # (cheaper than importlib.resources)

#: Every script the engine runs (``lua/<name>.lua``).
SCRIPTS = ("push", "lease", "complete", "fail", "extend", "clean", "deep_clean", "prune",
           "requeue_dead", "purge", "stats", "peek", "cancel", "reclaim", "holders", "item",
           "purge_ids", "dedup", "tenants")


@cache
def script_source(name: str) -> str:
    """The Lua source of script ``name``, with the common prelude in front."""
    with open(os.path.join(LUA_DIR, "_fair.lua")) as fair, \
            open(os.path.join(LUA_DIR, "_common.lua")) as common, \
            open(os.path.join(LUA_DIR, f"{name}.lua")) as script:
        return lua_header() + fair.read() + "\n" + common.read() + "\n" + script.read()
