"""The transaction writer of bulk push (:mod:`.bulk`): a batch of plain items with fresh
random ids as one transaction of plain commands ending in push_commit.lua
(:class:`Transactions`), and the RESP helpers both writers share (:func:`replies`,
:func:`bulk_string`, :func:`split_ids`)."""

from __future__ import annotations

import struct
import time
from typing import Any

from ..contract.ages import new_ids
from ..contract.limits import FRESH_ID_LEN, LENGTH_HEADS
from ..contract.specs import SPECS
from ..contract.util import as_bytes
from ..operations.base import QueueBase
from ..scripting import scripts

#: the types of a chunk of items that can go as a transaction, and of one that is all bytes
PLAIN: frozenset[type] = frozenset((bytes, str))
BYTES = {bytes}


class Transactions:
    """A batch of plain items with fresh random ids as one transaction of plain commands
    (MULTI, SCRIPT LOAD, MSET, LPUSH/RPUSH, EVALSHA push_commit, EXEC) instead of one
    push.lua call: the server writes the data and bookkeeping without a Lua value per item
    (about a third less server CPU per item, bench case ``push``), and push_commit.lua
    checks, counts and, on a key of the wrong type, undoes the batch in the same
    transaction, so a batch is still stored whole or not at all. The script is loaded in
    every transaction, so NOSCRIPT cannot leave a batch's plain commands without it.

    The ids are v7 ids (:mod:`.ages`) that carry the push time, the client's reading of the
    server's clock: the server's TIME, read once when the stream starts (``q.clock``), plus
    the time passed since on the client's monotonic clock; no P:enqueued stamp is written,
    except by push_commit for a batch whose reading is off by more than
    PUSH_STAMP_SLACK_MS when the server runs it."""

    #: the replies of one batch: MULTI, four QUEUED, EXEC
    REPLIES = 6

    def __init__(self, q: QueueBase, conn: Any, flags: dict[str, str],
                 now_ms: int | None) -> None:
        self.q, self.conn, self.now_ms = q, conn, now_ms
        self.front = flags["front"]
        keys = q.keys
        self.item_prefix = keys.item("").encode()
        self.spec = SPECS["push_commit"]
        script = q.script("push_commit")
        self.sha = script.sha
        self.head = b"".join([
            b"*1\r\n$5\r\nMULTI\r\n", *conn.pack_command("SCRIPT", "LOAD", scripts.source(
                "push_commit"))])
        self.line = (b"RPUSH" if self.front == "1" else b"LPUSH", bulk_string(keys.queue.encode()))

    @classmethod
    def start(cls, q: QueueBase, conn: Any, flags: dict[str, str],
              now_ms: int | None) -> Transactions | None:
        """The transactions of this stream, or None where they cannot be used: a delay or
        expiry (push.lua's work), or a server or user that refuses a transaction that loads
        a script (an ACL without MULTI and EXEC: the manual's "ACL"). One round trip: TIME, and a
        transaction that loads push_commit.lua."""
        if flags["delay_ms"] != "0" or flags["expire_ms"] != "0":
            return None
        sent = time.monotonic()
        conn.send_packed_command(
            [*conn.pack_command("TIME"), *conn.pack_command("MULTI"),
             *conn.pack_command("SCRIPT", "LOAD", scripts.source("push_commit")),
             *conn.pack_command("EXEC")], check_health=False)
        got_replies = replies(conn, 4)
        got = time.monotonic()
        if any(isinstance(r, Exception) for r in got_replies) or not isinstance(
                got_replies[-1], list):
            return None  # (MULTI, EXEC or SCRIPT LOAD in a transaction refused)
        clock = got_replies[0]
        q.clock.sync(int(clock[0]) * 1000 + int(clock[1]) / 1000, (sent + got) / 2)
        return cls(q, conn, flags, now_ms)

    def stamp(self) -> int:
        """The server's clock now, as this client reads it (ms; the caller's ``now_ms`` when
        given, as push.lua's NOW is then)."""
        return self.q.clock.now_ms() if self.now_ms is None else self.now_ms

    def packed(self, chunk: list[bytes | str],
               kinds: set[type] | None = None) -> tuple[list[str], list[bytes]]:
        """(ids, the transaction as RESP) for a batch of plain items (bytes, or text;
        ``kinds``: their types, where known)."""
        datas: list[Any] = chunk if kinds == BYTES else [
            d if type(d) is bytes else as_bytes(d) for d in chunk]
        n, w = len(chunk), FRESH_ID_LEN
        stamp = self.stamp()
        raw = new_ids(n, stamp)
        slices = split_ids(raw, n)
        ids = list(map(bytes.decode, slices))
        # (each item's bulk strings in a few joins, not one format each: id, "$<len>" of
        # its data, the data, and the next key's head)
        key_head = b"$%d\r\n%s" % (len(self.item_prefix) + w, self.item_prefix)
        parts: list[bytes] = [b"\r\n" + key_head] * (4 * n)
        parts[0::4] = slices
        parts[1::4] = length_heads(datas)
        parts[2::4] = datas
        parts[-1] = b"\r\n"
        mset = key_head + b"".join(parts)
        # (every id is w characters: its bulk strings in one join, not one format each)
        head, tail = b"$%d\r\n" % w, b"\r\n"
        id_bulks = head + (tail + head).join(slices) + tail
        verb, queue = self.line
        commit = self.conn.pack_command(
            "EVALSHA", self.sha, len(self.q.script_keys), *self.q.script_keys,
            *self.spec.argv(self.q.script_head(self.now_ms),
                            {"count": n, "front": self.front, "stamp_ms": stamp, "ids": raw}))
        return ids, [
            self.head,
            b"*%d\r\n$4\r\nMSET\r\n%s" % (1 + 2 * n, mset),
            b"*%d\r\n$5\r\n%s\r\n%s%s" % (2 + n, verb, queue, id_bulks),
            *commit, b"*1\r\n$4\r\nEXEC\r\n"]

    def read(self) -> None:
        """The batch's replies: returns where it was stored (every item added), or raises
        the error that undid it."""
        got = replies(self.conn, self.REPLIES)
        done = got[-1]
        if not isinstance(done, list):  # EXECABORT: nothing ran; the command that was refused
            raise next(r for r in got if isinstance(r, Exception))
        if isinstance(done[-1], Exception):  # push_commit's: the batch was undone
            raise done[-1]


def replies(conn: Any, n: int) -> list[Any]:
    """The next ``n`` replies on ``conn``, an error reply as its exception (inside a
    transaction, a refused command is followed by EXEC's own refusal: all are read)."""
    from redis.exceptions import ResponseError  # (not at the top: see calling.py)

    replies: list[Any] = []
    for _ in range(n):
        try:
            replies.append(conn.read_response())
        except ResponseError as exc:
            replies.append(exc)
    return replies


def bulk_string(b: bytes) -> bytes:
    """``b`` as a RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(b), b)


def split_ids(raw: bytes, n: int) -> tuple[bytes, ...]:
    """``raw`` (``n`` fresh ids of FRESH_ID_LEN characters end to end) cut into the ids, in
    one C-level pass."""
    return struct.unpack(ID_FORMAT * n, raw)


ID_FORMAT = f"{FRESH_ID_LEN}s"


#: the head of a bulk string of each length up to LENGTH_HEADS (made on first use)
_length_heads: list[bytes] = []


def length_heads(datas: list[bytes]) -> list[bytes]:
    """``"\r\n$<len>\r\n"`` for each of ``datas``: looked up in a table (a quarter of the
    cost of formatting each), formatted where a data is longer than the table."""
    if not _length_heads:
        _length_heads.extend(b"\r\n$%d\r\n" % i for i in range(LENGTH_HEADS))
    try:
        return list(map(_length_heads.__getitem__, map(len, datas)))
    except IndexError:
        return list(map(b"\r\n$%d\r\n".__mod__, map(len, datas)))
