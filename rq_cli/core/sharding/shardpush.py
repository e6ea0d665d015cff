"""The write side of a sharded queue (docs/DESIGN.md section 7, "Push", "De-dup across a
resize" and the tombstone): items grouped by the shard their id hashes to, ids a draining
generation refuses reported without being sent, a push refused by a retired shard sent again
to the live ones. A base of :class:`~rq_cli.core.sharding.sharded.ShardedQueue`, which gives it the
shards. No Typer, no rich."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..codes import PUSH_FLAGS, RETIRED_ERROR
from ..contract.ages import new_ids
from ..contract.limits import BATCH
from ..contract.util import as_bytes, check_new_id, data_id
from ..pushing.bulk import REASONS, Pushed
from ..types import NewItem, PushResult
from . import shardfront
from .shardmeta import ShardMeta, shard_of

if TYPE_CHECKING:
    from ..queue import WorkQueue

DUPLICATE = PUSH_FLAGS["duplicate"]
DEAD = PUSH_FLAGS["dead"]
RECENT = PUSH_FLAGS["recently completed"]


class ShardPush:
    """Pushes into a sharded queue's live shards."""

    client: Any
    prefix: str
    meta: ShardMeta

    @property
    def live(self) -> list[WorkQueue]:
        raise NotImplementedError

    def refresh(self, force: bool = False) -> ShardMeta:
        raise NotImplementedError

    def shard(self, prefix: str) -> WorkQueue:
        raise NotImplementedError

    def older(self, item_id: str) -> list[WorkQueue]:
        raise NotImplementedError

    def _create(self) -> None:
        raise NotImplementedError

    def push(self, items: Iterable[NewItem | bytes | str], **kw: Any) -> list[PushResult]:
        """Push items (the arguments of WorkQueue.push); one PushResult per item, in order.
        A ``batch`` is held open in every live shard meanwhile; ``after`` items are held in
        their shards for the whole batch (core/operations/batchops.py ``pushing``)."""
        from ..operations.batchops import pushing

        with pushing(self, kw):
            return self._push(items, **kw)

    def _push(self, items: Iterable[NewItem | bytes | str], **kw: Any) -> list[PushResult]:
        out: list[tuple[int, PushResult]] = []
        for dupes, groups in self._grouped(items, kw.pop("batch_size", BATCH), **kw):
            out += [(pos, PushResult(i, False, REASONS[flag])) for pos, i, flag in dupes]
            for prefix, group in groups.items():
                stored = self._into(prefix, [it for _, it in group], **kw)
                out += [(pos, r) for (pos, _), r in zip(group, stored, strict=True)]
        return [r for _, r in sorted(out, key=lambda p: p[0])]

    def _into(self, prefix: str, items: list[NewItem], **kw: Any) -> list[PushResult]:
        """Push ``items`` into shard ``prefix``; one retired by a resize meanwhile refuses
        them all: the record is read again and they go to the live shards."""
        try:
            stored = self.shard(prefix).push(items, **kw)
        except Exception as e:
            self._retired(prefix, e)  # (raises anything else)
            return self._push(items, **kw)
        if shardfront.to_front(kw, items):
            shardfront.pushed(self.client, self.prefix, prefix, sum(r.added for r in stored))
        return stored

    def _retired(self, prefix: str, error: Exception) -> None:
        """Re-read the record after shard ``prefix`` refused a push as retired (push.lua's
        RETIRED_ERROR); re-raise ``error`` if it is anything else, or if the record still
        lists the shard as live (then it is no client's stale list: a broken record)."""
        if RETIRED_ERROR.split()[0] not in str(error).split()[:1]:
            raise error
        if prefix in self.refresh(force=True).live:
            raise error

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
        batch is in flight) it ends in ``Drained``. A shard retired meanwhile refuses its
        part: the record is read again and the rest of the part goes to the live shards.
        A ``batch`` is held open in every live shard meanwhile; ``after`` items are held in
        their shards for the whole batch (core/operations/batchops.py ``pushing``)."""
        from ..operations.batchops import pushing

        with pushing(self, kw):
            yield from self._stream(items, batch_size=batch_size, stop=stop, **kw)

    def _stream(self, items: Iterable[NewItem | bytes | str], *, batch_size: int = BATCH,
                stop: Callable[[], bool] | None = None, **kw: Any) -> Iterator[Pushed]:
        from ..pushing.bulk import Drained, never, stream

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
                yield Pushed([i for _, i, _ in dupes], "".join(f for _, _, f in dupes))
            for prefix, group in groups.items():
                sent = 0
                try:
                    for batch in stream(self.shard(prefix), [it for _, it in group],
                                        batch_size=batch_size, stop=stop, **kw):
                        sent += len(batch.ids)
                        if shardfront.to_front(kw, [it for _, it in group]):
                            shardfront.pushed(self.client, self.prefix, prefix, batch.added)
                        yield batch
                except Exception as e:  # (not Drained: a KeyboardInterrupt)
                    self._retired(prefix, e)  # (raises anything else)
                    yield from self._stream([it for _, it in group[sent:]],
                                            batch_size=batch_size, stop=stop, **kw)

    def _grouped(self, items: Iterable[NewItem | bytes | str], size: int, *,
                 id_from_data: bool = False, tenant: str | None = None,
                 now_ms: int | None = None, **_: Any,
                 ) -> Iterator[tuple[list[tuple[int, str, str]],
                                     dict[str, list[tuple[int, NewItem]]]]]:
        """Chunks of ``size`` items: (those a draining shard refuses, with push's flag: see
        :meth:`_taken_before`; the rest by live shard), each with its position in the
        input."""
        source, seen = iter(items), 0
        while True:
            chunk: list[Any] = []
            error: Exception | None = None
            try:
                chunk.extend(islice(source, size))
            except Exception as e:  # a bad line: store what came before it, then raise
                error = e
            if self.refresh().planned and chunk:
                self._create()
            live = self.meta.live
            at = self.live[0].clock.now_ms() if now_ms is None else now_ms
            named = [_named(it, id_from_data, tenant, at) for it in chunk]
            taken = self._taken_before([n.id or "" for n in named])
            dupes: list[tuple[int, str, str]] = []
            groups: dict[str, list[tuple[int, NewItem]]] = {}
            for n, item in enumerate(named):
                item_id = item.id or ""
                if item_id in taken:
                    dupes.append((seen + n, item_id, taken[item_id]))
                else:
                    groups.setdefault(live[shard_of(item_id, len(live))], []).append(
                        (seen + n, item))
            yield dupes, groups
            seen += len(chunk)
            if error is not None:
                raise error
            if len(chunk) < size:
                return

    def _taken_before(self, ids: list[str]) -> dict[str, str]:
        """Ids their shard of a draining generation refuses (de-dup across a resize: live,
        dead, or in its de-dup window), with push's flag for each: one pipelined round trip
        per batch, only while a generation drains (per old shard an EXISTS per id and one
        ZMSCORE of its dead and de-dup ids; docs/DESIGN.md section 7)."""
        if not self.meta.draining or not ids:
            return {}
        by_shard: dict[str, list[str]] = {}
        for item_id in dict.fromkeys(ids):
            for q in self.older(item_id):
                by_shard.setdefault(q.prefix, []).append(item_id)
        pipe = self.client.pipeline(transaction=False)
        for prefix, group in by_shard.items():
            keys = self.shard(prefix).keys
            for item_id in group:
                pipe.exists(keys.item(item_id))
            pipe.zmscore(keys.dead, group)
            pipe.zmscore(keys.dedup, group)
        replies, now_ms = iter(pipe.execute()), time.time() * 1000
        out: dict[str, str] = {}
        for group in by_shard.values():
            live = [next(replies) for _ in group]
            dead, recent = next(replies), next(replies)
            for item_id, found, died, until in zip(group, live, dead, recent, strict=True):
                flag = (DUPLICATE if found else DEAD if died is not None else
                        RECENT if until is not None and until > now_ms else None)
                if flag is not None:
                    out.setdefault(item_id, flag)
        return out


def _named(item: NewItem | bytes | str, id_from_data: bool, tenant: str | None,
           at: int) -> NewItem:
    """The item with its id made here (a random v7 id carrying push time ``at``, or from
    its data): the id decides the shard."""
    if isinstance(item, NewItem):
        data, item_id, tenant = item.data, item.id, item.tenant or tenant
    else:
        data, item_id = as_bytes(item), None
    if item_id is None:
        item_id = data_id(data) if id_from_data else new_ids(1, at).decode()
    return NewItem(data, check_new_id(item_id), tenant)
