"""A minimal v0.3 redis-work-queue client, for interoperability tests only.

No v0.3 client is on PyPI (v0.3 is the crates.io 0.3.0 / Go v0.3.0 / NuGet 1.0.0 generation),
so this one issues exactly the commands that the project README's "Technical details" section
specifies, and nothing else -- in particular no Lua, so it has the peers' multi-round-trip
races (RPOPLPUSH, then GET, then SETEX), which rq-cli must tolerate:

- add:      ``SET P:item:<id> data``, then ``LPUSH P:queue <id>`` (pipelined; ids are UUIDs);
- lease:    ``RPOPLPUSH P:queue P:processing`` (``BRPOPLPUSH`` when blocking), ``GET P:item:<id>``;
            a missing item is ignored (blocking without timeout: try the next one; otherwise
            return nothing); then ``SETEX P:lease:<id> <secs> <session>``;
- complete: ``DEL P:item:<id>`` (its result decides True), ``DEL P:lease:<id>``,
            ``LREM P:processing 0 <id>``;
- light clean: for each id of ``LRANGE P:processing 0 -1``: an id without data is not an
            item and is removed (``LREM``); an item that exists, has no lease and is not in the
            main queue is removed from processing first (``LREM``), then pushed to the main
            queue (``LPUSH``) -- only if this cleaner's ``LREM`` removed it, so two cleaners
            cannot both push it.
- deep clean: for each item found by ``SCAN MATCH P:item:*`` that has no lease and is in
            neither the main queue nor processing (``LPOS``), ``LPUSH P:queue <id>``: so an
            item rq-cli keeps out of every list (a delayed one, in ``P:delayed``) is handed
            out at once.

It deliberately knows nothing of rq-cli's keys, nor of the v0.1 ``leased_by_session`` key.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import redis


@dataclass(frozen=True)
class V03Item:
    id: str
    data: bytes


@dataclass
class V03Queue:
    """The v0.3 work queue at key prefix ``prefix`` (``P:queue``, ``P:item:<id>`` ...)."""

    prefix: str
    session: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _item(self, item_id: str) -> str:
        return f"{self.prefix}:item:{item_id}"

    def _lease(self, item_id: str) -> str:
        return f"{self.prefix}:lease:{item_id}"

    @property
    def _queue(self) -> str:
        return f"{self.prefix}:queue"

    @property
    def _processing(self) -> str:
        return f"{self.prefix}:processing"

    def add_item(self, db: redis.Redis, data: bytes, item_id: str | None = None) -> str:
        """Add an item: data first, then the id, so no worker pops an id without data."""
        item_id = item_id or uuid.uuid4().hex
        pipe = db.pipeline(transaction=False)
        pipe.set(self._item(item_id), data)
        pipe.lpush(self._queue, item_id)
        pipe.execute()
        return item_id

    def lease(self, db: redis.Redis, lease_secs: int, *, block: bool = False,
              timeout: float = 0) -> V03Item | None:
        """Lease the next item, or None. Ghost ids (no data) are ignored."""
        while True:
            if block:
                raw = db.brpoplpush(self._queue, self._processing, timeout=timeout)
            else:
                raw = db.rpoplpush(self._queue, self._processing)
            if raw is None:
                return None
            item_id = raw.decode() if isinstance(raw, bytes) else raw
            data = db.get(self._item(item_id))
            if data is None:
                # Not an item. Blocking without a timeout: try the next; otherwise give up.
                if block and timeout == 0:
                    continue
                return None
            db.execute_command("SETEX", self._lease(item_id), lease_secs, self.session)
            return V03Item(item_id, data.encode() if isinstance(data, str) else data)

    def complete(self, db: redis.Redis, item_id: str) -> bool:
        """Complete an item; True for exactly the call whose DEL removed the data key."""
        pipe = db.pipeline(transaction=False)
        pipe.delete(self._item(item_id))
        pipe.delete(self._lease(item_id))
        pipe.lrem(self._processing, 0, item_id)
        deleted, _, _ = pipe.execute()
        return int(deleted) == 1

    def light_clean(self, db: redis.Redis) -> int:
        """Return abandoned items (in processing, live, no lease) to the main queue.
        Returns how many this call pushed back."""
        pushed = 0
        for raw in db.lrange(self._processing, 0, -1):
            item_id = raw.decode() if isinstance(raw, bytes) else raw
            if not db.exists(self._item(item_id)):
                db.lrem(self._processing, 0, item_id)  # not an item: tidy it away
                continue
            if db.exists(self._lease(item_id)):
                continue
            if db.lpos(self._queue, item_id) is not None:
                continue
            if int(db.lrem(self._processing, 0, item_id)) > 0:
                db.lpush(self._queue, item_id)
                pushed += 1
        return pushed

    def deep_clean(self, db: redis.Redis) -> int:
        """Push every item that no list holds and no lease covers to the main queue.
        Returns how many this call pushed."""
        pushed = 0
        offset = len(self._item(""))
        for key in db.scan_iter(match=f"{self.prefix}:item:*", count=1000):
            raw = key[offset:]
            item_id = raw.decode() if isinstance(raw, bytes) else raw
            if db.exists(self._lease(item_id)):
                continue
            if db.lpos(self._queue, item_id) is not None or \
                    db.lpos(self._processing, item_id) is not None:
                continue
            db.lpush(self._queue, item_id)
            pushed += 1
        return pushed

    def queue_len(self, db: redis.Redis) -> int:
        return int(db.llen(self._queue))

    def processing(self, db: redis.Redis) -> int:
        return int(db.llen(self._processing))
