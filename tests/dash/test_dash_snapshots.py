"""The console's main screens at 80x24 and 120x40, compared with the SVG screenshots under
__snapshots__/ (pytest-textual-snapshot; ``pytest tests/dash --snapshot-update`` rewrites
them after a reviewed change: open the SVGs, or the HTML report a failure writes, to look).

What is on screen is made the same every run: fixed ids and data, no pending items (no
ages read from the server's clock), the console's clock fixed at 90.5 s after the first
death, no refresh after the first read, and no URL (a random port) in the command lines;
the server's memory line and a queue's history graph are pinned to fixed figures, in UTC
(the real readings are tested in test_dash_console.py), as the clock is."""

from __future__ import annotations

import pytest
from dash_helpers import make_app, press, seed, settle, steady, type_in

from rq_cli.console.chart import Chart, nice_top
from rq_cli.console.model import Browser, Memory

SIZES = [(80, 24), (120, 40)]


@pytest.fixture
def jobs(r):
    """Queues ``jobs`` (12 dead items) and ``mail`` (paused, 3 dead items)."""
    wq = seed(r, "jobs", dead=12)
    seed(r, "mail", dead=3).pause()
    # the history starts with the console's snapshot, not the seeding push's (whose minute
    # and counts vary from run to run: a picture is of what the console shows of a minute)
    r.delete(*(k for q in ("jobs", "mail") for k in (f"{q}:history", f"{q}:history_hourly")))
    return min(i.dead_at for i in wq.peek("dead", count=20))


#: The history graph on screen: an hour from 2026-01-02 09:00 UTC, pushes rising and dying.
HOUR = 1767344400.0
PINNED_HISTORY = Chart(
    [HOUR + 60 * i for i in range(60)],
    {"pushed": [float(i % 12) for i in range(60)], "completed": [float(i % 10) for i in range(60)],
     "failed": [float(i % 5 == 0) * 3 for i in range(60)], "dead": [0.0] * 58 + [4.0, 6.0]},
    nice_top(11), "UTC+00:00")


@pytest.fixture(autouse=True)
def pinned_history(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setattr(Browser, "history", lambda self, minutes=60: PINNED_HISTORY)
    yield
    monkeypatch.undo()
    time.tzset()


def app_for(server_url, first_death, **kwargs):
    app = make_app(server_url, "jobs", "mail", clock=lambda: first_death + 90.5,
                   cli_prefix=[], **kwargs)
    pinned = [Memory("redis://127.0.0.1:6379/0", 3 * 1048576, 100 * 1048576)]
    app.overview.read_memory = lambda: pinned
    return app


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overview(snap_compare, server_url, jobs, size):
    assert snap_compare(app_for(server_url, jobs), terminal_size=size, run_before=steady)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dead_items_of_a_queue(snap_compare, server_url, jobs, size):
    async def run_before(pilot):
        await settle(pilot)
        await press(pilot, "enter", "4")
        await steady(pilot)

    assert snap_compare(app_for(server_url, jobs), terminal_size=size, run_before=run_before)


def test_a_filtered_requeue_asks_first(snap_compare, server_url, jobs):
    async def run_before(pilot):
        await settle(pilot)
        await press(pilot, "enter", "4", "slash")
        await type_in(pilot, "--error timeout")
        await press(pilot, "A")
        await steady(pilot)

    assert snap_compare(app_for(server_url, jobs), terminal_size=(80, 24),
                        run_before=run_before)


def test_help_read_only(snap_compare, server_url, jobs):
    async def run_before(pilot):
        await settle(pilot)
        await press(pilot, "question_mark")
        await steady(pilot)

    assert snap_compare(app_for(server_url, jobs, read_only=True), terminal_size=(80, 24),
                        run_before=run_before)
