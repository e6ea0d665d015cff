"""How the worker leases: with the completes in one round trip, ahead for short commands,
and through the lease thread when the queue is empty (see the package's docstring)."""

from __future__ import annotations

import os
import threading
import time

from ..core.contract.limits import BATCH
from ..core.queue import lease_many
from ..core.sharding.sharded import owner_of
from ..core.types import LeasedItem
from ..errors import Unconfirmed
from .env import unrunnable
from .model import (
    PAUSE_CHECK,
    WAIT_CHUNK,
)
from .outage import transient
from .settle import Settling


class Leasing(Settling):
    """The worker, able to lease."""

    def _lease(self) -> int:
        """Lease what the slots (and, for short commands, the items held ahead) want,
        completing the finished items in the same round trip; when the queue is empty and a
        slot is free, start the lease thread instead. Returns the number of items leased."""
        room, prefetch = self._room(), self._prefetch()
        if room == 0 and (self.empty or len(self.ahead) > prefetch // 2):
            return 0  # enough held; an empty queue is waited on only for a free slot
        want = room + prefetch - len(self.ahead)
        left = self._quota_left()
        if left is not None:
            want = min(want, left)
        if want <= 0:
            return 0
        if self.empty and room > 0:
            self._start_waiter(min(room, want))
            return 0
        finished, self.finished = self.finished, []
        items: list[LeasedItem]
        try:
            # (results, work --result stdout: complete_result.lua, then a lease of its own)
            if len(self.queues) == 1 and len(finished) <= BATCH and \
                    all(h.result is None for h in finished):
                wq = self.queues[0]
                try:
                    outcomes, items = wq.complete_and_lease(
                        [h.ref for h in finished], want, lease_seconds=self.lease_seconds)
                    self._note_completions(finished, [o.outcome for o in outcomes])
                except Unconfirmed as exc:  # made, not confirmed: noted, not done again
                    outcomes, items = exc.result  # type: ignore[misc]
                    self._note_completions(finished, [o.outcome for o in outcomes],
                                           unconfirmed=exc)
            else:
                self._complete(finished)
                finished = []
                items = lease_many(self.queues, want, lease_seconds=self.lease_seconds,
                                   order=self.opts.order)
            paused = None if items else self._paused_now()
        except Exception as err:
            if not transient(err):
                raise
            self.outage.failed(err)
            self._hold_finished(finished)
            return 0
        self._take(items)
        self.empty = len(items) < want
        self._note_paused(paused)
        self._note_shards()
        return len(items)

    def _capped(self) -> bool:
        """The last lease was held back by a queue's in-flight cap: a finished item's place
        is given back at once (its complete wakes a waiting worker), not COMPLETE_WITHIN
        later with the next lease."""
        return any((getattr(wq, "held_back", None) or ("",))[0] == "max_in_flight"
                   for wq in self.queues)

    def _take(self, items: list[LeasedItem], reclaimed: bool = False) -> None:
        by_prefix = {wq.prefix: wq for wq in self.queues}
        for item in items:
            self.leased += 1
            wq = by_prefix.get(item.queue) or owner_of(self.queues, item.queue)
            held = self._hold(wq, item, reclaimed)
            if (why := unrunnable(item)) is not None:  # settled now: never held ahead
                self._cannot_start(held, why, dead=True)
            else:
                self.ahead.append(held)

    def _start_waiter(self, count: int) -> None:
        """Wait for work on the server in the lease thread (the loop goes on meanwhile)."""
        wait = WAIT_CHUNK if self.opts.idle_exit is None else \
            min(WAIT_CHUNK, max(self.opts.idle_exit, 0.01))

        def wait_for_work() -> None:
            try:
                got = lease_many(self.queues, count, lease_seconds=self.lease_seconds,
                                 wait=wait, order=self.opts.order)
                if not got:
                    self._waiter_paused = self._paused_now()
                self._waiter_got = got
            except BaseException as err:  # handed to the loop, raised there
                self._waiter_got = err
            os.write(self._wake_w, b"w")

        self._waiter_got = None
        self._waiter = threading.Thread(target=wait_for_work, name="rq-cli-lease", daemon=True)
        self._waiter.start()

    def _waiter_done(self) -> bool:
        """Take the lease thread's items; True when it found any."""
        assert self._waiter is not None
        self._waiter.join()
        self._waiter = None
        got, self._waiter_got = self._waiter_got, None
        if self._waiter_paused is not None:
            self._note_paused(self._waiter_paused)
            self._waiter_paused = None
        if isinstance(got, BaseException):
            if not transient(got):
                raise got
            self.outage.failed(got)
            return False
        items = got or []
        self._take(items)
        self.empty = not items
        self._note_shards()
        return bool(items)

    def _paused_now(self) -> set[str] | None:
        """The queues paused now (to say so): at most every PAUSE_CHECK s."""
        if time.monotonic() - self._pause_checked < PAUSE_CHECK:
            return None
        self._pause_checked = time.monotonic()
        return {wq.prefix for wq in self.queues if wq.is_paused()}

    def _note_paused(self, paused: set[str] | None) -> None:
        if paused is None:
            return
        for prefix in sorted(paused - self.paused):
            self.log({"event": "paused", "queue": prefix,
                      "note": f"the queue is paused: nothing is leased until "
                              f"'rq-cli resume {prefix}'"})
        for prefix in sorted(self.paused - paused):
            self.log({"event": "resumed", "queue": prefix})
        self.paused = paused

    def _note_shards(self) -> None:
        """Say once when a shard of a sharded queue stops answering (its items wait; the
        other shards are worked), and once when it answers again. (Its calls note it in
        ShardedQueue.unreachable, also from the lease thread: read a copy.)"""
        down = {prefix: err for wq in self.queues  # (a sharded queue's: ShardedQueue)
                for prefix, err in dict(getattr(wq, "unreachable", {})).items()}
        for prefix in sorted(down.keys() - self.shards_down):
            self.log({"event": "shard_unreachable", "shard": prefix,
                      "error": self.outage.describe(down[prefix]),
                      "note": "this shard's server cannot be reached: its items wait; the "
                              "other shards are worked"})
        for prefix in sorted(self.shards_down - down.keys()):
            self.log({"event": "shard_back", "shard": prefix})
        self.shards_down = set(down)
