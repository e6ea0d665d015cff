"""The worker's event loop: lease, start, wait for events, settle, until stopped; and how it
rides out an outage of the server (outage.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core.sharding.sharded import ShardedQueue
from .beats import Beating
from .model import (
    COMPLETE_WITHIN,
    WAIT_CHUNK,
    WorkerStats,
)
from .outage import give_back_orphans
from .poll import drain


class Worker(Beating):
    """Run ``command`` for items of ``queues`` (WorkQueues sharing one session)."""

    def run(self, reclaim: Callable[[str], bool] | None = None) -> WorkerStats:
        """Work until stopped (signals, ``max_items``, ``idle_exit``); returns the tallies.

        A worker that has never reached its servers does not wait for them: the first
        call's error is raised (``rq-cli work``: exit 69 at once, so a wrong URL fails
        fast); outages are ridden out only once it has been connected."""
        self._ping()
        self._note_shards()
        if reclaim is not None:
            for wq in self.queues:
                self._take(wq.reclaim(reclaim, lease_seconds=self.lease_seconds), True)
        idle_since = time.monotonic()
        while True:
            self._note_signals()
            if self.signals >= 2:
                self.stop_all("shutdown")
                self._return_ahead()
            if self.outage.down:
                self._ride_out()
            if self._sweep_due and self._waiter is None and not self.outage.down:
                self._call(self._sweep, hold=False)  # (none of its leases is in flight now)
            self._start_ahead()
            if self.jobs or self.ahead:
                idle_since = time.monotonic()  # idle: from when the last work ended
            elif self._waiter is None and (
                    self.signals or self.gave_up or self._quota_done()
                    or (self.empty and self._idle_over(idle_since))):
                break
            if self._leasing() and self._waiter is None and self._lease():
                idle_since = time.monotonic()
                self._start_ahead()
            if self.finished and not self.outage.down and (
                    time.monotonic() - self.finished_at >= COMPLETE_WITHIN or self._capped()):
                self._complete()  # no lease round trip took them along in time
            if self._poll_once(self._timeout()):
                idle_since = time.monotonic()
        self._settle_last()
        return self.stats

    def _poll_once(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for events and handle them; returns True when the lease
        thread brought items."""
        got = False
        for kind, what in self.sel.wait(timeout):
            if kind == "exit":
                job = what
                if job.pid in self.jobs:
                    self._reap(job)
            elif kind == "out":
                job, stream = what
                if not stream.copy(self.sel) and stream in job.streams:
                    job.streams.remove(stream)
                    if not job.streams and job.pid in self.jobs:
                        self._exiting(job)
            elif kind == "in":
                self._feed(what)
            elif kind == "wake":
                drain(self._wake_r)
                got = self._waiter_done() or got
            else:
                drain(self._sig_r)
        for job in [j for j in self.jobs.values() if j.pidfd is None]:
            self._reap(job)
        self._note_signals()
        self._timers()
        return got

    def _ride_out(self) -> None:
        """In an outage: past ``--max-outage``, drain; else try the server when due, and once
        it answers, re-check the leases and send what was held."""
        if self.gave_up is None and self.outage.over():
            self.gave_up = (f"the server was out of reach for {self.outage.lasted():.1f} s "
                            f"(--max-outage {self.opts.max_outage:g}): {self.outage.error}")
            self.log({"event": "giving_up", "running": len(self.jobs),
                      "note": f"out of reach for over {self.opts.max_outage:g} s: running "
                              f"commands finish, then exit 69"})
        if self.gave_up is not None or self.signals:
            self.ahead.clear()  # not started: their leases run out, clean puts them back
        if not self.outage.probe(self._ping, self._sig_w):  # (wakes the loop when done)
            return
        self.outage.ended()
        self._note_shards()  # (here, not in the probe's thread)
        held = self._held()
        if held:
            self._beat(held)  # extend, or take back, every lease it holds
        ops, self.unsettled = self.unsettled, []
        for n, op in enumerate(ops):
            if not self._call(op):
                self.unsettled += ops[n + 1:]
                return
        if self.finished:
            self._complete()
        self._sweep_due = True

    def _sweep(self) -> None:
        """After an outage: give back leases whose reply it cut off (outage.py)."""
        known = {j.held.item.id for j in self.jobs.values()} | \
            {h.item.id for h in [*self.ahead, *self.finished]}
        give_back_orphans(self.queues, self.session, known, self.log)
        self._sweep_due = False

    def _ping(self) -> None:
        """Reach the servers: a sharded queue's through its shards (it answers while any
        shard does: the others are worked, leasing.py's _note_shards says which are not)."""
        for wq in self.queues:
            if isinstance(wq, ShardedQueue):
                wq.ping()
            else:
                wq.client.ping()

    def _settle_last(self) -> None:
        """At the end: record what is held; what cannot be is said once (exit 69)."""
        if self.outage.down:  # one last try, given the time of a ping
            self.outage.next_try = 0.0
            self._ride_out()
            deadline = time.monotonic() + WAIT_CHUNK
            while self.outage.wait() and time.monotonic() < deadline:
                time.sleep(0.01)
            self._ride_out()
        elif self.finished:
            self._complete()
        left = len(self.unsettled) + len(self.finished)
        if left and self.outage.down:
            self.log({"event": "unsettled", "items": left,
                      "note": "the server is out of reach: these outcomes were not recorded; "
                              "the items come back when their leases run out"})
            self.gave_up = self.gave_up or (f"{left} outcomes could not be recorded: "
                                            f"{self.outage.error}")
