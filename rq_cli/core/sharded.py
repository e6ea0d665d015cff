"""ShardedQueue: one logical queue spread over N shards, each a WorkQueue of its own prefix
and hash slot (docs/DESIGN.md section 7). Built on WorkQueue's public API; no Typer, no rich.

Items with an id go to the shard the id hashes to (:func:`shardmeta.shard_of`), so every
operation by id addresses one shard; leases visit every shard from a random start; a resize
(:func:`rq_cli.core.resharding.reshard`) retires a whole generation of shards, which keeps
being read until drained.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .bulk import Pushed
from .codes import PUSH_FLAGS, Outcome
from .limits import BATCH, BLOCK_CHUNK
from .queue import WorkQueue
from .shardmeta import SHARD_META_REFRESH, SHARD_META_RETRY, ShardMeta, check_count, read, shard_of
from .shardops import EveryShard
from .shardwait import Waiter, shard_down
from .types import ItemOutcome, ItemRef, LeasedItem, NewItem, PushResult, QueueOptions
from .util import as_bytes, check_new_id, data_id, make_session

if TYPE_CHECKING:
    from .reports import PeekedItem

DUPLICATE = PUSH_FLAGS["duplicate"]
#: Seconds a shard whose server failed a lease call is left out of lease passes.
SHARD_DOWN_PAUSE = 1.0
#: outcomes of an operation by id that send it on to the id's shard of an older generation
_NOT_HERE = (Outcome.MISSING,)


class ShardedQueue(EveryShard):
    """A sharded queue named ``prefix`` (its base prefix) on ``client``.

    ``shards``: the count the caller's config names: another count on the server (or none)
    is a ConfigError (exit 78) before anything is written. ``name``: for messages.
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
        self.refresh(force=True)
        check_count(self.name, shards, self.meta)
        if not self.meta.count:
            raise UsageError(f"queue {self.name!r} is not sharded on the server: run "
                             f"'rq-cli reshard {self.name} N' first")
        self._waiter = Waiter()
        self._mark = 0
        self._down: dict[str, float] = {}  # shard prefix -> left out of leases until then
        self._states: list[tuple[WorkQueue, int, int]] = []

    def __repr__(self) -> str:
        return f"ShardedQueue({self.prefix!r}, shards={self.meta.count})"

    # -- the shards ----------------------------------------------------------------------
    def refresh(self, force: bool = False) -> ShardMeta:
        """Read the record again if it is older than SHARD_META_REFRESH (or ``force``).

        Where the record's own server cannot be reached (its primary failing over), the
        shards go on with the record read last, tried again SHARD_META_RETRY later: nothing
        can change the record meanwhile (a resize writes it), and the other shards' calls
        must not stop with it."""
        now = time.monotonic()
        if force or now - self._read_at >= SHARD_META_REFRESH:
            try:
                self.meta = read(self.client, self.prefix)
            except Exception as e:
                if force or not shard_down(e):
                    raise
                now += SHARD_META_RETRY - SHARD_META_REFRESH
            self._read_at = now
        return self.meta

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

    # -- push ----------------------------------------------------------------------------
    def push(self, items: Iterable[NewItem | bytes | str], **kw: Any) -> list[PushResult]:
        """Push items (the arguments of WorkQueue.push); one PushResult per item, in order."""
        out: list[tuple[int, PushResult]] = []
        for dupes, groups in self._grouped(items, kw.pop("batch_size", BATCH), **kw):
            out += [(pos, PushResult(i, False, "duplicate")) for pos, i in dupes]
            for prefix, group in groups.items():
                stored = self.shard(prefix).push([it for _, it in group], **kw)
                out += [(pos, r) for (pos, _), r in zip(group, stored, strict=True)]
        return [r for _, r in sorted(out, key=lambda p: p[0])]

    def push_batches(self, items: Iterable[NewItem | bytes | str], **kw: Any,
                     ) -> Iterator[list[PushResult]]:
        """:meth:`stream`, with one PushResult per item."""
        for batch in self.stream(items, **kw):
            yield batch.results()

    def stream(self, items: Iterable[NewItem | bytes | str], *, batch_size: int = BATCH,
               stop: Callable[[], bool] | None = None, **kw: Any) -> Iterator[Pushed]:
        """``bulk.stream`` over the shards: each shard's part of a batch goes through that
        shard's own stream (pipelined, and drained on Ctrl-C as there), so what was
        yielded is exactly what was stored; within a batch, results come grouped by
        shard. A bad input line: what came before it is stored first, then it raises.
        ``stop`` (as ``bulk.stream``'s) is asked before each batch is read, and by each
        shard's stream: then (or at a KeyboardInterrupt while reading ``items``, when no
        batch is in flight) it ends in ``Drained``."""
        from .bulk import Drained, never, stream

        stop = stop or never
        grouped = self._grouped(items, batch_size * len(self.live), **kw)
        while True:
            try:
                if stop():
                    raise KeyboardInterrupt
                dupes, groups = next(grouped)
            except StopIteration:
                return
            except KeyboardInterrupt:  # (reading: nothing in flight)
                raise Drained from None
            if dupes:
                yield Pushed([i for _, i in dupes], DUPLICATE * len(dupes))
            for prefix, group in groups.items():
                yield from stream(self.shard(prefix), [it for _, it in group],
                                  batch_size=batch_size, stop=stop, **kw)

    def _grouped(self, items: Iterable[NewItem | bytes | str], size: int, *,
                 id_from_data: bool = False, tenant: str | None = None, **_: Any,
                 ) -> Iterator[tuple[list[tuple[int, str]],
                                     dict[str, list[tuple[int, NewItem]]]]]:
        """Chunks of ``size`` items: (duplicates of an id live in a draining shard, the rest
        by live shard), each item with its position in the input."""
        source, seen = iter(items), 0
        while True:
            chunk: list[Any] = []
            error: Exception | None = None
            try:
                chunk.extend(islice(source, size))
            except Exception as e:  # a bad line: store what came before it, then raise
                error = e
            live = self.refresh().live
            named = [_named(it, id_from_data, tenant) for it in chunk]
            taken = self._taken_before([n.id or "" for n in named])
            dupes: list[tuple[int, str]] = []
            groups: dict[str, list[tuple[int, NewItem]]] = {}
            for n, item in enumerate(named):
                item_id = item.id or ""
                if item_id in taken:
                    dupes.append((seen + n, item_id))
                else:
                    groups.setdefault(live[shard_of(item_id, len(live))], []).append(
                        (seen + n, item))
            yield dupes, groups
            seen += len(chunk)
            if error is not None:
                raise error
            if len(chunk) < size:
                return

    def _taken_before(self, ids: list[str]) -> set[str]:
        """Ids live in their shard of a draining generation (de-dup across a resize): one
        pipelined EXISTS per id, only while a generation drains."""
        if not self.meta.draining or not ids:
            return set()
        pipe = self.client.pipeline(transaction=False)
        asked: list[str] = []
        for item_id in ids:
            for q in self.older(item_id):
                pipe.exists(q.keys.item(item_id))
                asked.append(item_id)
        return {i for i, found in zip(asked, pipe.execute(), strict=True) if found}

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
        shards = self.shards
        start = random.randrange(len(shards))
        items: list[LeasedItem] = []
        states: list[tuple[WorkQueue, int, int]] = []
        failed: Exception | None = None
        now = time.monotonic()
        if all(self._down.get(q.prefix, 0) > now for q in shards):
            self._down.clear()  # every shard was down: try them all again
        for i in range(len(shards)):
            q = shards[(start + i) % len(shards)]
            if self._down.get(q.prefix, 0) > now:
                continue  # failed a moment ago: the others first (its calls take long)
            try:
                got, status, due = q.lease_try(count - len(items), lease_seconds=lease_seconds,
                                               at_most_once=at_most_once, now_ms=now_ms)
            except Exception as e:  # a shard whose primary is down: carry on with the others
                if not shard_down(e):
                    raise
                failed = e
                self._down[q.prefix] = time.monotonic() + SHARD_DOWN_PAUSE
                continue
            items.extend(got)
            states.append((q, status, due))
            if len(items) >= count:
                break
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

    def wait_for_item(self, seconds: float, status: int = 0, due_in_ms: int = -1) -> bool:
        """Block up to ``seconds`` on every shard seen by the last :meth:`lease_try`."""
        self._waiter.wait(self._states, self._mark, seconds)
        return self._waiter.mark() != self._mark

    def reclaim(self, sessions: Callable[[str], bool], **kw: Any) -> list[LeasedItem]:
        return [item for q in self.shards for item in q.reclaim(sessions, **kw)]

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
        if len(homes) == 1:
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
        there is asked again of the id's shards of draining generations."""
        out: list[ItemOutcome | None] = [None] * len(refs)
        groups: dict[str, list[int]] = {}
        for n, ref in enumerate(refs):
            groups.setdefault(self.shard_for(ref.id).prefix, []).append(n)
        for prefix, where in groups.items():
            for n, o in zip(where, op(self.shard(prefix), [refs[n] for n in where]),
                            strict=True):
                out[n] = o
        for depth in range(len(self.meta.draining)):
            again: dict[str, list[int]] = {}
            for n, was in enumerate(out):
                older = self.older(refs[n].id)
                if was is not None and was.outcome in _NOT_HERE and depth < len(older):
                    again.setdefault(older[depth].prefix, []).append(n)
            for prefix, where in again.items():
                for n, o in zip(where, op(self.shard(prefix), [refs[n] for n in where]),
                                strict=True):
                    if o.outcome not in _NOT_HERE:
                        out[n] = o
        return [o for o in out if o is not None]

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


def _named(item: NewItem | bytes | str, id_from_data: bool, tenant: str | None) -> NewItem:
    """The item with its id made here (random, as the peers make them, or from its data):
    the id decides the shard."""
    if isinstance(item, NewItem):
        data, item_id, tenant = item.data, item.id, item.tenant or tenant
    else:
        data, item_id = as_bytes(item), None
    if item_id is None:
        item_id = data_id(data) if id_from_data else os.urandom(16).hex()
    return NewItem(data, check_new_id(item_id), tenant)


def _refs(refs: Iterable[str | ItemRef]) -> list[ItemRef]:
    return WorkQueue.ref_args(refs)
