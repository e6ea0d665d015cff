"""The bulk push pipeline behind ``WorkQueue.push_batches`` and ``rq-cli push -``.

Items are stored by push.lua in script calls of up to ``batch_size`` items. On a plain client
the calls are *sent ahead*: up to SEND_AHEAD calls are written to one dedicated connection
before the oldest reply is read, so the client reads, validates and packs the next batch while
the server runs the previous one (on another core), instead of the two taking turns.

- The script is loaded (SCRIPT LOAD, written together with the first call) before any EVALSHA
  runs, so NOSCRIPT cannot happen mid-stream.
- The connection is taken from the client's pool for the stream and always given back; after
  any error (or when the consumer stops early) it is disconnected first, since replies may
  still be pending on it.
- Per batch, not per item: one ``os.urandom`` call for all the random ids (v7 ids that carry
  the push time, :mod:`.ages`: no ``P:enqueued`` stamp per item), one pass packing
  the command (plain ``bytes`` items skip the ``NewItem`` handling), and the result as
  :class:`Pushed` (ids and a string of flags) rather than an object per item.

- A batch of plain items (bytes or text) whose ids are made here at random is sent as a
  transaction of plain commands ending in push_commit.lua (:mod:`.bulk_tx`), not as a push.lua
  call: about a third less server CPU per item, still stored whole or not at all.
  A stream starts them with one probe (TIME, and a transaction that loads the script); where
  the server or the user's ACL refuses it, every batch goes through push.lua.

A stream that fits in one call, a RedisCluster client (redis-py's cluster pipeline refuses
EVALSHA) and a single-connection client take the simple path: one script call per batch
through the client, which reloads the script itself if needed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, NamedTuple

from ...errors import Unconfirmed, UsageError
from ..codes import PUSH_FLAGS
from ..contract.ages import new_ids
from ..contract.batches import after_mode, check_batch
from ..contract.limits import (
    BATCH,
    FRESH_ID_LEN,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    MAX_PUSH_BATCH,
    SEND_AHEAD,
)
from ..contract.specs import SPECS
from ..contract.util import as_bytes, check_new_id, check_tenant, data_id, is_cluster, ms, text
from ..operations.base import QueueBase
from ..scripting import scripts
from ..types import NewItem, PushResult
from .bulk_tx import BYTES, PLAIN, Transactions, replies, split_ids


class Pushed(NamedTuple):
    """One stored batch: the items' ids in input order, and one flag character per item
    ("1" added, "0" duplicate: an item with that id was already live, "2" dead: the id is
    dead-lettered)."""

    ids: list[str]
    flags: str

    @property
    def added(self) -> int:
        return self.flags.count(ADDED)

    def results(self) -> list[PushResult]:
        return [PushResult(i, f == ADDED, REASONS.get(f))
                for i, f in zip(self.ids, self.flags, strict=True)]


#: the flag character of push.lua's reply for an added item, and PushResult.reason of each
#: other (codes.PUSH_FLAGS)
ADDED = PUSH_FLAGS["added"]
REASONS = {flag: reason for reason, flag in PUSH_FLAGS.items() if reason != "added"}


class Drained(KeyboardInterrupt):
    """Ctrl-C stopped :func:`stream`, after every batch it had sent was stored and yielded:
    what the caller counted is exactly what was stored."""


def never() -> bool:
    """:func:`stream`'s default ``stop``: nothing asks the stream to stop."""
    return False


def push_batches(q: QueueBase, items: Iterable[NewItem | bytes | str], *,
                 batch_size: int = BATCH, id_from_data: bool = False, front: bool = False,
                 delay: float = 0.0, expire: float | None = None, now_ms: int | None = None,
                 tenant: str | None = None, batch: str | None = None,
                 after: str | None = None, after_ok: bool = False,
                 after_wide: bool = False) -> Iterator[list[PushResult]]:
    """``WorkQueue.push_batches``: :func:`stream` with one PushResult per item."""
    for batch_ in stream(q, items, batch_size=batch_size, id_from_data=id_from_data,
                         front=front, delay=delay, expire=expire, now_ms=now_ms, tenant=tenant,
                         batch=batch, after=after, after_ok=after_ok, after_wide=after_wide):
        yield batch_.results()


def stream(q: QueueBase, items: Iterable[NewItem | bytes | str], *, batch_size: int = BATCH,
           id_from_data: bool = False, front: bool = False, delay: float = 0.0,
           expire: float | None = None, now_ms: int | None = None,
           tenant: str | None = None, stop: Callable[[], bool] = never,
           batch: str | None = None, after: str | None = None,
           after_ok: bool = False, after_wide: bool = False) -> Iterator[Pushed]:
    """Store ``items`` in batches, yielding each batch (as :class:`Pushed`) once it is stored.

    Memory stays bounded (a few batches). If iterating ``items`` raises, the items taken
    before it are stored and yielded first, then the exception propagates. On Ctrl-C (a
    KeyboardInterrupt raised here, or thrown in with ``.throw()``) the batches already sent
    are yielded, then :class:`Drained` is raised (only on the pipelined path: otherwise a
    plain KeyboardInterrupt, and the batch being stored may or may not have been).
    ``stop`` is asked before each batch is taken from ``items`` (the safe points, where what
    was stored is known): once it says True, the stream stops as on a Ctrl-C raised there,
    and ends in :class:`Drained`. The CLI stops so (its signal handlers only record): a
    KeyboardInterrupt raised by a handler can land anywhere, a reply half read (which
    closes the connection and loses the replies in flight) or C code that does not expect
    it. A KeyboardInterrupt raised while ``items`` is read (a read of stdin that a signal
    ended) is taken as at a safe point. ``tenant`` (or an item's own
    ``NewItem.tenant``) puts items in that tenant's sub-queue (fair queues): such batches
    take the simple path, one call per run of items of one tenant. ``batch``: every item
    stored joins that batch (docs/DESIGN.md section 8); a stream of more than one call
    holds the batch open until it ends (core/operations/batchops.py ``held``), and goes through
    push.lua (no transactions: push_commit.lua does not keep batches). ``after``: the items
    wait for that batch (``after_ok``: and are dead-lettered if any of it died;
    ``after_wide``: ``q`` is a shard of a sharded queue, whose whole batch they wait for:
    batches.after_mode).
    """
    if tenant is not None:
        check_tenant(tenant)
    if not 0 <= delay <= MAX_DELAY:
        raise UsageError(f"the delay must be between 0 and {MAX_DELAY_TEXT} (in seconds)")
    if expire is not None and not 0 < expire <= MAX_DELAY:
        raise UsageError(f"the expiry must be more than 0 and at most {MAX_DELAY_TEXT}"
                         " (in seconds)")
    if not 1 <= batch_size <= MAX_PUSH_BATCH:
        raise UsageError(f"batch size must be between 1 and {MAX_PUSH_BATCH}")
    for name in (batch, after):
        if name is not None:
            check_batch(name)
    flags = {"front": "1" if front else "0", "delay_ms": str(ms(delay)),
             "expire_ms": str(ms(expire or 0)), "batch": batch or "",
             "batch_ttl_ms": str(ms(q.options.batch_ttl)), "after": after or "",
             "after_mode": after_mode(after_ok, after_wide)}
    source = iter(items)
    try:
        if stop():
            raise KeyboardInterrupt
        chunk, error = _take(source, batch_size)
    except KeyboardInterrupt:  # reading the first batch: nothing was sent
        raise Drained from None
    if batch is not None and error is None and len(chunk) == batch_size:  # (more may come)
        from ..operations.batchops import held

        with held(q, batch):
            yield from _stored(q, chunk, error, source, batch_size, id_from_data, flags,
                               now_ms, tenant, stop)
        return
    yield from _stored(q, chunk, error, source, batch_size, id_from_data, flags, now_ms,
                       tenant, stop)


def _stored(q: QueueBase, chunk: list[Any], error: Exception | None, source: Iterator[Any],
            batch_size: int, id_from_data: bool, flags: dict[str, str], now_ms: int | None,
            tenant: str | None, stop: Callable[[], bool]) -> Iterator[Pushed]:
    """:func:`stream` from its first chunk on."""
    client = q.client
    if (error is None and len(chunk) == batch_size and not is_cluster(client)
            and getattr(client, "connection", None) is None and tenant is None
            and not _tenanted(chunk)):
        yield from _send_ahead(q, chunk, source, batch_size, id_from_data, flags, now_ms,
                               stop)
        return
    while chunk:  # the simple path: one call per batch (per tenant), each waited for
        yield from _store_runs(q, chunk, id_from_data, flags, now_ms, tenant)
        if error is not None or len(chunk) < batch_size:
            break
        try:
            if stop():
                raise KeyboardInterrupt
            chunk, error = _take(source, batch_size)
        except KeyboardInterrupt:  # reading: nothing in flight
            raise Drained from None
    if error is not None:
        raise error


def _store_runs(q: QueueBase, chunk: list[Any], id_from_data: bool, flags: dict[str, str],
                now_ms: int | None, tenant: str | None = None) -> Iterator[Pushed]:
    """Store ``chunk`` with one script call per run of one tenant (a tenant's sub-queue is
    KEYS[2] of push.lua), each waited for. A Ctrl-C thrown in where a batch was handed out
    hands that batch out again (the consumer counts it once), then raises
    :class:`Drained`; one that cut a call short is a plain KeyboardInterrupt: that batch may
    or may not have been stored."""
    for run_tenant, run in _tenant_runs(chunk, tenant):
        ids, args, fresh = _pairs(run, id_from_data, made_at(q, now_ms))
        keys = None
        if run_tenant is not None:
            keys = [q.keys.queue, q.keys.tenant_queue(run_tenant)]
            q.sync_tenant_weights()
        pushed: Pushed | None = None
        try:
            try:
                reply = q.call("push", {**flags, "fresh": "1" if fresh else "0"}, args,
                               now_ms, keys=keys)
            except Unconfirmed as exc:  # (durability: the batch is stored, not confirmed)
                exc.ids = ids
                raise
            pushed = Pushed(ids, text(reply) or "")
            yield pushed
        except KeyboardInterrupt:
            if pushed is None:
                raise
            yield pushed
            raise Drained from None


def _tenanted(chunk: list[Any], kinds: set[type] | None = None) -> bool:
    """Whether an item of ``chunk`` names its own tenant (``kinds``: the types of its items,
    where known: a chunk without a NewItem is answered without a look at each item)."""
    if NewItem not in (set(map(type, chunk)) if kinds is None else kinds):
        return False
    return any(type(item) is NewItem and item.tenant is not None for item in chunk)


def _tenant_runs(chunk: list[Any], default: str | None,
                 ) -> Iterator[tuple[str | None, list[Any]]]:
    """The chunk cut into runs of consecutive items of one tenant (None: the default)."""
    if default is None and not _tenanted(chunk):
        yield None, chunk
        return
    run: list[Any] = []
    current: str | None = None
    for item in chunk:
        own = item.tenant if type(item) is NewItem and item.tenant is not None else default
        if own is not None and own is not default:
            check_tenant(own)
        if run and own != current:
            yield current, run
            run = []
        current = own
        run.append(item)
    if run:
        yield current, run


def _take(source: Iterator[Any], size: int) -> tuple[list[Any], Exception | None]:
    """The next ``size`` items, and the exception that stopped the input early, if any
    (the items taken before it are kept: list.extend keeps what it appended)."""
    chunk: list[Any] = []
    try:
        chunk.extend(islice(source, size))
    except Exception as exc:  # a bad input line: store what came before it
        return chunk, exc
    return chunk, None


def made_at(q: QueueBase, now_ms: int | None) -> int:
    """The push time the ids made now carry (ms): ``now_ms`` when given (as push.lua's NOW
    is then), else the client's reading of the server's clock (``q.clock``)."""
    return q.clock.now_ms() if now_ms is None else now_ms


def _random_ids(n: int, at: int) -> list[str]:
    return list(map(bytes.decode, split_ids(new_ids(n, at), n)))


def _pairs(chunk: list[Any], id_from_data: bool, at: int,
           ) -> tuple[list[str], list[Any], bool]:
    """(ids, [id, data, id, data, ...], fresh) for a chunk of items of any kind, the ids
    made here carrying push time ``at``; ``fresh``: every id was made here at random
    (push.lua then skips its reused-id reset)."""
    n = len(chunk)
    fresh = not id_from_data
    if all(type(item) is bytes for item in chunk):
        datas: list[bytes] = chunk
        ids = [data_id(d) for d in datas] if id_from_data else _random_ids(n, at)
    else:
        datas, ids = [], []
        made = iter(()) if id_from_data else iter(_random_ids(n, at))
        for item in chunk:
            if isinstance(item, NewItem):
                data, item_id = as_bytes(item.data), item.id
            else:
                data, item_id = as_bytes(item), None
            if item_id is None:
                item_id = data_id(data) if id_from_data else next(made)
            else:
                check_new_id(item_id)
                fresh = False
            datas.append(data)
            ids.append(item_id)
    args: list[Any] = [None] * (2 * n)
    args[0::2] = ids
    args[1::2] = datas
    return ids, args, fresh


_ITEM_32 = b"$%d\r\n%%s\r\n$%%d\r\n%%s\r\n" % FRESH_ID_LEN


def _packed_batch(conn: Any, heads: tuple[bytes, bytes], nargs: int, chunk: list[Any],
                  id_from_data: bool, at: int, kinds: set[type] | None = None,
                  ) -> tuple[list[str], list[bytes]]:
    """(ids, the EVALSHA command as RESP) for one batch; ``heads`` are the command's packed
    leading arguments (``nargs`` of them, without the array header), ending in the "fresh"
    flag "0" and "1" respectively; ``at``: the push time the ids made here carry;
    ``kinds``: the types of the items, where known."""
    n = len(chunk)
    if not id_from_data and (set(map(type, chunk)) if kinds is None else kinds) == BYTES:
        # the hot path (``push -``): plain bytes, random ids, packed in one pass
        slices = split_ids(new_ids(n, at), n)
        body = b"".join(map(_ITEM_32.__mod__, zip(slices, map(len, chunk), chunk,
                                                     strict=True)))
        return list(map(bytes.decode, slices)), [
            b"*%d\r\n%s%s" % (nargs + 2 * n, heads[1], body)]
    ids, args, fresh = _pairs(chunk, id_from_data, at)
    head = heads[1] if fresh else heads[0]
    # redis-py's encoder for the ids, behind a placeholder command name (pack_command
    # splits a first argument holding spaces); its header "*<n>\r\n$1\r\nX\r\n" is dropped
    tail = conn.pack_command("X", *args)
    first = tail[0]
    cut = first.index(b"\r\n") + 9
    return ids, [b"*%d\r\n%s" % (nargs + 2 * n, head), first[cut:], *tail[1:]]


def _send_ahead(q: QueueBase, chunk: list[Any], source: Iterator[Any], batch_size: int,
                id_from_data: bool, flags: dict[str, str], now_ms: int | None,
                stop: Callable[[], bool] = never) -> Iterator[Pushed]:
    """Stream batches with up to SEND_AHEAD script calls (or transactions) in flight on one
    connection; ``stop`` is asked before each batch is taken from ``source``."""
    try:
        script = q.script("push")
        pool = q.client.connection_pool
        try:
            conn = pool.get_connection()
        except TypeError:  # redis-py 5: the command name is required
            conn = pool.get_connection("EVALSHA")
    except KeyboardInterrupt:  # (connecting, on a slow machine: nothing was sent yet)
        raise Drained from None
    try:
        tx = None if id_from_data or flags["batch"] or flags["after"] else \
            Transactions.start(q, conn, flags, now_ms)
    except BaseException as exc:
        conn.disconnect()
        pool.release(conn)
        if isinstance(exc, KeyboardInterrupt):  # no item was sent yet
            raise Drained from None
        raise
    keys = q.script_keys
    # (the command up to the repeated pairs; "fresh", last, is swapped for "1" below)
    lead = ["EVALSHA", script.sha, len(keys), *keys,
            *SPECS["push"].argv(q.script_head(now_ms), {**flags, "fresh": "0"})]
    packed_lead = b"".join(conn.pack_command(*lead))
    stale = packed_lead[packed_lead.index(b"\r\n") + 2:]
    heads = (stale, stale[:-len(b"$1\r\n0\r\n")] + b"$1\r\n1\r\n")
    load: Any = conn.pack_command("SCRIPT", "LOAD", scripts.source("push"))
    # durability: one WAIT (or WAITAOF) after each batch, read with its reply
    confirmer = q.confirmer
    waits: list[Any] = []
    if confirmer is not None:
        confirmer.prepare(q.script_keys[0])
        waits = [part for command in confirmer.commands()
                 for part in conn.pack_command(*command)]
    unconfirmed: list[Pushed] = []  # batches stored and not confirmed (then none is sent)
    why = ""
    # each batch sent: its ids, and whether it is a transaction (else a push.lua call, after
    # the SCRIPT LOAD reply when it was written with it)
    inflight: deque[tuple[list[str], bool, bool]] = deque()
    ready: deque[Pushed] = deque()  # replies read, not yet yielded

    def read_one() -> None:
        ids, is_tx, loading = inflight[0]
        if is_tx:
            assert tx is not None
            tx.read()
            pushed = Pushed(ids, ADDED * len(ids))
        else:
            if loading:
                conn.read_response()
            pushed = Pushed(ids, text(conn.read_response()) or "")
        shortfall = None
        if confirmer is not None:
            shortfall = confirmer.shortfall(replies(conn, len(confirmer.commands())))
        inflight.popleft()
        if shortfall is None:
            ready.append(pushed)
        else:
            nonlocal why
            why = why or shortfall
            unconfirmed.append(pushed)

    def handed_out() -> Iterator[Pushed]:
        """Yield the replies read. Each stays in ``ready`` until the consumer asks for more:
        a Ctrl-C thrown in at its yield finds it there, and the drain below hands it out
        again first."""
        while ready:
            yield ready[0]
            ready.popleft()

    error: Exception | None = None
    try:
        while True:
            kinds = set(map(type, chunk))  # (C-level: no Python code run per item)
            if _tenanted(chunk, kinds):  # fair: items naming a tenant, one call per tenant's run
                while inflight:
                    read_one()
                    yield from handed_out()
                if unconfirmed:
                    break
                yield from _store_runs(q, chunk, id_from_data, flags, now_ms, None)
                if error is not None or len(chunk) < batch_size:
                    break
                if stop():
                    raise KeyboardInterrupt
                chunk, error = _take(source, batch_size)
                if not chunk:
                    break
                continue
            is_tx = tx is not None and kinds <= PLAIN
            try:
                if tx is not None and is_tx:
                    ids, command = tx.packed(chunk, kinds)
                else:
                    ids, command = _packed_batch(conn, heads, len(lead), chunk, id_from_data,
                                                 made_at(q, now_ms), kinds)
            except Exception as exc:  # a bad id: store the batches before it, then raise
                error = exc
                break
            loading = not is_tx and load is not None
            if loading:
                command = [*load, *command]
            command = [*command, *waits]
            conn.send_packed_command(command, check_health=False)
            inflight.append((ids, is_tx, loading))
            if loading:
                load = None
            if error is not None or len(chunk) < batch_size:
                break
            while len(inflight) >= SEND_AHEAD:
                read_one()
                yield from handed_out()
            if unconfirmed:  # (send nothing more: the replicas are not keeping up)
                break
            if stop():  # (a safe point: what was sent is known)
                raise KeyboardInterrupt
            chunk, error = _take(source, batch_size)  # while the server runs the calls
            if not chunk:
                break
        while inflight:
            read_one()
            yield from handed_out()
    except KeyboardInterrupt:
        # Ctrl-C (here, or thrown in by the consumer): the batches sent are being stored
        # whatever happens now, so read their replies and yield them, that the caller may
        # count exactly what was stored; then stop. A second Ctrl-C stops at once. A Ctrl-C
        # thrown in at a yield comes first: the batch handed out there, which the consumer
        # may have stopped before counting (it counts a batch it is given again only once).
        while ready or inflight:
            if not ready:
                read_one()
            yield ready.popleft()
        raise Drained from None
    finally:
        if inflight:  # replies pending (an error, or the consumer stopped)
            conn.disconnect()
        pool.release(conn)
    if unconfirmed:
        assert confirmer is not None
        count = sum(len(batch.ids) for batch in unconfirmed)
        raise confirmer.unconfirmed(f"a push of {count} items", why,
                                    ids=[i for batch in unconfirmed for i in batch.ids])
    if error is not None:
        raise error
