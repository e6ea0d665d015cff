"""Deep clean: find stray items (data key exists, id in no list or set, no lease) by SCAN.

O(N) overall and never O(N^2): SCAN over ``P:item:*`` and paged reads of the lists build two
sets in memory; their difference is the candidates, which ``lua/deep_clean.lua`` checks
again atomically before touching anything. Because the reads are not one snapshot (an item
may move between lists while they are read), a candidate is re-queued only once it has been
seen stray for the grace period: the lists are read again after the grace period and only
ids stray both times are confirmed. Every server call handles a bounded batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .queue import WorkQueue
    from .types import CleanReport

PAGE = 10_000  # list elements per LRANGE/ZRANGE page
_META_HASHES = ("attempts", "enqueued", "errors", "suspects")
_META_ZSETS = ("expires", "leases")


def _listed(q: WorkQueue) -> set[bytes]:
    """Every id in the queue, processing, cleaning and delayed structures (paged reads)."""
    k, client = q.keys, q.client
    seen: set[bytes] = set()
    for key in (k.processing, k.queue, k.cleaning):
        start = 0
        while page := client.lrange(key, start, start + PAGE - 1):
            seen.update(page)
            start += PAGE
    start = 0
    while page := client.zrange(k.delayed, start, start + PAGE - 1):
        seen.update(page)
        start += PAGE
    return seen


def _meta_ids(q: WorkQueue) -> Iterator[bytes]:
    """Ids named in rq-cli's bookkeeping hashes and sets (HSCAN/ZSCAN, bounded per call)."""
    client = q.client
    for name in _META_HASHES:
        for field, _ in client.hscan_iter(getattr(q.keys, name), count=1000):
            # P:suspects fields carry the kind of sighting: "p:<id>", "c:<id>", "d:<id>"
            yield field[2:] if name == "suspects" else field
    for name in _META_ZSETS:
        for member, _ in client.zscan_iter(getattr(q.keys, name), count=1000):
            yield member


def _stray_sightings(q: WorkQueue) -> Iterator[bytes]:
    """Ids with a deep-clean stray sighting ("d:<id>") in P:suspects."""
    for field, _ in q.client.hscan_iter(q.keys.suspects, match="d:*", count=1000):
        yield field[2:]


def deep_clean(q: WorkQueue, report: CleanReport, *, grace: float, dry_run: bool,
               now_ms: int | None, progress: Callable[[int], None] | None) -> None:
    from .queue import BATCH, MAX_CLEAN_WAIT, _batches, _ms

    items: set[bytes] = set()
    for item_id in q._scan_items():
        items.add(item_id)
        if progress and len(items) % BATCH == 0:
            progress(BATCH)
    report.scanned = len(items)
    candidates = items - _listed(q)
    head = [_ms(grace), q.options.max_attempts, q._front_requeue, "1" if dry_run else "0"]

    def confirm(ids: set[bytes]) -> int:
        waiting = 0
        for batch in _batches(sorted(ids), BATCH):
            recovered, dead, suspects = map(int, q._run("deep_clean", head + batch, now_ms))
            report.recovered += recovered
            report.dead += dead
            waiting += suspects
        return waiting

    waiting = confirm(candidates)
    if waiting and not dry_run and now_ms is None and grace <= MAX_CLEAN_WAIT:
        # Strays seen for the first time: look again once the grace period has passed.
        time.sleep(grace)
        candidates &= items - _listed(q)
        waiting = confirm(candidates)
    report.suspects += waiting

    # Sightings of ids that are no longer stray (listed again, or gone) are forgotten.
    dry = "1" if dry_run else "0"
    for batch in _batches(sorted(set(_stray_sightings(q)) - candidates), BATCH):
        q._run("prune", [dry, "strays", *batch], now_ms)

    dead_ids = {member for member, _ in q.client.zscan_iter(q.keys.dead, count=1000)}
    stale = {i for i in _meta_ids(q) if i not in items and i not in dead_ids}
    for batch in _batches(sorted(stale), BATCH):
        report.pruned += int(q._run("prune", [dry, "meta", *batch], now_ms))
