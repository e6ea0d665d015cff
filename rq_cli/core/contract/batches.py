"""Batches (docs/DESIGN.md section 8): the one definition of a batch's record and name.

A batch is a name inside one queue that items join when pushed (``push --batch NAME``).
Its record, ``P:batch:<name>`` (keys.py), is a hash of counts that the scripts keep with
lua/_batch.lua's ``batch_move`` at every transition an item makes; the names below are
generated into the scripts' Lua (:func:`lua_blocks`), so both languages read one list.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

from typing import Any

from ..codes import ItemState, Outcome
from .keys import AFTER, BATCH, BATCH_WAKE, RESULTS
from .limits import AFTER_BATCH, AFTER_LEASE, BATCH_OPEN_MS, MAX_BATCH_BYTES
from .util import check_name

#: The states a batch counts its items in, in the order its line prints them: an item of
#: the batch is counted in exactly one (item_batch keeps which), so they add up to ``total``.
OPEN_STATES = (ItemState.PENDING.value, ItemState.PROCESSING.value, ItemState.DELAYED.value)
COMPLETED = Outcome.COMPLETED.value
DEAD = ItemState.DEAD.value
COUNTED = (*OPEN_STATES, COMPLETED, DEAD)
#: The record's other fields: items that joined (less those purged), when it was made and
#: finished (ms, server time), until when a push stream holds it open (ms; absent: not
#: held), and how long it is kept once finished (ms: the queue's batch_ttl at its creation).
TOTAL = "total"
CREATED = "created_ms"
FINISHED = "finished_ms"
OPEN_UNTIL = "open_until_ms"
HOLDS = "holds"  #: push streams holding it open (lua/batch_hold.lua)
#: Set where this part (a shard's, of a sharded queue) holds ``push --after`` items for the
#: whole batch: its own finishing step does not release them; the client that sees every
#: part done does (batchops.release). A part with only this field holds items and no item.
WIDE = "after_wide"
TTL = "ttl_ms"
#: The mode of an entry of P:after:<batch>: ``push --after`` (queued when the batch is done)
#: or ``--after-ok`` (queued only if none of the batch died; else dead, reason after_failed).
AFTER_ANY = "a"
AFTER_OK = "o"


def after_mode(ok: bool, wide: bool) -> str:
    """push.lua's A_AFTER_MODE: :data:`AFTER_OK` or :data:`AFTER_ANY`, in upper case for a
    sharded queue's shard (``wide``: held whatever its own part says, released by the
    client that sees the whole batch done: :data:`WIDE`)."""
    mode = AFTER_OK if ok else AFTER_ANY
    return mode.upper() if wide else mode


#: The Lua name of each field (``B.<NAME>``: :func:`lua_blocks`).
_LUA_FIELDS = {"TOTAL": TOTAL, "PENDING": ItemState.PENDING.value,
               "PROCESSING": ItemState.PROCESSING.value, "DELAYED": ItemState.DELAYED.value,
               "COMPLETED": COMPLETED, "DEAD": DEAD, "CREATED": CREATED,
               "FINISHED": FINISHED, "OPEN_UNTIL": OPEN_UNTIL, "TTL": TTL,
               "HOLDS": HOLDS, "WIDE": WIDE}
#: The fields of the batch line (``rq-cli batch``, ``wait``; rq_cli/schemas/batch.schema.json).
LINE_FIELDS = ("queue", "batch", TOTAL, *COUNTED, "done", "created_at", "finished_at")

def check_batch(name: str) -> str:
    """``name`` itself, or UsageError naming what is wrong with it (as tenant names: letters,
    digits and ``_ . @ + / -``, no ``:``, so a batch's keys are never another queue's; its
    characters are ASCII, so MAX_BATCH_BYTES counts them)."""
    return check_name("batch", name, MAX_BATCH_BYTES)


def lua_blocks() -> list[tuple[str, str]]:
    """The scripts' definitions for batches, in two names (the Functions library is near
    Lua's 200 locals of a chunk): ``B``, a table of the record's fields (``B.TOTAL``, ...),
    the key families (``B.RECORD``, ``B.WAKE``, ``B.RESULTS``, ``B.AFTER``), the modes of
    an after-entry and the limits; and ``batch_key(family, name)``."""
    fields = {**_LUA_FIELDS, "RECORD": BATCH, "WAKE": BATCH_WAKE, "RESULTS": RESULTS,
              "AFTER": AFTER, "AFTER_ANY": AFTER_ANY, "AFTER_OK": AFTER_OK}
    table = ", ".join([*(f"{k} = '{v}'" for k, v in fields.items()),
                       f"AFTER_BATCH = {AFTER_BATCH}",
                       f"AFTER_LEASE = {AFTER_LEASE}", f"OPEN_MS = {BATCH_OPEN_MS}"])
    return [("B", f"local B = {{{table}}}"),
            ("batch_key", "local function batch_key(family, name) "
                          "return PREFIX .. ':' .. family .. ':' .. name end")]


def counts(record: dict[Any, Any]) -> dict[str, int]:
    """The record's counts (``total`` and :data:`COUNTED`) from HGETALL's reply (bytes or
    text keys and values); 0 where absent."""
    got = {(k.decode() if isinstance(k, bytes) else k): v for k, v in record.items()}
    return {f: int(got.get(f) or 0) for f in (TOTAL, *COUNTED)} | {
        f: int(got[f]) for f in (CREATED, FINISHED, OPEN_UNTIL) if got.get(f) is not None}


def line(queue: str, name: str, parts: list[dict[str, int]], now_ms: int) -> dict[str, Any]:
    """The batch line of batch ``name``, from the counts of its parts (one per shard of a
    sharded queue, else one): every count added up; ``done`` when no part has an item
    open, and no push holds it open (a batch whose items were all purged is done);
    ``finished_at`` (s) the latest part's finish."""
    row: dict[str, Any] = {"queue": queue, "batch": name}
    for f in (TOTAL, *COUNTED):
        row[f] = sum(p.get(f, 0) for p in parts)
    held = any(p.get(OPEN_UNTIL, 0) > now_ms for p in parts)
    row["done"] = not held and all(row[s] == 0 for s in OPEN_STATES)
    created = [p[CREATED] for p in parts if CREATED in p]
    finished = [p[FINISHED] for p in parts if FINISHED in p]
    row["created_at"] = min(created) / 1000 if created else None
    row["finished_at"] = max(finished) / 1000 if finished and row["done"] else None
    return row
