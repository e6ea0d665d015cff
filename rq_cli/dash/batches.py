"""A queue's batches in the terminal console (``B`` on a queue): the newest ones with their
counts and progress, the same rows as the web's batches tab (the console model's
``Browser.batches``; docs/batches.md). Every cell is text, never markup (a batch's name is
whatever a client wrote)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ..console.actions import failure
from ..console.model import Browser
from ..core.contract.batches import COUNTED, DEAD, TOTAL
from ..output.render import escape_control, human_time
from .keymap import BATCHES, bindings

if TYPE_CHECKING:
    from ..ops.targets import Target

#: Batches the screen shows (the newest).
SHOWN = 50
#: The counts of a batch's line, in its order (core/contract/batches.py: the one definition).
COUNTS = (TOTAL, *COUNTED)
COLUMNS = ("batch", *COUNTS, "finished", "created", "done")


def batch_cells(row: dict[str, Any]) -> list[Text]:
    """One batch's cells, as text: its name, counts, the share finished, when it was made
    and when it finished (``no`` while open)."""
    pct = row["finished_pct"]
    done = (human_time(row["finished_at"]) if row["finished_at"] else "done") \
        if row["done"] else "no"
    return [Text(escape_control(str(row["batch"]))),
            *(Text(f"{row[k]:,}", justify="right",
                   style="red" if k == DEAD and row[k] else "") for k in COUNTS),
            Text("-" if pct is None else f"{pct}%", justify="right"),
            Text(human_time(row["created_at"]) if row["created_at"] else "-"), Text(done)]


class BatchesScreen(Screen[None]):
    """The batches of one queue, newest first."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(BATCHES)  # type: ignore[assignment]

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.target.name} · batches (newest first)"), id="title")
        table: DataTable[Text] = DataTable(id="batches", cursor_type="row")
        table.add_columns(*COLUMNS)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.action_refresh()

    @work(thread=True, exclusive=True, group="batches")
    def action_refresh(self) -> None:
        try:
            rows = Browser(self.target.name, self.target.queue).batches(SHOWN)
        except Exception as exc:
            reason = failure(exc, self.target.url)
            self.app.call_from_thread(self.query_one("#title", Static).update,
                                      Text("error: " + reason, style="bold red"))
            return
        self.app.call_from_thread(self.show, rows)

    def show(self, rows: list[dict[str, Any]]) -> None:
        table = self.query_one("#batches", DataTable)
        table.clear()
        for row in rows:
            table.add_row(*batch_cells(row))
        if not rows:
            self.query_one("#title", Static).update(Text(
                f"{self.target.name} · no batches (rq-cli push QUEUE --batch NAME)"))
