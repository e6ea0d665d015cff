"""The worker's timers: command timeouts, SIGKILL after the grace period, the lease
extensions (heartbeats), one call per queue (a lease that ran out is taken back), the
queues' history snapshots (every HISTORY_EVERY seconds), and a console's asks to drain or
stop (core/operations/control.py, one GET a queue every CONTROL_EVERY seconds)."""

from __future__ import annotations

import functools
import math
import signal
import time

from ..core.codes import DeadReason, Outcome
from ..core.contract.limits import CONTROL_EVERY, HISTORY_EVERY, ROLE_CHECK
from ..core.history import snapshot
from ..core.operations.control import take_asks
from ..core.operations.durable import follow_primary
from ..core.queue import WorkQueue
from ..core.types import ItemOutcome
from .guard import killpg
from .model import (
    Held,
)
from .outage import transient
from .spawn import Spawning


class Beating(Spawning):
    """The worker, with its timers and lease extensions."""

    def _timers(self) -> None:
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.deadline is not None and now >= job.deadline:
                self._kill(job, "timeout")
            if job.kill_at is not None and now >= job.kill_at:
                job.kill_at = None
                killpg(job.pid, signal.SIGKILL)
        if now >= self.role_due:  # behind Sentinel: a demoted primary is left at once
            self.role_due = now + ROLE_CHECK
            for client in {id(wq.client): wq.client for wq in self.queues}.values():
                follow_primary(client)
        if now >= self.history_due and not self.outage.down:
            # the queues' history (the manual's "stats --history"): each minute's snapshot is
            # written once, by the first of the workers and cleans that runs in it
            self.history_due = now + HISTORY_EVERY
            for wq in self.queues:
                self._call(functools.partial(self._snapshot, wq), hold=False)
        if now >= self.control_due and not self.outage.down:
            # a console's ask (drain or stop): one GETDEL per queue every CONTROL_EVERY s
            self.control_due = now + CONTROL_EVERY
            self._read_asks()
        if now >= self.beat_due and not self.outage.down:
            held = self._held()
            if any(h.next_beat <= now for h in held):
                # the others due within half a beat go along: one call for the lot
                soon = now + self.heartbeat / 2
                self._beat([h for h in held if h.next_beat <= soon])
            self.beat_due = min((h.next_beat for h in self._held()), default=math.inf)

    def _read_asks(self) -> None:
        from redis.exceptions import NoPermissionError  # (not at import: `--help` loads this)

        try:
            asked = take_asks(self.queues, self.session, self.asks_seen)
        except NoPermissionError as err:  # an ACL without GET: asks are off, work goes on
            self.control_due = math.inf
            self.log({"event": "asks_off", "note": f"a console cannot ask this worker to "
                                                   f"drain or stop: {err}"})
            return
        except Exception as err:
            if not transient(err):
                raise
            return  # tried again in CONTROL_EVERY: a failed look is no outage (the calls
            # that hold items find those, and ride them out)
        if asked is not None:
            self._on_ask(asked)

    @staticmethod
    def _snapshot(wq: WorkQueue) -> None:
        snapshot(wq)

    def _beat(self, due: list[Held]) -> None:
        """Extend the leases of ``due`` (one call per queue); stop the commands of those
        lost, and drop lost items held ahead."""
        running = {id(j.held): j for j in self.jobs.values()}
        for wq in {id(h.wq): h.wq for h in due}.values():  # (a shard, for a sharded queue)
            mine = [h for h in due if h.wq is wq]
            if not mine:
                continue
            try:
                outcomes = self._extend(wq, mine)
            except Exception as err:
                if not transient(err):
                    raise
                self.outage.failed(err)  # tried again when the server is back
                return
            next_beat = time.monotonic() + self.heartbeat
            for held, out in zip(mine, outcomes, strict=True):
                held.next_beat = next_beat
                if out.outcome == Outcome.EXTENDED:
                    if out.lease_expires_at is not None:
                        held.expires = out.lease_expires_at
                    continue
                why = held.lost = DeadReason.CANCELLED.value \
                    if out.outcome == Outcome.ALREADY_DEAD else Outcome.LOST.value
                self.log({"event": "lease", "queue": held.queue, "id": held.item.id,
                          "outcome": out.outcome,
                          "note": "cancelled: stopping the command" if why == DeadReason.CANCELLED
                          else "lease lost: another session may run this item"})
                job = running.get(id(held))
                if job is None:  # leased ahead, not started: just let it go
                    if held in self.ahead:
                        self.ahead.remove(held)
                elif why == DeadReason.CANCELLED or not self.opts.keep_running_on_lost_lease:
                    self._kill(job, why)

    def _extend(self, wq: WorkQueue, mine: list[Held]) -> list[ItemOutcome]:
        """Extend the leases of ``mine``; those that ran out (the server hung, or was out of
        reach) while nobody else took the item are taken back, as the same attempt."""
        outcomes = wq.extend([h.ref for h in mine], lease_seconds=self.lease_seconds)
        ran_out = [n for n, out in enumerate(outcomes) if out.outcome == Outcome.LOST]
        if ran_out:
            again = wq.retake([mine[n].item.id for n in ran_out],
                              lease_seconds=self.lease_seconds)
            for n, out in zip(ran_out, again, strict=True):
                outcomes[n] = out
                if out.outcome == Outcome.EXTENDED:
                    self.log({"event": "lease", "queue": mine[n].queue,
                              "id": mine[n].item.id, "outcome": "retaken",
                              "note": "the lease had run out, nobody else took the item: "
                                      "taken back, same attempt"})
        return outcomes
