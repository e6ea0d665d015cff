"""ShardedQueue: one logical queue spread over N shards, each a WorkQueue of its own prefix
and hash slot (docs/DESIGN.md section 7). Built on WorkQueue's public API; no Typer, no rich.

Items with an id go to the shard the id hashes to (:func:`shardmeta.shard_of`; the write
side is :class:`~rq_cli.core.sharding.shardpush.ShardPush`), so every operation by id addresses one
shard; leases visit every shard from a random start; a resize
(:func:`rq_cli.core.sharding.resharding.reshard`) retires a whole generation of shards, which keeps
being read until drained.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from ..codes import LEASE_PAUSED, Outcome
from ..contract.limits import BLOCK_CHUNK, SHARD_DOWN_PAUSE, SHARD_META_REFRESH, SHARD_META_RETRY
from ..contract.util import make_session
from ..queue import WorkQueue
from ..types import ItemOutcome, ItemRef, LeasedItem, QueueOptions
from . import shardfront
from .shardcopies import read_copies
from .shardmeta import (
    Draining,
    ShardMeta,
    count_note,
    place,
    shard_of,
)
from .shardops import EveryShard
from .shardpush import ShardPush
from .shardsettle import Settling
from .shardwait import Waiter, shard_down

if TYPE_CHECKING:
    from ..reports import PeekedItem

#: outcomes of an operation by id that send it on to the id's shard of an older generation
_NOT_HERE = (Outcome.MISSING,)


class ShardedQueue(ShardPush, EveryShard):
    """A sharded queue named ``prefix`` (its base prefix) on ``client``.

    ``shards``: the count the caller's config names: a default, not a gate. The server's
    record is followed (:meth:`count_note` says when it differs); where there is none, the
    queue reads as an empty one of that count and the first push creates it. ``name``: for
    messages.
    """

    def __init__(self, client: Any, prefix: str, options: QueueOptions | None = None, *,
                 session: str | None = None, shards: int | None = None,
                 name: str | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.name = name or prefix
        self.options = options or QueueOptions()
        self.session = session or make_session()
        self._queues: dict[str, WorkQueue] = {}
        self._read_at = float("-inf")
        self.meta = ShardMeta()
        #: shard prefix -> its front items not yet known leased (shardfront.py's hint)
        self.fronts: dict[str, int] = {}
        self.configured = shards
        self.refresh(force=True)
        if not self.meta.count:
            raise UsageError(f"queue {self.name!r} is not sharded on the server: run "
                             f"'rq-cli reshard {self.name} N' first")
        self._waiter = Waiter()
        self._mark = 0
        self._down: dict[str, float] = {}  # shard prefix -> left out of leases until then
        #: shard prefix -> the error of its last failed call, until one succeeds (to say so)
        self.unreachable: dict[str, Exception] = {}
        self._states: list[tuple[WorkQueue, int, int]] = []

    def __repr__(self) -> str:
        return f"ShardedQueue({self.prefix!r}, shards={self.meta.count})"

    # -- the shards ----------------------------------------------------------------------
    def refresh(self, force: bool = False) -> ShardMeta:
        """Read the record again if it is older than SHARD_META_REFRESH (or ``force``).

        Where the record's own server cannot be reached (its primary failing over), the
        shards go on with the record read last (on opening, or ``force``: the newest of its
        copies that answers, :func:`~rq_cli.core.sharding.shardcopies.read_copies`), tried again
        SHARD_META_RETRY later: nothing can change the record meanwhile (a resize writes
        it), and the other shards' calls must not stop with it."""
        now = time.monotonic()
        if force or now - self._read_at >= SHARD_META_REFRESH:
            try:
                meta, self.fronts = shardfront.read_with_fronts(self.client, self.prefix)
                self.meta = self._planned() if not meta.count and self.configured else meta
            except Exception as e:
                if not shard_down(e):
                    raise
                if force:  # (opening: a copy of the record, if one answers)
                    self.meta = read_copies(self.client, self.prefix) or _raise(e)
                now += SHARD_META_RETRY - SHARD_META_REFRESH
            self._read_at = now
        return self.meta

    def _planned(self) -> ShardMeta:
        """The queue the config's count would create (:attr:`ShardMeta.planned`): its shards
        as ``reshard`` would place them, and the base itself draining if it holds a plain
        queue's keys (as ``reshard`` would set it)."""
        if not self.meta.planned:
            live = place(self.client, self.prefix, 1, self.configured or 1)
            plain = WorkQueue(self.client, self.prefix).exists()
            return ShardMeta(count=len(live), gen=1, live=live, planned=True,
                             draining=[Draining(0, [self.prefix])] if plain else [])
        return self.meta

    def count_note(self) -> str | None:
        """A note when the config names another count than the server's (which is followed)."""
        return count_note(self.name, self.configured, self.meta)

    def _create(self) -> None:
        """Before the first push into a planned queue: create it with the config's count
        (nothing written where another client created it first: its count is followed)."""
        from .resharding import create

        create(self.client, self.prefix, self.configured or 1)
        self.refresh(force=True)

    def shard(self, prefix: str) -> WorkQueue:
        """The WorkQueue of one shard (made once per prefix)."""
        q = self._queues.get(prefix)
        if q is None:
            q = self._queues[prefix] = WorkQueue(self.client, prefix, self.options,
                                                 session=self.session)
            q.shard_of = self.prefix
        return q

    @property
    def live(self) -> list[WorkQueue]:
        """The live shards, in hash order (pushes go only here)."""
        return [self.shard(p) for p in self.refresh().live]

    @property
    def shards(self) -> list[WorkQueue]:
        """Every shard that may hold anything: the live ones, then those draining."""
        meta = self.refresh()
        return [self.shard(p) for p in [*meta.live, *meta.draining_prefixes()]]

    def shard_for(self, item_id: str) -> WorkQueue:
        live = self.refresh().live
        return self.shard(live[shard_of(item_id, len(live))])

    def older(self, item_id: str) -> list[WorkQueue]:
        """The id's shards in the draining generations, newest first (read ``refresh``
        first)."""
        out = []
        for d in reversed(self.meta.draining):
            prefix = d.shards[shard_of(item_id, len(d.shards))]
            if prefix is not None:
                out.append(self.shard(prefix))
        return out

    # -- lease ---------------------------------------------------------------------------
    def lease(self, count: int = 1, *, lease_seconds: float | None = None, wait: float = 0.0,
              at_most_once: bool = False, now_ms: int | None = None) -> list[LeasedItem]:
        """Lease up to ``count`` items from any shards, fairly (a random first shard each
        pass); wait up to ``wait`` seconds for the first, blocked on every shard at once."""
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            mark = self._waiter.mark()
            items, states = self._lease_pass(count, lease_seconds, at_most_once, now_ms)
            remaining = deadline - time.monotonic()
            if items or remaining <= 0:
                return items
            self._waiter.wait(states, mark, min(remaining, BLOCK_CHUNK))

    def _lease_pass(self, count: int, lease_seconds: float | None, at_most_once: bool,
                    now_ms: int | None,
                    ) -> tuple[list[LeasedItem], list[tuple[WorkQueue, int, int]]]:
        """The shards the front hint names first, each for its front items at most, then
        every shard from a random start (docs/DESIGN.md section 7, "Lease")."""
        shards = self.shards
        start = random.randrange(len(shards))
        items: list[LeasedItem] = []
        states: list[tuple[WorkQueue, int, int]] = []
        failed: Exception | None = None
        now = time.monotonic()
        if all(self._down.get(q.prefix, 0) > now for q in shards):
            self._down.clear()  # every shard was down: try them all again
        fronted = [q for q in shards if self.fronts.get(q.prefix, 0) > 0]
        random.shuffle(fronted)
        ordinary = [shards[(start + i) % len(shards)] for i in range(len(shards))]
        for q, front in [*((q, True) for q in fronted), *((q, False) for q in ordinary)]:
            if len(items) >= count:
                break
            if self._down.get(q.prefix, 0) > now:
                continue  # failed a moment ago: the others first (its calls take long)
            want = count - len(items)
            if front:
                want = min(want, self.fronts[q.prefix])
            try:
                got, status, due = q.lease_try(want, lease_seconds=lease_seconds,
                                               at_most_once=at_most_once, now_ms=now_ms)
            except Exception as e:  # a shard whose primary is down: carry on with the others
                if not shard_down(e):
                    raise
                failed = self.unreachable[q.prefix] = e
                self._down[q.prefix] = time.monotonic() + SHARD_DOWN_PAUSE
                continue
            self.unreachable.pop(q.prefix, None)
            if front and status != LEASE_PAUSED:  # (fewer than asked: it holds no more)
                done = len(got) if len(got) == want else self.fronts[q.prefix]
                self.fronts[q.prefix] -= done
                shardfront.taken(self.client, self.prefix, q.prefix, done)
            items.extend(got)
            states.append((q, status, due))
        if failed is not None and not states:
            raise failed  # every shard is down: the caller's outage handling takes over
        return items, states

    def lease_try(self, count: int = 1, *, lease_seconds: float | None = None,
                  at_most_once: bool = False, now_ms: int | None = None,
                  ) -> tuple[list[LeasedItem], int, int]:
        """One lease pass without waiting (for :func:`~rq_cli.core.queue.lease_many`)."""
        self._mark = self._waiter.mark()
        items, self._states = self._lease_pass(count, lease_seconds, at_most_once, now_ms)
        return items, 0, -1

    @property
    def held_back(self) -> tuple[str, float] | None:
        """What held the last lease back on the shards that were held back, the soonest (of
        the shards this object has used: no read of the record)."""
        held = [h for q in list(self._queues.values()) if (h := q.held_back)]
        return min(held, key=lambda h: h[1]) if held else None

    def wait_for_item(self, seconds: float, status: int = 0, due_in_ms: int = -1) -> bool:
        """Block up to ``seconds`` on every shard seen by the last :meth:`lease_try`."""
        self._waiter.wait(self._states, self._mark, seconds)
        return self._waiter.mark() != self._mark

    def reclaim(self, sessions: Callable[[str], bool], **kw: Any) -> list[LeasedItem]:
        """Reclaim in every shard that answers (a shard whose server is down keeps its
        items: they come back when their leases run out)."""
        return [item for q in self.shards
                for item in self.answering(q, [], q.reclaim, sessions, **kw)]

    def ping(self) -> None:
        """Reach every shard's server (a keyed call, so a Cluster routes it to the shard's
        node); those that do not answer are noted in :attr:`unreachable`. Raises only when
        no shard answers (the caller's outage handling takes over)."""
        shards = self.shards
        for q in shards:
            self.answering(q, None, q.client.exists, q.keys.queue)
        if all(q.prefix in self.unreachable for q in shards):
            raise self.unreachable[shards[0].prefix]

    def answering(self, q: WorkQueue, default: Any, call: Callable[..., Any], *args: Any,
                  **kw: Any) -> Any:
        """``call(*args, **kw)`` for shard ``q``; ``default`` where its server cannot be
        reached (noted in :attr:`unreachable`; a success clears it)."""
        try:
            out = call(*args, **kw)
        except Exception as e:
            if not shard_down(e):
                raise
            self.unreachable[q.prefix] = e
            return default
        self.unreachable.pop(q.prefix, None)
        return out

    def owner(self, prefix: str) -> WorkQueue | None:
        """The shard of prefix ``prefix`` (a leased item's ``queue``), or None."""
        meta = self.refresh()
        if prefix in meta.live or prefix in meta.draining_prefixes():
            return self.shard(prefix)
        return None

    def complete_and_lease(self, refs: Iterable[str | ItemRef], count: int = 1, *,
                           lease_seconds: float | None = None, now_ms: int | None = None,
                           ) -> tuple[list[ItemOutcome], list[LeasedItem]]:
        """Complete ``refs``, then lease up to ``count`` items. When the items are all of
        one shard (a worker's one item), that shard completes them and leases the next in
        one round trip, as an unsharded queue does; what it lacks comes from a fair lease
        pass (so a worker moves on when its shard is empty). Does not wait."""
        items = _refs(refs)
        homes = {self.shard_for(r.id).prefix for r in items}
        leased: list[LeasedItem] = []
        if len(homes) == 1 and not any(n > 0 for n in self.fronts.values()):
            # (with front items waiting, a fair pass takes them first)
            done, leased = self.shard(homes.pop()).complete_and_lease(
                items, count, lease_seconds=lease_seconds, now_ms=now_ms)
            if self.meta.draining and any(o.outcome in _NOT_HERE for o in done):
                done = self.complete(items, now_ms=now_ms)  # (some are in an older shard)
        else:
            done = self.complete(items, now_ms=now_ms) if items else []
        if len(leased) < count:
            leased += self.lease(count - len(leased), lease_seconds=lease_seconds,
                                 now_ms=now_ms)
        return done, leased

    # -- by id ---------------------------------------------------------------------------
    def by_id(self, refs: Sequence[ItemRef], op: Callable[[WorkQueue, list[ItemRef]],
                                                          list[ItemOutcome]],
              ) -> list[ItemOutcome]:
        """Run ``op`` on each ref's shard (one call per shard); an outcome ``missing``
        there is asked again of the id's shards of draining generations. A shard that
        refuses, or does not confirm, stops none of the others: PartlyDone or Unconfirmed
        at the end, with every outcome (:class:`~.shardsettle.Settling`)."""
        out: list[ItemOutcome | None] = [None] * len(refs)
        settling = Settling()
        groups: dict[str, list[int]] = {}
        for n, ref in enumerate(refs):
            groups.setdefault(self.shard_for(ref.id).prefix, []).append(n)
        for prefix, where in groups.items():
            for n, o in settling.run(op, self.shard(prefix), refs, where):
                out[n] = o
        for depth in range(len(self.meta.draining)):
            again: dict[str, list[int]] = {}
            for n, was in enumerate(out):
                older = self.older(refs[n].id)
                if was is not None and was.outcome in _NOT_HERE and depth < len(older):
                    again.setdefault(older[depth].prefix, []).append(n)
            for prefix, where in again.items():
                for n, o in settling.run(op, self.shard(prefix), refs, where):
                    if o.outcome not in _NOT_HERE:
                        out[n] = o
        return settling.result([o for o in out if o is not None])

    def complete(self, refs: Iterable[str | ItemRef], *, now_ms: int | None = None,
                 ) -> list[ItemOutcome]:
        return self.by_id(_refs(refs), lambda q, r: q.complete(r, now_ms=now_ms))

    def fail(self, refs: Iterable[str | ItemRef], **kw: Any) -> list[ItemOutcome]:
        return self.by_id(_refs(refs), lambda q, r: q.fail(r, **kw))

    def extend(self, refs: Iterable[str | ItemRef], **kw: Any) -> list[ItemOutcome]:
        return self.by_id(_refs(refs), lambda q, r: q.extend(r, **kw))

    def cancel(self, ids: Iterable[str], **kw: Any) -> list[ItemOutcome]:
        return self.by_id(_refs(ids), lambda q, r: q.cancel([x.id for x in r], **kw))

    def release(self, ids: Sequence[str], **kw: Any) -> list[ItemOutcome]:
        return self.by_id(_refs(ids), lambda q, r: q.release([x.id for x in r], **kw))

    def retake(self, ids: Sequence[str], **kw: Any) -> list[ItemOutcome]:
        return self.by_id(_refs(ids), lambda q, r: q.retake([x.id for x in r], **kw))

    def item(self, item_id: str, *, now_ms: int | None = None) -> PeekedItem | None:
        for q in [self.shard_for(item_id), *self.older(item_id)]:
            found = q.item(item_id, now_ms=now_ms)
            if found is not None:
                return found
        return None

def owner_of(queues: Sequence[Any], prefix: str) -> Any:
    """The queue among ``queues`` (WorkQueues and ShardedQueues) that a leased item of
    prefix ``prefix`` belongs to: a WorkQueue of that prefix, or a sharded queue's shard."""
    for q in queues:
        if q.prefix == prefix:
            return q
        if isinstance(q, ShardedQueue) and (shard := q.owner(prefix)) is not None:
            return shard
    raise KeyError(prefix)


def physical(queues: Sequence[Any]) -> list[WorkQueue]:
    """Every WorkQueue behind ``queues``: a sharded queue's shards in its place."""
    return [s for q in queues for s in (q.shards if isinstance(q, ShardedQueue) else [q])]


def _raise(error: Exception) -> ShardMeta:
    raise error


def _refs(refs: Iterable[str | ItemRef]) -> list[ItemRef]:
    return WorkQueue.ref_args(refs)
