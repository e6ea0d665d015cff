"""One queue in the console: a tab per state, the holders and the de-dup window, a page at a
time, with the filters of the CLI and the actions by key.

Reads run in worker threads and are drawn on the UI thread; a read that fails shows its
reason in the status line and is tried again at the next refresh.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static, Tab, Tabs
from textual.worker import get_current_worker

from ..console.actions import Actions, failure
from ..console.asks import HOLDERS_TAB
from ..console.model import ERRORS_TAB, TABS, Browser, Page, parse_filter
from ..core.codes import ItemState
from .acting import Acting
from .asking import AskingWorkers
from .graph import LINES, graph_text
from .item import ItemScreen
from .keymap import QUEUE, acting, bindings
from .marks import Marking
from .rows import TAB_COLUMNS, fit_rows, row_key
from .widgets import CommandBar

if TYPE_CHECKING:
    from ..console.chart import Chart
    from ..core.filtering import ItemFilter
    from ..ops.targets import Target

class QueueScreen(Marking, Acting, AskingWorkers, Screen[None]):
    """One queue: a tab per state, the holders and the de-dup window, a page at a time."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(QUEUE)  # type: ignore[assignment]
    ACTIONS = acting(QUEUE)  # (off read-only; each where its tab allows)

    def __init__(self, target: Target, cli_prefix: list[str], read_only: bool) -> None:
        super().__init__()
        self.target, self.read_only = target, read_only
        self.browser = Browser(target.name, target.queue)
        self.actions = Actions(target.name, target.queue, cli_prefix)
        self.tab: str = ItemState.DEAD.value
        self.start = 0
        self.counts: dict[str, int] = {}
        self.page_: Page | None = None
        self.flt: ItemFilter | None = None
        self.flt_argv: list[str] = []
        self.tenant: str | None = None
        self.tenant_list: list[str] = []
        self.selected: set[str] = set()  # the marked rows' keys (marks.py)
        self.mark_anchor: str | None = None  # the last row marked: where a range starts
        # the filter options whose every match ``*`` marked (and nothing else is): the
        # command line an action on the marks shows, rather than every id
        self.marked_by: list[str] = []
        self.error = ""
        self.widths: dict[str, int] | None = None
        # the filtered view's match count: (tab, filter, tenant), matched, finished
        self.matches: tuple[tuple[Any, ...], int, bool] | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in self.ACTIONS:
            return True
        if self.read_only:
            return False
        if action == "requeue":
            return self.tab in (ItemState.DEAD, ERRORS_TAB)
        if action == "requeue_all":
            return self.tab == ItemState.DEAD
        if action == "cancel":
            return self.tab in (ItemState.PENDING, ItemState.PROCESSING, ItemState.DELAYED)
        if action == "extend":
            return self.tab == ItemState.PROCESSING
        if action == "ask_worker":
            return self.tab == HOLDERS_TAB
        if action == "purge":
            return self.tab in (*TABS[:4], ERRORS_TAB)
        return True

    def compose(self) -> ComposeResult:
        yield Label("", id="head")
        tabs = Tabs(*(Tab(t, id=t) for t in TABS), active=self.tab)
        tabs.can_focus = False  # (keys go to the table; 1-6 and [ ] switch tabs)
        yield tabs
        yield DataTable(id="items", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history")
        yield Static("", id="status")
        yield CommandBar()
        yield Footer()

    def on_mount(self) -> None:
        self.set_columns()
        self.set_interval(self.app.interval, self.tick)  # type: ignore[attr-defined]
        self.query_one(DataTable).focus()
        self.action_refresh()

    @property
    def page_size(self) -> int:
        # (less the head, tabs, table header, status, footer and the history graph)
        return max(5, self.app.size.height - 7 - LINES)

    def set_columns(self, widths: dict[str, int] | None = None) -> None:
        """The tab's columns: those ``widths`` keeps, that wide (None: all, sized by
        their cells)."""
        table = self.query_one(DataTable)
        table.clear(columns=True)
        self.widths = widths
        for i, title in enumerate(TAB_COLUMNS[self.tab]):
            if widths is None or title in widths:
                table.add_column(title, key=f"c{i}",
                                 width=None if widths is None else widths[title])

    def on_resize(self) -> None:
        if self.page_ is not None:
            self.draw_rows()

    # -- reading --------------------------------------------------------------------------
    def action_refresh(self) -> None:
        """Read the page again, and count a filter's matches again (``r``, after an
        action)."""
        self.matches = None
        self.reload()

    def tick(self) -> None:
        """Each interval: the page again, but the error groups only on ``r``, when opened
        and after an action (grouping reads every dead and retrying item)."""
        if self.tab != ERRORS_TAB or self.page_ is None:
            self.reload()

    def reload(self) -> None:
        """Read the page again (each interval)."""
        self.load(self.tab, self.start, self.page_size, self.flt, self.tenant)

    @work(thread=True, exclusive=True, group="matches")
    def count_matches(self, view: tuple[Any, ...]) -> None:
        """Count the filtered view's matches as the scan goes (a bounded read a page),
        shown as "N+ so far" until done; left when the view changes."""
        tab, flt, tenant = view
        worker = get_current_worker()
        shown = [0.0]

        def progress(matched: int, _scanned: int) -> None:
            if time.monotonic() - shown[0] > 0.2:
                shown[0] = time.monotonic()
                self.app.call_from_thread(self.show_matches, view, matched, False)
        try:
            matched, done = self.browser.count_matches(
                tab, flt, tenant, progress=progress,
                stop=lambda: worker.is_cancelled or self.matches is None
                or self.matches[0] != view)
        except Exception:  # (the page's own read says what is wrong)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self.show_matches, view, matched, done)

    def show_matches(self, view: tuple[Any, ...], matched: int, done: bool) -> None:
        if self.matches is not None and self.matches[0] == view:
            self.matches = (view, matched, done)
            self.draw_status()

    @work(thread=True, exclusive=True, group="queue")
    def load(self, tab: str, offset: int, count: int, flt: ItemFilter | None,
             tenant: str | None) -> None:
        try:
            counts = self.browser.counts()
            tenants = self.browser.tenants() if counts.get("tenants") else []
            page = self.browser.page(tab, offset, count, total=self.browser.total(tab, counts),
                                     flt=flt, tenant=tenant)
            history = self.history_or_none()
        except Exception as exc:  # the server went away, a bad key: shown, tried again
            self.app.call_from_thread(self.show_error, failure(exc, self.target.url))
            return
        self.app.call_from_thread(self.show_history, history)
        self.app.call_from_thread(self.show, (tab, offset, flt, tenant), counts, tenants, page)

    def history_or_none(self) -> Chart | None:
        """The history graph's chart; None where it cannot be read: the page shows
        without it."""
        try:
            return self.browser.history()
        except Exception:
            return None

    def show_history(self, history: Chart | None) -> None:
        self.query_one("#history", Static).update(graph_text(history, self.app.size.width))

    def show_error(self, reason: str) -> None:
        self.error = reason
        self.draw_status()

    def show(self, view: tuple[Any, ...], counts: dict[str, int], tenants: list[str],
             page: Page) -> None:
        if view != (self.tab, self.start, self.flt, self.tenant):
            return  # a read for a tab, page or filter left meanwhile
        if not page.rows and page.total is not None and 0 < page.total <= self.start:
            self.go(start=max(0, page.total - self.page_size))  # the items left: back a page
            return
        tab = self.tab
        self.error = ""
        self.counts, self.tenant_list, self.page_ = counts, tenants, page
        view = (tab, self.flt, self.tenant)
        if self.flt is not None and (self.matches is None or self.matches[0] != view):
            self.matches = (view, 0, False)
            self.count_matches(view)
        self.draw_rows()
        self.draw_status()

    def draw_rows(self) -> None:
        """The page's rows, the columns fitted to the terminal's width (errors and data get
        the room; the less useful columns go first)."""
        page, tab = self.page_, self.tab
        if page is None:
            return
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        now = self.app.clock()  # type: ignore[attr-defined]
        # (the table's width less its vertical scroll bar)
        widths, rows = fit_rows(tab, page.rows, self.selected, now, self.app.size.width - 2)
        if widths != self.widths:
            self.set_columns(widths)
        else:
            table.clear()
        for key, cells in rows:
            table.add_row(*cells, key=key)
        if page.rows:
            table.move_cursor(row=min(cursor, len(page.rows) - 1))

    def draw_status(self) -> None:
        c = self.counts
        paused = " · PAUSED" if c.get("paused") else ""
        if c.get("limits"):  # (fleet-wide limits: rq-cli limit shows them)
            paused += " · limits"
        ro = " · read-only" if self.read_only else ""
        self.query_one("#head", Label).update(Text(
            f"{self.target.name} · pending {c.get('pending', '-'):,} · processing "
            f"{c.get('processing', '-'):,} · delayed {c.get('delayed', '-'):,} · dead "
            f"{c.get('dead', '-'):,}{paused}{ro}" if c else f"{self.target.name}{ro}"))
        parts: list[Text] = []
        if self.error:
            parts.append(Text("error: " + self.error, style="bold red"))
        page = self.page_
        if page is not None:
            shown = len(page.rows)
            where = (f"{page.offset + 1:,}-{page.offset + shown:,}" if shown else "none")
            of = f" of {page.total:,}" if page.total is not None else (
                " (more)" if page.more else "")
            matches = self.matches
            if self.flt is not None and matches is not None \
                    and matches[0] == (self.tab, self.flt, self.tenant):
                _, n, done = matches
                of = f" of {n:,} matching" if done else f" of {n:,}+ matching so far"
            line = f"{self.tab}: {where}{of}"
            if self.flt is not None:
                line += " · filter " + " ".join(self.flt_argv)
            if self.tab == ItemState.PENDING and (self.tenant or self.tenant_list):
                line += f" · tenant {self.tenant or '(default)'} (t: next)"
            if self.selected:
                line += f" · {len(self.selected)} selected"
            parts.append(Text(line))
        self.query_one("#status", Static).update(Text("\n").join(parts))

    # -- moving ---------------------------------------------------------------------------
    def go(self, tab: str | None = None, start: int | None = None) -> None:
        if tab is not None and tab != self.tab:
            self.tab, self.start, self.page_ = tab, 0, None
            self.selected.clear()
            self.marked_by = []
            if tab in ("holders", "dedup", ERRORS_TAB):
                self.flt, self.flt_argv = None, []
            self.query_one(Tabs).active = tab
            self.set_columns()
            self.query_one(DataTable).focus()
            self.refresh_bindings()
        if start is not None:
            self.start = max(0, start)
        self.reload()

    @on(Tabs.TabActivated)
    def tab_clicked(self, event: Tabs.TabActivated) -> None:
        if event.tab.id and event.tab.id != self.tab:
            self.go(tab=event.tab.id)

    def action_tab(self, tab: str) -> None:
        self.go(tab=tab)

    def action_step_tab(self, step: int) -> None:
        self.go(tab=TABS[(TABS.index(self.tab) + step) % len(TABS)])

    def action_page(self, step: int) -> None:
        page = self.page_
        if step > 0 and (page is None or not page.more):
            return
        self.go(start=self.start + step * self.page_size)

    def action_first(self) -> None:
        self.go(start=0)

    def action_last(self) -> None:
        total = self.page_.total if self.page_ else None
        if total is None:
            self.app.notify("the last page of a filtered view is not known: n pages on")
            return
        self.go(start=max(0, total - self.page_size))

    def action_tenant(self) -> None:
        if self.tab != ItemState.PENDING or not self.tenant_list:
            return
        order: list[str | None] = [None, *self.tenant_list]
        i = order.index(self.tenant) if self.tenant in order else 0
        self.tenant = order[(i + 1) % len(order)]
        self.go(start=0)

    def action_filter(self) -> None:
        if self.tab in ("holders", "dedup", ERRORS_TAB):
            self.app.notify("holders, dedup and errors have no filter", severity="warning")
            return
        self.query_one(CommandBar).open("/", " ".join(self.flt_argv))

    def set_filter(self, text: str) -> None:
        try:
            flt, argv = parse_filter(text)
            if flt is not None:
                flt.check_state(self.tab)
        except Exception as exc:  # a bad expression: said, the old filter stays
            self.app.notify(failure(exc, self.target.url), severity="error")
            return
        self.flt, self.flt_argv = flt, argv
        self.go(start=0)

    def on_command_bar_done(self, message: CommandBar.Done) -> None:
        if message.kind == "/":
            self.set_filter(message.text)
        else:
            self.app.run_command(message.text, self)  # type: ignore[attr-defined]

    # -- items ----------------------------------------------------------------------------
    def current(self) -> Any:
        page, table = self.page_, self.query_one(DataTable)
        if page is None or not page.rows or table.cursor_row >= len(page.rows):
            return None
        return page.rows[table.cursor_row]

    @on(DataTable.RowSelected)
    def open_item(self) -> None:
        row = self.current()
        if row is None or self.tab == HOLDERS_TAB:  # (D and S ask its worker)
            return
        if self.tab == ERRORS_TAB:  # the group's dead items
            if row.state == ItemState.DEAD:
                self.go(tab=ItemState.DEAD.value)
                self.set_filter(f"--error-group {row.key}")
            return
        item_id = row_key(self.tab, row)
        if self.tab == "dedup":
            self.app.notify(f"{item_id} is remembered, not stored: push refuses it until "
                            "it is forgotten")
            return
        self.app.push_screen(ItemScreen(self.target, item_id, self.browser, self.actions,
                                        self.read_only))

    def chosen(self) -> list[str]:
        if self.selected:
            return sorted(self.selected)
        row = self.current()
        return [] if row is None else [row_key(self.tab, row)]

    def command(self, verb: str, rest: str) -> bool:
        """The ``:`` commands of this screen; False for one it does not know."""
        if verb == "filter":
            self.set_filter(rest)
        elif verb == "requeue":
            if rest:
                self.set_filter(rest)
            self.action_requeue_all()
        elif verb == "purge":
            self.action_purge()
        elif verb in ("pause", "resume"):
            if self.read_only:
                self.app.notify("read-only: actions are off", severity="warning")
            else:
                self.ask(self.actions.pause(verb == "pause"))
        elif verb == "clean":
            self.action_clean()
        elif verb == "extend":
            try:
                self.action_extend(float(rest) if rest else None)
            except ValueError:
                self.app.notify("extend SECONDS: a number", severity="error")
        elif verb in TABS:
            self.go(tab=verb)
        else:
            return False
        return True
