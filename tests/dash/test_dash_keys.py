"""One keymap: the help (``?``) lists every key binding of the console's screens, and nothing
else, read from the running console (Textual's Pilot, a real server)."""

from __future__ import annotations

import pytest
from dash_helpers import drive, make_app, press, seed
from rich.table import Table
from textual.widgets import Static

from rq_cli.dash.app import DashApp, OverviewScreen
from rq_cli.dash.audit import AuditScreen
from rq_cli.dash.batches import BatchesScreen
from rq_cli.dash.item import ItemScreen
from rq_cli.dash.keymap import Key
from rq_cli.dash.queue_screen import QueueScreen
from rq_cli.dash.widgets import CommandBar, ConfirmScreen, HelpScreen

#: Every class of the console that binds keys.
BOUND = (DashApp, OverviewScreen, QueueScreen, ItemScreen, BatchesScreen, AuditScreen,
         ConfirmScreen, CommandBar, HelpScreen)
#: The actions each screen refuses read-only.
REFUSED = {OverviewScreen: {"pause", "clean"}, ItemScreen: {"requeue", "cancel", "extend"},
           QueueScreen: {"requeue", "requeue_all", "purge", "cancel", "extend", "pause",
                         "clean", "ask_worker"}, ConfirmScreen: {"answer"}}


def bound(read_only: bool) -> set[tuple[str, str]]:
    """(keys as the help shows them, what they do) of every binding of every screen, the
    footer's repeats of the app's q and ? aside; read-only, without the refused actions."""
    rows = set()
    for cls in BOUND:
        for b in cls.BINDINGS:
            name = b.action.split("(")[0]
            if b.action.startswith("app.") or (read_only and name in REFUSED.get(cls, ())):
                continue
            assert b.tooltip, (cls.__name__, b.key)  # what the help says about it
            rows.add((Key(b.key, b.action, "").shown, b.tooltip))
    return rows


def help_rows(app) -> list[tuple[str, str]]:
    """The (keys, what) rows of the help on screen (the notes, with no keys, aside)."""
    assert isinstance(app.screen, HelpScreen)
    table = app.screen.query_one(Static).content
    assert isinstance(table, Table)
    keys, what = ([str(c) for c in col._cells] for col in table.columns[1:3])
    return [(k, w) for k, w in zip(keys, what, strict=True) if k]


@pytest.mark.parametrize("read_only", [False, True], ids=["actions on", "read-only"])
def test_the_help_lists_every_binding_and_nothing_else(r, server_url, read_only):
    seed(r, "jobs", pending=1)

    async def script(pilot):
        await press(pilot, "question_mark")
        return help_rows(pilot.app)

    rows = drive(make_app(server_url, "jobs", read_only=read_only), script)
    expected = bound(read_only)
    assert set(rows) == expected
    assert len(expected) > 25  # (the screens' bindings were really read)
    shown = {k for k, _ in rows}
    assert {"/ F", "] Tab", "[ Shift+Tab", "*", "Ctrl+C", "4", "Esc"} <= shown
    assert all((k in shown) != read_only for k in ("R", "X", "D", "S", "y"))

