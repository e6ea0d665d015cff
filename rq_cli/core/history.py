"""A queue's history: the counters of keys.HISTORY_FIELDS (pushed, completed, failed, dead,
requeued) per minute (7 days) and per hour (90 days), from snapshots of its counters
(``P:counters``) taken by the operations that change them (the first script call of each
minute: ``lua/_history.lua``), by ``clean`` (each pass, inside its own script call), workers
(:func:`snapshot` every HISTORY_EVERY seconds) and the consoles (:func:`snapshot`). Nothing
is counted per item.

Each bucket (``P:history`` per minute, ``P:history_hourly`` per hour; keys.py) holds at most
one snapshot, written by the first caller in it; a bucket nobody snapshotted is missing, and
the bucket before it then spans more than one minute (its ``seconds``). :func:`read_history`
turns consecutive snapshots into deltas. This module imports neither Typer nor rich.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError
from .contract.keys import HISTORY_FIELDS
from .contract.limits import HISTORY_HOURS, HISTORY_PAGE, MAX_MINUTES_SINCE, MAX_SINCE
from .contract.util import server_ms, text

if TYPE_CHECKING:
    from .queue import WorkQueue

MINUTE_MS, HOUR_MS = 60_000, 3_600_000


@dataclass
class Bucket:
    """What happened from one snapshot to the next (or, the last, to now)."""

    at: float  #: the bucket's start, epoch s
    seconds: float  #: the time it covers: to the next snapshot's bucket, or to now
    deltas: dict[str, int]  #: HISTORY_FIELDS -> how much each counter grew


def snapshot(wq: WorkQueue, now_ms: int | None = None) -> bool:
    """Snapshot ``wq``'s counters into this minute's and this hour's buckets, if nobody has
    yet (one script call, a few commands). True if this call wrote this minute's. A sharded
    queue (docs/DESIGN.md section 7) keeps a history per shard: each that answers is
    snapshotted (a shard whose server is down is skipped: the next snapshot covers it)."""
    shards = getattr(wq, "shards", None)
    if shards is not None:
        return any([wq.answering(shard, False, snapshot, shard, now_ms)  # type: ignore[attr-defined]
                    for shard in shards])
    return bool(int(wq.call("history", now_ms=now_ms)))


def check_since(since: float) -> float:
    """``since`` (seconds) if the history can go back that far, else ParameterError."""
    if not 0 < since <= MAX_SINCE:
        raise ParameterError("since", f"must be more than 0 and at most {HISTORY_HOURS // 24} "
                                      "days (the history kept)")
    return since


def read_history(wq: WorkQueue, since: float, *, hourly: bool | None = None,
                 now_ms: int | None = None) -> list[Bucket]:
    """The buckets of the last ``since`` seconds, oldest first: per minute up to 7 days,
    per hour beyond (or as ``hourly`` says). Empty before the first snapshot."""
    check_since(since)
    if hourly is None:
        hourly = since > MAX_MINUTES_SINCE
    shards = getattr(wq, "shards", None)
    if shards is not None:  # a sharded queue: its shards' buckets summed, bucket by bucket
        return _summed([read_history(shard, since, hourly=hourly, now_ms=now_ms)
                        for shard in shards])
    size = HOUR_MS if hourly else MINUTE_MS
    key = wq.keys.history_hourly if hourly else wq.keys.history
    now = now_ms if now_ms is not None else server_ms(wq.client)
    current = [int(v or 0) for v in wq.client.hmget(wq.keys.counters, list(HISTORY_FIELDS))]
    first = (now - round(since * 1000)) // size
    snaps: list[tuple[int, list[int]]] = []
    offset = 0
    while True:
        members = wq.client.zrangebyscore(key, first, "+inf", start=offset, num=HISTORY_PAGE)
        snaps.extend(_parse(m) for m in members)
        if len(members) < HISTORY_PAGE:
            break
        offset += HISTORY_PAGE
    snaps = [s for s in snaps if s[0] >= 0]
    out = []
    for i, (bucket, values) in enumerate(snaps):
        if i + 1 < len(snaps):
            end_ms, later = snaps[i + 1][0] * size, snaps[i + 1][1]
        else:
            end_ms, later = max(now, bucket * size), current
        deltas = {f: _grew(a, b) for f, a, b in zip(HISTORY_FIELDS, values, later, strict=True)}
        out.append(Bucket(at=bucket * size / 1000, seconds=(end_ms - bucket * size) / 1000,
                          deltas=deltas))
    return out


def _parse(member: Any) -> tuple[int, list[int]]:
    """A snapshot ``<bucket>:<v1>:<v2>...``: (bucket, values in HISTORY_FIELDS' order, 0
    for a field it lacks); (-1, []) for a member it cannot read (skipped): each part must be
    ASCII digits (another client's garbage, ``-5``, ``+1``, ``1_0`` or other scripts' digits,
    reads as no snapshot rather than as a counter that ran backwards)."""
    parts = (text(member) or "").split(":")
    if not all(p.isascii() and p.isdigit() for p in parts):
        return -1, []
    numbers = [int(p) for p in parts]
    values = numbers[1:] + [0] * (len(HISTORY_FIELDS) - len(numbers) + 1)
    return numbers[0], values[:len(HISTORY_FIELDS)]


def _grew(before: int, after: int) -> int:
    """How much a counter grew; after a reset (``purge --state all`` drops the counters),
    what it counted since."""
    return after - before if after >= before else after


def _summed(parts: list[list[Bucket]]) -> list[Bucket]:
    """One history from the shards' (a bucket's deltas summed over the shards that have it;
    its time covered, the longest of theirs)."""
    by_at: dict[float, Bucket] = {}
    for buckets in parts:
        for b in buckets:
            seen = by_at.get(b.at)
            by_at[b.at] = b if seen is None else Bucket(
                at=b.at, seconds=max(seen.seconds, b.seconds),
                deltas={f: seen.deltas[f] + b.deltas[f] for f in HISTORY_FIELDS})
    return [by_at[at] for at in sorted(by_at)]
