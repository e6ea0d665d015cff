"""The terminal console's batches (``B`` on a queue, issue 39): the newest batches with their
counts and progress, the console model's rows (the web's batches tab shows the same), every
cell text, never markup: a batch name written by another client is shown as it is."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from dash_helpers import drive, make_app, press, screen_text, seed

from rq_cli.core.queue import WorkQueue
from rq_cli.dash.batches import BatchesScreen

HOSTILE = "[bold red]boom[/bold red] \x1b[2J"  # (markup, and a terminal's clear screen)


def test_the_batches_screen_shows_each_batch_with_its_progress(r, server_url):
    wq = WorkQueue(r, "jobs")
    wq.push([b"1", b"2", b"3", b"4"], batch="crawl-42")
    got = wq.lease(4)
    wq.complete(got[:2])
    wq.fail(got[2:3], error="x", dead=True)  # 3 of 4 finished: 75%
    # a batch a hand wrote (no rq-cli would take the name): shown as it is, never markup
    r.zadd("jobs:batches", {HOSTILE: 1})
    r.hset(f"jobs:batch:{HOSTILE}", mapping={"total": 2, "completed": 2, "created_ms": 1000,
                                              "finished_ms": 2000})

    async def script(pilot):
        await press(pilot, "enter")
        await press(pilot, "B")
        assert isinstance(pilot.app.screen, BatchesScreen)
        return "\n".join(screen_text(pilot.app))

    shown = drive(make_app(server_url, "jobs"), script, size=(160, 30))
    (line,) = [x for x in shown.splitlines() if "crawl-42" in x]
    assert line.split()[1:8] == ["4", "0", "1", "0", "2", "1", "75%"], line
    assert line.rstrip().endswith("no")  # still open: one processing
    assert "[bold red]boom[/bold red] \\x1b[2J" in shown  # as written, the ESC made visible
    (hand,) = [x for x in shown.splitlines() if "boom" in x]
    assert "100%" in hand


def test_no_batches_says_how_to_make_one(r, server_url):
    seed(r, "jobs", pending=1)

    async def script(pilot):
        await press(pilot, "enter")
        await press(pilot, "B")
        return "\n".join(screen_text(pilot.app))

    assert "no batches (rq-cli push QUEUE --batch NAME)" in drive(make_app(server_url, "jobs"),
                                                                  script)
