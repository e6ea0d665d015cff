"""What the console shows and does, without Textual: the overview's rows and their history,
one queue's items a page at a time, and the actions, each the same core call as the CLI's
command and with that command's line.

Every read is one of the bounded reads the CLI makes (``stats``, ``peek``, ``holders``,
``dedup``), so the console never blocks the server, and only the page on screen is kept:
memory stays flat however long the queue. Errors of the server are the caller's to show.
"""

from __future__ import annotations

import shlex
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..connection.urls import mask_url
from ..core import history
from ..core.codes import STATES, ItemState
from ..core.contract.counts import AGE, COUNTS
from ..core.errgroups import group_errors
from ..core.filtering import FilterReport, ItemFilter, scan
from ..core.fleet.many import run_each
from ..errors import UsageError
from ..ops.filters import FILTER_FLAGS, make_filter
from ..ops.polling import Poller
from ..ops.scrub import Secrets
from .chart import Chart, chart
from .dataview import DATA_SHOWN as DATA_SHOWN  # (re-exported: model.py's public names)
from .dataview import data_view as data_view
from .servers import Memory, Outage
from .servers import mib as mib

if TYPE_CHECKING:
    from ..core.queue import WorkQueue
    from ..core.reports import PeekedItem
    from ..ops.targets import Target

#: The tabs of a queue: its four states, then who holds the processing items, then the
#: de-dup window, then the dead and retrying items grouped by their error.
TABS = (*STATES, "holders", "dedup", "errors")
#: The tab of error groups (``rq-cli errors``).
ERRORS_TAB = "errors"
#: Seconds between the console's history snapshots (the history is per minute).
HISTORY_EVERY = 60.0
#: Readings kept per queue for the sparklines (at the default 2 s: four minutes).
HISTORY = 120
_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None], width: int, top: float | None = None) -> str:
    """The last ``width`` values as block characters, scaled to ``top`` (None: their
    maximum); a missing value (the queue could not be read) is a space."""
    shown = list(values)[-width:] if width > 0 else []
    if top is None:
        top = max((v for v in shown if v is not None), default=0)
    top = top or 1
    return "".join(" " if v is None else _BLOCKS[min(7, int(v / top * 7.999))]
                   for v in shown)


class Overview:
    """Every queue's stats, read each poll, with rates and a short history of each queue's
    depth (pending + delayed) and throughput (completions per second)."""

    def __init__(self, st: Secrets | None, targets: Sequence[Target],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.targets = list(targets)
        self.poller = Poller(st, self.targets)
        self.clock = clock
        self.snapshot_at: float | None = None  # (clock) when the history was last snapshotted
        self.memory: list[Memory] = []  # each server's memory, read each poll
        self.depth: dict[str, deque[float | None]] = {}
        self.done: dict[str, deque[float | None]] = {}

    def poll(self) -> list[dict[str, Any]]:
        rows = self.poller.poll()
        self.snapshot_history()
        self.memory = self.read_memory()
        for row in rows:
            name = str(row["queue"])
            depth = self.depth.setdefault(name, deque(maxlen=HISTORY))
            done = self.done.setdefault(name, deque(maxlen=HISTORY))
            if "error" in row:
                depth.append(None)
                done.append(None)
            else:
                depth.append(float(row.get("pending") or 0) + float(row.get("delayed") or 0))
                done.append((row.get("rates") or {}).get("completed"))
        return rows

    def snapshot_history(self) -> int:
        """Snapshot each queue's counters into its history (``stats --history``), at most
        once a minute however often the console refreshes (one script call a queue; the
        first writer of a minute wins, so other consoles, workers and ``clean`` add
        nothing). How many queues were snapshotted; a queue that cannot be read is left."""
        now = self.clock()
        if self.snapshot_at is not None and now - self.snapshot_at < HISTORY_EVERY:
            return 0
        self.snapshot_at = now
        got = run_each([t.queue for t in self.targets], "history", history.snapshot)
        return sum(not isinstance(g, Exception) for g in got)  # (one round trip a server)

    def read_memory(self) -> list[Memory]:
        """Each server's memory and ``maxmemory`` (``INFO memory``, one call a server); a
        server that cannot be read (or a cluster) is left out."""
        out: list[Memory] = []
        seen: set[str] = set()
        for target in self.targets:
            server = mask_url(target.url)
            client = getattr(target.queue, "client", None)
            if server in seen or client is None:
                continue
            seen.add(server)
            try:
                info = client.info("memory")
                out.append(Memory(server, int(info["used_memory"]),
                                  int(info.get("maxmemory") or 0)))
            except Exception:
                continue
        return out

    def target(self, name: str) -> Target | None:
        return next((t for t in self.targets if t.name == name), None)

    def trend_top(self, width: int) -> float:
        """The largest depth in the last ``width`` readings of any queue: the one scale of
        every queue's trend, so 2 items and 5,000 do not look alike."""
        return max((v for depth in self.depth.values() for v in list(depth)[-width:]
                    if v is not None), default=0.0)

    def outages(self, rows: Sequence[dict[str, Any]]) -> list[Outage]:
        """The rows that could not be read, one per server and error (an outage is one
        line, not one per queue), in the order first seen."""
        found: dict[tuple[str, str], Outage] = {}
        for row in rows:
            if "error" not in row:
                continue
            name = str(row.get("queue"))
            target = self.target(name)
            server = mask_url(target.url) if target is not None else ""
            got = found.setdefault((server, str(row["error"])),
                                   Outage(server, str(row["error"]), []))
            got.queues.append(name)
        return list(found.values())


# -- filters ---------------------------------------------------------------------------------
def parse_filter(text: str) -> tuple[ItemFilter | None, list[str]]:
    """A filter typed in the console: the CLI's filter options (``--match EXPR --error
    REGEX --reason R --older-than S --min-attempts N``), or a bare JMESPath expression
    (``user == 'u-7'``, as ``--match``). Returns the compiled filter (None for empty text)
    and the options as the CLI takes them. A bad expression raises UsageError."""
    text = text.strip()
    if not text:
        return None, []
    if not text.startswith("--"):
        words = ["--match", text]
    else:
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise UsageError(f"cannot read the filter: {exc}") from None
    found: dict[str, Any] = {}
    argv: list[str] = []
    i = 0
    while i < len(words):
        option = words[i]
        if option not in FILTER_FLAGS:
            raise UsageError(f"unknown filter option {option!r}: use "
                             f"{', '.join(FILTER_FLAGS)}")
        if i + 1 >= len(words):
            raise UsageError(f"{option} needs a value")
        value: Any = words[i + 1]
        key = FILTER_FLAGS[option]
        try:
            if key == "older_than":
                value = float(value)
            elif key == "min_attempts":
                value = int(value)
        except ValueError:
            raise UsageError(f"{option} needs a number, not {value!r}") from None
        if key == "reasons":
            found.setdefault("reasons", []).append(value)
        else:
            found[key] = value
        argv += [option, words[i + 1]]
        i += 2
    return make_filter(**found), argv


# -- one queue ------------------------------------------------------------------------------
@dataclass
class Page:
    """Items of one tab from ``offset`` (0: the head), and how many there are in all
    (None: not known, a filtered view)."""

    rows: list[Any]
    offset: int
    total: int | None
    more: bool


class Browser:
    """One queue's tabs, a page at a time."""

    def __init__(self, name: str, wq: WorkQueue) -> None:
        self.name, self.wq = name, wq

    def counts(self) -> dict[str, int]:
        """Its counts but the age (core/contract/counts.py): items per state, whether it is paused
        (1 or 0), how many tenants have work (one round trip)."""
        s = self.wq.stats()
        return {c.name: int(getattr(s, c.name)) for c in COUNTS if c.kind != AGE}

    def confirmed(self, state: str) -> dict[str, int]:
        """The items of ``state`` per shard prefix (a plain queue: its one prefix), read now:
        what a purge or requeue of the whole state confirms, and then does at most
        (:meth:`Actions.purge_state`). A shard that cannot be read counts 0 (left alone)."""
        shard_stats = getattr(self.wq, "shard_stats", None)
        if shard_stats is None:
            return {self.wq.prefix: int(getattr(self.wq.stats(), state))}
        return {prefix: int(getattr(st, state)) if st is not None else 0
                for prefix, _live, st, _error in shard_stats()}

    def tenants(self) -> list[str]:
        """The tenants that have pending items (fair queues), largest first."""
        _, depths = self.wq.tenants()
        return sorted(depths, key=lambda t: -depths[t])

    @staticmethod
    def total(tab: str, counts: dict[str, int]) -> int | None:
        """How many items the list of ``tab`` holds, from :meth:`counts`, for :meth:`page`:
        None where not known (the pending tab of a fair queue: its default tenant's list
        holds only some of them)."""
        if tab == ItemState.PENDING and counts.get("tenants"):
            return None
        return counts.get(tab) if tab in STATES else None

    def page(self, tab: str, offset: int, count: int, *, total: int | None = None,
             flt: ItemFilter | None = None, tenant: str | None = None) -> Page:
        """``count`` rows of ``tab`` from ``offset``; ``total``: :meth:`total`. A list's far
        half is read from its other end, so any page of a list of millions costs the server
        about the same."""
        if tab == "holders":
            holders = self.wq.holders()
            return Page(holders[offset:offset + count], offset, len(holders),
                        offset + count < len(holders))
        if tab == "dedup":
            _, remembered, ids = self.wq.dedup_ids(offset + count)
            return Page(ids[offset:offset + count], offset, remembered,
                        offset + count < remembered)
        if tab == ERRORS_TAB:  # (every dead and retrying item read: see group_errors)
            groups = group_errors(self.wq).groups
            return Page(groups[offset:offset + count], offset, len(groups),
                        offset + count < len(groups))
        if tab not in STATES:
            raise UsageError(f"no such tab: {tab}")
        state: Any = tab
        if flt is not None:
            rows = self._filtered(state, flt, offset, count + 1, tenant)
            return Page(rows[:count], offset, None, len(rows) > count)
        if total is not None and tab in (ItemState.PENDING, ItemState.PROCESSING) \
                and tenant is None and offset + count > total // 2 and offset < total:
            # the far half of a list: from its tail, then in head order
            n = min(count, total - offset)
            rows = self.wq.peek(state, count=n, offset=total - offset - n, from_end="tail")
            rows.reverse()
        else:
            rows = self.wq.peek(state, count=count, offset=offset, tenant=tenant)
        more = offset + len(rows) < total if total is not None else len(rows) == count
        return Page(rows, offset, total, more)

    def _filtered(self, state: Any, flt: ItemFilter, offset: int, count: int,
                  tenant: str | None) -> list[PeekedItem]:
        """The matched items ``offset`` to ``offset + count`` of a filtered scan (run from
        the start: only that page is kept)."""
        report = FilterReport(queue=self.name, state=state, action="peek")
        seen: list[PeekedItem] = []
        index = 0
        for step in scan(self.wq, state, flt, report, action="peek", limit=offset + count,
                         tenant=tenant):
            for item in step.items:
                if index >= offset:
                    seen.append(item)
                index += 1
        return seen[:count]

    def matching_ids(self, state: str, flt: ItemFilter, tenant: str | None = None, *,
                     limit: int) -> tuple[list[str], bool]:
        """The ids of the first ``limit`` items of ``state`` matching ``flt`` (the filtered
        scan, bounded pages), and whether more match."""
        report = FilterReport(queue=self.name, state=state, action="peek")
        ids: list[str] = []
        for step in scan(self.wq, state, flt, report, action="peek",  # type: ignore[arg-type]
                         limit=limit + 1, tenant=tenant):
            ids.extend(item.id for item in step.items)
        return ids[:limit], len(ids) > limit

    def count_matches(self, state: str, flt: ItemFilter, tenant: str | None = None, *,
                      stop: Callable[[], bool] = lambda: False,
                      progress: Callable[[int, int], None] | None = None) -> tuple[int, bool]:
        """How many items of ``state`` match ``flt``: the filtered scan run to its end, a
        page (bounded read) at a time, nothing kept but the count. ``progress(matched,
        scanned)`` after each page; ``stop()`` True ends it early. Returns (matched,
        finished): not finished, the count is a lower bound ("N+ so far")."""
        report = FilterReport(queue=self.name, state=state, action="peek")
        for _ in scan(self.wq, state, flt, report, action="peek",  # type: ignore[arg-type]
                      tenant=tenant):
            if progress is not None:
                progress(report.matched, report.scanned)
            if stop():
                return report.matched, False
        return report.matched, True

    def history(self, minutes: int = 60) -> Chart:
        """The history of the last ``minutes``, per minute, as a chart (both consoles draw
        it); an empty chart before the first snapshot."""
        return chart(history.read_history(self.wq, minutes * 60, hourly=False))

    def item(self, item_id: str) -> PeekedItem | None:
        return self.wq.item(item_id)

    def batches(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` batches of the queue (``rq-cli batch``'s lines: one bounded
        read per batch), newest first, each with ``finished_pct``: the share of its items
        completed or dead (None: it has none). Both consoles show these rows."""
        from ..core.operations.batchops import listed

        return [{**row, "finished_pct": (row["completed"] + row["dead"]) * 100 // row["total"]
                 if row["total"] else None} for row in listed(self.wq, limit)]
