"""WorkQueue: every queue operation of DESIGN.md section 3, one method each.

Every state change is one Lua script (``lua/``), one round trip; bulk calls are cut into
batches of a few thousand elements per script call and pipelined. Methods return the plain
dataclasses of :mod:`rq_cli.core.types`. ``now_ms`` (milliseconds since the epoch) may be passed
to any time-dependent method, for tests; by default the scripts read the server's clock.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import ClusterError, ParameterError, UsageError
from .calling import Caller
from .codes import REQUEUE_ENDS, SCRIPT_OUTCOMES, RequeueEnd, outcomes
from .codes import STATES as _STATES
from .keys import (
    COUNTER_FIELDS,
    FIXED_KEYS,
    LAYOUTS,
    OTHER_GENERATION,
    Keys,
    has_hash_tag,
    prefix_collision,
)
from .limits import (
    BATCH,
    BLOCK_CHUNK,
    HOLDERS_PAGE,
    LEASE_CHUNK,
    MAX_CLEAN_WAIT,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    MAX_LEASE_SECONDS,
    MAX_LEASE_TEXT,
    PRUNE_SAMPLE,
    SLOW_BATCH,
)
from .scripts import SPECS, Reply
from .types import (
    ItemOutcome,
    ItemRef,
    LeasedItem,
    NewItem,
    Outcome,
    PurgeState,
    PushResult,
    QueueOptions,
    State,
)
from .util import (
    batches,
    check_count,
    check_id,
    check_new_id,
    check_tenant,
    check_weight,
    is_cluster,
    make_session,
    ms,
    now_arg,
    secs,
    server_ms,
    session_origin,
    text,
)

if TYPE_CHECKING:  # created by the methods that return them (rq_cli.reports loads lazily)
    from .reports import CleanReport, Holder, PeekedItem, PurgeReport, RequeueReport, Stats

Progress = Callable[[int], None]  # called with the number of items just handled

STATES = _STATES  # (codes.ItemState)
#: script -> code -> outcome, of the scripts that reply with an outcome per item (codes.py)
_OUTCOMES = cast("dict[str, dict[str, Outcome]]",
                 {script: outcomes(script) for script in SCRIPT_OUTCOMES})
_COMPLETE_OUTCOMES = _OUTCOMES["complete"]
PURGE_STATES = (*STATES, "all")


def _sleep(suspects: int, seconds: float) -> None:
    """The grace period of :meth:`WorkQueue.clean`, slept out."""
    time.sleep(seconds)


def _ref(ref: str | ItemRef) -> ItemRef:
    if isinstance(ref, str):
        return ItemRef(check_id(ref))
    check_id(ref.id)
    return ref  # (frozen: it can be used as it is)


class WorkQueue:
    """One queue (a key prefix) on one server.

    ``client`` is a ``redis.Redis`` or ``redis.RedisCluster`` returning bytes;
    ``session`` names this worker in leases and defaults to ``<host>:<pid>:<random>``.
    """

    def __init__(self, client: Any, prefix: str, options: QueueOptions | None = None, *,
                 session: str | None = None) -> None:
        if not prefix:
            raise UsageError("a queue prefix cannot be empty")
        why = prefix_collision(prefix)
        if why:
            raise UsageError(f"queue prefix {prefix!r} cannot be used: {why}")
        self.client = client
        self.prefix = prefix
        self.options = options or QueueOptions()
        if self.options.layout not in LAYOUTS:
            raise UsageError(f"layout must be one of {', '.join(LAYOUTS)}, "
                             f"not {self.options.layout!r}")
        if self.options.requeue not in REQUEUE_ENDS:
            raise UsageError(f"requeue must be back or front, not {self.options.requeue!r}")
        self.session = session or make_session()
        self.keys = Keys(prefix)
        self._script_keys = self.keys.script_keys  # built once: every call passes them
        if is_cluster(client) and not has_hash_tag(prefix):
            raise ClusterError(
                f"queue prefix {prefix!r} has no hash tag, so its keys would be spread over "
                f"the cluster's slots; use a prefix like '{{{prefix}}}' or 'app:{{{prefix}}}'")
        #: runs the scripts (FCALL of the hot ones where the server has Functions)
        self.caller = Caller(client)
        #: fair queues: the configured weights, until written to P:tenant_weights
        self._weights = {check_tenant(t): check_weight(t, w)
                         for t, w in self.options.tenant_weights}

    def __repr__(self) -> str:
        return f"WorkQueue({self.prefix!r}, layout={self.options.layout!r})"

    # -- script calls (public: bulk push, deep clean and the worker use them) ----------
    def script(self, name: str) -> Any:
        """Script ``name`` (scripts.SPECS) registered with the client (a redis-py Script:
        ``.sha``, ``.script``), made once per queue: for EVALSHA on a pipeline."""
        return self.caller.script(name)

    def script_head(self, now_ms: int | None = None) -> list[Any]:
        """ARGV[1..3] of every script call: prefix, now ("" = the server's clock), layout."""
        return [self.prefix, now_arg(now_ms), self.options.layout]

    # -- fair queues ---------------------------------------------------------------------
    def sync_tenant_weights(self) -> None:
        """Write the configured tenant weights (``QueueOptions.tenant_weights``) to
        P:tenant_weights, where every client's lease reads them: once per object, before its
        first tenant push or lease; nothing when none are configured. A tenant no config
        names keeps the weight last written (1 if never): configure 1 to reset it."""
        if self._weights:
            self.client.hset(self.keys.tenant_weights, mapping=self._weights)
            self._weights = {}

    def tenants(self) -> tuple[int, dict[str, int]]:
        """(pending items of the default tenant, {tenant: pending items}) for every tenant
        with work, in turn order; one script call per BATCH tenants."""
        depths: dict[str, int] = {}
        offset, default = 0, 0
        while True:
            fields, rows = self.decoded("tenants", {"offset": offset, "size": BATCH})
            total, default = int(fields["tenants"]), int(fields["default_depth"])
            for row in rows:
                depths[text(row.tenant) or ""] = int(row.depth)
            offset += BATCH
            if offset >= total + 1:  # (+1: the default tenant's place in the ring)
                return default, depths

    @property
    def script_keys(self) -> list[str]:
        """The KEYS every script call passes."""
        return self._script_keys

    def call(self, name: str, args: Mapping[str, Any] | None = None, rest: Sequence[Any] = (),
             now_ms: int | None = None, client: Any = None,
             keys: Sequence[str] | None = None) -> Any:
        """Run script ``name`` with its arguments by name (``SPECS[name].args``) and the
        repeated ones, flat, in ``rest``; returns the raw reply (decode it with
        ``SPECS[name].decode``). ``keys``: KEYS to pass instead of :attr:`script_keys`
        (fair queues name a tenant's sub-queue as KEYS[2])."""
        argv = SPECS[name].argv(self.script_head(now_ms), args or {}, rest)
        return self.caller.run(name, keys or self._script_keys, argv, client)

    def decoded(self, name: str, args: Mapping[str, Any] | None = None,
                rest: Sequence[Any] = (), now_ms: int | None = None,
                keys: Sequence[str] | None = None) -> Reply:
        """:meth:`call`, its reply decoded by name."""
        return SPECS[name].decode(self.call(name, args, rest, now_ms, keys=keys))

    @property
    def front_requeue(self) -> str:
        """The scripts' ``front`` argument for re-queued items: "1" = the front."""
        return "1" if self.options.requeue == RequeueEnd.FRONT else "0"

    # -- push ----------------------------------------------------------------------------
    def push(self, items: Iterable[NewItem | bytes | str], *, id_from_data: bool = False,
             front: bool = False, delay: float = 0.0, expire: float | None = None,
             now_ms: int | None = None, tenant: str | None = None) -> list[PushResult]:
        """Push items; returns one PushResult per item, in order (added=False: duplicate id).
        ``tenant``: into that tenant's sub-queue (fair queues; ``NewItem.tenant`` wins)."""
        results: list[PushResult] = []
        for batch in self.push_batches(items, id_from_data=id_from_data, front=front,
                                       delay=delay, expire=expire, now_ms=now_ms,
                                       tenant=tenant):
            results.extend(batch)
        return results

    def push_batches(self, items: Iterable[NewItem | bytes | str], *, batch_size: int = BATCH,
                     id_from_data: bool = False, front: bool = False, delay: float = 0.0,
                     expire: float | None = None, now_ms: int | None = None,
                     tenant: str | None = None) -> Iterator[list[PushResult]]:
        """Stream ``items`` in batches, yielding each batch's results once it is stored.

        Memory stays bounded: a few script calls of ``batch_size`` items are in flight on one
        connection while the next batch is read (rq_cli/bulk.py). If iterating ``items``
        raises (a bad input line), the items taken before it are stored and yielded first,
        then the exception propagates: nothing is half-applied silently.
        """
        from .bulk import push_batches

        return push_batches(self, items, batch_size=batch_size, id_from_data=id_from_data,
                            front=front, delay=delay, expire=expire, now_ms=now_ms,
                            tenant=tenant)

    # -- lease ---------------------------------------------------------------------------
    def _lease_once(self, count: int, lease_ms: int, now_ms: int | None,
                    at_most_once: bool = False, complete: Sequence[ItemRef] = (),
                    ) -> tuple[list[LeasedItem], bool, int, str]:
        """Lease up to ``count`` items without waiting, in script calls of at most
        ``LEASE_CHUNK`` items each (so no call holds the server long); the first call also
        completes ``complete``. Each call is atomic for the items it returns."""
        items: list[LeasedItem] = []
        completions = ""
        while True:
            want = min(count - len(items), LEASE_CHUNK)
            pairs: list[Any] = []
            for ref in complete:
                pairs.append(ref.id)
                pairs.append(ref.session or "")
            fields, rows = self.decoded("lease", {
                "count": want, "lease_ms": lease_ms, "session": self.session,
                "max_attempts": self.options.max_attempts,
                "at_most_once": "1" if at_most_once else "0"}, pairs, now_ms)
            paused, next_due = int(fields["status"]) == 1, int(fields["next_due_ms"])
            if complete:
                completions, complete = text(fields["completions"]) or "", ()
            prefix, session = self.prefix, self.session
            expires = secs(int(fields["deadline_ms"]))
            got = [LeasedItem(prefix, text(r.id) or "", r.data, int(r.attempt), expires, session)
                   for r in rows]
            items.extend(got)
            if len(got) < want or len(items) >= count:
                return items, paused, next_due, completions

    def lease(self, count: int = 1, *, lease_seconds: float | None = None, wait: float = 0.0,
              at_most_once: bool = False, now_ms: int | None = None) -> list[LeasedItem]:
        """Lease up to ``count`` items; wait up to ``wait`` seconds for the first one.

        Returns [] when nothing is available in time or the queue is paused. Waiting blocks
        on the queue without taking from it (BLMOVE P:queue P:queue), then leases atomically,
        so no id ever sits in processing without a lease. ``at_most_once`` completes each
        item in the same step: it is never handed out again, even if this worker dies.
        """
        lease_ms = self._lease_ms(lease_seconds)
        check_count(count)
        self.sync_tenant_weights()
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            items, paused, next_due, _ = self._lease_once(count, lease_ms, now_ms,
                                                          at_most_once)
            remaining = deadline - time.monotonic()
            if items or remaining <= 0:
                return items
            self._wait(min(remaining, BLOCK_CHUNK), paused, next_due)

    def complete_and_lease(self, refs: Iterable[str | ItemRef], count: int = 1, *,
                           lease_seconds: float | None = None, now_ms: int | None = None,
                           ) -> tuple[list[ItemOutcome], list[LeasedItem]]:
        """Complete ``refs``, then lease up to ``count`` items, in one step (one round trip):
        a worker's loop. Does not wait; outcomes are those of :meth:`complete`."""
        items = self._ref_args(refs)
        if len(items) > BATCH:
            raise UsageError(f"complete at most {BATCH} items per complete_and_lease")
        check_count(count)
        self.sync_tenant_weights()
        leased, _, _, codes = self._lease_once(count, self._lease_ms(lease_seconds), now_ms,
                                               complete=items)
        return [ItemOutcome(ref.id, _COMPLETE_OUTCOMES[code])
                for ref, code in zip(items, codes, strict=True)], leased

    def _lease_ms(self, lease_seconds: float | None) -> int:
        seconds = self.options.lease_seconds if lease_seconds is None else lease_seconds
        if not seconds > 0:  # also refuses NaN
            raise UsageError("the lease time must be a positive number of seconds")
        if seconds > MAX_LEASE_SECONDS:
            raise UsageError(f"the lease time must be at most {MAX_LEASE_TEXT}")
        return max(ms(seconds), 1)

    def _wait(self, seconds: float, paused: bool, next_due: int) -> None:
        """Block up to ``seconds`` for an item to arrive, without taking it."""
        if paused:
            time.sleep(min(seconds, 0.5))
            return
        if next_due >= 0:  # a delayed item becomes due: wake up for it
            seconds = min(seconds, max(next_due / 1000 - time.time(), 0.01))
        seconds = max(round(seconds, 3), 0.01)
        self.client.blmove(self.keys.queue, self.keys.queue, seconds, "RIGHT", "RIGHT")

    # -- complete / fail / extend --------------------------------------------------------
    @staticmethod
    def _ref_args(refs: Iterable[str | ItemRef]) -> list[ItemRef]:
        return [_ref(r) for r in refs]

    def _per_batch(self, refs: list[ItemRef], name: str, args: Mapping[str, Any],
                   now_ms: int | None) -> list[Any]:
        """Run script ``name`` over (id, session) pairs in batches; returns the concatenated
        replies (a string's characters, or a list's rows)."""
        out: list[Any] = []
        spec = SPECS[name]
        for batch in batches(refs, BATCH):
            pairs: list[Any] = []
            for ref in batch:
                pairs.append(ref.id)
                pairs.append(ref.session or "")
            reply = self.call(name, args, pairs, now_ms)
            if isinstance(reply, bytes):
                out.extend(reply.decode())
            else:
                out.extend(spec.decode(reply).rows)
        return out

    def complete(self, refs: Iterable[str | ItemRef], *, now_ms: int | None = None,
                 ) -> list[ItemOutcome]:
        """Complete items: ``completed`` for exactly one caller per item, else ``missing``
        (not live) or ``conflict`` (given a session, another session holds the lease)."""
        items = self._ref_args(refs)
        codes = self._per_batch(items, "complete", {}, now_ms)
        return [ItemOutcome(ref.id, _COMPLETE_OUTCOMES[code])
                for ref, code in zip(items, codes, strict=True)]

    def fail(self, refs: Iterable[str | ItemRef], *, error: str | None = None,
             retry_in: float | None = None, dead: bool = False, now_ms: int | None = None,
             reason: str = "failed") -> list[ItemOutcome]:
        """Fail items: ``retried`` (with retry_at) or ``dead``; else ``missing`` or
        ``conflict``. Without ``retry_in`` the delay is the queue's exponential backoff."""
        if retry_in is not None and not 0 <= retry_in <= MAX_DELAY:
            raise UsageError(f"the retry delay must be between 0 and {MAX_DELAY_TEXT} (in seconds)")
        items = self._ref_args(refs)
        opts = self.options
        args = {"error": error or "", "retry_ms": -1 if retry_in is None else ms(retry_in),
                "dead_reason": reason if dead else "", "max_attempts": opts.max_attempts,
                "backoff_ms": ms(opts.retry_backoff),
                "backoff_max_ms": ms(opts.retry_backoff_max),
                "jitter": repr(_random().uniform(0.75, 1.25))}
        rows = self._per_batch(items, "fail", args, now_ms)
        names = _OUTCOMES["fail"]
        return [ItemOutcome(ref.id, outcome, retry_at=secs(due) if outcome == "retried" else None)
                for ref, outcome, due in _coded(items, rows, names, "due_ms")]

    def cancel(self, ids: Iterable[str], *, error: str | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Dead-letter items now with reason ``cancelled``, even while another session holds
        the lease (a worker running one finds it dead at its next heartbeat and stops):
        ``dead``, or ``missing``/``already_dead``. Never-leased items are cancelled too."""
        refs = [ItemRef(check_new_id(i)) for i in ids]
        out: list[ItemOutcome] = []
        for batch in batches(refs, BATCH):
            reply = self.call("cancel", {"error": error or ""}, [r.id for r in batch], now_ms)
            codes = reply.decode() if isinstance(reply, bytes) else reply
            names = _OUTCOMES["cancel"]
            out.extend(ItemOutcome(r.id, names[c]) for r, c in zip(batch, codes, strict=True))
        return out

    def reclaim(self, sessions: Callable[[str], bool], *, lease_seconds: float | None = None,
                now_ms: int | None = None) -> list[LeasedItem]:
        """Take back, under this queue's session, the items whose last holder is a session
        for which ``sessions(session)`` is true (a named worker's previous run, killed), if
        that session still holds the lease or the lease ran out with the item still in
        processing. Each is a new attempt, returned like ``lease``'s items. Reads
        ``P:holders`` with HSCAN, a page per call."""
        lease_ms = self._lease_ms(lease_seconds)
        wanted = [field.decode() for field, value in
                  self.client.hscan_iter(self.keys.holders, count=1000)
                  if sessions(value.decode("utf-8", "replace"))]
        items: list[LeasedItem] = []
        for batch in batches(wanted, BATCH):
            holders = self.client.hmget(self.keys.holders, batch)
            pairs: list[Any] = []
            for item_id, holder in zip(batch, holders, strict=True):
                if holder is not None:
                    pairs += [item_id, holder]
            fields, rows = self.decoded("reclaim", {"lease_ms": lease_ms,
                                                    "session": self.session}, pairs, now_ms)
            deadline = secs(int(fields["deadline_ms"]))
            items.extend(LeasedItem(self.prefix, text(r.id) or "", r.data, int(r.attempt),
                                    deadline, self.session)
                         for r in rows)
        return items

    def extend(self, refs: Iterable[str | ItemRef], *, lease_seconds: float | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Extend leases: ``extended`` (with the new deadline), ``lost`` (the lease has
        expired), ``conflict`` (another session holds it) or ``missing`` (not live)."""
        items = self._ref_args(refs)
        rows = self._per_batch(items, "extend", {"lease_ms": self._lease_ms(lease_seconds)},
                               now_ms)
        names = _OUTCOMES["extend"]
        return [ItemOutcome(ref.id, outcome, lease_expires_at=secs(ms) if ms else None)
                for ref, outcome, ms in _coded(items, rows, names, "deadline_ms")]

    def retake(self, ids: Sequence[str], *, lease_seconds: float | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Take back leases of this session that ran out while nobody else took the item
        (the worker after an outage or a hung server), as the same attempt: ``extended``
        (with the new deadline), ``conflict``, ``lost`` (back in line, or another session
        had it), ``missing`` or ``already_dead``. One call per ``BATCH`` ids, each atomic."""
        names = _OUTCOMES["retake"]
        args = {"lease_ms": self._lease_ms(lease_seconds), "session": self.session}
        out: list[ItemOutcome] = []
        for batch in batches(list(ids), BATCH):
            rows = SPECS["retake"].decode(self.call("retake", args, batch, now_ms)).rows
            out.extend(ItemOutcome(i, names[r.code.decode()],
                                   lease_expires_at=secs(int(r.deadline_ms)) or None)
                       for i, r in zip(batch, rows, strict=True))
        return out

    def release(self, ids: Sequence[str], *, now_ms: int | None = None) -> list[ItemOutcome]:
        """Give back items this session holds and did not finish: each goes to the front of
        the line at once, and the attempt it was leased with is given back; not a failure
        (``returned``; or ``conflict``, ``lost``, ``missing``, ``already_dead``)."""
        names = _OUTCOMES["release"]
        out: list[ItemOutcome] = []
        for batch in batches(list(ids), BATCH):
            codes = self.call("release", {"session": self.session}, batch, now_ms)
            out.extend(ItemOutcome(i, names[c])
                       for i, c in zip(batch, codes.decode(), strict=True))
        return out

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
        from .reports import CleanReport

        # ``wait(suspects, seconds)``, if given, sleeps out the grace period instead of
        # time.sleep (the command line counts it down on a terminal)
        report = CleanReport(dry_run=dry_run)
        self._clean_pass(report, grace, dry_run, now_ms, progress)
        if report.suspects and not dry_run and now_ms is None and grace <= MAX_CLEAN_WAIT:
            # Lease-less ids seen for the first time: look again once the grace period is
            # over, so one run recovers them (a cron need not run twice).
            (wait or _sleep)(report.suspects, grace)
            report.suspects = 0
            self._clean_pass(report, grace, dry_run, now_ms, progress)
        if deep:
            from .deep import deep_clean  # the SCAN side lives on its own

            deep_clean(self, report, grace=grace, dry_run=dry_run, now_ms=now_ms,
                       progress=progress)
        return report

    def _clean_pass(self, report: CleanReport, grace: float, dry_run: bool,
                    now_ms: int | None, progress: Progress | None) -> None:
        """One pass of light clean over processing, in bounded script calls."""
        left, pass_start = -1, 0
        while True:
            r, _ = self.decoded("clean", {
                "limit": BATCH, "left": left, "grace_ms": ms(grace),
                "max_attempts": self.options.max_attempts, "front": self.front_requeue,
                "dry_run": "1" if dry_run else "0", "pass_start": pass_start,
                "sample": PRUNE_SAMPLE}, (), now_ms)
            left, pass_start = int(r["left"]), int(r["pass_start"])
            report.recovered += int(r["recovered"])
            report.dropped += int(r["dropped"])
            report.dead += int(r["dead"])
            report.suspects += int(r["suspects"])
            report.promoted += int(r["promoted"])
            report.pruned += int(r["pruned"])  # bookkeeping of gone items, expired de-dup ids
            if progress:
                progress(BATCH)
            if left <= 0 and not int(r["more_due"]):
                break

    # -- dead letters --------------------------------------------------------------------
    def requeue_dead(self, ids: Sequence[str] | None = None, *, limit: int | None = None,
                     older_than: float | None = None, to: WorkQueue | None = None,
                     dry_run: bool = False, now_ms: int | None = None,
                     progress: Progress | None = None) -> RequeueReport:
        """Move dead items back to the queue (or ``to`` another queue on the same server).

        ``ids`` given: those; else all (optionally only the ``limit`` oldest, and only those
        dead for more than ``older_than`` seconds).
        """
        target = to.prefix if to is not None else self.prefix
        if to is not None and to.client is not self.client:
            raise UsageError("requeue-dead --to needs a queue on the same server")
        if to is not None and is_cluster(self.client) and \
                self.client.keyslot(to.keys.queue) != self.client.keyslot(self.keys.queue):
            raise ClusterError("on a cluster, requeue-dead --to needs a queue with the same "
                               "hash tag as the source queue")
        if limit is not None and limit < 0:
            raise UsageError("limit cannot be negative")
        from .reports import RequeueReport

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
            report.ids.extend(text(row.id) or "" for row in rows)
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
    def purge(self, state: PurgeState = "pending", *, dry_run: bool = False,
              progress: Progress | None = None) -> PurgeReport:
        """Delete the items in ``state``, or with ``all`` every key of the queue, in bounded
        batches (UNLINK), so the server keeps serving other clients."""
        if state not in PURGE_STATES:
            raise UsageError(f"state must be one of {', '.join(PURGE_STATES)}, not {state!r}")
        from .reports import PurgeReport

        report = PurgeReport(dry_run=dry_run)
        states = STATES if state == "all" else (state,)
        if dry_run:
            k = self.keys
            pipe = self.client.pipeline(transaction=False)
            pipe.llen(k.queue).llen(k.processing).zcard(k.delayed).zcard(k.dead)
            pipe.hget(k.fair, "pending")  # fair: the items in the tenants' sub-queues
            *listed, in_tenants = pipe.execute()
            counts = dict(zip(STATES, listed, strict=True))
            counts["pending"] += int(in_tenants or 0)
            for s in states:
                setattr(report, s, int(counts[s]))
            if state == "all":
                report.strays = sum(1 for _ in self.scan_items()) - report.pending \
                    - report.processing - report.delayed
                report.strays = max(report.strays, 0)
            return report
        for s in states:
            while n := int(self.call("purge", {"state": s, "batch": SLOW_BATCH})):
                setattr(report, s, getattr(report, s) + n)
                if progress:
                    progress(n)
        if state == "all":
            for batch in batches(self.scan_items(), SLOW_BATCH):
                n = int(self.call("purge", {"state": "strays", "batch": SLOW_BATCH}, batch))
                report.strays += n
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
                               [check_id(i) for i in ids], keys=self._tenant_keys(state, tenant))
        return [text(row.id) or "" for row in rows]

    def _tenant_keys(self, state: str, tenant: str | None) -> list[str] | None:
        """The KEYS of a script call on ``tenant``'s sub-queue (P:queue, then the sub-queue:
        fair queues), or None (the usual KEYS) when no tenant is given."""
        if tenant is None:
            return None
        if state != "pending":
            raise ParameterError("tenant", "shows pending items only (a tenant's sub-queue)")
        return [self.keys.queue, self.keys.tenant_queue(check_tenant(tenant))]

    def scan_items(self) -> Iterator[bytes]:
        """Ids of every item data key of this queue, by SCAN (bounded per call)."""
        offset = self.keys.item_key_offset
        kwargs: dict[str, Any] = {}
        if is_cluster(self.client):  # a queue's keys share one slot: scan only its node
            kwargs["target_nodes"] = self.client.get_node_from_key(self.keys.queue)
        for key in self.client.scan_iter(match=self.keys.item_pattern, count=BATCH, **kwargs):
            yield key[offset:]

    # -- read-only -----------------------------------------------------------------------
    def stats(self, *, now_ms: int | None = None, by_tenant: bool = False) -> Stats:
        """Counts, in one round trip whatever the queue's size (``by_tenant``: and the
        pending items of each tenant, one more call per BATCH tenants)."""
        from .reports import Stats

        fields, rows = self.decoded("stats", {}, (), now_ms)
        f = {name: int(value) for name, value in fields.items()}
        processing = f["processing"]
        leased = min(f["leased"], processing)
        # every counter, 0 when never counted; other fields of the hash (the de-dup window,
        # a setting kept there) are no counts
        stored = {text(row.counter) or "": row.value for row in rows}
        counters = {name: int(stored.get(name, 0)) for name in COUNTER_FIELDS}
        oldest = f["oldest_ms"]
        per_tenant = None
        if by_tenant:
            default, depths = self.tenants()
            per_tenant = {"": default, **depths}
        return Stats(
            queue=self.prefix, pending=f["pending"], processing=processing, leased=leased,
            abandoned=processing - leased, delayed=f["delayed"], due=f["due"], dead=f["dead"],
            oldest_pending_age_s=secs(max(f["now_ms"] - oldest, 0)) if oldest >= 0 else None,
            paused=bool(f["paused"]), counters=counters, tenants=f["tenants"],
            by_tenant=per_tenant,
            other_generation=(OTHER_GENERATION.get(self.options.layout)
                              if f["other_generation"] else None))

    def peek(self, state: State = "pending", *, count: int = 10, offset: int = 0,
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

    def peek_pages(self, state: State = "pending", *, count: int = 10, offset: int = 0,
                   from_end: str = "head", start_at: str | None = None,
                   now_ms: int | None = None, tenant: str | None = None,
                   ) -> Iterator[list[PeekedItem]]:
        """:meth:`peek` in pages of at most ``BATCH`` items, one script call each, read as
        they are consumed: memory stays flat however many items are read. Each page is
        read at its own moment: an item that moves between pages may be missed or seen
        twice (peek changes nothing and locks nothing)."""
        keys = self._tenant_keys(state, tenant)
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
        from .reports import Holder

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

    def resume(self) -> None:
        self.client.delete(self.keys.paused)

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


def _dead_info(info: bytes | str) -> dict[str, Any]:
    """A dead item's ``P:dead_info`` entry; {} when another client left something there that
    is not the JSON object rq-cli writes (peek shows the item without the details)."""
    try:
        meta = json.loads(info)
    except (ValueError, RecursionError):  # (also UnicodeDecodeError)
        return {}
    return meta if isinstance(meta, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _peeked(state: State, row: Any) -> PeekedItem:
    """A PeekedItem from a row of peek.lua's (or item.lua's) reply, read by the names of
    SPECS["peek"].rows."""
    from .reports import PeekedItem

    attempts, enqueued, holder, deadline = row.attempts, row.enqueued_ms, row.holder, \
        row.deadline_ms
    score, info, error, tenant = row.score, row.dead_info, row.error, row.tenant
    dead_at = reason = None
    if info:
        meta = _dead_info(info)
        if isinstance(meta.get("attempts"), int):
            attempts = meta["attempts"]
        reason = _str_or_none(meta.get("reason"))
        error = error or _str_or_none(meta.get("error"))
        tenant = tenant or _str_or_none(meta.get("tenant"))
    if state == "dead" and int(float(score)) >= 0:
        dead_at = secs(float(score))
    return PeekedItem(
        id=text(row.id) or "", state=state, data=row.data, attempts=int(attempts),
        enqueued_at=secs(int(enqueued)) if int(enqueued) >= 0 else None,
        lease_session=text(holder) if holder else None,
        lease_expires_at=secs(int(deadline)) if int(deadline) >= 0 else None,
        due_at=secs(float(score)) if state == "delayed" else None,
        dead_at=dead_at, dead_reason=reason, error=text(error),
        abandoned=int(row.abandoned) == 1, tenant=text(tenant) if tenant else None)


def _coded(items: list[ItemRef], rows: list[Any], names: dict[str, Outcome], number: str,
           ) -> Iterator[tuple[ItemRef, Outcome, int]]:
    """(ref, outcome, number) per item from the rows (``code``, ``number``) of a decoded
    reply."""
    for ref, row in zip(items, rows, strict=True):
        code = row.code
        yield ref, names[code.decode() if isinstance(code, bytes) else code], \
            int(getattr(row, number))


def _random() -> Any:
    import random  # imported on first use: start-up time is a budget of its own

    return random


def lease_many(queues: Sequence[WorkQueue], count: int = 1, *, lease_seconds: float | None = None,
               wait: float = 0.0, order: str = "strict", at_most_once: bool = False,
               ) -> list[LeasedItem]:
    """Lease from several queues: ``strict`` takes from the first non-empty queue in the
    given order, ``fair`` tries them in a random order each time. All items returned come
    from one queue. Waits up to ``wait`` seconds, polling the queues in turn."""
    if order not in ("strict", "fair"):
        raise UsageError("order must be strict or fair")
    if not queues:
        raise UsageError("no queue to lease from")
    if len(queues) == 1:
        return queues[0].lease(count, lease_seconds=lease_seconds, wait=wait,
                               at_most_once=at_most_once)
    check_count(count)
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        ordered = list(queues)
        if order == "fair":
            _random().shuffle(ordered)
        for q in ordered:
            q.sync_tenant_weights()
            items, _, _, _ = q._lease_once(count, q._lease_ms(lease_seconds), None,
                                           at_most_once)
            if items:
                return items
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        # no multi-key "block without taking": wait on each queue briefly in turn
        per_queue = max(min(remaining, 0.5) / len(ordered), 0.01)
        for q in ordered:
            q._wait(per_queue, False, -1)
