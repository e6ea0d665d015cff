"""``rq-cli dash`` acts only on what it asked and never crashes on data: a confirmed purge or
requeue does at most the count its question said however many items arrive before ``y``;
marks are cleared once an action is confirmed, and ``*`` shows its filter as the command
line; every cell, title and toast built from user data is text, never markup (hostile
markup, escapes, bidi, 1 MB, invalid UTF-8)."""

from __future__ import annotations

import json

from dash_helpers import drive, make_app, press, screen_text, seed
from test_dash_console import cells, open_queue, question, status

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.dash.item import ItemScreen
from rq_cli.dash.queue_screen import QueueScreen
from rq_cli.dash.widgets import ConfirmScreen


def _push(wq: WorkQueue, n: int, tag: str) -> None:
    wq.push([NewItem(json.dumps({"late": i}).encode(), f"{tag}-{i:03d}") for i in range(n)])


def test_a_purge_asked_for_5_purges_5_when_50_arrive_before_y(r, server_url):
    wq = seed(r, "jobs", pending=5)

    async def script(pilot):
        await open_queue(pilot, "1")
        await press(pilot, "X")
        asked = question(pilot.app)
        _push(wq, 50, "late")  # they arrive while the question is on screen
        await press(pilot, "y")
        return asked, list(pilot.app.said)

    asked, said = drive(make_app(server_url, "jobs"), script)
    assert asked.startswith("Delete all 5 pending items of jobs")
    assert wq.stats().pending == 50 and any("purged 5 pending items" in s for s in said)
    assert {i.id for i in wq.peek("pending", count=100)} == {f"late-{i:03d}" for i in range(50)}


def test_requeue_all_asked_for_6_requeues_6_when_more_die_before_y(r, server_url):
    wq = seed(r, "jobs", dead=6)

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "A")
        asked = question(pilot.app)
        _push(wq, 4, "late")
        for item in wq.lease(4, lease_seconds=60):
            wq.fail([item.id], error="later", dead=True)
        await press(pilot, "y")
        return asked

    asked = drive(make_app(server_url, "jobs"), script)
    assert asked.startswith("Requeue 6 dead items of jobs (every dead item)")
    assert (wq.stats().pending, wq.stats().dead) == (6, 4)
    assert {i.id for i in wq.peek("dead", count=10)} == {f"late-{i:03d}" for i in range(4)}


def test_marks_are_cleared_after_an_action_and_star_shows_its_filter(r, server_url):
    wq = seed(r, "jobs", dead=12)  # d-000, d-003, d-006, d-009: "timeout"

    async def script(pilot):
        await open_queue(pilot, "7")
        group = next(row for row in cells(pilot.app) if row[5] == "timeout")[1]
        await press(pilot, "down", "enter")  # the group's dead items, filtered by its key
        await press(pilot, "asterisk")
        marked = status(pilot.app)
        await press(pilot, "R")
        asked = question(pilot.app)
        await press(pilot, "y")
        after = status(pilot.app), set(pilot.app.screen.selected)
        await press(pilot, "R")  # nothing marked, nothing under the cursor: no question
        again = isinstance(pilot.app.screen, ConfirmScreen)
        return group, marked, asked, after, again

    group, marked, asked, (after, selected), again = drive(make_app(server_url, "jobs"),
                                                           script)
    assert "4 selected" in marked
    assert asked.startswith("Requeue 4 dead items of jobs")
    assert f"requeue-dead jobs --error-group {group}" in asked and "d-003" not in asked
    assert "selected" not in after and selected == set() and not again
    assert sorted(i.id for i in wq.peek("pending", count=10)) == ["d-000", "d-003", "d-006",
                                                                  "d-009"]


HOSTILE = ["cannot open [/var/data/a.csv]: No such file", "[bold red]red[/]", "[/]",
           "[@click=app.quit]quit[/]", "[link=http://evil.example]x[/link]",
           "\x1b[31mred\x1b]0;title\x07", "abc\u202edcba\u2066x", "tab\there\nnew line",
           "[" * 5000]


def test_the_console_survives_hostile_text_in_every_widget(r, server_url):
    wq = WorkQueue(r, "jobs")
    dead = [NewItem(json.dumps({"path": text}).encode(), f"d-{n}") for n, text in
            enumerate(HOSTILE)]
    wq.push(dead)
    for item in wq.lease(len(dead), lease_seconds=60):
        wq.fail([item.id], error=HOSTILE[int(item.id[2:])], dead=True)
    wq.push([NewItem(b"{}", "d-utf8")])
    wq.lease(1, lease_seconds=60)
    wq.fail(["d-utf8"], error=b"bad \xff\xfe [/] bytes", dead=True)  # type: ignore[arg-type]
    wq.push([NewItem(b'{"path": "[/tmp/x]"}', "p-markup"),
             NewItem(b"\xff\xfe[/]\x00 not utf-8 \xc3", "p-binary"),
             NewItem(b'{"big": "' + b"[b]" * 350_000 + b'"}', "p-big"),
             NewItem("\u202e[/]".encode(), "[/id]")])
    assert len(wq.lease(1, lease_seconds=600)) == 1  # one processing
    wq.push([NewItem(b"[i]later[/i]", "[delayed]")], delay=3600)

    async def script(pilot):
        seen: list[str] = []
        await press(pilot, "enter")
        for tab in "1234567":
            await press(pilot, tab)
            seen.extend(screen_text(pilot.app))
        await press(pilot, "4", "enter")  # the first dead item's own view
        item_view = isinstance(pilot.app.screen, ItemScreen)
        seen.extend(screen_text(pilot.app))
        await press(pilot, "q", "1", "enter")
        seen.extend(screen_text(pilot.app))
        await press(pilot, "q")
        await press(pilot, "slash")  # a filter that cannot be read: its error as a toast
        for ch in "--error [/":
            await pilot.press({" ": "space", "[": "left_square_bracket",
                               "/": "slash", "-": "minus"}.get(ch, ch))
        await press(pilot, "enter")
        return seen, item_view, isinstance(pilot.app.screen, QueueScreen), list(
            pilot.app.said)

    seen, item_view, still, said = drive(make_app(server_url, "jobs"), script)
    assert any("[/" in s for s in said)  # the bad filter's error, quoted as text
    text = "\n".join(seen)
    assert item_view and still  # no crash: every screen drawn, the console still up
    assert "cannot open [/var/data/a.csv]" in text and "[bold red]red[/]" in text
    assert "[/tmp/x]" in text and "[@click=app.quit]" in text
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b[31mred" in text
    assert "bad \ufffd\ufffd [/] bytes" in text  # (the errors tab: its own group)
