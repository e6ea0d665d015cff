"""Marking rows of a queue's tab, the rows the actions act on (``R`` requeue, ``x``
cancel): one (``space``), a range (``v``: from the last one marked to the cursor), every
item matching the filter (``*``: the filtered scan, at most MARK_LIMIT ids kept), none
(``u``). Marks are cleared once an action is confirmed. A mixin of
:class:`~rq_cli.dash.queue_screen.QueueScreen`."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.widgets import DataTable

from ..console.actions import failure
from .rows import row_key

#: The most ids ``*`` marks (a larger set: act on the filter itself, ``A`` or ``X``).
MARK_LIMIT = 10_000
#: The tabs whose rows can be marked (items of a state).
UNMARKABLE = ("holders", "dedup", "errors")


class Marking:
    """The marking keys; the screen holds ``selected`` (the marked keys) and ``mark_anchor``
    (the last row marked, for a range)."""

    def _paint(self: Any) -> None:
        table = self.query_one(DataTable)
        page = self.page_
        for row in page.rows if page is not None else []:
            key = row_key(self.tab, row)
            mark = Text("●", style="bold yellow") if key in self.selected else " "
            table.update_cell(key, table.ordered_columns[0].key, mark)
        self.draw_status()

    def action_select(self: Any) -> None:
        row = self.current()
        if row is None or self.tab in UNMARKABLE:
            return
        key = row_key(self.tab, row)
        self.selected.symmetric_difference_update({key})
        self.marked_by = list[str]()
        self.mark_anchor = key if key in self.selected else None
        table = self.query_one(DataTable)
        self._paint()
        table.move_cursor(row=table.cursor_row + 1)

    def action_mark_range(self: Any) -> None:
        """Mark the rows from the last one marked (on this page; else its first row) to
        the cursor."""
        page, table = self.page_, self.query_one(DataTable)
        if page is None or not page.rows or self.tab in UNMARKABLE:
            return
        keys = [row_key(self.tab, row) for row in page.rows]
        start = keys.index(self.mark_anchor) if self.mark_anchor in keys else 0
        end = min(table.cursor_row, len(keys) - 1)
        low, high = sorted((start, end))
        self.selected.update(keys[low:high + 1])
        self.marked_by = list[str]()
        self._paint()

    def action_unmark(self: Any) -> None:
        self.selected.clear()
        self.mark_anchor = None
        self.marked_by = list[str]()
        self._paint()

    def action_mark_matching(self: Any) -> None:
        """Mark every item of the tab matching the filter (at most MARK_LIMIT)."""
        if self.tab in UNMARKABLE:
            return
        if self.flt is None:
            self.app.notify("* marks the items matching a filter: / sets one first",
                            severity="warning")
            return
        self.mark_matching(self.tab, self.flt, list(self.flt_argv), self.tenant)

    @work(thread=True, exclusive=True, group="marks")
    def mark_matching(self: Any, tab: str, flt: Any, argv: list[str],
                      tenant: str | None) -> None:
        try:
            ids, more = self.browser.matching_ids(tab, flt, tenant, limit=MARK_LIMIT)
        except Exception as exc:
            self.app.call_from_thread(self.app.notify, failure(exc, self.target.url),
                                      severity="error")
            return

        def marked() -> None:
            if (tab, flt) != (self.tab, self.flt):
                return  # the view moved on meanwhile
            alone = not (self.selected - set(ids))  # (no other row marked before)
            self.selected.update(ids)
            self.marked_by = argv if alone and not more and not tenant else []
            self._paint()
            if more:
                self.app.notify(f"marked the first {MARK_LIMIT:,} matching items; act on "
                                "all of them with A (requeue) or X (purge)",
                                severity="warning")
        self.app.call_from_thread(marked)
