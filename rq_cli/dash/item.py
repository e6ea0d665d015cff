"""One item of a queue: its fields, and its data pretty-printed (JSON highlighted; text
and binary shown safely), with the actions that fit its state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..console.actions import Action, Actions, failure
from ..console.model import Browser, data_view
from ..core.codes import ItemState
from ..core.contract.fields import PEEK, carried
from ..output.render import human, human_time
from .keymap import ITEM, acting, bindings

if TYPE_CHECKING:
    from ..core.reports import PeekedItem
    from ..ops.targets import Target

_ACTIONS = acting(ITEM)  # requeue, cancel, extend: off read-only, each where it fits


class ItemScreen(Screen[None]):
    """One item: its fields, and its data pretty-printed (JSON highlighted; text and binary
    shown safely)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(ITEM)  # type: ignore[assignment]

    def __init__(self, target: Target, item_id: str, browser: Browser, actions: Actions,
                 read_only: bool) -> None:
        super().__init__()
        self.target, self.item_id, self.read_only = target, item_id, read_only
        self.browser, self.actions = browser, actions
        self.item: PeekedItem | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in _ACTIONS:
            return True
        state = self.item.state if self.item is not None else None
        return not self.read_only and state is not None and (
            (action == "requeue") == (state == ItemState.DEAD.value)) and (
            action != "extend" or state == ItemState.PROCESSING.value)

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{self.target.name} · {self.item_id}"), id="fields")
        with VerticalScroll():
            yield Static("", id="data")
        yield Footer()

    def on_mount(self) -> None:
        self.action_refresh()

    @work(thread=True, exclusive=True, group="item")
    def action_refresh(self) -> None:
        try:
            item = self.browser.item(self.item_id)
        except Exception as exc:
            reason = failure(exc, self.target.url)
            self.app.call_from_thread(self.query_one("#data", Static).update,
                                      Text("error: " + reason, style="bold red"))
            return
        self.app.call_from_thread(self.show, item)

    def show(self, item: PeekedItem | None) -> None:
        self.item = item
        self.refresh_bindings()
        if item is None:
            self.query_one("#fields", Static).update(Text(
                f"{self.item_id}: no such item (done, purged or never pushed)", style="yellow"))
            self.query_one("#data", Static).update("")
            return
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        fields = [("queue", self.target.name), ("id", item.id),
                  ("state", item.state + (" (abandoned)" if item.abandoned else "")),
                  ("attempts", str(item.attempts)),
                  ("holder", item.lease_session),
                  ("lease until", item.lease_expires_at and human_time(item.lease_expires_at)),
                  ("due", item.due_at and human_time(item.due_at)),
                  ("dead since", item.dead_at and human_time(item.dead_at)),
                  ("reason", item.dead_reason)]
        for f in carried(PEEK):  # (its per-item fields: core/contract/fields.py)
            value = getattr(item, f.name)
            fields.append((f.column or f.name.replace("_", " "),
                           human_time(value) if f.kind == "time" and value else value))
        for name, value in fields:
            if value:
                grid.add_row(name, Text(human(value)))
        self.query_one("#fields", Static).update(grid)
        kind, body = data_view(item.data)
        shown: Any = (Syntax(body, "json", word_wrap=True, theme="ansi_dark")
                      if kind == "json" else Text(body))
        self.query_one(VerticalScroll).border_title = kind
        self.query_one("#data", Static).update(shown)

    def _ask(self, action: Action | None) -> None:
        if action is not None:
            self.app.ask(action, queue=self.target.queue)  # type: ignore[attr-defined]

    def action_requeue(self) -> None:
        if self.item is not None and self.item.state == ItemState.DEAD.value:
            self._ask(self.actions.requeue_ids([self.item.id]))

    def action_cancel(self) -> None:
        if self.item is not None and self.item.state != ItemState.DEAD.value:
            self._ask(self.actions.cancel([self.item.id]))

    def action_extend(self) -> None:
        if self.item is not None and self.item.state == ItemState.PROCESSING.value:
            lease = float(self.target.queue.options.lease_seconds)
            self._ask(self.actions.extend(self.item, lease))
