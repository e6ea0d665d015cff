"""Plain dataclasses returned by :class:`rq_cli.queue.WorkQueue`. No Redis, no Typer, no rich."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

State = Literal["pending", "processing", "delayed", "dead"]
PurgeState = Literal["pending", "processing", "delayed", "dead", "all"]
Outcome = Literal["completed", "missing", "conflict", "retried", "dead", "extended", "lost"]


@dataclass(frozen=True)
class QueueOptions:
    """Per-queue settings (DESIGN.md section 4, "Contract details", gives the defaults)."""

    lease_seconds: float = 300.0
    max_attempts: int = 5  # 0 = unlimited
    grace_seconds: float = 5.0
    retry_backoff: float = 2.0  # first retry delay; doubles per attempt, +-25% jitter
    retry_backoff_max: float = 300.0
    layout: str = "compat"  # compat | v0.3 | v0.1
    requeue: str = "back"  # back | front: where clean puts recovered items


@dataclass(frozen=True)
class NewItem:
    """An item to push. ``id=None`` makes a random id (or a SHA-256 of the data on request)."""

    data: bytes
    id: str | None = None


@dataclass(frozen=True)
class PushResult:
    id: str
    added: bool  # False: an item with this id is already live (duplicate)


@dataclass(frozen=True)
class LeasedItem:
    queue: str  # the queue's prefix
    id: str
    data: bytes
    attempt: int  # 1 on the first lease
    lease_expires_at: float  # epoch seconds, ms precision
    session: str


@dataclass(frozen=True)
class ItemRef:
    """An item to act on: its id, and optionally the session that leased it."""

    id: str
    session: str | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """Result of complete/fail/extend for one id.

    outcome: completed | retried | dead | extended -- it worked;
    missing -- no live item with that id (already completed, or never pushed);
    conflict -- another session holds the lease; lost -- (extend) the lease has expired.
    """

    id: str
    outcome: Outcome
    retry_at: float | None = None  # fail: when the item becomes due again (epoch s)
    lease_expires_at: float | None = None  # extend: the new deadline (epoch s)

    @property
    def ok(self) -> bool:
        return self.outcome in ("completed", "retried", "dead", "extended")


@dataclass
class CleanReport:
    recovered: int = 0  # re-queued: lease-less past the grace period (or strays, deep)
    dropped: int = 0  # ghosts removed (id with no data)
    dead: int = 0  # dead-lettered (max attempts reached)
    suspects: int = 0  # lease-less but still inside the grace period: left alone this time
    promoted: int = 0  # due delayed items moved to the queue
    pruned: int = 0  # (deep) stale metadata entries of items that no longer exist
    scanned: int = 0  # (deep) item keys seen by SCAN
    dry_run: bool = False


@dataclass
class RequeueReport:
    requeued: int = 0
    skipped: int = 0  # an item with the same id is live again in the target queue
    missing: int = 0  # ids asked for that are not dead
    dry_run: bool = False
    ids: list[str] = field(default_factory=list)


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
    counters: dict[str, int]


@dataclass(frozen=True)
class PeekedItem:
    id: str
    state: State
    data: bytes | None  # None for a ghost (id without data)
    attempts: int
    enqueued_at: float | None = None
    lease_session: str | None = None  # processing: who holds it
    lease_expires_at: float | None = None
    due_at: float | None = None  # delayed
    dead_at: float | None = None  # dead
    dead_reason: str | None = None
    error: str | None = None
