"""Small conversions shared by the engine's modules (ids, times, batches, replies).

This module imports nothing from the rest of rq_cli but the limits and the errors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

from ...errors import UsageError
from .keys import name_collision
from .limits import (
    MAX_COUNT,
    MAX_ID_BYTES,
    MAX_JSON_DEPTH,
    MAX_TENANT_BYTES,
    MAX_TENANT_WEIGHT,
)


def make_session(tail: str | None = None) -> str:
    """A session id that tells who holds a lease: ``<host>:<pid>:<tail>``, the tail random
    unless given (a named worker's name). The one place the format is built;
    :func:`session_origin` reads it."""
    return f"{os.uname().nodename}:{os.getpid()}:{os.urandom(4).hex() if tail is None else tail}"


def session_origin(session: str | None) -> tuple[str | None, int | None]:
    """(host, pid) of a session made by :func:`make_session` (``<host>:<pid>:<random>``), or
    (None, None) for one that does not read so (a peer client's random session id)."""
    parts = (session or "").rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit():
        return None, None
    return parts[0], int(parts[1])


def data_id(data: bytes) -> str:
    """The id ``--id-from-data`` gives: the SHA-256 of the data, hex."""
    import hashlib  # only --id-from-data needs it: kept off start-up

    return hashlib.sha256(data).hexdigest()


def as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


#: A name in a key (a tenant's, a batch's): letters, digits and ``_ . @ + / -``, starting
#: with a letter or digit (it is part of a key name, P:tenant:<T>: no glob characters,
#: braces, spaces or ``:``, so its keys are never another queue's).
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@+/-")


def check_name(kind: str, name: str, most: int) -> str:
    """``name`` itself, or UsageError naming what is wrong with it as a ``kind`` name (a
    tenant, a batch): empty, over ``most`` characters, or a character outside NAME_CHARS."""
    if not isinstance(name, str) or not name:
        raise UsageError(f"a {kind} name cannot be empty")
    if len(name) > most:
        raise UsageError(f"a {kind} name is at most {most} characters")
    if not name[0].isascii() or not name[0].isalnum() or not NAME_CHARS.issuperset(name):
        raise UsageError(f"bad {kind} name {name!r}: use letters, digits and _ . @ + / -, "
                         f"starting with a letter or digit")
    why = name_collision(name)
    if why:
        raise UsageError(f"{kind} name {name!r} cannot be used: {why}")
    return name


def check_tenant(tenant: str) -> str:
    """``tenant`` itself, or UsageError naming what is wrong with it."""
    return check_name("tenant", tenant, MAX_TENANT_BYTES)


def check_weight(tenant: str, weight: object) -> int:
    """A tenant's weight, or UsageError: a whole number from 1 to MAX_TENANT_WEIGHT."""
    if isinstance(weight, bool) or not isinstance(weight, int) \
            or not 1 <= weight <= MAX_TENANT_WEIGHT:
        raise UsageError(f"the weight of tenant {tenant!r} must be a whole number from 1 to "
                         f"{MAX_TENANT_WEIGHT}, not {weight!r}")
    return weight


def id_problem(item_id: str) -> str | None:
    """Why ``item_id`` cannot be an item id (empty, or longer than MAX_ID_BYTES in UTF-8),
    or None: the one rule, which :func:`check_id` words as a UsageError and the CLI's
    readers as bad input."""
    if not item_id:
        return "an item id cannot be empty"
    # (a character is at most 4 bytes in UTF-8: only long ids need encoding to be measured;
    # a lone surrogate, which no reader lets through, counts as its 3 bytes)
    if len(item_id) * 4 > MAX_ID_BYTES and \
            len(item_id.encode("utf-8", "surrogatepass")) > MAX_ID_BYTES:
        return f"an item id is at most {MAX_ID_BYTES} bytes"
    return None


def check_id(item_id: str) -> str:
    """``item_id`` itself, or UsageError when it is no item id (:func:`id_problem`)."""
    why = id_problem(item_id)
    if why:
        raise UsageError(why)
    return item_id


def check_new_id(item_id: str) -> str:
    """``check_id``, and the name rule for an id rq-cli is to create keys for (push, cancel):
    UsageError when it would give the queue another queue's key (keys.name_collision)."""
    check_id(item_id)
    why = name_collision(item_id)
    if why:
        raise UsageError(f"item id {item_id!r} cannot be used: {why}")
    return item_id


#: Why a JSON text nested too deep is refused (push) or shown as text (the readers).
TOO_DEEP = f"JSON nested deeper than {MAX_JSON_DEPTH} levels of arrays or objects"
_NESTING: dict[type, Any] = {}  # str/bytes -> the compiled token pattern (made on first use)


def json_too_deep(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if JSON ``text`` nests arrays and objects deeper than ``limit`` (brackets inside
    strings do not count). One cheap count when the text has few brackets, as most do."""
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
    elif text.count("[") + text.count("{") <= limit:
        return False
    pattern = _NESTING.get(type(text))
    if pattern is None:
        import re

        source = r'"(?:[^"\\]|\\.)*"|[\[\]{}]'
        pattern = re.compile(source.encode() if isinstance(text, bytes) else source)
        _NESTING[type(text)] = pattern
    depth = 0
    for match in pattern.finditer(text):
        token = match.group()[:1]
        if token in ("[", "{", b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in ("]", "}", b"]", b"}"):
            depth -= 1
    return False


def json_int(text: str) -> int:
    """A JSON integer of any length, for ``json.loads(..., parse_int=json_int)``:
    ``int(str)`` refuses over 4,300 digits (CPython's guard against quadratic conversions);
    a Decimal converts in linear time."""
    if len(text) < 4000:
        return int(text)
    import decimal  # (rare: not loaded at start-up)

    return int(decimal.Decimal(text))


def check_count(count: int) -> None:
    if not 1 <= count <= MAX_COUNT:
        raise UsageError(f"count must be between 1 and {MAX_COUNT}")


def cap_of(limit: int | Mapping[str, int] | None, prefix: str, done: int = 0) -> int | None:
    """How many items one queue (or shard) named ``prefix`` may still act on under
    ``limit``: None (no limit) stays None; a number is the whole's, ``done`` of it used; a
    mapping (a confirmed count per shard prefix) gives each shard its own, 0 if not named."""
    if limit is None:
        return None
    if isinstance(limit, Mapping):
        return max(int(limit.get(prefix, 0)), 0)
    return max(int(limit) - done, 0)


def batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size``."""
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def now_arg(now_ms: int | None) -> str:
    """The ``now`` script argument: empty means "read the server's clock"."""
    return "" if now_ms is None else str(int(now_ms))


def ms(seconds: float) -> int:
    return round(seconds * 1000)


def secs(ms: int | float) -> float:
    return round(ms / 1000, 3)


def text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def is_cluster(client: Any) -> bool:
    return type(client).__name__ in ("RedisCluster", "ValkeyCluster")


def server_ms(client: Any) -> int:
    """The server's clock, in milliseconds since the epoch (one TIME round trip)."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000
