"""Error groups: dead and retrying items grouped by their error, one cause per group.

An error's *pattern* is its text with what varies between occurrences of one cause
replaced by a placeholder (:func:`.errnorm.normalise`): UUIDs, timestamps, IP addresses and
``host:port``, hex ids, durations and numbers (an HTTP status, an exit code or a signal
number stays: 502 and 503 are two causes). A group's *key* (:func:`.errnorm.group_key`) is
a short hash of its pattern: the same cause has the same key in every queue and state, and
from one run to the next, so ``requeue-dead --error-group KEY`` and ``purge --error-group
KEY`` act on what ``errors`` showed (:class:`~rq_cli.core.filtering.ItemFilter` tests it
item by item).

:func:`group_errors` reads without scripts, in bounded calls: the errors of dead items from
``P:dead_info`` and of retrying items (live, failed at least once) from ``P:errors``, each
with HSCAN, ``ERRGROUP_SCAN_COUNT`` fields a call, plus one pipelined round trip per page for what a
filter needs beyond the error (attempts, push time, payload). Nothing is written.

This module imports neither Typer nor rich (the consoles reuse it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ParameterError
from .codes import ItemState
from .contract.ages import enqueued_ms
from .contract.errnorm import group_key, normalise
from .contract.limits import ERRGROUP_SCAN_COUNT
from .contract.util import secs, text

if TYPE_CHECKING:
    from .filtering import ItemFilter
    from .queue import WorkQueue
    from .reports import PeekedItem

#: The states an error group is in: dead-lettered items, or live items that failed and wait
#: for (or are on) another attempt.
GroupState = Literal["dead", "retrying"]
GROUP_STATES: tuple[GroupState, ...] = (ItemState.DEAD.value, "retrying")


@dataclass
class ErrorGroup:
    """Items of one state whose errors have one pattern."""

    key: str
    state: GroupState
    pattern: str
    error: str | None  #: the error of the latest item (the first one read, for retrying)
    count: int = 0
    #: dead: the first and last time of death (epoch s); retrying: null (no failure time kept)
    first_at: float | None = None
    last_at: float | None = None
    sample_id: str = ""  #: the item whose error is ``error``


@dataclass
class GroupReport:
    """What :func:`group_errors` read."""

    groups: list[ErrorGroup]
    scanned: int = 0  #: items read (dead and retrying)
    matched: int = 0  #: items in the groups
    not_json: int = 0  #: payloads that are not JSON (never match ``--match``)


def group_errors(wq: WorkQueue, flt: ItemFilter | None = None,
                 states: Sequence[GroupState] = GROUP_STATES, *, now_ms: int | None = None,
                 progress: Callable[[int], None] | None = None) -> GroupReport:
    """Group the dead and/or retrying items of ``wq`` (a sharded queue: of every shard)
    that ``flt`` matches by their error's pattern: the groups, the most items first.
    ``progress`` is called with the items of each page read."""
    from .contract.util import server_ms
    from .sharding.sharded import physical

    for s in states:
        if s not in GROUP_STATES:
            raise ParameterError("state", f"must be one of {', '.join(GROUP_STATES)}, not {s!r}")
    if flt is not None and flt.reasons and "retrying" in states:
        raise ParameterError("reasons", "filters dead items (the dead-letter reason): group "
                                        "the dead ones only")
    cutoff_s = None
    if flt is not None and flt.older_than is not None:
        now = now_ms if now_ms is not None else server_ms(wq.client)
        cutoff_s = (now - round(flt.older_than * 1000)) / 1000
    report = GroupReport(groups=[])
    found: dict[tuple[str, str], ErrorGroup] = {}
    for state, shard in ((s, q) for s in states for q in physical([wq])):
        seen: set[bytes] = set()  # (HSCAN may return a field twice while the hash grows)
        for page in _pages(shard, state):
            fresh = [(f, v) for f, v in page if f not in seen]
            seen.update(f for f, _ in fresh)
            items = _items(shard, state, fresh, flt)
            report.scanned += len(items)
            for item in items:
                verdict = flt.test(item, cutoff_s) if flt is not None else True
                if verdict is None:
                    report.not_json += 1
                if not verdict:
                    continue
                report.matched += 1
                _add(found, state, item)
            if progress is not None:
                progress(len(items))
    report.groups = sorted(found.values(), key=lambda g: (-g.count, g.state, g.pattern))
    return report


def _add(found: dict[tuple[str, str], ErrorGroup], state: GroupState, item: PeekedItem) -> None:
    pattern = normalise(item.error)
    key = group_key(item.error, pattern)
    group = found.get((key, state))
    if group is None:
        group = found[(key, state)] = ErrorGroup(key=key, state=state, pattern=pattern,
                                                 error=item.error, sample_id=item.id)
    group.count += 1
    at = item.dead_at
    if at is not None:
        if group.first_at is None or at < group.first_at:
            group.first_at = at
        if group.last_at is None or at >= group.last_at:
            group.last_at, group.error, group.sample_id = at, item.error, item.id


def _pages(wq: WorkQueue, state: GroupState) -> Iterable[list[tuple[bytes, bytes]]]:
    """The fields and values of P:dead_info (dead) or P:errors (retrying), a page per HSCAN
    call."""
    key = wq.keys.dead_info if state == ItemState.DEAD.value else wq.keys.errors
    cursor: Any = 0
    while True:
        cursor, fields = wq.client.hscan(key, cursor, count=ERRGROUP_SCAN_COUNT)
        if fields:
            yield list(fields.items())
        if not int(cursor):
            return


def _items(wq: WorkQueue, state: GroupState, page: list[tuple[bytes, bytes]],
           flt: ItemFilter | None) -> list[PeekedItem]:
    """The page's items, with what ``flt`` tests beyond the error read in one round trip.
    A retrying item's entry outlives the item when a peer client completes it (until clean
    prunes it): such entries are left out (one EXISTS per id, in the same round trip)."""
    from .operations.reads import dead_details
    from .reports import PeekedItem

    ids = [f for f, _ in page]
    live = state == "retrying"
    need_data = flt is not None and flt.match is not None
    need_meta = live and flt is not None and (
        flt.min_attempts is not None or flt.older_than is not None)
    extra: list[Any] = []
    if need_data or live:
        pipe = wq.client.pipeline(transaction=False)
        family = wq.keys.item if live else wq.keys.dead_item
        if need_data:
            # (execute_command: a cluster pipeline refuses its mget(), not an MGET of keys
            # that share a slot, as a queue's do)
            pipe.execute_command("MGET", *[family(text(i) or "") for i in ids])
        elif live:
            for i in ids:
                pipe.exists(family(text(i) or ""))
        if need_meta:
            pipe.hmget(wq.keys.attempts, ids)
            pipe.hmget(wq.keys.enqueued, ids)
        extra = pipe.execute()
    none = [None] * len(ids)
    data = extra[0] if need_data else none
    exists = [d is not None for d in data] if need_data else \
        [bool(e) for e in extra[:len(ids)]] if live else [True] * len(ids)
    attempts, enqueued = (extra[-2], extra[-1]) if need_meta else (none, none)
    items = []
    for (field, value), payload, there, tries, pushed in zip(page, data, exists, attempts,
                                                              enqueued, strict=True):
        item_id = text(field) or ""
        if state == ItemState.DEAD.value:
            meta = dead_details(value)
            items.append(PeekedItem(
                id=item_id, state=ItemState.DEAD.value, data=payload, attempts=meta.attempts,
                dead_at=meta.at, dead_reason=meta.reason, error=meta.error))
        elif there:
            at = enqueued_ms(item_id, pushed) if need_meta else None
            items.append(PeekedItem(
                id=item_id, state=ItemState.PENDING.value, data=payload, attempts=int(tries or 0),
                enqueued_at=None if at is None else secs(at),
                error=text(value)))
    return items
