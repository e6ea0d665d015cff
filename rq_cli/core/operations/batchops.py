"""Batches (docs/DESIGN.md section 8): reading a batch, holding it open, waiting for it.

The bookkeeping itself is the scripts' (lua/_batch.lua); this module reads a batch's
record (one HGETALL per part: a sharded queue keeps a part in each shard), holds it open
while a push stream of several calls pushes into it (lua/batch_hold.lua), blocks on the
token its finishing step pushes (``rq-cli wait``), and forgets it.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..contract.batches import check_batch, counts, line
from ..contract.keys import batch_verdict_key
from ..contract.limits import BLOCK_CHUNK
from ..contract.util import ms


def _sharded(q: Any) -> bool:
    """Whether ``q`` is a ShardedQueue (its ``shards`` and ``live``; not imported here:
    sharded.py imports the modules that import this one)."""
    return hasattr(type(q), "shards")


def parts(q: Any) -> list[Any]:
    """The queues that keep a part of each of ``q``'s batches: its shards (a sharded queue),
    else ``q`` itself."""
    return list(q.shards) if _sharded(q) else [q]


def read(q: Any, name: str, queue: str | None = None) -> dict[str, Any] | None:
    """The batch line of batch ``name`` of ``q`` (batches.LINE_FIELDS), or None when it has
    no record: one HGETALL per part, pipelined per server."""
    check_batch(name)
    return _read(q, name, queue)


def _read(q: Any, name: str, queue: str | None = None) -> dict[str, Any] | None:
    """:func:`read` of a name the server listed (not checked: a name another client wrote
    by hand is shown as it is)."""
    records = [p.client.hgetall(p.keys.batch(name)) for p in parts(q)]
    found = [counts(r) for r in records if r]
    if not found:
        return None
    return line(queue or q.prefix, name, found, int(time.time() * 1000))


@contextmanager
def held(q: Any, name: str) -> Iterator[None]:
    """Hold batch ``name`` open while the body pushes into it (each part: every live
    shard of a sharded queue), so it cannot finish between two calls of one push; let go
    at the end, whatever happens (a crashed process's hold runs out after
    limits.BATCH_OPEN_MS)."""
    check_batch(name)
    ttl = str(ms(q.options.batch_ttl))
    targets = list(q.live) if _sharded(q) else [q]
    for p in targets:
        p.call("batch_hold", {"name": name, "mode": "open", "ttl_ms": ttl})
    try:
        yield
    finally:
        for p in targets:
            p.call("batch_hold", {"name": name, "mode": "close", "ttl_ms": ttl})


@contextmanager
def pushing(q: Any, kw: dict[str, Any]) -> Iterator[None]:
    """A sharded queue's push with ``kw`` (push's options): its ``batch`` held open in every
    live shard meanwhile (:func:`held`); its ``after`` items held in their own shards for
    the whole batch (``after_wide``), then released if the whole batch is done already
    (:func:`release`: it may have finished before the items were held); and what waits for
    its ``batch``, if the batch is done when the push lets it go (workers faster than the
    input)."""
    after, batch = kw.get("after"), kw.get("batch")
    if after is not None:
        kw["after_wide"] = True
    with held(q, batch) if batch is not None else _nothing():
        yield
    for name in (after, batch):
        if name is not None:
            release(q, name)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def release(q: Any, name: str, only: list[Any] | None = None) -> int:
    """Release what ``push --after NAME`` holds on sharded queue ``q`` if its whole batch
    is done (every part finished, none held open; or no part left): each shard's part in
    batch_after.lua calls (atomic per shard, AFTER_BATCH items each: each held item is
    released exactly once, whoever runs this and however often), with the batch's one
    verdict (:func:`verdict`: ``--after-ok`` items dead-lettered, reason after_failed, if
    a part had a dead item when the first release read it). A run killed half-way leaves
    the rest held: the next run (``wait``, a push, ``clean``) finishes it, by the same
    verdict. ``only``: the parts to release (default: every part; a test drives a release
    cut short with it). Returns how many calls it made (0: not done yet)."""
    decided = verdict(q, name)
    if decided is None:
        return 0
    calls = 0
    for p in parts(q) if only is None else only:
        while True:
            calls += 1
            if not int(p.call("batch_after", {"name": name, "verdict": decided})):
                break
    if only is None:  # (nothing held in any part now: a later round decides anew)
        q.client.unlink(batch_verdict_key(q.prefix, name))
    return calls


def verdict(q: Any, name: str) -> str | None:
    """The ``--after-ok`` verdict of sharded queue ``q``'s batch ``name`` ("1": a dead
    item, "0": none), or None while the whole batch is not done. Recorded once, at the base
    prefix (keys.batch_verdict_key; SET NX and GET in one MULTI, kept for batch_ttl): the
    first release to see the batch done decides, every release after it follows, so a
    ``requeue-dead`` that reopens the batch between two releases cannot give two shards
    two verdicts. The release that finds nothing held in any part drops it."""
    row = read(q, name)
    if row is not None and not row["done"]:
        return None
    seen = "1" if row is not None and row["dead"] else "0"
    key = batch_verdict_key(q.prefix, name)
    # (SET NX then GET in one MULTI, one key: SET's NX with GET needs Redis 7.0)
    with q.client.pipeline(transaction=True) as pipe:
        _, kept = pipe.set(key, seen, nx=True, px=max(1, ms(q.options.batch_ttl))) \
            .get(key).execute()
    if kept is None:  # (not to be: the GET follows the SET in the same transaction)
        return seen
    return kept.decode() if isinstance(kept, bytes) else str(kept)


def release_all(q: Any) -> int:
    """:func:`release` for every batch that a part of sharded queue ``q`` holds items for
    (P:afters of each shard, SSCAN pages): clean's step. Returns how many calls it made."""
    from ..contract.limits import BATCH

    names: dict[str, None] = {}
    for p in parts(q):
        for n in p.client.sscan_iter(p.keys.afters, count=BATCH):
            names[n.decode() if isinstance(n, bytes) else n] = None
    return sum(release(q, name) for name in names)


def listed(q: Any, limit: int) -> list[dict[str, Any]]:
    """The lines of the newest ``limit`` batches of ``q`` (P:batches, each part of a sharded
    queue), newest first; a batch whose record is gone is left out."""
    names: dict[str, None] = {}
    for p in parts(q):
        for n in p.client.zrevrange(p.keys.batches, 0, limit - 1):
            names[n.decode() if isinstance(n, bytes) else n] = None
    rows = [_read(q, name) for name in list(names)[:limit]]
    return [row for row in rows if row is not None]


def forget(q: Any, name: str) -> int:
    """Drop batch ``name``'s keys now (its record, its wake token): how many keys went. Its
    items are left as they are; their entries in P:item_batch go at their next move."""
    check_batch(name)
    gone = 0
    for p in parts(q):
        gone += int(p.client.unlink(p.keys.batch(name), p.keys.batch_wake(name),
                                    p.keys.results(name)))
        p.client.zrem(p.keys.batches, name)
    if _sharded(q):  # (the verdict its held items' release recorded, at the base prefix)
        gone += int(q.client.unlink(batch_verdict_key(q.prefix, name)))
    return gone


def wait(q: Any, name: str, timeout: float | None,
         progress: Callable[[dict[str, Any]], None] | None = None,
         queue: str | None = None) -> dict[str, Any] | None:
    """Block until batch ``name`` is done, or ``timeout`` seconds (None: for ever) have
    passed; returns its last line read (None: no such batch). Woken by the token its
    finishing step pushes (a blocking BLMOVE that leaves it there, so every waiter sees it),
    re-armed every BLOCK_CHUNK seconds; the record is read again after each wake-up, so a
    token lost to a failover or an expiry costs one chunk at most. ``progress`` is called
    with each line read."""
    end = None if timeout is None else time.monotonic() + timeout
    members = parts(q)
    while True:
        row = read(q, name, queue)
        if row is None or row["done"]:
            if row is not None and _sharded(q):  # (the step that sees the whole batch done)
                release(q, name)
            return row
        if progress is not None:
            progress(row)
        left = BLOCK_CHUNK if end is None else min(BLOCK_CHUNK, end - time.monotonic())
        if left <= 0:
            return row
        # (one part's token at a time: a sharded batch is done when every part is, and
        # each part's finishing step pushes its own)
        open_part = _open_part(members, name)
        if open_part is None:  # (finished, while this client's clock says a push holds it)
            time.sleep(min(left, 0.2))
            continue
        key = open_part.keys.batch_wake(name)
        open_part.client.blmove(key, key, max(left, 0.01), "RIGHT", "RIGHT")


def sweep(q: Any, now_ms: int | None = None) -> int:
    """Count completed the batch items a peer client completed (their data gone, their
    entry left in P:item_batch): batch_sweep.lua over the whole hash, a page (limits.BATCH
    entries) per call (clean calls it where its own call saw batch items); then release
    what push --after still holds for finished batches (batch_after.lua). Returns how many
    it counted completed."""
    from ..contract.limits import BATCH

    found, cursor = 0, "0"
    while True:
        fields, _ = q.decoded("batch_sweep", {"cursor": cursor, "count": BATCH}, (), now_ms)
        found += int(fields["counted"])
        cursor = fields["cursor"].decode() if isinstance(fields["cursor"], bytes) \
            else str(fields["cursor"])
        if cursor == "0":
            break
    # items push --after holds for a batch finished (or gone) beyond what its finishing
    # step released: limits.AFTER_BATCH per call
    for name in q.client.sscan_iter(q.keys.afters, count=BATCH):
        name = name.decode() if isinstance(name, bytes) else name
        while int(q.call("batch_after", {"name": name, "verdict": ""}, (), now_ms)):
            pass
    return found


def complete_results(q: Any, refs: list[Any], now_ms: int | None = None) -> list[Any]:
    """``WorkQueue.complete`` of refs with results (complete_result.lua, limits.SETTLE_CHUNK
    per call): each ref's ``result`` (none: empty) is kept for a batch item. A result over
    limits.RESULT_MAX bytes is refused (UsageError) before anything is done."""
    from ...errors import UsageError
    from ..contract.limits import RESULT_MAX, SETTLE_CHUNK
    from ..types import ItemOutcome
    from .base import COMPLETE_OUTCOMES

    for ref in refs:
        if ref.result is not None and len(ref.result) > RESULT_MAX:
            raise UsageError(f"the result of {ref.id!r} is {len(ref.result):,} bytes: at most "
                             f"{RESULT_MAX:,} are kept")
    out: list[Any] = []
    for i in range(0, len(refs), SETTLE_CHUNK):
        part = refs[i:i + SETTLE_CHUNK]
        rest = [v for ref in part for v in (ref.id, ref.session or "", ref.result or b"")]
        codes = q.call("complete_result", {}, rest, now_ms)
        codes = codes.decode() if isinstance(codes, bytes) else codes
        out += [ItemOutcome(ref.id, COMPLETE_OUTCOMES[c]) for ref, c in zip(part, codes,
                                                                            strict=True)]
    return out


def results(q: Any, name: str, page: int = 1000) -> Iterator[tuple[str, bytes]]:
    """(id, result) of batch ``name``'s completed items that have one: HSCAN pages of
    ``page`` entries of P:results:<name> (of every part of a sharded queue)."""
    check_batch(name)
    for p in parts(q):
        cursor = 0
        while True:
            cursor, got = p.client.hscan(p.keys.results(name), cursor, count=page)
            for k, v in got.items():
                yield (k.decode() if isinstance(k, bytes) else k), v
            if not cursor:
                break


def items(q: Any, name: str, state: str, limit: int,
          page: int = 1000) -> Iterator[tuple[Any, str]]:
    """(part, id) of up to ``limit`` items of batch ``name`` in ``state`` (pending,
    processing, delayed or dead: as the batch counts them), in no particular order: HSCAN
    pages of ``page`` entries of P:item_batch, each part of a sharded queue in turn."""
    check_batch(name)
    want = f"{state}:{name}".encode()
    found = 0
    for p in parts(q):
        cursor = 0
        while found < limit:
            cursor, got = p.client.hscan(p.keys.item_batch, cursor, count=page)
            for k, v in got.items():
                if v == want and found < limit:
                    found += 1
                    yield p, (k.decode() if isinstance(k, bytes) else k)
            if not cursor:
                break


def _open_part(members: list[Any], name: str) -> Any:
    """The first part whose record is not finished (none: read again); a part that only
    holds ``push --after`` items (no ``total``) has no finishing step to wait for."""
    from ..contract.batches import FINISHED, TOTAL

    for p in members:
        total, finished = p.client.hmget(p.keys.batch(name), TOTAL, FINISHED)
        if total is not None and finished is None:
            return p
    return None
