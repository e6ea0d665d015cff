"""``D`` (drain) and ``S`` (stop) on the holders tab of ``rq-cli dash``: a mixin of
:class:`~rq_cli.dash.queue_screen.QueueScreen` over :func:`rq_cli.console.asks.ask_action`."""

from __future__ import annotations

from typing import Any

from ..console.asks import HOLDERS_TAB, ask_action, console_user
from ..core.codes import Ask


class AskingWorkers:
    """``D`` (drain) and ``S`` (stop) on the holders tab; the screen gives ``tab``,
    ``current()``, ``target`` and ``ask(action)``."""

    def action_ask_worker(self: Any, ask: str) -> None:
        row = self.current()
        if self.tab != HOLDERS_TAB or row is None or row.session is None:
            self.app.notify("D (drain) and S (stop) ask the worker of a row of the holders "
                            "tab (5)", severity="warning")
            return
        self.ask(ask_action(self.target.name, self.target.queue, row, Ask(ask),
                            console_user()))
