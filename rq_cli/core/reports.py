"""Reports of maintenance and inspection: clean, requeue-dead, purge, stats, peek, holders.

Plain dataclasses, re-exported by :mod:`rq_cli.core.types` (import them from there). They live
apart so that ``push`` and ``lease`` do not pay for creating them at start-up: each
dataclass costs 0.3-0.6 ms to create, and start-up is a budget (bench case startup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .codes import State


@dataclass
class CleanReport:
    recovered: int = 0  # re-queued: lease-less past the grace period (or strays, deep)
    dropped: int = 0  # ghosts removed (id with no data)
    dead: int = 0  # dead-lettered (max attempts reached)
    suspects: int = 0  # lease-less but still inside the grace period: left alone this time
    promoted: int = 0  # due delayed items moved to the queue
    #: ids whose bookkeeping was dropped because their item no longer exists (light clean:
    #: a sample; deep: all), and expired ids of the de-dup window (every clean)
    pruned: int = 0
    scanned: int = 0  # (deep) item keys seen by SCAN
    dry_run: bool = False


@dataclass
class RequeueReport:
    requeued: int = 0
    skipped: int = 0  # an item with the same id is live again in the target queue
    missing: int = 0  # ids asked for that are not dead
    dry_run: bool = False
    ids: list[str] = field(default_factory=list)  # requeued
    skipped_ids: list[str] = field(default_factory=list)


@dataclass
class PurgeReport:
    pending: int = 0
    processing: int = 0
    delayed: int = 0
    dead: int = 0
    strays: int = 0  # item keys in no list (state all)
    dry_run: bool = False

    @property
    def total(self) -> int:
        return self.pending + self.processing + self.delayed + self.dead + self.strays


@dataclass(frozen=True)
class Stats:
    queue: str  # prefix
    pending: int
    processing: int
    leased: int
    abandoned: int
    delayed: int
    due: int
    dead: int
    oldest_pending_age_s: float | None
    paused: bool
    #: running totals: every name of ``keys.COUNTER_FIELDS``, 0 when never counted
    counters: dict[str, int]
    #: fair queues: tenants with work (the default tenant not counted)
    tenants: int = 0
    #: the queue has fleet-wide limits (``rq-cli limit``: a rate or an in-flight cap)
    limits: bool = False
    #: with ``by_tenant``: pending items per tenant ("" is the default tenant, P:queue)
    by_tenant: dict[str, int] | None = None
    #: "v0.1" or "v0.3": a queue whose layout writes one generation's keys shows the other's
    #: (a peer of that generation shares it); None otherwise (always None for compat)
    other_generation: str | None = None
    #: False: the queue has no key and no counter on its server: never used there (a wrong
    #: URL, database or prefix, a new empty server), or purged with ``--state all`` since
    #: (a queue only peer clients use leaves no key once drained: the manual's "stats")
    exists: bool = True


@dataclass(frozen=True)
class PeekedItem:
    id: str
    state: State
    data: bytes | None  # None for a ghost (id without data)
    attempts: int
    enqueued_at: float | None = None
    lease_session: str | None = None  # processing: who holds it (or held it, if abandoned)
    lease_expires_at: float | None = None
    due_at: float | None = None  # delayed
    dead_at: float | None = None  # dead
    dead_reason: str | None = None
    error: str | None = None
    #: processing, lease run out: lease_session/lease_expires_at are the last holder's
    abandoned: bool = False
    #: fair queues: the tenant whose sub-queue it belongs to (None: the default tenant)
    tenant: str | None = None


@dataclass
class Holder:
    """A session holding (or, abandoned, last holding) items of a queue's processing list."""

    session: str | None  # ``<host>:<pid>:<random>`` for rq-cli; None: nobody known
    host: str | None  # from the session, when it reads host:pid:...
    pid: int | None
    items: int = 0
    live: int = 0  # items whose lease is held now
    abandoned: int = 0  # items whose lease ran out (this session held them last)
    #: the item held longest (leases are taken in the processing list's order) and its deadline
    oldest_id: str | None = None
    oldest_deadline: float | None = None
    nearest_deadline: float | None = None  # the soonest lease deadline (past: missed)
    ids: list[str] = field(default_factory=list)  # oldest lease first
