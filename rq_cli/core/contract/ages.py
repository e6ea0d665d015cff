"""The age of an item without a stamp per item (docs/DESIGN.md section 2): ids that carry
their push time, and the one reading of an item's push time. No Redis, no Typer, no rich.

The ids push makes at random are UUIDv7 in the 32-hex-digit shape of the peers' uuid4 hex:
the first :data:`TIME_DIGITS` hex digits are the push time in ms (the client's reading of the
server's clock, :class:`Clock`), then the version ``7``, three random digits, the variant
(``8``-``b``) and 15 random digits. :data:`V7_PATTERN` is the shape, one string that both
Python's ``re`` and Lua's patterns read (scripts.py generates it into the Lua constants, where
``lua/_ages.lua`` defines the same readers).

An item's push time (:func:`enqueued_ms`): its stamp in ``P:enqueued`` where it has one (ids
given with ``--id`` or ``--id-from-data``, requeue-dead, a batch whose clock was off by more
than ``limits.PUSH_STAMP_SLACK_MS``, items pushed before ids carried the time), else the
time its v7-shaped id carries, else unknown (a peer's item). Push writes a stamp exactly
where the id cannot tell the push time within the slack.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

#: hex digits of an id that hold its time (48 bits of ms)
TIME_DIGITS = 12
_HEX = "[0-9a-f]"
#: the v7 shape, a pattern both Python's re and Lua read the same way: 12 digits of time,
#: the version 7, 3 random digits, the variant 8-b, 15 random digits (32 in all)
V7_PATTERN = "^" + _HEX * TIME_DIGITS + "7" + _HEX * 3 + "[89ab]" + _HEX * 15 + "$"
_V7 = re.compile(V7_PATTERN)
#: the largest time the id's digits hold (ms): an id is made with its time cut to this
_TIME_MAX = (1 << (4 * TIME_DIGITS)) - 1


def id_ms(item_id: str | bytes) -> int | None:
    """The push time a v7-shaped id carries (ms), or None for any other id."""
    if isinstance(item_id, bytes):
        try:
            item_id = item_id.decode("ascii")
        except UnicodeDecodeError:
            return None
    if _V7.match(item_id) is None:
        return None
    return int(item_id[:TIME_DIGITS], 16)


def enqueued_ms(item_id: str | bytes, stamp: Any = None) -> int | None:
    """An item's push time in ms: ``stamp`` (its ``P:enqueued`` field as read, or None)
    where it is a time, else the time its id carries, else None (unknown). The one reader
    of a push time in Python; ``lua/_ages.lua``'s ``enqueued_ms`` is the Lua one."""
    if stamp is not None:
        try:
            ms = int(stamp)
        except (TypeError, ValueError):
            ms = -1
        if ms >= 0:
            return ms
    return id_ms(item_id)


def new_ids(n: int, now_ms: int) -> bytes:
    """``n`` fresh v7 ids made at ``now_ms``, end to end as ASCII (32 characters each): one
    ``os.urandom`` call and a few C-level passes per batch, not a format per id."""
    head = b"%012x" % min(max(now_ms, 0), _TIME_MAX)
    # 19 random digits an id (10 random bytes): those after the version, the fourth made a
    # variant digit 8-b (74 random bits)
    raw = os.urandom(10 * n).hex().encode()
    ids = bytearray(32 * n)
    for i in range(TIME_DIGITS):
        ids[i::32] = head[i:i + 1] * n
    ids[TIME_DIGITS::32] = b"7" * n
    for j in range(19):
        ids[TIME_DIGITS + 1 + j::32] = raw[j::20]
    ids[TIME_DIGITS + 4::32] = raw[3::20].translate(_VARIANT)
    return bytes(ids)


#: a random hex digit -> a variant digit (8-b), evenly
_VARIANT = bytes.maketrans(b"0123456789abcdef", b"89ab" * 4)


class Clock:
    """A client's reading of the server's clock, in ms: the local wall clock until
    :meth:`sync` is given a reading of the server's ``TIME`` (bulk push reads it when a
    stream starts), then that reading plus the time passed since on the monotonic clock.
    The ids push makes carry this time; the scripts stamp an item whose id is off by more
    than ``limits.PUSH_STAMP_SLACK_MS`` from the server's own clock, so a client whose
    clock is off costs memory, never a wrong age."""

    def __init__(self) -> None:
        self._server_ms: float | None = None
        self._at = 0.0

    def sync(self, server_ms: float, at: float) -> None:
        """The server's clock read ``server_ms`` at monotonic time ``at``."""
        self._server_ms, self._at = server_ms, at

    def now_ms(self) -> int:
        if self._server_ms is None:
            return int(time.time() * 1000)
        return round(self._server_ms + (time.monotonic() - self._at) * 1000)
