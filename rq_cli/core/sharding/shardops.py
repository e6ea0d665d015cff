"""The operations of a sharded queue that go to every shard (docs/DESIGN.md section 7):
totals, merged reads, maintenance, pause. A base of
:class:`~rq_cli.core.sharding.sharded.ShardedQueue`, which gives it the shards. No Typer, no
rich."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ParameterError
from ..codes import ItemState
from ..contract.limits import BATCH
from ..contract.util import cap_of
from ..operations.limiting import QueueLimits, Rate
from . import shardlimits
from .shardmeta import ShardMeta
from .shardwait import shard_down

if TYPE_CHECKING:
    from ..queue import WorkQueue
    from ..reports import CleanReport, Holder, PeekedItem, PurgeReport, RequeueReport, Stats


class EveryShard:
    """Operations over every shard (live and draining) of a sharded queue."""

    prefix: str
    client: Any
    meta: ShardMeta
    fronts: dict[str, int]

    @property
    def shards(self) -> list[WorkQueue]:
        raise NotImplementedError

    @property
    def live(self) -> list[WorkQueue]:
        raise NotImplementedError

    def refresh(self, force: bool = False) -> ShardMeta:
        raise NotImplementedError

    def answering(self, q: WorkQueue, default: Any, call: Any, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError

    def shard_for(self, item_id: str) -> WorkQueue:
        raise NotImplementedError

    def older(self, item_id: str) -> list[WorkQueue]:
        raise NotImplementedError

    # -- every shard ---------------------------------------------------------------------
    def stats(self, *, now_ms: int | None = None, by_tenant: bool = False) -> Stats:
        """Exact totals over every shard (and the totals of shards already removed)."""
        from .shardstats import total

        return total(self.prefix, [q.stats(now_ms=now_ms, by_tenant=by_tenant)
                                   for q in self.shards], self.meta.retired_counters)

    def shard_stats(self, *, now_ms: int | None = None,
                    ) -> list[tuple[str, bool, Stats | None, str | None]]:
        """(prefix, live, stats or None, error or None) per shard: a shard whose server
        cannot be reached is a row with its error, the others are read."""
        live = set(self.refresh().live)
        out: list[tuple[str, bool, Stats | None, str | None]] = []
        for q in self.shards:
            try:
                out.append((q.prefix, q.prefix in live, q.stats(now_ms=now_ms), None))
            except Exception as e:
                if not shard_down(e):
                    raise
                out.append((q.prefix, q.prefix in live, None, str(e) or type(e).__name__))
        return out

    def peek(self, state: str = ItemState.PENDING, *, count: int = 10, offset: int = 0,
             from_end: str = "head", now_ms: int | None = None, tenant: str | None = None,
             start_at: str | None = None) -> list[PeekedItem]:
        """Items of every shard, merged in the order of the state's time (enqueued, lease
        deadline, due time, death), pending items pushed to the front first (the order
        leases take); reads ``offset + count`` items of each shard."""
        from .shardfront import flags
        from .shardstats import merged

        shards = self.shards
        pages = [q.peek(state, count=offset + count, from_end=from_end,  # type: ignore[arg-type]
                        now_ms=now_ms, tenant=tenant) for q in shards]
        fronts = None
        if state == ItemState.PENDING and tenant is None and \
                any(self.fronts.get(q.prefix, 0) > 0 for q in shards):
            fronts = [flags(len(page), n, from_end, q.client.llen(q.keys.queue)
                            if n > 0 and from_end == "tail" else None)
                      for q, page in zip(shards, pages, strict=True)
                      for n in [self.fronts.get(q.prefix, 0)]]
        return merged(state, pages, from_end, fronts)[offset:offset + count]

    def peek_pages(self, state: str = ItemState.PENDING, *, count: int = 10, **kw: Any,
                   ) -> Iterator[list[PeekedItem]]:
        items = self.peek(state, count=count, **kw)
        for n in range(0, len(items), BATCH):
            yield items[n:n + BATCH]

    def holders(self, *, now_ms: int | None = None) -> list[Holder]:
        from .shardstats import merged_holders

        return merged_holders([q.holders(now_ms=now_ms) for q in self.shards])

    def clean(self, **kw: Any) -> CleanReport:
        """Clean every shard (light, or ``deep``), release what ``push --after`` holds for
        batches done (a killed release's rest), then remove drained shards."""
        from ..reports import CleanReport
        from .resharding import settle

        report = CleanReport(dry_run=kw.get("dry_run", False))
        for q in self.shards:
            _add(report, q.clean(**kw))
        if not report.dry_run:
            from ..operations.batchops import release_all

            release_all(self)  # (push --after's items of batches done, that a run left)
            settle(self.client, self.prefix)
        return report

    def requeue_dead(self, ids: Sequence[str] | None = None, *,
                     limit: int | Mapping[str, int] | None = None, to: Any = None,
                     **kw: Any) -> RequeueReport:
        """Requeue dead items in their own shards, or ``to`` another queue (plain or
        sharded), each shard's in turn (core/operations/crossmove.py across slots). ``limit``: at
        most that many in all, or a mapping of shard prefix to count (each shard its own)."""
        from ..reports import RequeueReport

        report = RequeueReport(dry_run=kw.get("dry_run", False))
        for q in self.shards:
            mine = None if ids is None else [i for i in ids
                                             if q in (self.shard_for(i), *self.older(i))]
            left = cap_of(limit, q.prefix, report.requeued)
            if mine == [] or left == 0:
                continue
            _add(report, q.requeue_dead(mine, limit=left, to=to, **kw))
        return report

    def purge(self, state: str = ItemState.PENDING, *,
              limit: int | Mapping[str, int] | None = None, **kw: Any) -> PurgeReport:
        """Purge ``state`` in every shard; ``limit`` as :meth:`requeue_dead`'s."""
        from ..reports import PurgeReport

        report = PurgeReport(dry_run=kw.get("dry_run", False))
        for q in self.shards:
            left = cap_of(limit, q.prefix, getattr(report, state, 0)
                          if state != "all" else 0)
            if left == 0:
                continue
            _add(report, q.purge(state, limit=left, **kw))  # type: ignore[arg-type]
        return report

    def pause(self) -> None:
        for q in self.shards:
            q.pause()

    def resume(self) -> None:
        for q in self.shards:
            q.resume()

    def is_paused(self) -> bool:
        """Whether any shard is paused. A shard whose server cannot be reached counts as not
        paused, so the others' answer stands (a worker goes on leasing from them; nothing is
        leased from the unreachable one anyway)."""
        return any(self.answering(q, False, q.is_paused) for q in self.shards)

    def exists(self) -> bool:
        return any(q.exists() for q in self.shards)

    # -- fleet-wide limits: a share per live shard (shardlimits.py) -------------------
    def set_limits(self, *, rate: Rate | None = None, burst: int | None = None,
                   max_in_flight: int | None = None, tenant: str | None = None,
                   ) -> QueueLimits:
        if burst is not None and rate is None:
            raise ParameterError("burst", "goes with a rate (the burst of that rate)")
        shardlimits.spread(self.live, self.prefix, rate=rate, burst=burst,
                           max_in_flight=max_in_flight, tenant=tenant)
        return self.limits(tenant)

    def clear_limits(self, tenant: str | None = None) -> QueueLimits:
        for q in self.shards:
            q.clear_limits(tenant)
        return self.limits(tenant)

    def limits(self, tenant: str | None = None) -> QueueLimits:
        live = self.live
        return shardlimits.totals(live, [q for q in self.shards if q not in live], tenant)


    def set_dedup_window(self, seconds: float) -> int:
        return sum(q.set_dedup_window(seconds) for q in self.shards)

    def dedup_ids(self, count: int = 100, *, now_ms: int | None = None,
                  ) -> tuple[float | None, int, list[tuple[str, float, float]]]:
        """The de-dup window (the live shards'), the ids remembered by every shard, and the
        first ``count``, soonest forgotten first."""
        parts = [q.dedup_ids(count, now_ms=now_ms) for q in self.shards]
        ids = sorted((i for _, _, part in parts for i in part), key=lambda i: i[1])[:count]
        return parts[0][0], sum(n for _, n, _ in parts), ids

    def clear_dedup(self, ids: Iterable[str]) -> int:
        """Forget ids of the de-dup window, in the shard each id hashes to (and its older
        ones while a generation drains)."""
        return sum(q.clear_dedup([i]) for i in ids for q in (self.shard_for(i),
                                                             *self.older(i)))

    def tenants(self) -> tuple[int, dict[str, int]]:
        """(pending items of the default tenant, {tenant: pending items}) over every shard."""
        default, depths = 0, dict[str, int]()
        for q in self.shards:
            d, part = q.tenants()
            default += d
            for tenant, n in part.items():
                depths[tenant] = depths.get(tenant, 0) + n
        return default, depths

    def sync_tenant_weights(self) -> None:
        for q in self.live:
            q.sync_tenant_weights()

    def next_due(self) -> tuple[int, float | None]:
        """How many items every shard holds delayed, and in how many seconds the soonest
        of them falls due (None: nothing delayed); :meth:`WorkQueue.next_due` per shard."""
        parts = [q.next_due() for q in self.shards]
        dues = [due for _, due in parts if due is not None]
        return sum(n for n, _ in parts), min(dues) if dues else None




def _add(report: Any, part: Any) -> None:
    """Add the counts of ``part`` to ``report`` (same dataclass; lists are joined)."""
    for name, value in vars(part).items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, list)):
            setattr(report, name, getattr(report, name) + value)
