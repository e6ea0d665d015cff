"""The codes the Lua scripts and Python share, each written once, here.

``scripts.py`` generates each into the scripts that name it as a Lua constant (only when
the script uses it: ``O_<OUTCOME>``, ``PUSH_<FLAG>``, ``SEEN_<KIND>``), and Python decodes
replies with the same tables. No Lua file spells one (tests/test_contract.py).

This module imports nothing of rq-cli's: it is read by both sides.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

#: An item's outcome -> the one-letter code a script replies with for it. (Two outcomes
#: may share a letter when no script can reply with both: "retried" is fail's, "returned"
#: release's.)
OUTCOME_CODES: dict[str, str] = {
    "completed": "C",
    "missing": "M",
    "already_dead": "Z",
    "not_leased": "N",
    "conflict": "X",
    "dead": "D",
    "retried": "R",
    "returned": "R",
    "extended": "E",
    "lost": "L",
}

#: The outcomes each script replies with, per item.
SCRIPT_OUTCOMES: dict[str, tuple[str, ...]] = {
    "complete": ("completed", "missing", "conflict", "already_dead", "not_leased"),
    "fail": ("retried", "dead", "missing", "conflict", "already_dead", "not_leased"),
    "cancel": ("dead", "missing", "already_dead"),
    "extend": ("extended", "lost", "conflict", "missing", "already_dead", "not_leased"),
    "retake": ("extended", "lost", "conflict", "missing", "already_dead"),
    "release": ("returned", "lost", "conflict", "missing", "already_dead"),
}

#: push's flag per item: "added", or why an item was not ("duplicate": an item with that id
#: is live; "dead": the id is dead-lettered; "recently completed": in the de-dup window).
PUSH_FLAGS: dict[str, str] = {
    "added": "1",
    "duplicate": "0",
    "dead": "2",
    "recently completed": "3",
}

#: clean's sightings of an id without a lease (fields ``<prefix><id>`` of ``P:suspects``):
#: in processing, in the v0.1 cleaning journal, or stray (deep clean: data in no list).
#: Every prefix is two characters long (clean.lua compares the first two).
SIGHTINGS: dict[str, str] = {
    "processing": "p:",
    "cleaning": "c:",
    "stray": "d:",
}


def outcomes(script: str) -> dict[str, str]:
    """Code -> outcome for the replies of ``script``."""
    return {OUTCOME_CODES[o]: o for o in SCRIPT_OUTCOMES[script]}


#: lease.lua's reply field "status" (``LEASE_<NAME>`` in Lua): items may have been leased,
#: the queue is paused, or nothing was there on a fair queue (a client that waits blocks on
#: P:wake then, not on P:queue).
LEASE_STATUS: dict[str, int] = {"ok": 0, "paused": 1, "fair": 2}
LEASE_OK, LEASE_PAUSED, LEASE_FAIR = LEASE_STATUS["ok"], LEASE_STATUS["paused"], \
    LEASE_STATUS["fair"]


def lua_constants() -> list[tuple[str, str]]:
    """(name, ``local NAME = 'code'``) for every code, as the scripts read them."""
    out = [(f"O_{o.upper()}", c) for o, c in OUTCOME_CODES.items()]
    out += [(f"PUSH_{f.upper().replace(' ', '_')}", c) for f, c in PUSH_FLAGS.items()]
    out += [(f"SEEN_{k.upper()}", c) for k, c in SIGHTINGS.items()]
    return [(n, f"local {n} = '{c}'") for n, c in out] + [
        (f"LEASE_{k.upper()}", f"local LEASE_{k.upper()} = {v}") for k, v in LEASE_STATUS.items()]


# -- the choices of an item's state, a queue's layout and where re-queued items go ---------------
# (str enums: a member is its value; Python 3.10 has no StrEnum. Options and replies carry
# the plain strings: the tuples below are what they are checked against.)


class ItemState(str, Enum):
    """The state an item is in (item.lua and peek.lua read and reply these names)."""

    PENDING = "pending"
    PROCESSING = "processing"
    DELAYED = "delayed"
    DEAD = "dead"


class Layout(str, Enum):
    """Which generations' lease keys a queue writes: both (compat), v0.3's, or v0.1's."""

    COMPAT = "compat"
    V03 = "v0.3"
    V01 = "v0.1"


class RequeueEnd(str, Enum):
    """Where clean puts recovered items: the back of the line (as peers do) or the front."""

    BACK = "back"
    FRONT = "front"


STATES: tuple[str, ...] = tuple(s.value for s in ItemState)
LAYOUTS: tuple[str, ...] = tuple(x.value for x in Layout)
REQUEUE_ENDS: tuple[str, ...] = tuple(e.value for e in RequeueEnd)

#: The states an item can be in, as the type checker knows them (tied to ItemState by a test).
State = Literal["pending", "processing", "delayed", "dead"]
PurgeState = Literal["pending", "processing", "delayed", "dead", "all"]
