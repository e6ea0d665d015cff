"""The console (Textual): the overview of every queue, and the app that holds the screens.

Reads run in worker threads (a server that is down or slow never freezes the keyboard);
what they read is drawn on the UI thread. Every key is listed by ``?``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from ..console.actions import Actions, run_action
from ..console.model import Overview, sparkline
from ..core.contract.counts import SORTS, WATCHED, column_kind
from ..ops.polling import sort_rows
from ..output.render import human
from .keymap import APP, OVERVIEW, acting, bindings
from .queue_screen import QueueScreen
from .widgets import CommandBar, ConfirmScreen, HelpScreen

if TYPE_CHECKING:
    from ..console.actions import Action
    from ..ops.scrub import Secrets
    from ..ops.targets import Target

#: The overview's columns: (key of the stats row, title, kind for ``human``).
COLUMNS = (("queue", "queue", "text"),
           *((c.name, c.watch or c.name, column_kind(c)) for c in WATCHED),
           ("done", "done/s", "rate"), ("trend", "trend", "text"))
TREND_WIDTH = 6
PAUSED = " (paused)"  # after a paused queue's name


class OverviewScreen(Screen[None]):
    """Every queue: depths, oldest age, throughput, a trend of the depth; the selected
    queue's throughput and depth as sparklines under the table."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(OVERVIEW)  # type: ignore[assignment]
    ACTIONS = acting(OVERVIEW)  # (off read-only)

    def __init__(self, overview: Overview) -> None:
        super().__init__()
        self.overview = overview
        self.rows: list[dict[str, Any]] = []
        self.sort = "given"
        self.find = ""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action in self.ACTIONS and self.app.read_only)  # type: ignore[attr-defined]

    def compose(self) -> ComposeResult:
        yield Label("", id="title")
        yield DataTable(id="queues", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="sparks"):
            with Vertical():
                yield Label("done/s", id="done-label")
                yield Static("", id="done-spark")
            with Vertical():
                yield Label("depth", id="depth-label")
                yield Static("", id="depth-spark")
        yield Static("", id="notes")
        yield CommandBar()
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # the names' column as wide as the names (a paused one's too): it does not jump
        names = [t.name for t in self.overview.targets]
        name_width = max([5, *(len(n) + len(PAUSED) for n in names)])
        for key, title, _ in COLUMNS:
            table.add_column(title, key=key, width=name_width if key == "queue" else None)
        self.set_interval(self.app.interval, self.action_refresh)  # type: ignore[attr-defined]
        self.action_refresh()

    def action_refresh(self) -> None:
        self.poll()

    @work(thread=True, exclusive=True, group="overview")
    def poll(self) -> None:
        rows = self.overview.poll()
        self.app.call_from_thread(self.show, rows)

    def shown_rows(self) -> list[dict[str, Any]]:
        rows = [r for r in self.rows if self.find.lower() in str(r.get("queue")).lower()]
        return sort_rows(rows, self.sort)

    def show(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        table = self.query_one(DataTable)
        selected = self.selected()
        table.clear()
        shown = self.shown_rows()
        for row in shown:
            name = str(row.get("queue"))
            table.add_row(*self.cells(row), key=name)
        if selected is not None:
            for i, row in enumerate(shown):
                if str(row.get("queue")) == selected:
                    table.move_cursor(row=i)
        paused = [str(r["queue"]) for r in rows if r.get("paused")]
        notes = [Text("error: " + outage.said(), style="bold red")
                 for outage in self.overview.outages(rows)]
        for memory in self.overview.memory:
            notes.append(Text("memory: " + memory.said(),
                              style="bold red" if memory.low else ""))
        if paused:
            notes.append(Text("paused: " + ", ".join(paused), style="yellow"))
        if not rows:
            notes.append(Text("no queues: name some, configure some, or push to one"))
        self.query_one("#notes", Static).update(Text("\n").join(notes))
        ro = " · read-only" if self.app.read_only else ""  # type: ignore[attr-defined]
        top = self.overview.trend_top(TREND_WIDTH)
        self.query_one("#title", Label).update(Text(
            f"rq-cli dash · {len(rows)} queue{'' if len(rows) == 1 else 's'} · sort {self.sort}"
            f"{' · find ' + repr(self.find) if self.find else ''}{ro}"
            f" · {f'trend 0-{int(top):,} (one scale)' if top else 'trends empty'} · ? help"))
        self.draw_sparks()

    def cells(self, row: dict[str, Any]) -> list[Any]:
        name = str(row.get("queue"))
        if "error" in row:
            return [Text(name, style="bold red"), Text("error", style="bold red"),
                    *["-"] * (len(COLUMNS) - 3),
                    sparkline(self.overview.depth.get(name, []), TREND_WIDTH,
                              self.overview.trend_top(TREND_WIDTH))]
        out: list[Any] = []
        for key, _, kind in COLUMNS:
            if key == "queue":
                out.append(Text(name + (PAUSED if row.get("paused") else ""),
                                style="yellow" if row.get("paused") else ""))
            elif key == "done":
                rate = (row.get("rates") or {}).get("completed")
                out.append("-" if rate is None else f"{rate:.1f}")
            elif key == "trend":
                out.append(sparkline(self.overview.depth.get(name, []), TREND_WIDTH,
                                     self.overview.trend_top(TREND_WIDTH)))
            else:
                value = human(row.get(key), kind)
                out.append(Text(value, justify="right",
                                style="bold red" if key == "dead" and row.get(key) else ""))
        return out

    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        except Exception:  # (an empty or redrawn table)
            return None
        return None if key.value is None else str(key.value)

    @on(DataTable.RowHighlighted)
    def draw_sparks(self) -> None:
        name = self.selected()
        if name is None:
            return
        done = list(self.overview.done.get(name, []))
        depth = list(self.overview.depth.get(name, []))
        for key, values in (("done", done), ("depth", depth)):
            spark = self.query_one(f"#{key}-spark", Static)
            spark.update(Text(sparkline(values, max(spark.size.width, 10)), style="green"))
        last_done = done[-1] if done else None
        last_depth = depth[-1] if depth else None
        self.query_one("#done-label", Label).update(
            f"{name} done/s (now {'-' if last_done is None else f'{last_done:.1f}'})")
        self.query_one("#depth-label", Label).update(
            f"{name} depth (now {'-' if last_depth is None else f'{int(last_depth):,}'})")

    @on(DataTable.RowSelected)
    def action_open(self) -> None:
        name = self.selected()
        target = self.overview.target(name) if name else None
        if target is not None:
            self.app.push_screen(QueueScreen(target, self.app.cli_prefix,  # type: ignore[attr-defined]
                                             self.app.read_only))  # type: ignore[attr-defined]

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.show(self.rows)

    def action_search(self) -> None:
        self.query_one(CommandBar).open("/", self.find)

    def on_command_bar_done(self, message: CommandBar.Done) -> None:
        if message.kind == "/":
            self.find = message.text
            self.show(self.rows)
        else:
            self.app.run_command(message.text, self)  # type: ignore[attr-defined]

    def current_actions(self) -> Any:
        name = self.selected()
        target = self.overview.target(name) if name else None
        if target is None:
            return None
        return Actions(target.name, target.queue, self.app.cli_prefix)  # type: ignore[attr-defined]

    def action_pause(self) -> None:
        actions = self.current_actions()
        row = next((r for r in self.rows if str(r.get("queue")) == self.selected()), None)
        if actions is not None and row is not None and "error" not in row:
            # the end state named now, from what the row shows: not a toggle decided later
            self.app.ask(actions.pause(not row.get("paused")),  # type: ignore[attr-defined]
                         queue=actions.wq)

    def action_clean(self) -> None:
        actions = self.current_actions()
        if actions is not None:
            self.app.ask(actions.clean(), queue=actions.wq)  # type: ignore[attr-defined]


class DashApp(App[int]):
    """``rq-cli dash``."""

    TITLE = "rq-cli dash"
    # the styles of the overview, the screens and the widgets (.tcss files beside this one)
    CSS_PATH: ClassVar[list[str | PurePath]] = [
        "app.tcss", "queue_screen.tcss", "item.tcss", "widgets.tcss"]
    BINDINGS: ClassVar[list[BindingType]] = bindings(APP)  # type: ignore[assignment]

    def __init__(self, st: Secrets | None, targets: Sequence[Target], *, read_only: bool = False,
                 interval: float = 2.0, cli_prefix: Sequence[str] = (),
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.clock = clock  # "now" for ages and deadlines on screen (tests fix it)
        self.st = st
        self.overview = Overview(st, targets)
        self.read_only = read_only
        self.interval = interval
        self.cli_prefix = list(cli_prefix)
        self.done_log: list[str] = []  # what the actions did: their command lines and results
        self.said: list[str] = []  # every message shown (errors, results)

    def on_mount(self) -> None:
        self.push_screen(OverviewScreen(self.overview))

    def notify(self, message: str, **kwargs: Any) -> None:
        """Textual's toast, and the message kept in ``said`` (the session's messages): text,
        never markup (a result or an error may quote an item's data)."""
        self.said.append(message)
        kwargs.setdefault("markup", False)
        super().notify(message, **kwargs)

    def action_quit_or_back(self) -> None:
        if len(self.screen_stack) > 2:
            self.pop_screen()
        else:
            self.exit(0)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.read_only))

    def action_command(self) -> None:
        bars = self.screen.query(CommandBar)
        if bars:
            bars.first().open(":", "")

    def ask(self, action: Action, then: Callable[[], None] | None = None,
            queue: Any = None) -> None:
        """Confirm ``action`` (its question, its command line), then run it in a thread;
        ``then()`` once it is confirmed. ``queue``: the one it acts on, whose audit trail
        records it (core/operations/audit.py)."""
        if self.read_only:
            self.notify("read-only: actions are off", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                if then is not None:
                    then()
                self.perform(action, queue)
        self.push_screen(ConfirmScreen(action), answered)

    @work(thread=True, group="actions")
    def perform(self, action: Action, queue: Any = None) -> None:
        from ..core.operations.audit import local_by, trail

        with trail(queue, action.cli, lambda: local_by("dash")):  # (queue None: not kept)
            result = run_action(action, self.overview.targets[0].url if self.overview.targets
                                else "")
        self.done_log.append(f"{action.cli}  ->  {result}")
        self.call_from_thread(self.notify, f"{result}\n{action.cli}", timeout=8,
                              severity="error" if result.startswith("failed") else
                              "information")
        self.call_from_thread(self.refresh_screens)

    def refresh_screens(self) -> None:
        for screen in self.screen_stack:
            refresh = getattr(screen, "action_refresh", None)
            if refresh is not None:
                refresh()

    def run_command(self, text: str, screen: Screen[Any]) -> None:
        """The ``:`` bar: ``q``/``quit``, ``help``, ``open QUEUE``, ``sort KEY``, and the
        screen's own (``requeue [filter]``, ``purge STATE``, ``pause``, ``resume``,
        ``clean``, ``filter ...``)."""
        words = text.strip().split(maxsplit=1)
        if not words:
            return
        verb, rest = words[0], (words[1] if len(words) > 1 else "")
        if verb in ("q", "quit"):
            self.exit(0)
        elif verb == "help":
            self.action_help()
        elif verb == "open":
            target = self.overview.target(rest.strip())
            if target is None:
                self.notify(f"no queue {rest.strip()!r} in this console", severity="error")
            else:
                self.push_screen(QueueScreen(target, self.cli_prefix, self.read_only))
        elif verb == "sort" and isinstance(screen, OverviewScreen):
            if rest in SORTS:
                screen.sort = rest
                screen.show(screen.rows)
            else:
                self.notify(f"sort by one of {', '.join(SORTS)}", severity="error")
        else:
            handle = getattr(screen, "command", None)
            if handle is None or not handle(verb, rest):
                self.notify(f"unknown command {verb!r}: ? lists them", severity="error")


__all__ = ["DashApp"]
