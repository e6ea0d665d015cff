"""Plain dataclasses returned by :class:`rq_cli.core.queue.WorkQueue`. No Redis, no Typer, no rich.

The reports of maintenance and inspection (``CleanReport``, ``RequeueReport``,
``PurgeReport``, ``Stats``, ``PeekedItem``, ``Holder``) are defined in
:mod:`rq_cli.core.reports` and imported from there (``push`` and ``lease`` do not load it);
the words (``Outcome``) and their typing Literals (``State``, ``PurgeState``) in
:mod:`rq_cli.core.codes`. Each name has one import path: this module re-exports none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .codes import Outcome
from .contract.limits import ALL_REPLICAS


@dataclass(frozen=True)
class QueueOptions:
    """Per-queue settings (docs/DESIGN.md section 4, "Contract details", gives the defaults)."""

    lease_seconds: float = 300.0
    max_attempts: int = 5  # 0 = unlimited
    grace_seconds: float = 5.0
    retry_backoff: float = 2.0  # first retry delay; doubles per attempt, +-25% jitter
    retry_backoff_max: float = 300.0
    layout: str = "compat"  # compat | v0.3 | v0.1
    requeue: str = "back"  # back | front: where clean puts recovered items
    #: fair queues: tenant -> weight (items per turn; 1 when absent), as pairs
    tenant_weights: tuple[tuple[str, int], ...] = ()
    #: seconds completed ids are remembered and refused by push (None: the queue's setting
    #: is left as it is; 0: no window). Set on the server by ``set_dedup_window``.
    dedup_window: float | None = None
    #: seconds a finished batch's record is kept (docs/DESIGN.md section 8), then dropped
    batch_ttl: float = 7 * 86400.0
    #: durability (the manual's "Guarantees"): replicas that must hold a write before it is
    #: acknowledged (WAIT; 0: off), seconds to wait for them, and whether it must also be
    #: on disk (WAITAOF: the primary's and each such replica's append-only file);
    #: ``"all"`` (limits.ALL_REPLICAS): every replica the deployment has
    wait_replicas: int | str = 0
    wait_timeout: float = 1.0
    wait_fsync: bool = False

    @property
    def durable(self) -> bool:
        """Whether writes wait for replicas or the disk before they are acknowledged."""
        return self.wait_replicas == ALL_REPLICAS or int(self.wait_replicas) > 0 or \
            self.wait_fsync


class TlsOptions(NamedTuple):
    """TLS settings of one server (config keys ``tls_ca_file``, ``tls_cert_file``,
    ``tls_key_file``, ``tls_insecure``); they apply to ``rediss://`` URLs only."""

    ca_file: str | None = None  # CA certificate(s) to verify the server with (PEM)
    cert_file: str | None = None  # client certificate, for servers that ask for one (PEM)
    key_file: str | None = None  # the client certificate's private key (PEM)
    insecure: bool = False  # skip verifying the server's certificate (a warning is printed)

    def __bool__(self) -> bool:
        return any((self.ca_file, self.cert_file, self.key_file, self.insecure))


#: No TLS settings (the default of every server).
NO_TLS = TlsOptions()


@dataclass(frozen=True)
class NewItem:
    """An item to push. ``id=None`` makes a random id (or a SHA-256 of the data on request)."""

    data: bytes
    id: str | None = None
    #: the tenant whose sub-queue it joins (the manual's "Fair queues"); None: the push's tenant
    tenant: str | None = None


@dataclass(frozen=True)
class PushResult:
    id: str
    added: bool  # False: the id is taken (see reason)
    #: why not added: "duplicate" (an item with this id is live), "dead" (the id is
    #: dead-lettered; requeue-dead or purge --state dead frees it) or "recently completed"
    #: (inside the queue's de-dup window); None when added
    reason: str | None = None


@dataclass(frozen=True)
class LeasedItem:
    queue: str  # the queue's prefix
    id: str
    data: bytes
    attempt: int  # 1 on the first lease
    lease_expires_at: float  # epoch seconds, ms precision
    session: str
    #: the error its last attempt failed with (fail/cancel ``error``), None when none
    last_error: str | None = None


@dataclass(frozen=True)
class ItemRef:
    """An item to act on: its id, and optionally the session that leased it; for
    ``complete``, optionally its result (bytes, kept for a batch item: docs/batches.md)."""

    id: str
    session: str | None = None
    result: bytes | None = None


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
        return Outcome(self.outcome).ok


__all__ = ["NO_TLS", "ItemOutcome", "ItemRef", "LeasedItem", "NewItem", "PushResult",
           "QueueOptions", "TlsOptions"]
