"""WorkQueue: every queue operation of DESIGN.md section 3, one method each.

Every state change is one Lua script (``lua/``), one round trip; bulk calls are batched
into a few thousand elements per script call and pipelined. Methods return the plain
dataclasses of :mod:`rq_cli.types`. ``now_ms`` (milliseconds since the epoch) may be passed
to any time-dependent method; by default the scripts read the server's clock (``TIME``).

This module imports neither Typer nor rich.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Sequence

from .types import (
    CleanReport,
    ItemOutcome,
    ItemRef,
    LeasedItem,
    NewItem,
    PeekedItem,
    PurgeReport,
    PurgeState,
    PushResult,
    QueueOptions,
    RequeueReport,
    State,
    Stats,
)

Progress = Callable[[int], None]  # called with the number of items just handled


class WorkQueue:
    """One queue (a key prefix) on one server.

    ``client`` is a ``redis.Redis`` or ``redis.RedisCluster``; ``session`` defaults to
    ``<host>:<pid>:<random>``.
    """

    def __init__(self, client, prefix: str, options: QueueOptions | None = None, *,
                 session: str | None = None) -> None:
        raise NotImplementedError

    def push(self, items: Iterable[NewItem | bytes | str], *, id_from_data: bool = False,
             front: bool = False, delay: float = 0.0, expire: float | None = None,
             now_ms: int | None = None) -> list[PushResult]:
        """Push items; returns one PushResult per item in order (added=False: duplicate id)."""
        raise NotImplementedError

    def push_batches(self, items: Iterable[NewItem | bytes | str], *, batch_size: int = 1000,
                     id_from_data: bool = False, front: bool = False, delay: float = 0.0,
                     expire: float | None = None, now_ms: int | None = None,
                     ) -> Iterator[list[PushResult]]:
        """Stream ``items`` in batches, yielding each batch's results once stored.

        If iterating ``items`` raises (a bad input line), the items taken before it are stored
        and yielded first, then the exception propagates: nothing is half-applied silently.
        """
        raise NotImplementedError

    def lease(self, count: int = 1, *, lease_seconds: float | None = None, wait: float = 0.0,
              now_ms: int | None = None) -> list[LeasedItem]:
        """Lease up to ``count`` items; wait up to ``wait`` seconds for the first one.

        Returns [] when nothing is available in time or the queue is paused.
        """
        raise NotImplementedError

    def complete(self, refs: Iterable[str | ItemRef], *, now_ms: int | None = None,
                 ) -> list[ItemOutcome]:
        """Complete items: outcome completed (exactly one caller per item), missing or conflict."""
        raise NotImplementedError

    def fail(self, refs: Iterable[str | ItemRef], *, error: str | None = None,
             retry_in: float | None = None, dead: bool = False, now_ms: int | None = None,
             ) -> list[ItemOutcome]:
        """Fail items: outcome retried (with retry_at) or dead; missing or conflict."""
        raise NotImplementedError

    def extend(self, refs: Iterable[str | ItemRef], *, lease_seconds: float | None = None,
               now_ms: int | None = None) -> list[ItemOutcome]:
        """Extend leases: outcome extended (with lease_expires_at), lost, conflict or missing."""
        raise NotImplementedError

    def clean(self, *, deep: bool = False, grace_seconds: float | None = None,
              dry_run: bool = False, now_ms: int | None = None,
              progress: Progress | None = None) -> CleanReport:
        """Recover abandoned items (light), and with ``deep`` also stray items found by SCAN."""
        raise NotImplementedError

    def requeue_dead(self, ids: Sequence[str] | None = None, *, limit: int | None = None,
                     older_than: float | None = None, to: "WorkQueue | None" = None,
                     dry_run: bool = False, now_ms: int | None = None,
                     progress: Progress | None = None) -> RequeueReport:
        """Move dead items back to the queue (or ``to`` another queue on the same server).

        ``ids`` given: those; else all (optionally only the ``limit`` oldest, and only those
        dead for more than ``older_than`` seconds).
        """
        raise NotImplementedError

    def purge(self, state: PurgeState = "pending", *, dry_run: bool = False,
              progress: Progress | None = None) -> PurgeReport:
        """Delete items in ``state`` (or all of the queue's keys) in bounded batches."""
        raise NotImplementedError

    def stats(self, *, now_ms: int | None = None) -> Stats:
        """Counts, in one round trip whatever the queue's size."""
        raise NotImplementedError

    def peek(self, state: State = "pending", *, count: int = 10, offset: int = 0,
             from_end: str = "head", now_ms: int | None = None) -> list[PeekedItem]:
        """Read items without changing anything. ``head`` = the next to be leased / oldest."""
        raise NotImplementedError

    def pause(self) -> None:
        raise NotImplementedError

    def resume(self) -> None:
        raise NotImplementedError


def lease_many(queues: Sequence[WorkQueue], count: int = 1, *, lease_seconds: float | None = None,
               wait: float = 0.0, order: str = "strict") -> list[LeasedItem]:
    """Lease from several queues: ``strict`` takes the first non-empty queue in the given order,
    ``fair`` a random order each time. Returns items from one queue."""
    raise NotImplementedError
