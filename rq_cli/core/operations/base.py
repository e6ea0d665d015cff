"""The base of WorkQueue: a queue's prefix, options and keys, and how it calls its scripts.

The operations are split by concern: :mod:`.reads` (read-only), :mod:`.repairs` (clean,
requeue-dead, purge) and :mod:`.queue` (push, lease, complete, fail, extend), each a class on
this one; :class:`~rq_cli.core.queue.WorkQueue` combines them. No Typer, no rich.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from ...errors import ClusterError, ParameterError, Unconfirmed, UsageError
from ..codes import LAYOUTS, REQUEUE_ENDS, SCRIPT_OUTCOMES, ItemState, Outcome, RequeueEnd, outcomes
from ..contract.ages import Clock
from ..contract.keys import Keys, has_hash_tag, prefix_collision
from ..contract.limits import BATCH
from ..contract.specs import SPECS, Reply
from ..contract.util import (
    batches,
    check_id,
    check_tenant,
    check_weight,
    is_cluster,
    make_session,
    now_arg,
    text,
)
from ..scripting.calling import Caller
from ..types import ItemRef, LeasedItem, QueueOptions
from .durable import Confirmer, confirms
from .settled import not_confirmed, partly_done, refused, reply_rows

T = TypeVar("T")
Progress = Callable[[int], None]  # called with the number of items just handled

#: script -> code -> outcome, of the scripts that reply with an outcome per item (codes.py)
SCRIPT_OUTCOME_NAMES = cast("dict[str, dict[str, Outcome]]",
                 {script: outcomes(script) for script in SCRIPT_OUTCOMES})
COMPLETE_OUTCOMES = SCRIPT_OUTCOME_NAMES["complete"]


#: What complete, fail and extend take: an id, an id with the session that leased it, or
#: a leased item itself.
Ref = str | ItemRef | LeasedItem


def as_ref(ref: Ref) -> ItemRef:
    """``ref`` as an ItemRef; UsageError for an id that is no item id, except a leased item's:
    the server named it (a peer may store an id no command line could carry, such as one
    with a NUL byte), so it is settled as it is."""
    if isinstance(ref, str):
        return ItemRef(check_id(ref))
    if isinstance(ref, LeasedItem):
        return ItemRef(ref.id, ref.session)
    check_id(ref.id)
    return ref  # (frozen: it can be used as it is)


class QueueBase:
    """What every part of :class:`~rq_cli.core.queue.WorkQueue` stands on: the queue's
    prefix, options, keys and script calls, and its tenant weights. One queue (a key prefix)
    on one server.

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
        #: durability: confirms each write with WAIT (None: writes are not waited for)
        self.confirmer = Confirmer(client, self.options) if self.options.durable else None
        #: fair queues: the configured weights, until written to P:tenant_weights
        self._weights = {check_tenant(t): check_weight(t, w)
                         for t, w in self.options.tenant_weights}
        #: a shard of a sharded queue: that queue's base prefix (set by ShardedQueue)
        self.shard_of: str | None = None
        #: the server's clock as this client reads it: the time the ids push makes carry
        self.clock = Clock()

    def __repr__(self) -> str:
        return f"WorkQueue({self.prefix!r}, layout={self.options.layout!r})"

    # -- script calls (public: bulk push, deep clean and the worker use them) ----------
    def script(self, name: str) -> Any:
        """Script ``name`` (specs.SPECS) registered with the client (a redis-py Script:
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
        if client is None and self.confirmer is not None and confirms(name, rest):
            return self.confirmer.run(self.caller, name, keys or self._script_keys, argv)
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


    # -- shared by the operations --------------------------------------------------
    @staticmethod
    def ref_args(refs: Iterable[Ref]) -> list[ItemRef]:
        return [as_ref(r) for r in refs]

    def per_batch(self, refs: list[ItemRef], name: str, args: Mapping[str, Any],
                  now_ms: int | None, size: int = BATCH) -> list[Any]:
        """Run script ``name`` over (id, session) pairs, ``size`` pairs a call (each call
        atomic per item); returns the concatenated replies (a string's characters, or a
        list's rows). On a plain client the calls of each BATCH pairs go in one pipeline (one
        round trip); on a cluster, or waiting for replicas, one by one."""
        out: list[Any] = []
        spec = SPECS[name]
        unconfirmed: Unconfirmed | None = None  # (durability: the first call not confirmed)
        missed: list[str] = []
        done: list[ItemRef] = []
        calls = [(batch, [v for ref in batch for v in (ref.id, ref.session or "")])
                 for batch in batches(refs, size)]
        per = max(BATCH // size, 1)
        for g, group in enumerate(batches(calls, per)):
            if self.confirmer is None and not is_cluster(self.client):
                replies = self.caller.run_all(name, [
                    (self._script_keys, spec.argv(self.script_head(now_ms), args, pairs))
                    for _, pairs in group])
                if any(isinstance(r, Exception) for r in replies):
                    partly_done(spec, group, replies, done, out, [
                        ref.id for batch, _ in calls[(g + 1) * per:] for ref in batch])
            else:
                replies = []
                for batch, pairs in group:
                    try:
                        replies.append(self.call(name, args, pairs, now_ms))
                    except Unconfirmed as exc:  # made: its outcomes count; the rest go on
                        replies.append(exc.reply)
                        unconfirmed = unconfirmed or exc
                        missed.extend(ref.id for ref in batch)
            for (batch, _), reply in zip(group, replies, strict=True):
                out.extend(reply_rows(spec, reply))
                done.extend(batch)
        if unconfirmed is not None:  # the replies of every call, in ``result``
            raise not_confirmed(unconfirmed, missed, out)
        return out

    def in_turn(self, ids: list[str], size: int, name: str, args: Mapping[str, Any],
                now_ms: int | None, made: Callable[[list[str], Any], list[T]]) -> list[T]:
        """One call of script ``name`` per ``size`` of ``ids``, one after another (each
        call atomic); the outcomes ``made`` of each call's ids and raw reply, in order.
        A call not confirmed (durability) counts, and the rest go on: :class:`Unconfirmed`
        at the end, every outcome in its ``result``. A call the server refuses after
        others ran: :class:`PartlyDone`, with the outcomes of those."""
        from redis.exceptions import ResponseError

        out: list[T] = []
        unconfirmed: Unconfirmed | None = None
        missed: list[str] = []
        chunks = list(batches(ids, size))
        for n, batch in enumerate(chunks):
            try:
                raw = self.call(name, args, batch, now_ms)
            except Unconfirmed as exc:  # made: its outcomes count; the rest go on
                raw, unconfirmed = exc.reply, unconfirmed or exc
                missed.extend(batch)
            except ResponseError as exc:
                if n == 0:  # (nothing ran: the server's error as it is)
                    raise
                later = [i for rest in chunks[n:] for i in rest]
                raise refused(exc, ids[:len(ids) - len(later)], later, out) from exc
            out.extend(made(batch, raw))
        if unconfirmed is not None:
            raise not_confirmed(unconfirmed, missed, out)
        return out

    def tenant_keys(self, state: str, tenant: str | None) -> list[str] | None:
        """The KEYS of a script call on ``tenant``'s sub-queue (P:queue, then the sub-queue:
        fair queues), or None (the usual KEYS) when no tenant is given."""
        if tenant is None:
            return None
        if state != ItemState.PENDING:
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

