"""The terminal console's audit trail (issue 38): a confirmed action is recorded in its
queue's trail (its command line, count, this host and user, via dash), and ``a`` on a queue
shows the trail, newest first, every cell text (never markup)."""

from __future__ import annotations

import getpass
import socket

import pytest

pytest.importorskip("textual")

from dash_helpers import drive, make_app, press, screen_text, seed, type_in

from rq_cli.core.operations.audit import By, read_audit, record
from rq_cli.dash.audit import AuditScreen


def test_a_dash_action_is_recorded_and_the_trail_is_shown(r, server_url):
    wq = seed(r, "jobs", dead=9)  # d-000, d-003, d-006 failed with "timeout"
    record(wq, "pause", "rq-cli pause jobs [/tmp/x] [bold]loud[/bold]", 1,
           By("[red]h[/red]", "ops", None, "cli"))

    async def script(pilot):
        await press(pilot, "enter")
        await press(pilot, "4")
        await press(pilot, "slash")
        await type_in(pilot, "--error timeout")
        await press(pilot, "A")
        await press(pilot, "y")
        await press(pilot, "a")
        assert isinstance(pilot.app.screen, AuditScreen)
        return "\n".join(screen_text(pilot.app))

    shown = drive(make_app(server_url, "jobs"), script, size=(160, 30))
    first, second = read_audit(wq)
    assert (first["action"], first["count"], first["via"]) == ("requeue", 3, "dash")
    assert first["command"] == f"rq-cli --url {server_url} --no-config requeue-dead jobs " \
                               "--error timeout"
    assert (first["host"], first["user"], first["token"]) == \
        (socket.gethostname(), getpass.getuser(), None)
    assert second["action"] == "pause"
    assert "requeue-dead jobs --error timeout" in shown and "dash" in shown
    # user data is text: markup shows as typed, nothing of it is read as markup
    assert "[/tmp/x] [bold]loud[/bold]" in shown and "[red]h[/red]" in shown
    assert shown.index("requeue-dead jobs") < shown.index("rq-cli pause jobs")  # newest first


def test_an_empty_trail_says_so(r, server_url):
    seed(r, "jobs", pending=1)

    async def script(pilot):
        await press(pilot, "enter")
        await press(pilot, "a")
        return "\n".join(screen_text(pilot.app))

    assert "no repairs recorded yet" in drive(make_app(server_url, "jobs"), script)
