"""One queue in the console: a tab per state, the holders and the de-dup window, a page at a
time, with the filters of the CLI and the actions by key.

Reads run in worker threads and are drawn on the UI thread; a read that fails shows its
reason in the status line and is tried again at the next refresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static, Tab, Tabs
from textual.worker import get_current_worker

from ..core.codes import ItemState
from ..ops.filters import make_filter
from .asks import HOLDERS_TAB, AskingWorkers
from .item import ItemScreen
from .marks import Marking
from .model import ERRORS_TAB, TABS, Action, Actions, Browser, Page, failure, parse_filter
from .rows import TAB_COLUMNS, fit_rows, history_text, row_key
from .widgets import FOOTER_FIRST, CommandBar

if TYPE_CHECKING:
    from ..core.filtering import ItemFilter
    from ..ops.targets import Target

class QueueScreen(Marking, AskingWorkers, Screen[None]):
    """One queue: a tab per state, the holders and the de-dup window, a page at a time."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *FOOTER_FIRST,
        *(Binding(str(i + 1), f"tab('{tab}')", tab, show=False) for i, tab in enumerate(TABS)),
        Binding("right_square_bracket,tab", "step_tab(1)", "Next tab", show=False),
        Binding("left_square_bracket,shift+tab", "step_tab(-1)", "Prev tab", show=False),
        Binding("n", "page(1)", "Next page"), Binding("b", "page(-1)", "Prev page"),
        Binding("g", "first", "First", show=False), Binding("G", "last", "Last", show=False),
        Binding("slash,F", "filter", "Filter"),
        Binding("t", "tenant", "Tenant", show=False),
        Binding("space", "select", "Select", show=False),
        Binding("v", "mark_range", "Mark range", show=False),
        Binding("asterisk", "mark_matching", "Mark matching", show=False),
        Binding("u", "unmark", "Unmark", show=False),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("R", "requeue", "Requeue"), Binding("A", "requeue_all", "Requeue all"),
        Binding("X", "purge", "Purge"), Binding("x", "cancel", "Cancel"),
        Binding("e", "extend", "Extend", show=False),
        # p pauses/resumes everywhere (P, this screen's old key, too)
        Binding("p,P", "pause", "Pause/resume", show=False),
        Binding("C", "clean", "Clean", show=False),
        Binding("D", "ask_worker('drain')", "Drain"), Binding("S", "ask_worker('stop')", "Stop"),
    ]
    ACTIONS = frozenset({"requeue", "requeue_all", "purge", "cancel", "extend", "pause",
                         "clean", "ask_worker"})

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
        return max(5, self.app.size.height - 10)  # (less the head, tabs, history, footer)

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
            per_minute = self.history_or_none()
        except Exception as exc:  # the server went away, a bad key: shown, tried again
            self.app.call_from_thread(self.show_error, failure(exc, self.target.url))
            return
        self.app.call_from_thread(self.show_history, per_minute)
        self.app.call_from_thread(self.show, (tab, offset, flt, tenant), counts, tenants, page)

    def history_or_none(self) -> dict[str, list[float]]:
        """The history graph's figures; none where they cannot be read (a sharded queue's
        history is per shard): the page shows without them."""
        try:
            return self.browser.history()
        except Exception:
            return {}

    def show_history(self, per_minute: dict[str, list[float]]) -> None:
        self.query_one("#history", Static).update(history_text(per_minute, self.app.size.width))

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

    def ask(self, action: Action | None) -> None:
        """Confirm ``action``; once confirmed, the marks are cleared (they named rows of
        the view the action changed)."""
        if action is not None:
            self.app.ask(action, then=self.action_unmark)  # type: ignore[attr-defined]

    def on_dead_tab(self) -> bool:
        """True on the dead tab; else says that requeue moves dead items."""
        if self.tab != ItemState.DEAD:
            self.app.notify("requeue moves dead items: open the dead tab (4)",
                            severity="warning")
        return self.tab == ItemState.DEAD

    def group_action(self, make: Callable[[str, int], Action]) -> None:
        """Requeue or purge the dead error group under the cursor, counted first."""
        row = self.current()
        if row is None or row.state != ItemState.DEAD:
            self.app.notify("requeue and purge act on a dead group (retrying items are live)",
                            severity="warning")
            return
        key = row.key
        self.counted(ItemState.DEAD.value, lambda n: make(key, n),
                     make_filter(error_group=key))

    def action_requeue(self) -> None:
        if self.tab == ERRORS_TAB:
            self.group_action(self.actions.requeue_group)
            return
        ids = self.chosen() if self.on_dead_tab() else []
        if ids:
            self.ask(self.actions.requeue_ids(ids, self.marked_by if self.selected else ()))

    def action_requeue_all(self) -> None:
        if not self.on_dead_tab():
            return
        flt, argv = self.flt, self.flt_argv
        if flt is None:  # every dead item: at most the count per shard read now
            self.confirmed(ItemState.DEAD.value,
                           lambda caps: self.actions.requeue_matching(None, argv, caps))
        else:
            self.counted(ItemState.DEAD.value,
                         lambda n: self.actions.requeue_matching(flt, argv, n))

    def action_purge(self) -> None:
        if self.tab == ERRORS_TAB:
            self.group_action(self.actions.purge_group)
            return
        if self.tab not in TABS[:4]:
            return
        tab, flt, argv = self.tab, self.flt, self.flt_argv
        if flt is None:
            self.confirmed(tab, lambda caps: self.actions.purge_state(tab, caps))
        else:
            self.counted(tab, lambda n: self.actions.purge_matching(tab, flt, argv, n))

    @work(thread=True, group="count")
    def counted(self, state: str, make: Callable[[int], Action],
                flt: ItemFilter | None = None) -> None:
        """Count the items an action will touch (a dry run: ``flt``, else the view's
        filter), then ask."""
        flt = flt or self.flt
        try:
            n = (self.browser.counts()[state] if flt is None else
                 self.actions.count_matching(state, flt))
        except Exception as exc:
            self.app.call_from_thread(self.app.notify, failure(exc, self.target.url),
                                      severity="error")
            return
        if n == 0:
            self.app.call_from_thread(self.app.notify, "nothing matches: nothing to do")
            return
        self.app.call_from_thread(self.ask, make(n))

    @work(thread=True, group="count")
    def confirmed(self, state: str, make: Callable[[dict[str, int]], Action]) -> None:
        """Read how many items ``state`` holds (per shard), then ask: the action does at
        most what its question says (:meth:`Browser.confirmed`)."""
        try:
            caps = self.browser.confirmed(state)
        except Exception as exc:
            self.app.call_from_thread(self.app.notify, failure(exc, self.target.url),
                                      severity="error")
            return
        if not sum(caps.values()):
            self.app.call_from_thread(self.app.notify, f"no {state} items: nothing to do")
            return
        self.app.call_from_thread(self.ask, make(caps))

    def action_cancel(self) -> None:
        if self.tab not in TABS[:4] or self.tab == ItemState.DEAD:
            self.app.notify("cancel dead-letters live items: pending, processing or delayed",
                            severity="warning")
            return
        ids = self.chosen()
        if ids:
            self.ask(self.actions.cancel(ids))

    def action_extend(self, seconds: float | None = None) -> None:
        row = self.current()
        if self.tab != ItemState.PROCESSING or row is None:
            self.app.notify("extend a lease: a row of the processing tab", severity="warning")
            return
        lease = seconds or float(self.target.queue.options.lease_seconds)
        self.ask(self.actions.extend(row, lease))

    def action_pause(self) -> None:
        self.ask(self.actions.pause(not self.counts.get("paused")))  # (its end state)

    def action_clean(self) -> None:
        self.ask(self.actions.clean())

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
