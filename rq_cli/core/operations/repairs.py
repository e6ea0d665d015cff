"""The repairs of a queue: clean (light and deep), requeue-dead and purge. No Typer, no rich."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ClusterError, ParameterError, UsageError
from ..codes import PURGE_STATES, STATES, ItemState, PurgeChoice, PurgeState, State
from ..contract.keys import FAIR_PENDING_FIELD
from ..contract.limits import (
    BATCH,
    MAX_CLEAN_WAIT,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    PRUNE_SAMPLE,
    SLOW_BATCH,
)
from ..contract.util import batches, cap_of, check_id, is_cluster, ms, server_ms, text
from .audit import note

if TYPE_CHECKING:  # created by the methods that return them (rq_cli.core.reports loads lazily)
    from ..reports import CleanReport, PurgeReport, RequeueReport

from .base import Progress, QueueBase


def _sleep(suspects: int, seconds: float) -> None:
    """The grace period of :meth:`Repairs.clean`, slept out."""
    time.sleep(seconds)


class Repairs(QueueBase):
    """Recovery and cleanup: clean, requeue-dead, purge."""

    # -- clean ---------------------------------------------------------------------------
    def clean(self, *, deep: bool = False, grace_seconds: float | None = None,
              dry_run: bool = False, now_ms: int | None = None,
              progress: Progress | None = None,
              wait: Callable[[int, float], None] | None = None) -> CleanReport:
        """Recover abandoned items (light), and with ``deep`` also stray items found by SCAN.

        Light: ids in processing (and the v0.1 cleaning journal) without a lease are
        re-queued once seen lease-less for the grace period; ghosts are dropped; items that
        used max_attempts are dead-lettered; due delayed items are promoted. When a pass sees
        lease-less ids for the first time, clean waits the grace period (up to
        MAX_CLEAN_WAIT seconds; not with an injected ``now_ms``) and looks again. Safe to run
        from several processes at once. Each script call looks at BATCH ids at most.
        """
        grace = self.options.grace_seconds if grace_seconds is None else grace_seconds
        if not 0 <= grace <= MAX_DELAY:
            raise UsageError(f"the grace period must be between 0 and {MAX_DELAY_TEXT}"
                             " (in seconds)")
        from ..reports import CleanReport

        # ``wait(suspects, seconds)``, if given, sleeps out the grace period instead of
        # time.sleep (the command line counts it down on a terminal)
        report = CleanReport(dry_run=dry_run)
        batched = self._clean_pass(report, grace, dry_run, now_ms, progress)
        if report.suspects and not dry_run and now_ms is None and grace <= MAX_CLEAN_WAIT:
            # Lease-less ids seen for the first time: look again once the grace period is
            # over, so one run recovers them (a cron need not run twice).
            (wait or _sleep)(report.suspects, grace)
            report.suspects = 0
            batched = self._clean_pass(report, grace, dry_run, now_ms, progress)
        if batched and not dry_run:  # batch items a peer completed: counted completed
            from .batchops import sweep

            report.pruned += sweep(self, now_ms)
        if deep:
            from .deep import deep_clean  # the SCAN side lives on its own

            deep_clean(self, report, grace=grace, dry_run=dry_run, now_ms=now_ms,
                       progress=progress)
        return report

    def _clean_pass(self, report: CleanReport, grace: float, dry_run: bool,
                    now_ms: int | None, progress: Progress | None) -> bool:
        """One pass of light clean over processing, in bounded script calls. Returns
        whether the queue has batch items (P:item_batch: its last call's answer)."""
        left, pass_start, expired_offset = -1, 0, 0
        while True:
            r, _ = self.decoded("clean", {
                "limit": BATCH, "left": left, "grace_ms": ms(grace),
                "max_attempts": self.options.max_attempts, "front": self.front_requeue,
                "dry_run": "1" if dry_run else "0", "pass_start": pass_start,
                "sample": PRUNE_SAMPLE, "expired_offset": expired_offset}, (), now_ms)
            left, pass_start = int(r["left"]), int(r["pass_start"])
            expired_offset = int(r["expired_offset"])
            report.recovered += int(r["recovered"])
            report.dropped += int(r["dropped"])
            report.dead += int(r["dead"])
            report.suspects += int(r["suspects"])
            report.promoted += int(r["promoted"])
            report.pruned += int(r["pruned"])  # bookkeeping of gone items, expired de-dup ids
            if progress:
                progress(BATCH)
            if left <= 0 and not int(r["more_due"]):
                return int(r["batch_items"]) > 0

    # -- dead letters --------------------------------------------------------------------
    def requeue_dead(self, ids: Sequence[str] | None = None, *,
                     limit: int | Mapping[str, int] | None = None,
                     older_than: float | None = None, to: QueueBase | None = None,
                     dry_run: bool = False, now_ms: int | None = None,
                     progress: Progress | None = None) -> RequeueReport:
        """Move dead items back to the queue (or ``to`` another queue on the same server:
        a sharded one, or from a shard into another slot, goes by core/operations/crossmove.py).

        ``ids`` given: those; else all (optionally only the ``limit`` oldest, and only those
        dead for more than ``older_than`` seconds). ``limit`` may be a mapping of prefix to
        count (the counts a console confirmed, per shard: :func:`~.util.cap_of`).
        """
        from .crossmove import crosses, requeue_across

        if isinstance(limit, Mapping):
            limit = cap_of(limit, self.prefix)
        if crosses(self, to):  # a sharded target, or from a shard into another slot
            moved = requeue_across(self, to, ids, limit=limit, older_than=older_than,
                                   dry_run=dry_run, now_ms=now_ms, progress=progress)
            note("requeue", 0 if dry_run else moved.requeued)  # (the audit trail, if open)
            return moved
        target = to.prefix if to is not None else self.prefix
        if to is not None and to.client is not self.client:
            raise UsageError("requeue-dead --to needs a queue on the same server")
        if to is not None and is_cluster(self.client) and \
                self.client.keyslot(to.keys.queue) != self.client.keyslot(self.keys.queue):
            raise ClusterError("on a cluster, requeue-dead --to needs a queue with the same "
                               "hash tag as the source queue")
        if limit is not None and limit < 0:
            raise UsageError("limit cannot be negative")
        from ..reports import RequeueReport

        report = RequeueReport(dry_run=dry_run)
        dry = "1" if dry_run else "0"

        def take(mode: str, rest: Sequence[Any]) -> int:
            r, rows = self.decoded("requeue_dead", {"target": target, "dry_run": dry,
                                                    "mode": mode}, rest, now_ms)
            requeued, skipped, missing = int(r["requeued"]), int(r["skipped"]), \
                int(r["missing"])
            report.requeued += requeued
            report.skipped += skipped
            report.missing += missing
            note("requeue", 0 if dry_run else requeued)  # (the audit trail, if open)
            ids = [text(row.id) or "" for row in rows]  # requeued, then skipped
            report.ids.extend(ids[:requeued])
            report.skipped_ids.extend(ids[requeued:])
            if progress:
                progress(requeued)
            return requeued + skipped + missing

        if ids is not None:
            for batch in batches([check_id(i) for i in ids], SLOW_BATCH):
                take("ids", batch)
            return report
        if older_than is not None:
            if not 0 <= older_than <= MAX_DELAY:
                raise ParameterError("older_than", f"must be between 0 and {MAX_DELAY_TEXT}"
                                                   " (in seconds)")
            now = now_ms if now_ms is not None else server_ms(self.client)
            cutoff = str(now - ms(older_than))
        else:
            cutoff = "+inf"
        offset = 0
        while limit is None or report.requeued < limit:
            size = SLOW_BATCH if limit is None else min(SLOW_BATCH, limit - report.requeued)
            before = report.requeued
            seen = take("range", [cutoff, size, offset])
            # skipped items stay dead (and so, in a dry run, does everything): step over them
            offset += seen - (0 if dry_run else report.requeued - before)
            if seen < size:
                break
        return report

    # -- purge ---------------------------------------------------------------------------
    def purge(self, state: PurgeState = PurgeChoice.PENDING.value, *, dry_run: bool = False,
              progress: Progress | None = None,
              limit: int | Mapping[str, int] | None = None) -> PurgeReport:
        """Delete the items in ``state``, or with ``all`` every key of the queue, in bounded
        batches (UNLINK), so the server keeps serving other clients. ``limit``: at most that
        many items (the oldest first: the state's own order), each script call told how many
        it may still take, so items that arrive meanwhile are never more than the limit (a
        console's confirmed count; a mapping of prefix to count: :func:`~.util.cap_of`)."""
        if state not in PURGE_STATES:
            raise UsageError(f"state must be one of {', '.join(PURGE_STATES)}, not {state!r}")
        if isinstance(limit, int) and limit < 0:
            raise UsageError("limit cannot be negative")
        cap = cap_of(limit, self.prefix)
        if cap is not None and state == "all":
            raise UsageError("a purge of every key takes no limit")
        from ..reports import PurgeReport

        report = PurgeReport(dry_run=dry_run)
        states = STATES if state == "all" else (state,)
        if dry_run:
            k = self.keys
            pipe = self.client.pipeline(transaction=False)
            pipe.llen(k.queue).llen(k.processing).zcard(k.delayed).zcard(k.dead)
            pipe.hget(k.fair, FAIR_PENDING_FIELD)  # fair: the items in the tenants' sub-queues
            *listed, in_tenants = pipe.execute()
            counts = dict(zip(STATES, listed, strict=True))
            counts[ItemState.PENDING] += int(in_tenants or 0)
            for s in states:
                setattr(report, s, int(counts[s]) if cap is None else min(int(counts[s]), cap))
            if state == "all":
                report.strays = sum(1 for _ in self.scan_items()) - report.pending \
                    - report.processing - report.delayed
                report.strays = max(report.strays, 0)
            return report
        for s in states:
            done = 0
            while cap is None or done < cap:
                size = SLOW_BATCH if cap is None else min(SLOW_BATCH, cap - done)
                n = int(self.call("purge", {"state": s, "batch": size}))
                if not n:
                    break
                done += n
                note("purge", n)  # (the audit trail, if open)
                setattr(report, s, getattr(report, s) + n)
                if progress:
                    progress(n)
        if state == "all":
            for batch in batches(self.scan_items(), SLOW_BATCH):
                n = int(self.call("purge", {"state": "strays", "batch": SLOW_BATCH}, batch))
                report.strays += n
                note("purge", n)
                if progress and n:
                    progress(n)
            self.call("purge", {"state": "meta", "batch": BATCH})
        return report

    def purge_ids(self, state: State, ids: Sequence[str], *, window: tuple[int, int] = (0, 0),
                  tenant: str | None = None) -> list[str]:
        """Delete the items ``ids`` of ``state``, each only if it is still there; returns
        the ids deleted (filtered purge, :mod:`rq_cli.core.filtering`). For pending and
        processing, ``window`` is the lowest and highest index from the left (``peek``
        ``from_end="tail"``) at which they were read: only around it is looked for them,
        so a call stays short on a list of millions. At most SLOW_BATCH ids per call.
        ``tenant``: pending ids read from that tenant's sub-queue (fair queues)."""
        if state not in STATES:
            raise UsageError(f"state must be one of {', '.join(STATES)}, not {state!r}")
        if len(ids) > SLOW_BATCH:
            raise UsageError(f"purge at most {SLOW_BATCH} ids per call")
        if not ids:
            return []
        _, rows = self.decoded("purge_ids", {"state": state, "low": window[0],
                                             "high": window[1]},
                               [check_id(i) for i in ids], keys=self.tenant_keys(state, tenant))
        note("purge", len(rows))  # (the audit trail, if open)
        return [text(row.id) or "" for row in rows]
