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

from ..contract.batches import AFTER_ANY
from ..contract.keys import META_HASHES, META_ZSETS
from ..contract.limits import BATCH, DEEP_PAGE, DEEP_SCAN_COUNT, MAX_CLEAN_WAIT
from ..contract.util import batches, is_cluster, ms
from .base import QueueBase

if TYPE_CHECKING:
    from ..reports import CleanReport

#: the bookkeeping to sweep (keys.py FIXED_KEYS), and clean's sightings
_META_HASHES = (*META_HASHES, "suspects")
_META_ZSETS = META_ZSETS


def _listed(q: QueueBase, delayed: set[bytes] | None = None) -> set[bytes]:
    """Every id in the queue, processing, cleaning and delayed structures, in the
    sub-queues of the tenants with work (fair queues) and held by push --after (batches)
    (paged reads); the delayed ids are
    also added to ``delayed`` when given."""
    k, client = q.keys, q.client
    seen: set[bytes] = set()
    _, tenants = q.tenants()
    for key in (k.processing, k.queue, k.cleaning, *map(k.tenant_queue, tenants)):
        start = 0
        while page := client.lrange(key, start, start + DEEP_PAGE - 1):
            seen.update(page)
            start += DEEP_PAGE
    for name in client.sscan_iter(k.afters, count=DEEP_PAGE):  # held by push --after (batches)
        start = 0
        while page := client.lrange(k.after(name.decode()), start, start + DEEP_PAGE - 1):
            seen.update(entry[len(AFTER_ANY):] for entry in page)  # (a mode, then the id)
            start += DEEP_PAGE
    start = 0
    while page := client.zrange(k.delayed, start, start + DEEP_PAGE - 1):
        seen.update(page)
        if delayed is not None:
            delayed.update(page)
        start += DEEP_PAGE
    return seen


def _meta_ids(q: QueueBase, live: int) -> Iterator[bytes]:
    """Ids named in rq-cli's bookkeeping hashes and sets (HSCAN/ZSCAN, bounded per call).

    Each holds at most one entry per live item, so one that holds no more entries than there
    are live items is skipped: stale entries (items a peer completed) are swept once they
    outnumber the live items without one (items a peer pushed). This keeps the sweep of the
    per-item ``P:enqueued`` off the common path; the bookkeeping stays bounded by the queue.
    """
    client = q.client
    for name in _META_HASHES:
        key = getattr(q.keys, name)
        if name != "suspects" and client.hlen(key) <= live:
            continue
        for field, _ in client.hscan_iter(key, count=DEEP_SCAN_COUNT):
            # P:suspects fields carry the kind of sighting: "p:<id>", "c:<id>", "d:<id>"
            yield field[2:] if name == "suspects" else field
    for name in _META_ZSETS:
        key = getattr(q.keys, name)
        if client.zcard(key) <= live:
            continue
        for member, _ in client.zscan_iter(key, count=DEEP_SCAN_COUNT):
            yield member


def _scan_item_ids(q: QueueBase, progress: Callable[[int], None] | None) -> set[bytes]:
    """Every item id of the queue, by SCAN, a page (one call) at a time."""
    if is_cluster(q.client):
        return set(q.scan_items())
    offset, pattern = q.keys.item_key_offset, q.keys.item_pattern
    items: set[bytes] = set()
    cursor = None
    while cursor != 0:
        cursor, keys = q.client.scan(cursor or 0, match=pattern, count=DEEP_SCAN_COUNT)
        items.update(key[offset:] for key in keys)
        if progress and keys:
            progress(len(keys))
    return items


def _stray_sightings(q: QueueBase) -> Iterator[bytes]:
    """Ids with a deep-clean stray sighting ("d:<id>") in P:suspects."""
    for field, _ in q.client.hscan_iter(q.keys.suspects, match="d:*", count=DEEP_SCAN_COUNT):
        yield field[2:]


def deep_clean(q: QueueBase, report: CleanReport, *, grace: float, dry_run: bool,
               now_ms: int | None, progress: Callable[[int], None] | None) -> None:
    items = _scan_item_ids(q, progress)
    report.scanned = len(items)
    delayed: set[bytes] = set()
    candidates = items - _listed(q, delayed)
    args = {"grace_ms": ms(grace), "max_attempts": q.options.max_attempts,
            "front": q.front_requeue, "dry_run": "1" if dry_run else "0"}

    def confirm(ids: set[bytes]) -> int:
        waiting = 0
        for batch in batches(sorted(ids), BATCH):
            r, _ = q.decoded("deep_clean", args, batch, now_ms)
            recovered, dead, suspects = int(r["recovered"]), int(r["dead"]), int(r["suspects"])
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
    for batch in batches(sorted(set(_stray_sightings(q)) - candidates), BATCH):
        q.call("prune", {"dry_run": dry, "what": "strays"}, batch, now_ms)

    # (a delayed id without data: a ghost, left by a peer that completed the item; below,
    # its bookkeeping and its delayed entry go)
    stale = (set(_meta_ids(q, len(items))) | delayed) - items
    if stale:
        stale -= {member for member, _ in q.client.zscan_iter(q.keys.dead, count=DEEP_SCAN_COUNT)}
    for batch in batches(sorted(stale), BATCH):
        report.pruned += int(q.call("prune", {"dry_run": dry, "what": "meta"}, batch, now_ms))
