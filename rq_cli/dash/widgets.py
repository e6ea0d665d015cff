"""The console's small parts: the bar that reads ``/`` searches and ``:`` commands, the
confirmation of an action, and the help (built from :mod:`.keymap`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from .keymap import BAR, HELP, NOTES, QUESTION, bindings, help_rows

if TYPE_CHECKING:
    from ..console.actions import Action


class CommandBar(Input):
    """A one-line input under the table, hidden until ``/`` (search or filter) or ``:`` (a
    command) opens it; Enter sends :class:`CommandBar.Done`, Esc closes it."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(BAR)  # type: ignore[assignment]

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

    BINDINGS: ClassVar[list[BindingType]] = bindings(QUESTION)  # type: ignore[assignment]

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


def help_table(read_only: bool) -> Table:
    """The help: every key of :mod:`.keymap` (actions only where they are on), then the
    notes."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column()
    for section, keys, what in help_rows(read_only):
        grid.add_row(section, Text(keys), Text(what))
    for section, line, act in NOTES:
        if not (act and read_only):
            grid.add_row(section, "", Text(line))
    if read_only:
        grid.add_row(Text("read-only", style="bold yellow"), "", "every action is off")
    return grid


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings(HELP)  # type: ignore[assignment]

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_table(self.read_only))

    def action_close(self) -> None:
        self.dismiss(None)
