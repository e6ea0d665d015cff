"""The read-only operations of a queue: stats, peek, item, holders, the de-dup window and
pause. No Typer, no rich."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import UsageError
from ..codes import STATES, ItemState, State
from ..contract.counts import TALLIES
from ..contract.counts import read as read_counts
from ..contract.fields import PEEK, decoded
from ..contract.keys import COUNTER_FIELDS, FIXED_KEYS, OTHER_GENERATION
from ..contract.limits import BATCH, HOLDERS_PAGE, LEASED_PAGE, MAX_DELAY, MAX_DELAY_TEXT
from ..contract.specs import SPECS
from ..contract.util import batches, check_id, ms, secs, server_ms, session_origin, text
from .audit import note

if TYPE_CHECKING:  # created by the methods that return them (rq_cli.core.reports loads lazily)
    from ..reports import Holder, PeekedItem, Stats

from .base import QueueBase


class Reads(QueueBase):
    """Read-only operations (and pause/resume, which only mark the queue)."""

    # -- read-only -----------------------------------------------------------------------
    def stats(self, *, now_ms: int | None = None, by_tenant: bool = False) -> Stats:
        """Counts, in one round trip whatever the queue's size (``by_tenant``: and the
        pending items of each tenant, one more call per BATCH tenants)."""
        stats = self.stats_of(self.call("stats", now_ms=now_ms))
        if not by_tenant:
            return stats
        default, depths = self.tenants()
        return dataclasses.replace(stats, by_tenant={"": default, **depths})

    def stats_of(self, reply: Any) -> Stats:
        """The stats in the reply of the ``stats`` script (for :mod:`.many`, which sends
        the scripts of many queues in one pipeline)."""
        from ..reports import Stats

        fields, rows = SPECS["stats"].decode(reply)
        f = {name: int(value) for name, value in fields.items()}
        found = read_counts(f)
        processing = found["processing"]
        found["leased"] = min(f["leased"] + self._peer_leased(f), processing)
        found["abandoned"] = processing - found["leased"]
        oldest = f["oldest_ms"]
        found["oldest_pending_age_s"] = (secs(max(f["now_ms"] - oldest, 0)) if oldest >= 0
                                         else None)
        # every counter, 0 when never counted; other fields of the hash (the de-dup window,
        # a setting kept there) are no counts
        stored = {text(row.counter) or "": row.value for row in rows}
        counters = {name: int(stored.get(name, 0)) for name in COUNTER_FIELDS}
        return Stats(
            queue=self.prefix, counters=counters, by_tenant=None,
            other_generation=(OTHER_GENERATION.get(self.options.layout)
                              if f["other_generation"] else None),
            # (an age implies a pending item: a queue with none of its counts has no key)
            exists=bool(stored) or any(found[n] for n in TALLIES) or found["paused"],
            **found)

    def _peer_leased(self, f: dict[str, int]) -> int:
        """The live leases P:leases has no live record of (a peer's): the first page's
        count from the stats reply ``f``, then a ``peer_leases`` call per LEASED_PAGE ids of the
        rest of processing, made only when that page was full and ids are left unaccounted
        for. Each page is read at its own moment (an id moving meanwhile may be missed or
        counted twice; the total is capped at processing)."""
        found, looked = f["peer_leased"], f["looked"]
        if looked < LEASED_PAGE:
            return found
        while f["leased"] + found < f["processing"]:
            page = self.decoded("peer_leases", {"offset": looked, "count": LEASED_PAGE}, (),
                                f["now_ms"]).fields
            found += int(page["peer_leased"])
            looked += int(page["looked"])
            if int(page["looked"]) < LEASED_PAGE:
                break
        return found

    def peek(self, state: State = ItemState.PENDING.value, *, count: int = 10, offset: int = 0,
             from_end: str = "head", start_at: str | None = None,
             now_ms: int | None = None, tenant: str | None = None) -> list[PeekedItem]:
        """Read items without changing anything. ``head``: the next to be leased (pending),
        the oldest lease (processing), the soonest due (delayed), the oldest death (dead).

        ``start_at`` (delayed and dead, ``count`` at most BATCH): begin at that id while it is
        still in the set, else at ``offset``: a cursor for paging while items leave.
        ``tenant``: the pending items of that tenant's sub-queue (fair queues)."""
        return [item for page in self.peek_pages(state, count=count, offset=offset,
                                                 from_end=from_end, start_at=start_at,
                                                 now_ms=now_ms, tenant=tenant)
                for item in page]

    def peek_pages(self, state: State = ItemState.PENDING.value, *, count: int = 10,
                   offset: int = 0, from_end: str = "head", start_at: str | None = None,
                   now_ms: int | None = None, tenant: str | None = None,
                   ) -> Iterator[list[PeekedItem]]:
        """:meth:`peek` in pages of at most ``BATCH`` items, one script call each, read as
        they are consumed: memory stays flat however many items are read. Each page is
        read at its own moment: an item that moves between pages may be missed or seen
        twice (peek changes nothing and locks nothing)."""
        keys = self.tenant_keys(state, tenant)
        if state not in STATES:
            raise UsageError(f"state must be one of {', '.join(STATES)}, not {state!r}")
        if from_end not in ("head", "tail"):
            raise UsageError("from must be head or tail")
        if count < 0 or offset < 0:
            raise UsageError("count and offset cannot be negative")
        if start_at is not None and count > BATCH:
            raise UsageError(f"peek with start_at reads at most {BATCH} items")
        done = 0
        while done < count:
            n = min(BATCH, count - done)
            _, rows = self.decoded("peek", {"state": state, "offset": offset + done, "count": n,
                                            "from": from_end, "start_at": start_at or ""},
                                   (), now_ms, keys=keys)
            page = [_peeked(state, row) for row in rows]
            if page:
                yield page
            done += len(page)
            if len(page) < n:
                break

    def item(self, item_id: str, *, now_ms: int | None = None) -> PeekedItem | None:
        """One item by id, in whatever state it is (pending, processing, delayed or dead),
        or None when the id is neither live nor dead. One round trip."""
        reply = self.call("item", {"id": check_id(item_id)}, (), now_ms)
        if not reply:
            return None
        fields, rows = SPECS["item"].decode(reply)  # the state, then peek.lua's fields
        state = text(fields["state"]) or ""
        if state not in STATES:  # (item.lua returns only these)
            raise ValueError(f"item.lua returned an unknown state {state!r}")
        return _peeked(state, rows[0])  # type: ignore[arg-type]

    def holders(self, *, now_ms: int | None = None) -> list[Holder]:
        """The sessions holding the items in processing, live and abandoned leases alike.

        Reads processing from its oldest lease in pages of HOLDERS_PAGE ids (one script
        call each): a busy queue's items may move between pages, so an item can be missed
        (never counted twice). Sessions come in order of their oldest lease; an item whose
        lease ran out counts for the session that held it last (``abandoned``).
        """
        from ..reports import Holder

        found: dict[str | None, Holder] = {}
        seen: set[str] = set()
        offset = 0
        while True:
            _, rows = self.decoded("holders", {"offset": offset, "count": HOLDERS_PAGE},
                                   (), now_ms)
            for row in rows:
                item_id = text(row.id) or ""
                if item_id in seen:
                    continue
                seen.add(item_id)
                session = text(row.session) if row.session else None
                holder = found.get(session)
                if holder is None:
                    host, pid = session_origin(session)
                    holder = found[session] = Holder(session=session, host=host, pid=pid)
                deadline = secs(int(row.deadline_ms)) if int(row.deadline_ms) >= 0 else None
                holder.items += 1
                holder.ids.append(item_id)
                if int(row.live) == 1:
                    holder.live += 1
                else:
                    holder.abandoned += 1
                if holder.oldest_id is None:
                    holder.oldest_id, holder.oldest_deadline = item_id, deadline
                if deadline is not None and (holder.nearest_deadline is None
                                             or deadline < holder.nearest_deadline):
                    holder.nearest_deadline = deadline
            if len(rows) < HOLDERS_PAGE:
                return list(found.values())
            offset += HOLDERS_PAGE

    # -- de-dup window --------------------------------------------------------------------
    def set_dedup_window(self, seconds: float) -> int:
        """Remember ids completed from now on for ``seconds`` (refused by push meanwhile);
        0 turns the window off and forgets every id. Also prunes a bounded batch of expired
        ids; returns how many."""
        if not 0 <= seconds <= MAX_DELAY:
            raise UsageError(f"the de-dup window must be between 0 and {MAX_DELAY_TEXT}"
                             " (in seconds)")
        return int(self.call("dedup", {"mode": "set"}, [ms(seconds)]))

    def dedup_ids(self, count: int = 100, *, now_ms: int | None = None,
                  ) -> tuple[float | None, int, list[tuple[str, float, float]]]:
        """The de-dup window in seconds (None: none set), how many ids it remembers, and the
        first ``count`` of them, soonest forgotten first: (id, forgotten at (epoch s),
        seconds left). Read BATCH at a time."""
        if count < 0:
            raise UsageError("count cannot be negative")
        out: list[tuple[str, float, float]] = []
        while True:
            n = min(BATCH, count - len(out))
            f, rows = self.decoded("dedup", {"mode": "list"}, [len(out), n], now_ms)
            window = secs(int(f["window_ms"])) if int(f["window_ms"]) >= 0 else None
            now, total = int(f["now_ms"]), int(f["remembered"])
            out.extend((text(r.id) or "", secs(float(r.until_ms)), secs(float(r.until_ms) - now))
                       for r in rows)
            if len(rows) < n or len(out) >= count:
                return window, total, out

    def clear_dedup(self, ids: Iterable[str]) -> int:
        """Forget ids of the de-dup window (push accepts them again); returns how many it
        remembered."""
        cleared = 0
        for batch in batches([check_id(i) for i in ids], BATCH):
            cleared += int(self.call("dedup", {"mode": "clear"}, batch))
        return cleared

    # -- pause ---------------------------------------------------------------------------
    def pause(self) -> None:
        """Lease nothing from this queue (rq-cli workers) until resumed."""
        self.client.set(self.keys.paused, b"1")
        note("pause", 1)  # (the audit trail, if open: a queue, or a shard, paused)

    def resume(self) -> None:
        self.client.delete(self.keys.paused)
        note("resume", 1)

    def wrong_type_key(self) -> tuple[str, str, str] | None:
        """(key, its type, the type rq-cli needs) of the first fixed key of this queue that
        holds another type of value, or None: one pipeline of TYPE, a fixed number of keys
        (for a WRONGTYPE error message that names the key)."""
        names = [(getattr(self.keys, k.name), k.type) for k in FIXED_KEYS]
        pipe = self.client.pipeline(transaction=False)
        for name, _ in names:
            pipe.type(name)
        for (name, want), got in zip(names, pipe.execute(), strict=True):
            got = got.decode() if isinstance(got, bytes) else str(got)
            if got not in ("none", want):
                return name, got, want
        return None

    def exists(self) -> bool:
        """Whether any key of this queue's own is on the server (one EXISTS, O(1) per key:
        the lists, sets and hashes every item, count or setting lives in)."""
        k = self.keys
        names = (k.queue, k.processing, k.delayed, k.dead, k.counters, k.paused, k.dedup,
                 k.enqueued, k.expires, k.attempts, k.tenants)
        return bool(self.client.exists(*names))

    def is_paused(self) -> bool:
        return bool(self.client.exists(self.keys.paused))

    def next_due(self) -> tuple[int, float | None]:
        """How many items are delayed, and in how many seconds the soonest falls due by the
        server's clock (None: nothing delayed). Two round trips: for messages, not loops."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zcard(self.keys.delayed).zrange(self.keys.delayed, 0, 0, withscores=True)
        delayed, first = pipe.execute()
        if not delayed or not first:
            return 0, None
        return int(delayed), max(float(first[0][1]) - server_ms(self.client), 0) / 1000



def _dead_info(info: bytes | str) -> dict[str, Any]:
    """A dead item's ``P:dead_info`` entry, invalid UTF-8 in it read as U+FFFD; {} when
    another client left something there that is not the JSON object rq-cli writes (peek
    shows the item without the details)."""
    if isinstance(info, bytes):  # (an error of invalid UTF-8: cjson wrote its bytes as they
        info = info.decode("utf-8", "replace")  # are; shown with replacement characters)
    try:
        meta = json.loads(info)
    except (ValueError, RecursionError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class DeadDetails(NamedTuple):
    """What a dead item's ``P:dead_info`` entry says (None where it says nothing)."""

    attempts: int
    at: float | None  #: time of death, epoch s
    reason: str | None
    error: str | None
    tenant: str | None


def dead_details(info: bytes | str | None) -> DeadDetails:
    """A ``P:dead_info`` entry read (peek's and ``errors``' one reading of it)."""
    meta = _dead_info(info) if info else {}
    attempts, at = meta.get("attempts"), meta.get("at")
    return DeadDetails(
        attempts=attempts if isinstance(attempts, int) else 0,
        at=round(float(at), 3) if isinstance(at, (int, float)) else None,
        reason=_str_or_none(meta.get("reason")), error=_str_or_none(meta.get("error")),
        tenant=_str_or_none(meta.get("tenant")))


def _peeked(state: State, row: Any) -> PeekedItem:
    """A PeekedItem from a row of peek.lua's (or item.lua's) reply, read by the names of
    SPECS["peek"].rows (its per-item fields: fields.py)."""
    from ..reports import PeekedItem

    attempts, holder, deadline, score, info = row.attempts, row.holder, row.deadline_ms, \
        row.score, row.dead_info
    dead_at = reason = None
    meta = _dead_info(info) if info else None
    if meta is not None:
        if isinstance(meta.get("attempts"), int):
            attempts = meta["attempts"]
        reason = dead_details(info).reason
    if state == ItemState.DEAD.value and int(float(score)) >= 0:
        dead_at = secs(float(score))
    return PeekedItem(
        id=text(row.id) or "", state=state, data=row.data, attempts=int(attempts),
        lease_session=text(holder) if holder else None,
        lease_expires_at=secs(int(deadline)) if int(deadline) >= 0 else None,
        due_at=secs(float(score)) if state == ItemState.DELAYED.value else None,
        dead_at=dead_at, dead_reason=reason, abandoned=int(row.abandoned) == 1,
        **decoded(PEEK, row, meta))
