"""Filtered bulk repair: the one filter that ``peek``, ``requeue-dead`` and
``purge`` share, and the paged scan that applies it.

An :class:`ItemFilter` is compiled once, before anything is read or touched, so a bad
expression or regex is a :class:`~rq_cli.errors.UsageError` (exit 2) with nothing changed:

- ``match``: a JMESPath expression over the item's JSON payload; the item matches when the
  result is truthy in JMESPath's sense (not ``null``, ``false``, ``""``, ``[]`` or ``{}``;
  ``0`` is true). A payload that is not JSON never matches, and is counted (``not_json``);
- ``error``: a regular expression searched in the last error (``fail``'s or the worker's);
- ``reasons``: dead items whose dead-letter reason is one of these;
- ``older_than``: dead for longer than this (dead items), or first pushed longer ago than
  this (the other states; an item pushed by a peer client has no push time and never
  matches);
- ``min_attempts``: leased at least this many times;
- ``error_group``: the key of the group of the last error (:mod:`.errgroups`, as ``errors``
  prints it).

The scan (:func:`scan`) reads a state a page at a time with ``WorkQueue.peek``
(FILTER_PAGE items, one short script call each), tests each item here, and acts on exactly
the matched ids with a bounded script call that checks each id is still where it was read
(``requeue_dead`` by ids, ``purge_ids``): an item that moved on meanwhile is left alone and
counted as ``changed``, so a run may be interrupted (Ctrl-C between two steps) and run again without
moving anything twice. The sets (delayed, dead) are paged with a cursor, the id that follows
the page (``peek(start_at=...)``), which stays right while the items before it leave; lists
are paged by index, adjusted for what was removed.

The scan is a generator of steps: each step is one page read and what was done with it,
so the caller prints, draws progress and may stop between any two. This module imports
neither Typer nor rich.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ParameterError, UsageError
from .codes import STATES, ItemState
from .contract.errnorm import check_group_key, group_key
from .contract.limits import (
    FILTER_CHUNK,
    FILTER_PAGE,
    FILTER_SAMPLE,
    MAX_DELAY,
    MAX_DELAY_TEXT,
    MAX_FILTER_RATE,
    MAX_MATCH_DEPTH,
)
from .contract.util import json_int, json_too_deep, server_ms

if TYPE_CHECKING:
    from .codes import State
    from .queue import WorkQueue
    from .reports import PeekedItem


Action = Literal["peek", "requeue", "purge"]
_STATES = STATES  # (codes.ItemState)


def _jmespath() -> Any:
    import jmespath  # only filtered commands need it: kept off start-up

    return jmespath


def truthy(value: Any) -> bool:
    """JMESPath's truth: false for null, false, and empty strings, lists and objects only
    (``0`` is true, unlike Python's)."""
    if value is None or value is False:
        return False
    return not (isinstance(value, (str, list, dict)) and not value)


class ItemFilter:
    """A compiled filter. Build it first: it raises UsageError for a bad expression,
    regex or bound, before anything is read."""

    def __init__(self, *, match: str | None = None, error: str | None = None,
                 reasons: Sequence[str] = (), older_than: float | None = None,
                 min_attempts: int | None = None, error_group: str | None = None) -> None:
        self.match = match
        self.error = error
        self.reasons = tuple(reasons)
        self.older_than = older_than
        self.min_attempts = min_attempts
        self.error_group = check_group_key(error_group) if error_group is not None else None
        self._expr: Any = None
        self._regex: re.Pattern[str] | None = None
        if match is not None:
            jp = _jmespath()
            try:
                self._expr = jp.compile(match)
                _check_tree(self._expr.parsed)
            except RecursionError:  # (the parser itself is recursive)
                raise ParameterError("match", f"{_shown(match)} is nested too deep (at most "
                                              f"{MAX_MATCH_DEPTH} levels)") from None
            except _TooDeep as exc:
                raise ParameterError("match", f"{_shown(match)} is nested {exc.depth} levels "
                                              f"deep (at most {MAX_MATCH_DEPTH})") from None
            except jp.exceptions.JMESPathError as exc:
                detail = " ".join(str(exc).split("\n")[0].split()).rstrip(":")
                at = getattr(exc, "lex_position", None)
                where = f" (at column {at + 1})" if isinstance(at, int) and "column" not in \
                    detail else ""
                raise ParameterError("match", f"{match!r} is not a JMESPath expression: "
                                              f"{detail}{where}") from None
        if error is not None:
            try:
                self._regex = re.compile(error)
            except re.error as exc:
                raise ParameterError("error", f"{error!r} is not a regular expression: "
                                              f"{exc}") from None
        if older_than is not None and not 0 <= older_than <= MAX_DELAY:
            raise ParameterError("older_than", f"must be between 0 and {MAX_DELAY_TEXT} "
                                               "(in seconds)")
        if min_attempts is not None and min_attempts < 0:
            raise ParameterError("min_attempts", "cannot be negative")
        if any(not r for r in self.reasons):
            raise ParameterError("reasons", "cannot be empty")

    @property
    def active(self) -> bool:
        """Whether any condition is set (an empty filter matches everything)."""
        return any(x is not None for x in (self.match, self.error, self.older_than,
                                            self.min_attempts, self.error_group)) or \
            bool(self.reasons)

    def check_state(self, state: str) -> None:
        if self.reasons and state != ItemState.DEAD:
            raise ParameterError("reasons", "filters dead items (the dead-letter reason): use "
                                            "it with the dead state")

    def test(self, item: PeekedItem, cutoff_s: float | None) -> bool | None:
        """True if ``item`` matches; False if not; None if ``match`` is set and the payload
        is not JSON (it never matches). ``cutoff_s``: now minus ``older_than`` (epoch s)."""
        if self.min_attempts is not None and item.attempts < self.min_attempts:
            return False
        if self.reasons and item.dead_reason not in self.reasons:
            return False
        if cutoff_s is not None:
            at = item.dead_at if item.state == ItemState.DEAD.value else item.enqueued_at
            if at is None or at > cutoff_s:
                return False
        if self._regex is not None and (item.error is None or
                                        not self._regex.search(item.error)):
            return False
        if self.error_group is not None and group_key(item.error) != self.error_group:
            return False
        if self._expr is not None:
            if item.data is None:
                return False  # a ghost: no payload at all
            if json_too_deep(item.data):
                return None  # (not read as JSON anywhere: render, push)
            try:
                doc = json.loads(item.data, parse_int=json_int)
            except (ValueError, RecursionError):  # also UnicodeDecodeError; nested too deep
                return None
            try:
                return truthy(self._expr.search(doc))
            except _jmespath().exceptions.JMESPathError:
                return False  # e.g. a function given the wrong type for this item
            except RecursionError:  # (a document deep enough to exhaust the evaluator)
                return None
        return True


class _TooDeep(Exception):
    def __init__(self, depth: int) -> None:
        super().__init__(depth)
        self.depth = depth


def _shown(match: str, most: int = 40) -> str:
    """The expression as a message quotes it: its start only when long."""
    return repr(match) if len(match) <= most else f"{match[:most]!r}… ({len(match)} characters)"


def _check_tree(root: Any) -> None:
    """Refuse now what JMESPath itself finds only when evaluating: an unknown function name,
    and a tree deeper than MAX_MATCH_DEPTH (its evaluator recurses once per level). A walk
    with a stack of its own, whatever the depth."""
    jp = _jmespath()
    known = jp.functions.Functions().FUNCTION_TABLE
    todo = [(root, 1)]
    while todo:
        node, depth = todo.pop()
        if not isinstance(node, dict):
            continue
        if depth > MAX_MATCH_DEPTH:
            raise _TooDeep(_depth(root))
        if node.get("type") == "function_expression" and node.get("value") not in known:
            raise jp.exceptions.UnknownFunctionError(f"unknown function {node.get('value')}()")
        todo.extend((child, depth + 1) for child in node.get("children", ()))


def _depth(root: Any) -> int:
    """Levels of a syntax tree, counted without recursion."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            todo.extend((child, depth + 1) for child in node.get("children", ()))
    return deepest


@dataclass
class FilterReport:
    """What a filtered scan saw and did."""

    queue: str
    state: str
    action: str
    scanned: int = 0  # items read and tested
    matched: int = 0
    not_json: int = 0  # payloads that are not JSON (never match --match)
    done: int = 0  # requeued or purged
    skipped: int = 0  # requeue: a live item of the target has the id: it stays dead
    skipped_ids: list[str] = field(default_factory=list)  # the first FILTER_SAMPLE of them
    changed: int = 0  # matched, but gone from that state when acted on: left alone
    dry_run: bool = False
    sample: list[str] = field(default_factory=list)  # the first matched ids


@dataclass
class Step:
    """One step of a scan: a page read, and what was done with its matches."""

    items: list[PeekedItem]  # peek: the matched items of the page
    ids: list[str]  # requeue/purge: the ids moved in this step (nothing in a dry run)


def scan(wq: WorkQueue, state: State, flt: ItemFilter, report: FilterReport, *,
         action: Action = "peek", to: WorkQueue | None = None, limit: int | None = None,
         rate: float | None = None, dry_run: bool = False, from_end: str = "head",
         now_ms: int | None = None, tenant: str | None = None,
         sleep: Callable[[float], None] = time.sleep) -> Iterator[Step]:
    """Walk ``state`` of ``wq`` page by page, yielding a :class:`Step` per page.

    ``peek``: the matched items, up to ``limit``. ``requeue`` (dead only, into ``to`` or
    back into ``wq``) and ``purge``: act on the matched ids, at most ``limit`` of them, at
    most ``rate`` per second; with ``dry_run`` only count them (``report.sample`` keeps the
    first few ids). ``report`` is filled in as the scan goes, so it is exact whenever the
    caller stops. Pending items are read from P:queue (the default tenant), then from each
    tenant's sub-queue (fair queues); ``tenant``: from that tenant's sub-queue only.
    ``sleep`` waits between steps for ``rate`` (before anything of the next step is done,
    so a caller may let Ctrl-C end it at once).
    """
    if hasattr(wq, "older"):  # a sharded queue: each of its shards in turn, one limit
        shards: list[WorkQueue] = getattr(wq, "shards")  # noqa: B009 (not WorkQueue's)
        for shard in shards:  # (``report`` goes on counting: the limit is the whole's)
            if limit is not None and _progress(report, action, dry_run) >= limit:
                return
            yield from scan(shard, state, flt, report, action=action, to=to, limit=limit,
                            rate=rate, dry_run=dry_run, from_end=from_end, now_ms=now_ms,
                            tenant=tenant, sleep=sleep)
        return
    if state not in _STATES:
        raise UsageError(f"state must be one of {', '.join(_STATES)}, not {state!r}")
    flt.check_state(state)
    if action == "requeue" and state != ItemState.DEAD.value:
        raise UsageError("requeue-dead moves dead items only")
    if limit is not None and limit < 0:
        raise ParameterError("limit", "cannot be negative")
    if rate is not None and not 0 < rate <= MAX_FILTER_RATE:
        raise ParameterError("rate", f"must be more than 0 and at most {MAX_FILTER_RATE} items "
                                     "per second")
    if action == "requeue":
        wq.requeue_dead([], to=to)  # checks the target (same server, same slot) up front
    report.dry_run = dry_run
    if action == "purge" and state in (ItemState.PENDING, ItemState.PROCESSING):
        from_end = "tail"  # lists by index from the left: purge_ids looks around it
    cutoff_s = None
    if flt.older_than is not None:
        now = now_ms if now_ms is not None else server_ms(wq.client)
        cutoff_s = (now - round(flt.older_than * 1000)) / 1000
    # dead items are sorted by time of death: from the head, past the cutoff none is older
    sorted_by_age = state == ItemState.DEAD.value and from_end == "head" and cutoff_s is not None
    chunk = FILTER_CHUNK if rate is None else max(1, min(FILTER_CHUNK, int(rate / 10)))
    started = time.monotonic()
    zset = state in (ItemState.DELAYED, ItemState.DEAD)

    def one_list(tenant: str | None) -> Iterator[Step]:
        """The scan of one list or set (pending: one tenant's sub-queue, None = P:queue)."""
        offset, cursor = 0, None
        while limit is None or _progress(report, action, dry_run) < limit:
            page = wq.peek(state, count=FILTER_PAGE + 1 if zset else FILTER_PAGE, offset=offset,
                           from_end=from_end, start_at=cursor, now_ms=now_ms, tenant=tenant)
            more = len(page) > FILTER_PAGE if zset else len(page) == FILTER_PAGE
            if zset:
                cursor = page[FILTER_PAGE].id if more else None
                page = page[:FILTER_PAGE]
            matched: list[tuple[int, PeekedItem]] = []
            past_cutoff = False
            for i, item in enumerate(page):
                if limit is not None and (
                        _progress(report, action, dry_run) + len(matched) >= limit):
                    # the limit is reached if every match is acted on: stop before this
                    # item, which the next page starts at if some were left alone after all
                    more, page = True, page[:i]
                    if zset:
                        cursor = item.id
                    break
                report.scanned += 1
                verdict = flt.test(item, cutoff_s)
                if verdict is None:
                    report.not_json += 1
                elif verdict:
                    matched.append((offset + i, item))
                elif sorted_by_age and item.dead_at is not None and (
                        item.dead_at > (cutoff_s or 0)):
                    past_cutoff = True
                    break
            report.matched += len(matched)
            room = FILTER_SAMPLE - len(report.sample)
            report.sample.extend(it.id for _, it in matched[:max(room, 0)])
            removed = 0
            if action == "peek":
                yield Step([it for _, it in matched], [])
            elif dry_run or not matched:
                yield Step([], [])
            else:
                for at in range(0, len(matched), chunk):
                    part = matched[at:at + chunk]
                    moved = _act(wq, state, action, to, part, report, now_ms, tenant)
                    removed += len(moved)
                    yield Step([], moved)
                    if rate is not None:
                        sleep(max(report.done / rate - (time.monotonic() - started), 0.0))
            if not more or past_cutoff:
                return
            offset += len(page) - removed

    # pending: P:queue (the default tenant), then each tenant's sub-queue (fair queues; the
    # tenants with work when the scan starts, one script call per BATCH of them)
    lists: list[str | None] = [None]
    if tenant is not None:
        lists = [tenant]  # (WorkQueue.peek refuses a tenant outside the pending state)
    elif state == ItemState.PENDING.value:
        lists.extend(wq.tenants()[1])
    for tenant in lists:
        if limit is not None and _progress(report, action, dry_run) >= limit:
            return
        yield from one_list(tenant)


def _progress(report: FilterReport, action: Action, dry_run: bool) -> int:
    """What ``limit`` counts: items moved, or matched (peek, dry runs)."""
    return report.matched if action == "peek" or dry_run else report.done


def _act(wq: WorkQueue, state: State, action: Action, to: WorkQueue | None,
         part: list[tuple[int, PeekedItem]], report: FilterReport,
         now_ms: int | None, tenant: str | None) -> list[str]:
    """Requeue or purge the ids of ``part``, each only if it is still in ``state`` (pending:
    in ``tenant``'s sub-queue, None = P:queue)."""
    ids = [it.id for _, it in part]
    if action == "requeue":
        done = wq.requeue_dead(ids, to=to, now_ms=now_ms)
        report.skipped += done.skipped
        room = max(FILTER_SAMPLE - len(report.skipped_ids), 0)
        report.skipped_ids.extend(done.skipped_ids[:room])
        report.changed += done.missing
        moved = done.ids
    else:
        indexes = [i for i, _ in part]
        moved = wq.purge_ids(state, ids, window=(min(indexes), max(indexes)), tenant=tenant)
        report.changed += len(ids) - len(moved)
    report.done += len(moved)
    return moved

