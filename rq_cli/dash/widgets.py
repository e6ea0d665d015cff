"""The console's small parts: the bar that reads ``/`` searches and ``:`` commands, the
confirmation of an action, and the help."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ..core.counts import SORTS

if TYPE_CHECKING:
    from .model import Action


#: The app's ``q`` and ``?`` again, first in a screen's bindings: the footer lists a screen's
#: keys before the app's, so these stay on screen however narrow the terminal.
FOOTER_FIRST: tuple[BindingType, ...] = (
    Binding("q", "app.quit_or_back", "Quit/back"),
    Binding("question_mark", "app.help", "Help"))


class CommandBar(Input):
    """A one-line input under the table, hidden until ``/`` (search or filter) or ``:`` (a
    command) opens it; Enter sends :class:`CommandBar.Done`, Esc closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    class Done(Message):
        def __init__(self, kind: str, text: str) -> None:
            super().__init__()
            self.kind, self.text = kind, text

    def __init__(self) -> None:
        super().__init__(id="bar")
        self.kind = ":"

    def open(self, kind: str, text: str) -> None:
        self.kind = kind
        self.placeholder = ("filter: --match EXPR --error RE --reason R --older-than S, or a "
                            "JMESPath expression" if kind == "/" else
                            "command: requeue, purge, pause, resume, clean, open QUEUE, "
                            "sort KEY, q")
        self.border_title = kind
        self.value = text
        self.add_class("open")
        self.focus()

    def action_close(self) -> None:
        self.remove_class("open")
        tables = self.screen.query(DataTable)
        if tables:
            tables.first().focus()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_close()
        self.post_message(self.Done(self.kind, event.value))


class ConfirmScreen(ModalScreen[bool]):
    """What an action will do and its command line; ``y`` does it, ``n`` or Esc does not."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, action: Action) -> None:
        super().__init__(classes="destructive" if action.destructive else "")
        self.action_ = action

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.action_.title + "?"), id="question")
            yield Static(Text("Same as: " + self.action_.cli), id="cli")
            yield Static("y: do it    n / Esc: leave it", id="keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


#: The help: (section, lines); ``act`` lines only where actions are on.
HELP: tuple[tuple[str, str, bool], ...] = (
    ("Everywhere", "q back (quits on the overview) · ctrl+c quit · ? this help · : command "
                   "bar · the mouse clicks rows and tabs", False),
    ("Overview", f"enter open the queue · s sort ({', '.join(SORTS)}) · / find "
                 "· r refresh", False),
    ("", "p pause a running queue / resume a paused one (here and in a queue; P too) · c "
         "clean now", True),
    ("A queue", "1-7 or [ ] tabs: pending, processing, delayed, dead, holders, dedup, errors "
                "(dead and retrying items grouped by error; enter: the group's dead items)",
     False),
    ("", "n / b next / previous page · g / G first / last page · enter the item · "
         "r refresh · t next tenant (pending of a fair queue)", False),
    ("", "space mark a row · v mark a range (from the last mark to the cursor) · * mark "
         "every item matching the filter (up to 10,000) · u unmark all", False),
    ("", "/ filter: the CLI's --match EXPR --error REGEX --reason R --older-than S "
         "--min-attempts N, or a bare JMESPath expression (empty: no filter)", False),
    ("", "R requeue the marked dead items (else the one under the cursor)", True),
    ("", "A requeue every dead item matching the filter (every dead item without one)", True),
    ("", "X purge every item of the tab matching the filter (all of them without one)", True),
    ("", "R / X on the errors tab: requeue / purge the dead group under the cursor", True),
    ("", "D / S on the holders tab: ask the worker of the row to drain (finish its items, "
         "exit) / stop (stop its commands, put their items back); it logs who asked", True),
    ("", "x cancel the marked items (else the one under the cursor) · e extend the lease "
         "under the cursor · p pause/resume · C clean now", True),
    ("An item", "R requeue · x cancel · e extend", True),
    ("Commands", ":open QUEUE · :sort KEY · :filter ... · :pending (any tab) · :q", False),
    ("", ":requeue [FILTER] · :purge · :pause · :resume · :clean · :extend SECONDS", True),
    ("", "Each action asks first: what it will do, to how many items, and the same command "
         "line, and does at most that (items that arrive meanwhile stay); what it did is "
         "shown with that line, so it can be scripted. Marks are cleared once an action is "
         "confirmed.", True),
)


def help_table(read_only: bool) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for section, line, act in HELP:
        if not (act and read_only):
            grid.add_row(section, line)
    if read_only:
        grid.add_row(Text("read-only", style="bold yellow"), "every action is off")
    return grid


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_table(self.read_only))

    def action_close(self) -> None:
        self.dismiss(None)
