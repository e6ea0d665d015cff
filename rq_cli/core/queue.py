"""WorkQueue: every queue operation of docs/DESIGN.md section 3, one method each.

Every state change is one Lua script (``lua/``), one round trip; bulk calls are cut into
batches of a few thousand elements per script call and pipelined. Methods return the plain
dataclasses of :mod:`rq_cli.core.types`. ``now_ms`` (milliseconds since the epoch) may be passed
to any time-dependent method, for tests; by default the scripts read the server's clock.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from ..errors import Unconfirmed, UsageError
from .codes import LEASE_CAPPED, LEASE_FAIR, LEASE_LIMITED, LEASE_PAUSED, DeadReason, Outcome
from .contract.fields import LEASE, decoded
from .contract.limits import (
    BATCH,
    BLOCK_CHUNK,
    FAIL_CHUNK,
    LEASE_CHUNK,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    MAX_LEASE_SECONDS,
    MAX_LEASE_TEXT,
    SETTLE_CHUNK,
)
from .contract.specs import SPECS
from .contract.util import batches, check_count, check_new_id, ms, secs, text
from .operations.audit import note
from .operations.base import COMPLETE_OUTCOMES, SCRIPT_OUTCOME_NAMES, Ref
from .operations.limiting import Limiting, held_back, wait_held_back
from .operations.reads import Reads
from .operations.repairs import Repairs
from .operations.settled import coded, unconfirmed_result
from .types import (
    ItemOutcome,
    ItemRef,
    LeasedItem,
    NewItem,
    PushResult,
)


class WorkQueue(Reads, Repairs, Limiting):
    """One queue (a key prefix) on one server.

    ``client`` is a ``redis.Redis`` or ``redis.RedisCluster`` returning bytes;
    ``session`` names this worker in leases and defaults to ``<host>:<pid>:<random>``.
    """

    # -- push ----------------------------------------------------------------------------
    def push(self, items: Iterable[NewItem | bytes | str], *, id_from_data: bool = False,
             front: bool = False, delay: float = 0.0, expire: float | None = None,
             now_ms: int | None = None, tenant: str | None = None,
             batch: str | None = None, after: str | None = None,
             after_ok: bool = False, after_wide: bool = False) -> list[PushResult]:
        """Push items; returns one PushResult per item, in order (added=False: duplicate id).
        ``tenant``: into that tenant's sub-queue (fair queues; ``NewItem.tenant`` wins);
        ``batch``: the items join that batch; ``after``: they wait until that batch is done
        (``after_ok``: dead-lettered if any of it died; ``after_wide``: this queue is a
        shard, and they wait for the sharded queue's whole batch) (docs/batches.md)."""
        results: list[PushResult] = []
        for batch_ in self.push_batches(items, id_from_data=id_from_data, front=front,
                                        delay=delay, expire=expire, now_ms=now_ms,
                                        tenant=tenant, batch=batch, after=after,
                                        after_ok=after_ok, after_wide=after_wide):
            results.extend(batch_)
        return results

    def push_batches(self, items: Iterable[NewItem | bytes | str], *, batch_size: int = BATCH,
                     id_from_data: bool = False, front: bool = False, delay: float = 0.0,
                     expire: float | None = None, now_ms: int | None = None,
                     tenant: str | None = None, batch: str | None = None,
                     after: str | None = None, after_ok: bool = False,
                     after_wide: bool = False) -> Iterator[list[PushResult]]:
        """Stream ``items`` in batches, yielding each batch's results once it is stored.

        Memory stays bounded: a few script calls of ``batch_size`` items are in flight on one
        connection while the next batch is read (rq_cli/core/pushing/bulk.py). If iterating
        ``items`` raises (a bad input line), the items taken before it are stored and yielded first,
        then the exception propagates: nothing is half-applied silently.
        """
        from .pushing.bulk import push_batches

        return push_batches(self, items, batch_size=batch_size, id_from_data=id_from_data,
                            front=front, delay=delay, expire=expire, now_ms=now_ms,
                            tenant=tenant, batch=batch, after=after, after_ok=after_ok,
                            after_wide=after_wide)

    # -- lease ---------------------------------------------------------------------------
    def _lease_once(self, count: int, lease_ms: int, now_ms: int | None,
                    at_most_once: bool = False, complete: Sequence[ItemRef] = (),
                    ) -> tuple[list[LeasedItem], int, int, str]:
        """Lease up to ``count`` items without waiting, in script calls of at most
        ``LEASE_CHUNK`` items each (so no call holds the server long); the first call also
        completes ``complete``. Each call is atomic for the items it returns. Returns the
        items, the last call's status, the ms until the earliest delayed item falls due by
        the server's clock (-1: none), and the completions."""
        items: list[LeasedItem] = []
        completions = ""
        unconfirmed: Unconfirmed | None = None
        complete_refs = complete
        while True:
            want = min(count - len(items), LEASE_CHUNK)
            pairs: list[Any] = []
            for ref in complete:
                pairs.append(ref.id)
                pairs.append(ref.session or "")
            try:
                fields, rows = self.decoded("lease", {
                    "count": want, "lease_ms": lease_ms, "session": self.session,
                    "max_attempts": self.options.max_attempts,
                    "at_most_once": "1" if at_most_once else "0"}, pairs, now_ms)
            except Unconfirmed as exc:  # (the completes it carried: made, not confirmed)
                fields, rows = SPECS["lease"].decode(cast("Sequence[Any]", exc.reply))
                unconfirmed = exc
            status, next_due = int(fields["status"]), int(fields["next_due_ms"])
            if next_due >= 0:  # (the server's now: its deadline for a lease granted now)
                next_due = max(next_due - (int(fields["deadline_ms"]) - lease_ms), 0)
            if complete:
                completions, complete = text(fields["completions"]) or "", ()
            prefix, session = self.prefix, self.session
            expires = secs(int(fields["deadline_ms"]))
            got = [LeasedItem(prefix, text(r.id) or "", r.data, int(r.attempt), expires, session,
                              **decoded(LEASE, r)) for r in rows]
            items.extend(got)
            if len(got) < want or len(items) >= count:
                self.held_back = held_back(status, next_due) if not items else None
                if unconfirmed is not None:  # (only the first call carries completes)
                    unconfirmed.ids = [ref.id for ref in complete_refs]
                    unconfirmed.result = (items, status, next_due, completions)
                    raise unconfirmed
                return items, status, next_due, completions

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
            items, status, due_in, _ = self._lease_once(count, lease_ms, now_ms,
                                                        at_most_once)
            remaining = deadline - time.monotonic()
            if items or remaining <= 0:
                return items
            self._wait(min(remaining, BLOCK_CHUNK), status, due_in)

    def lease_try(self, count: int = 1, *, lease_seconds: float | None = None,
                  at_most_once: bool = False, now_ms: int | None = None,
                  ) -> tuple[list[LeasedItem], int, int]:
        """One lease without waiting, for a caller that waits itself (a sharded queue):
        the items, the status and the ms until a delayed item falls due (-1: none), the
        last two for :meth:`wait_for_item`."""
        check_count(count)
        self.sync_tenant_weights()
        items, status, due_in, _ = self._lease_once(count, self._lease_ms(lease_seconds),
                                                    now_ms, at_most_once)
        return items, status, due_in

    def wait_for_item(self, seconds: float, status: int = 0, due_in_ms: int = -1) -> bool:
        """Block up to ``seconds`` for an item to arrive, without taking it (``status`` and
        ``due_in_ms``: those :meth:`lease_try` returned); True if one was seen."""
        return self._wait(seconds, status, due_in_ms)

    def complete_and_lease(self, refs: Iterable[Ref], count: int = 1, *,
                           lease_seconds: float | None = None, now_ms: int | None = None,
                           ) -> tuple[list[ItemOutcome], list[LeasedItem]]:
        """Complete ``refs``, then lease up to ``count`` items, in one step (one round trip):
        a worker's loop. Does not wait; outcomes are those of :meth:`complete`. Of more than
        SETTLE_CHUNK refs, all but the last SETTLE_CHUNK are completed first (:meth:`complete`,
        a round trip more), so the lease call's work stays bounded."""
        items = self.ref_args(refs)
        if len(items) > BATCH:
            raise UsageError(f"complete at most {BATCH} items per complete_and_lease")
        if any(ref.result is not None for ref in items):
            raise UsageError("complete_and_lease keeps no results: complete() them")
        check_count(count)
        first = (self.complete(items[:-SETTLE_CHUNK], now_ms=now_ms)
                 if len(items) > SETTLE_CHUNK else [])
        items = items[len(first):]
        self.sync_tenant_weights()
        def result(done: tuple[list[LeasedItem], int, int, str],
                   ) -> tuple[list[ItemOutcome], list[LeasedItem]]:
            return first + [ItemOutcome(ref.id, COMPLETE_OUTCOMES[code])
                            for ref, code in zip(items, done[3], strict=True)], done[0]

        with unconfirmed_result(result) as finish:
            return finish(self._lease_once(count, self._lease_ms(lease_seconds), now_ms,
                                           complete=items))

    def _lease_ms(self, lease_seconds: float | None) -> int:
        seconds = self.options.lease_seconds if lease_seconds is None else lease_seconds
        if not seconds > 0:  # also refuses NaN
            raise UsageError("the lease time must be a positive number of seconds")
        if seconds > MAX_LEASE_SECONDS:
            raise UsageError(f"the lease time must be at most {MAX_LEASE_TEXT}")
        return max(ms(seconds), 1)

    def _wait(self, seconds: float, status: int, due_in_ms: int) -> bool:
        """Block up to ``seconds`` for an item to arrive, without taking it (``status``: the
        last lease's: LEASE_PAUSED, or LEASE_FAIR for nothing on a fair queue; ``due_in_ms``:
        its ms until a delayed item falls due, by the server's clock, or -1)."""
        if status == LEASE_PAUSED:
            time.sleep(min(seconds, 0.5))
            return False
        if status in (LEASE_LIMITED, LEASE_CAPPED):  # (the queue's limits: limiting.py)
            return wait_held_back(self.client, self.keys, status, due_in_ms, seconds)
        if due_in_ms >= 0:  # a delayed item becomes due: wake up for it (whatever our clock)
            seconds = min(seconds, max(due_in_ms / 1000, 0.01))
        seconds = max(round(seconds, 3), 0.01)
        if status == LEASE_FAIR:
            # a push into a tenant's sub-queue does not touch P:queue: its wake-up token does
            # (one per item; a peer's push into P:queue is seen at the next lease, within
            # BLOCK_CHUNK)
            return self.client.blpop([self.keys.wake], seconds) is not None
        return self.client.blmove(self.keys.queue, self.keys.queue, seconds, "RIGHT",
                                  "RIGHT") is not None

    # -- complete / fail / extend --------------------------------------------------------
    def complete(self, refs: Iterable[Ref], *, now_ms: int | None = None,
                 ) -> list[ItemOutcome]:
        """Complete items: ``completed`` for exactly one caller per item, else ``missing``
        (not live) or ``conflict`` (given a session, another session holds the lease). An
        ItemRef's ``result`` is kept for a batch item (``rq-cli results``)."""
        items = self.ref_args(refs)
        if any(ref.result is not None for ref in items):  # (kept for batch items)
            from .operations.batchops import complete_results

            return complete_results(self, items, now_ms)
        with unconfirmed_result(lambda codes, refs=items: [
                ItemOutcome(ref.id, COMPLETE_OUTCOMES[code])
                for ref, code in zip(refs, codes, strict=True)]) as done:
            return done(self.per_batch(items, "complete", {}, now_ms, SETTLE_CHUNK))

    def fail(self, refs: Iterable[Ref], *, error: str | None = None,
             retry_in: float | None = None, dead: bool = False, now_ms: int | None = None,
             reason: str = DeadReason.FAILED) -> list[ItemOutcome]:
        """Fail items: ``retried`` (with retry_at) or ``dead``; else ``missing`` or
        ``conflict``. Without ``retry_in`` the delay is the queue's exponential backoff.
        ``refs``: ids, ItemRefs, or the leased items themselves (settled by the id the server
        gave, whatever bytes it holds: as complete and extend)."""
        if retry_in is not None and not 0 <= retry_in <= MAX_DELAY:
            raise UsageError(f"the retry delay must be between 0 and {MAX_DELAY_TEXT} (in seconds)")
        items = self.ref_args(refs)
        opts = self.options
        args = {"error": error or "", "retry_ms": -1 if retry_in is None else ms(retry_in),
                "dead_reason": reason if dead else "", "max_attempts": opts.max_attempts,
                "backoff_ms": ms(opts.retry_backoff),
                "backoff_max_ms": ms(opts.retry_backoff_max),
                "jitter": repr(_random().uniform(0.75, 1.25))}
        names = SCRIPT_OUTCOME_NAMES["fail"]
        with unconfirmed_result(lambda rows, refs=items: [
                ItemOutcome(ref.id, outcome, retry_at=secs(due) if outcome == Outcome.RETRIED
                            else None)
                for ref, outcome, due in coded(refs, rows, names, "due_ms")]) as done:
            return done(self.per_batch(items, "fail", args, now_ms, FAIL_CHUNK))

    def cancel(self, ids: Iterable[str], *, error: str | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Dead-letter items now with reason ``cancelled``, even while another session holds
        the lease (a worker running one finds it dead at its next heartbeat and stops):
        ``dead``, or ``missing``/``already_dead``. Never-leased items are cancelled too."""
        names = SCRIPT_OUTCOME_NAMES["cancel"]

        def made(batch: list[str], reply: Any) -> list[ItemOutcome]:
            codes = reply.decode() if isinstance(reply, bytes) else reply
            out = [ItemOutcome(i, names[c]) for i, c in zip(batch, codes, strict=True)]
            note("cancel", sum(1 for o in out if o.outcome == Outcome.DEAD))  # (its audit)
            return out

        return self.in_turn([check_new_id(i) for i in ids], FAIL_CHUNK, "cancel",
                            {"error": error or ""}, now_ms, made)

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
                                    deadline, self.session, **decoded(LEASE, r))
                         for r in rows)
        return items

    def extend(self, refs: Iterable[Ref], *, lease_seconds: float | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Extend leases: ``extended`` (with the new deadline), ``lost`` (the lease has
        expired), ``conflict`` (another session holds it) or ``missing`` (not live)."""
        items = self.ref_args(refs)
        names = SCRIPT_OUTCOME_NAMES["extend"]
        with unconfirmed_result(lambda rows, refs=items: [
                ItemOutcome(ref.id, outcome, lease_expires_at=secs(ms) if ms else None)
                for ref, outcome, ms in coded(refs, rows, names, "deadline_ms")]) as done:
            return done(self.per_batch(items, "extend",
                                       {"lease_ms": self._lease_ms(lease_seconds)}, now_ms,
                                       SETTLE_CHUNK))

    def retake(self, ids: Sequence[str], *, lease_seconds: float | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Take back leases of this session that ran out while nobody else took the item
        (the worker after an outage or a hung server), as the same attempt: ``extended``
        (with the new deadline), ``conflict``, ``lost`` (back in line, or another session
        had it), ``missing`` or ``already_dead``. One call per ``SETTLE_CHUNK`` ids, each
        atomic."""
        names = SCRIPT_OUTCOME_NAMES["retake"]
        args = {"lease_ms": self._lease_ms(lease_seconds), "session": self.session}
        return self.in_turn(list(ids), SETTLE_CHUNK, "retake", args, now_ms, lambda batch, raw: [
            ItemOutcome(i, names[r.code.decode()],
                        lease_expires_at=secs(int(r.deadline_ms)) or None)
            for i, r in zip(batch, SPECS["retake"].decode(raw).rows, strict=True)])

    def release(self, ids: Sequence[str], *, now_ms: int | None = None) -> list[ItemOutcome]:
        """Give back items this session holds and did not finish: each goes to the front of
        the line at once, and the attempt it was leased with is given back; not a failure
        (``returned``; or ``conflict``, ``lost``, ``missing``, ``already_dead``)."""
        names = SCRIPT_OUTCOME_NAMES["release"]
        return self.in_turn(  # (FAIL_CHUNK: per-id work as fail's)
            list(ids), FAIL_CHUNK, "release", {"session": self.session}, now_ms,
            lambda batch, raw: [ItemOutcome(i, names[c])
                                for i, c in zip(batch, raw.decode(), strict=True)])


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
        states = []  # (each queue's status and due time: a limited one waits as it says)
        for q in ordered:
            items, status, due = q.lease_try(count, lease_seconds=lease_seconds,
                                             at_most_once=at_most_once)
            if items:
                return items
            states.append((q, status, due))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        # no multi-key "block without taking": wait on each queue briefly in turn
        per_queue = max(min(remaining, 0.5) / len(ordered), 0.01)
        for q, status, due in states:
            q.wait_for_item(per_queue, status, due)
