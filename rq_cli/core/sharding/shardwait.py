"""Waiting on every shard of a sharded queue at once (docs/DESIGN.md section 7, "Waiting").

A client keeps at most one blocking call per shard in flight, each in a daemon thread of its
own (``WorkQueue.wait_for_item``: BLMOVE P:queue P:queue, or the fair queues' wake list),
re-armed every BLOCK_CHUNK. The first to see an item (or a delayed item falling due) ends
the wait. Idle cost: one blocked connection per shard per waiting client; no poll loop.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ..contract.limits import BLOCK_CHUNK, SHARD_WAIT_PAUSE

if TYPE_CHECKING:
    from ..queue import WorkQueue



def shard_down(error: BaseException) -> bool:
    """Whether ``error`` says a shard's server cannot be reached now (its calls fail; the
    other shards carry on), rather than a bug or a refusal."""
    import redis.exceptions as rx

    return isinstance(error, (rx.ConnectionError, rx.TimeoutError, rx.ClusterDownError,
                              rx.TryAgainError, rx.ClusterError, rx.MasterDownError,
                              rx.ReadOnlyError))


class Waiter:
    """The blocking calls in flight of one client, by shard prefix."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._fired = 0
        self._inflight: set[str] = set()

    def mark(self) -> int:
        """The number of wake-ups so far: take it before a lease pass, give it to
        :meth:`wait`, so a wake-up during the pass is not missed."""
        with self._cond:
            return self._fired

    def wait(self, states: list[tuple[WorkQueue, int, int]], mark: int, seconds: float) -> None:
        """Block up to ``seconds`` until any shard of ``states`` (queue, lease status, ms
        until a delayed item falls due) has an item, or a wake-up came since ``mark``."""
        for q, status, due in states:
            if q.prefix not in self._inflight:
                self._inflight.add(q.prefix)
                threading.Thread(target=self._block, args=(q, status, due), daemon=True,
                                 name=f"rq-cli wait {q.prefix}").start()
        with self._cond:
            self._cond.wait_for(lambda: self._fired != mark, seconds)

    def _block(self, q: WorkQueue, status: int, due: int) -> None:
        fired = False
        try:
            fired = q.wait_for_item(BLOCK_CHUNK, status, due) or due >= 0
        except Exception as e:  # a down shard: the lease pass reports it
            if not shard_down(e):
                fired = True  # let the lease pass raise it
            time.sleep(SHARD_WAIT_PAUSE)
        finally:
            with self._cond:
                self._inflight.discard(q.prefix)
                if fired:
                    self._fired += 1
                    self._cond.notify_all()

    def __repr__(self) -> str:
        return f"Waiter({sorted(self._inflight)})"
