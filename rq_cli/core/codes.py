"""The words and codes the Lua scripts and Python share, each written once, here.

The vocabulary (as rq's one ``JobStatus``): an item's state (:class:`ItemState`), what a
call did to an item (:class:`Outcome`), why an item was dead-lettered (:class:`DeadReason`)
and the running totals of ``P:counters`` (:class:`Counter`). Everything else comes from
these: the Lua constants (``scripts.py`` generates ``S_<STATE>``, ``O_<OUTCOME>`` (the
outcome's one-letter code), ``R_<REASON>`` and ``C_<COUNTER>`` into the scripts that name
them, with ``PUSH_<FLAG>``, ``SEEN_<KIND>`` and ``LEASE_<STATUS>``), the typing Literals,
the CLI's choices (:class:`PurgeChoice`), the schemas' enums (tests/cli/test_schemas.py)
and the worker's outcomes. No Lua file spells one, and no other Python module does
(tests/core/test_contract.py).

This module imports nothing of rq-cli's: it is read by both sides.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


class Word(str, Enum):
    """A word of the vocabulary: a member is its value, also in text (``str()``, f-strings,
    JSON), as Python 3.11's ``StrEnum`` (3.10 has none)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return str(self.value).__format__(spec)


class ItemState(Word):
    """The state an item is in (item.lua and peek.lua read and reply these names)."""

    PENDING = "pending"
    PROCESSING = "processing"
    DELAYED = "delayed"
    DEAD = "dead"


class Outcome(Word):
    """What complete, fail, extend, cancel, retake or release did to one item. Not live:
    ``missing`` (no such item) or ``already_dead`` (dead-lettered). ``not_leased``: a live
    item no worker ever leased, left as it is. ``conflict``: another session holds the
    lease; ``lost``: the lease expired. ``returned``: release gave it back."""

    COMPLETED = "completed"
    MISSING = "missing"
    ALREADY_DEAD = "already_dead"
    NOT_LEASED = "not_leased"
    CONFLICT = "conflict"
    DEAD = "dead"
    RETRIED = "retried"
    RETURNED = "returned"
    EXTENDED = "extended"
    LOST = "lost"

    @property
    def ok(self) -> bool:
        """The call did what it was asked (the item completed, retried, dead or extended)."""
        return self in _DONE


_DONE = frozenset({Outcome.COMPLETED, Outcome.RETRIED, Outcome.DEAD, Outcome.EXTENDED})


class DeadReason(Word):
    """Why an item was dead-lettered (``reason`` of ``P:dead_info``, peek's
    ``dead_reason``, ``--reason``): its ``expire`` time passed, it was leased
    ``max_attempts`` times, ``cancel`` or ``fail --dead`` put it there, by hand, or
    ``push --after-ok`` held it for a batch that ended with a dead item."""

    EXPIRED = "expired"
    MAX_ATTEMPTS = "max_attempts"
    CANCELLED = "cancelled"
    FAILED = "failed"
    MANUAL = "manual"
    AFTER_FAILED = "after_failed"  #: push --after-ok: the batch it waited for had a dead item


class Counter(Word):
    """The fields of ``P:counters``, running totals the scripts count (``count(C_<NAME>,
    n)``): what ``stats`` prints and ``stats --format prometheus`` exports as
    ``rq_cli_<field>_total``."""

    PUSHED = "pushed"
    DUPLICATES = "duplicates"
    LEASED = "leased"
    COMPLETED = "completed"
    FAILED = "failed"
    RETRIED = "retried"
    DEAD = "dead"
    EXPIRED = "expired"
    REQUEUED = "requeued"
    CLEANED = "cleaned"
    LIMITED = "limited"


#: An item's outcome -> the one-letter code a script replies with for it. (Two outcomes
#: may share a letter when no script can reply with both: "retried" is fail's, "returned"
#: release's.)
OUTCOME_CODES: dict[Outcome, str] = {
    Outcome.COMPLETED: "C",
    Outcome.MISSING: "M",
    Outcome.ALREADY_DEAD: "Z",
    Outcome.NOT_LEASED: "N",
    Outcome.CONFLICT: "X",
    Outcome.DEAD: "D",
    Outcome.RETRIED: "R",
    Outcome.RETURNED: "R",
    Outcome.EXTENDED: "E",
    Outcome.LOST: "L",
}

_O = Outcome
#: The outcomes each script replies with, per item.
SCRIPT_OUTCOMES: dict[str, tuple[Outcome, ...]] = {
    "complete": (_O.COMPLETED, _O.MISSING, _O.CONFLICT, _O.ALREADY_DEAD, _O.NOT_LEASED),
    "fail": (_O.RETRIED, _O.DEAD, _O.MISSING, _O.CONFLICT, _O.ALREADY_DEAD, _O.NOT_LEASED),
    "cancel": (_O.DEAD, _O.MISSING, _O.ALREADY_DEAD),
    "extend": (_O.EXTENDED, _O.LOST, _O.CONFLICT, _O.MISSING, _O.ALREADY_DEAD, _O.NOT_LEASED),
    "retake": (_O.EXTENDED, _O.LOST, _O.CONFLICT, _O.MISSING, _O.ALREADY_DEAD),
    "release": (_O.RETURNED, _O.LOST, _O.CONFLICT, _O.MISSING, _O.ALREADY_DEAD),
}

#: push's flag per item: "added", or why an item was not ("duplicate": an item with that id
#: is live; "dead": the id is dead-lettered; "recently completed": in the de-dup window).
PUSH_FLAGS: dict[str, str] = {
    "added": "1",
    "duplicate": "0",
    "dead": "2",
    "recently completed": "3",
}

#: push.lua's error reply in a shard retired by a resize (its ``P:retired`` exists): nothing
#: was written; a sharded client reads the record again and pushes to the live shards.
RETIRED_ERROR = ("RETIRED this shard of a sharded queue was retired by a resize: nothing was "
                 "written")

#: clean's sightings of an id without a lease (fields ``<prefix><id>`` of ``P:suspects``):
#: in processing, in the v0.1 cleaning journal, or stray (deep clean: data in no list).
#: Every prefix is two characters long (clean.lua compares the first two).
SIGHTINGS: dict[str, str] = {
    "processing": "p:",
    "cleaning": "c:",
    "stray": "d:",
}


def outcomes(script: str) -> dict[str, Outcome]:
    """Code -> outcome for the replies of ``script``."""
    return {OUTCOME_CODES[o]: o for o in SCRIPT_OUTCOMES[script]}


#: lease.lua's reply field "status" (``LEASE_<NAME>`` in Lua): items may have been leased,
#: the queue is paused, or nothing was there on a fair queue (a client that waits blocks on
#: P:wake then, not on P:queue); or the queue's limits held the lease back (docs/DESIGN.md
#: section 9): its rate is spent ("limited": nothing can succeed before next_due_ms) or its
#: in-flight cap is reached ("capped": a client waits on P:freed, at most until next_due_ms,
#: the earliest lease deadline).
LEASE_STATUS: dict[str, int] = {"ok": 0, "paused": 1, "fair": 2, "limited": 3, "capped": 4}
LEASE_OK, LEASE_PAUSED, LEASE_FAIR = LEASE_STATUS["ok"], LEASE_STATUS["paused"], \
    LEASE_STATUS["fair"]
LEASE_LIMITED, LEASE_CAPPED = LEASE_STATUS["limited"], LEASE_STATUS["capped"]


#: The vocabulary as Lua constants: ``S_PENDING = 'pending'``, ``R_EXPIRED = 'expired'``,
#: ``C_PUSHED = 'pushed'`` (an outcome is its code: ``O_COMPLETED = 'C'``).
WORD_CONSTANTS: dict[str, tuple[Word, ...]] = {
    "S": tuple(ItemState), "R": tuple(DeadReason), "C": tuple(Counter)}


def lua_constants() -> list[tuple[str, str]]:
    """(name, ``local NAME = 'code'``) for every code, as the scripts read them."""
    out = [(f"O_{o.name}", c) for o, c in OUTCOME_CODES.items()]
    out += [(f"{head}_{w.name}", w.value) for head, words in WORD_CONSTANTS.items()
            for w in words]
    out += [(f"PUSH_{f.upper().replace(' ', '_')}", c) for f, c in PUSH_FLAGS.items()]
    out += [(f"SEEN_{k.upper()}", c) for k, c in SIGHTINGS.items()]
    out.append(("RETIRED_ERROR", RETIRED_ERROR))
    return [(n, f"local {n} = '{c}'") for n, c in out] + [
        (f"LEASE_{k.upper()}", f"local LEASE_{k.upper()} = {v}") for k, v in LEASE_STATUS.items()]


# -- the choices of an item's state, a queue's layout and where re-queued items go ---------------
# (str enums: a member is its value; Python 3.10 has no StrEnum. Options and replies carry
# the plain strings: the tuples below are what they are checked against.)


class Layout(str, Enum):
    """Which generations' lease keys a queue writes: both (compat), v0.3's, or v0.1's."""

    COMPAT = "compat"
    V03 = "v0.3"
    V01 = "v0.1"


class RequeueEnd(str, Enum):
    """Where clean puts recovered items: the back of the line (as peers do) or the front."""

    BACK = "back"
    FRONT = "front"


class PurgeChoice(Word):
    """An item state, or all of them (``purge --state``, ``peek --state``)."""

    PENDING = ItemState.PENDING.value
    PROCESSING = ItemState.PROCESSING.value
    DELAYED = ItemState.DELAYED.value
    DEAD = ItemState.DEAD.value
    ALL = "all"


STATES: tuple[str, ...] = tuple(s.value for s in ItemState)
PURGE_STATES: tuple[str, ...] = tuple(c.value for c in PurgeChoice)
DEAD_REASONS: tuple[str, ...] = tuple(r.value for r in DeadReason)
COUNTERS: tuple[str, ...] = tuple(c.value for c in Counter)
LAYOUTS: tuple[str, ...] = tuple(x.value for x in Layout)
REQUEUE_ENDS: tuple[str, ...] = tuple(e.value for e in RequeueEnd)

#: The states an item can be in, as the type checker knows them (tied to ItemState and
#: PurgeChoice by a test: a Literal cannot be made from an enum).
State = Literal["pending", "processing", "delayed", "dead"]
PurgeState = Literal["pending", "processing", "delayed", "dead", "all"]


class Ask(Word):
    """What a console may ask of a worker (core/operations/control.py)."""

    DRAIN = "drain"  #: finish the items held, take no new ones, exit 0
    STOP = "stop"  #: stop the commands, put their items back in line at once, exit 0
