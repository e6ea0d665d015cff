"""A queue's audit trail in the terminal console (``a`` on a queue): the repairs made to it
from the CLI and the consoles, newest first (rq_cli.core.operations.audit; ``rq-cli audit QUEUE``).
Every cell is text, never markup (a command line may quote anything)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ..console.actions import failure
from ..output.render import escape_control, human_time
from .keymap import AUDIT, bindings

if TYPE_CHECKING:
    from ..ops.targets import Target

#: Entries the screen shows (the newest).
SHOWN = 200
COLUMNS = ("when", "action", "count", "command", "user", "host", "token", "via")


def audit_cells(entry: dict[str, Any]) -> list[Text]:
    """One entry's cells, as text (an unreadable one: its text in the command column)."""
    if "unreadable" in entry:
        return [Text("-"), Text("?"), Text(""), Text(escape_control(entry["unreadable"])),
                Text(""), Text(""), Text(""), Text("")]
    action = entry["action"] + (" (stopped half-way)" if entry.get("failed") else "")
    return [Text(human_time(entry["at"])), Text(escape_control(action)),
            Text(f"{entry['count']:,}", justify="right"),
            *(Text(escape_control(str(entry.get(k) or "")))
              for k in ("command", "user", "host", "token", "via"))]


class AuditScreen(Screen[None]):
    """The audit trail of one queue."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(AUDIT)  # type: ignore[assignment]

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.target.name} · audit trail (newest first)"), id="title")
        table: DataTable[Text] = DataTable(id="audit", cursor_type="row")
        table.add_columns(*COLUMNS)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.action_refresh()

    @work(thread=True, exclusive=True, group="audit")
    def action_refresh(self) -> None:
        from ..core.operations.audit import read_audit

        try:
            entries = read_audit(self.target.queue, SHOWN)
        except Exception as exc:
            reason = failure(exc, self.target.url)
            self.app.call_from_thread(self.query_one("#title", Static).update,
                                      Text("error: " + reason, style="bold red"))
            return
        self.app.call_from_thread(self.show, entries)

    def show(self, entries: list[dict[str, Any]]) -> None:
        table = self.query_one("#audit", DataTable)
        table.clear()
        for entry in entries:
            table.add_row(*audit_cells(entry))
        if not entries:
            self.query_one("#title", Static).update(Text(
                f"{self.target.name} · no repairs recorded yet (requeue, purge, cancel, "
                "pause, resume, reshard, limits)"))
