"""requeue-dead into a queue in another slot (docs/DESIGN.md section 7, "Requeue across
slots"): from a shard of a sharded queue on a Cluster, or into a sharded queue.

One script cannot touch two slots, so each batch is three steps, each bounded: read a page of
dead items (their ids and data, one script call), push each into the target with its own id
and data (the target's own push: the id routes it to its shard of a sharded target), then
drop the dead copies that still hold the data pushed (one script call, ``requeue_dead``'s
mode ``moved``). Stopped between the push and the drop (Ctrl-C, a lost connection), a run
again finds the item live in the target with the same data and only drops the dead copy:
nothing lost, nothing doubled. No Typer, no rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ParameterError, UsageError
from ..codes import ItemState
from ..contract.limits import MAX_DELAY, MAX_DELAY_TEXT, SLOW_BATCH
from ..contract.util import batches, check_id, ms, server_ms, text
from ..types import NewItem

if TYPE_CHECKING:
    from ..reports import RequeueReport
    from .base import Progress


def crosses(source: Any, to: Any) -> bool:
    """Whether requeue-dead from ``source`` (one queue) into ``to`` goes across slots: ``to``
    is a sharded queue, or ``source`` is a shard and ``to`` another slot of a Cluster."""
    if to is None:
        return False
    if hasattr(to, "older"):  # a sharded target: each item to the shard its id hashes to
        return True
    if getattr(source, "shard_of", None) is None or not hasattr(source.client, "keyslot"):
        return False
    return bool(source.client.keyslot(to.keys.queue) != source.client.keyslot(
        source.keys.queue))


def requeue_across(source: Any, to: Any, ids: Sequence[str] | None = None, *,
                   limit: int | None = None, older_than: float | None = None,
                   dry_run: bool = False, now_ms: int | None = None,
                   progress: Progress | None = None) -> RequeueReport:
    """``WorkQueue.requeue_dead`` into ``to`` in another slot (the module's steps):
    ``ids``, or the oldest dead items (at most ``limit``, dead for more than ``older_than``
    seconds), SLOW_BATCH a batch. ``source``: a WorkQueue (Any: it is WorkQueue's own
    method that calls this)."""
    from ..reports import RequeueReport

    if to.client is not source.client:
        raise UsageError("requeue-dead --to needs a queue on the same server")
    if limit is not None and limit < 0:
        raise UsageError("limit cannot be negative")
    report = RequeueReport(dry_run=dry_run)
    if ids is not None:
        for batch in batches([check_id(i) for i in ids], SLOW_BATCH):
            _batch(source, to, _dead_data(source, batch), report, dry_run, now_ms, progress)
        return report
    cutoff = None
    if older_than is not None:
        if not 0 <= older_than <= MAX_DELAY:
            raise ParameterError("older_than", f"must be between 0 and {MAX_DELAY_TEXT}"
                                               " (in seconds)")
        now = now_ms if now_ms is not None else server_ms(source.client)
        cutoff = (now - ms(older_than)) / 1000
    offset = 0
    while limit is None or report.requeued < limit:
        size = SLOW_BATCH if limit is None else min(SLOW_BATCH, limit - report.requeued)
        page = source.peek(ItemState.DEAD.value, count=size, offset=offset, now_ms=now_ms)
        full = len(page) == size
        if cutoff is not None:  # dead items come oldest death first
            kept = [it for it in page if it.dead_at is not None and it.dead_at <= cutoff]
            full = full and len(kept) == len(page)
            page = kept
        before = report.requeued
        _batch(source, to, [(it.id, it.data) for it in page], report, dry_run, now_ms,
               progress)
        # what stays dead (skipped, changed; everything in a dry run): step over it
        offset += len(page) - (0 if dry_run else report.requeued - before)
        if not full:
            break
    return report


def _dead_data(source: Any, ids: list[str]) -> list[tuple[str, bytes | None]]:
    """The dead copies' data of ``ids`` (None: no dead copy), one pipelined round trip."""
    pipe = source.client.pipeline(transaction=False)
    for i in ids:
        pipe.get(source.keys.dead_item(i))
    return list(zip(ids, pipe.execute(), strict=True))


def _live_data(to: Any, ids: list[str]) -> dict[str, bytes | None]:
    """The data of the live items of ``to`` with these ids (None: no such item), read in
    each id's own shard of a sharded target (its live one, then those draining)."""
    pipe = to.client.pipeline(transaction=False)
    where: list[tuple[str, int]] = []
    for i in ids:
        queues = [to.shard_for(i), *to.older(i)] if hasattr(to, "older") else [to]
        for q in queues:
            pipe.get(q.keys.item(i))
        where.append((i, len(queues)))
    got, out, at = pipe.execute(), dict[str, bytes | None](), 0
    for i, n in where:
        out[i] = next((d for d in got[at:at + n] if d is not None), None)
        at += n
    return out


def _batch(source: Any, to: Any, items: list[tuple[str, bytes | None]],
           report: RequeueReport, dry_run: bool, now_ms: int | None,
           progress: Progress | None) -> None:
    """Move one batch (ids with their dead data; None: no dead copy) into ``to``."""
    if not items:
        return
    with_data: list[tuple[str, bytes]] = [(i, d) for i, d in items if d is not None]
    live = _live_data(to, [i for i, _ in with_data])
    skipped: list[str] = []
    moved: list[tuple[str, bytes]] = []
    if dry_run:
        for i, d in with_data:
            if live[i] in (None, d):
                moved.append((i, d))
            else:
                skipped.append(i)
    else:
        fresh = [(i, d) for i, d in with_data if live[i] is None]
        results = to.push([NewItem(d, i) for i, d in fresh], now_ms=now_ms) if fresh else []
        added = {r.id for r in results if r.added}
        raced = [r.id for r in results if not r.added]
        if raced:  # made live since read? (a concurrent requeue of the same items)
            live.update(_live_data(to, raced))
        for i, d in with_data:  # live with the same data: pushed by a run that stopped
            if i in added or live[i] == d:
                moved.append((i, d))
            else:
                skipped.append(i)
    rest: list[Any] = []
    for i, d in moved:
        rest += [i, b"=" + d]
    for i, dead in items:
        if dead is None:
            rest += [i, "-"]  # no dead copy (or a ghost): counted missing
    r, rows = source.decoded("requeue_dead", {"target": source.prefix,
                                              "dry_run": "1" if dry_run else "0",
                                              "mode": "moved"}, rest, now_ms)
    requeued = int(r["requeued"])
    report.requeued += requeued
    report.missing += int(r["missing"])
    report.ids.extend((text(row.id) or "") for row in rows[:requeued])
    report.skipped += len(skipped)
    report.skipped_ids.extend(skipped)
    if progress:
        progress(requeued)
