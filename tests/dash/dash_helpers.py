"""Driving ``rq-cli dash`` in tests: the app built as ``rq-cli dash`` builds it, against a
real server, and a Pilot run that waits for the console's reads (worker threads)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis

from rq_cli.cli.common import State
from rq_cli.cli.dash import global_options
from rq_cli.cli.inspect import stats_targets
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.dash.app import DashApp


def make_app(url: str, *queues: str, read_only: bool = False,
             clock: Callable[[], float] = time.time, interval: float = 3600,
             cli_prefix: list[str] | None = None) -> DashApp:
    """The console over ``queues`` of ``url``; refreshed only when a test asks (a long
    interval), so what a test reads is what it made. ``cli_prefix``: the global options of
    the command lines shown (default: as ``rq-cli dash --url URL --no-config`` has them)."""
    st = State(url=url, no_config=True)
    return DashApp(st, stats_targets(st, list(queues), False), read_only=read_only,
                   interval=interval, clock=clock,
                   cli_prefix=global_options(st) if cli_prefix is None else cli_prefix)


async def settle(pilot: Any) -> None:
    """Let the key presses land and every read or action started meanwhile finish."""
    for _ in range(4):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.05)  # (a table sizes its columns when idle: let that happen too)


async def steady(pilot: Any) -> None:
    """:func:`settle`, then wait until two screenshots in a row are the same (a loaded
    machine may draw late): for snapshot tests."""
    await settle(pilot)
    last = pilot.app.export_screenshot()
    for _ in range(50):
        await pilot.pause(0.05)
        now = pilot.app.export_screenshot()
        if now == last:
            return
        last = now


def drive(app: DashApp, script: Callable[[Any], Awaitable[Any]],
          size: tuple[int, int] = (120, 40)) -> Any:
    """Run ``app`` headless at ``size`` and ``script(pilot)`` in it; returns what it returns."""
    async def main() -> Any:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            return await script(pilot)
    try:
        return asyncio.run(main())
    finally:
        app.st.close()


async def press(pilot: Any, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def type_in(pilot: Any, text: str) -> None:
    """Type ``text`` into the focused input (the command bar) and press Enter."""
    await pilot.press(*[{" ": "space"}.get(ch, ch) for ch in text])
    await press(pilot, "enter")


def seed(r: redis.Redis, name: str, *, dead: int = 0, pending: int = 0,
         processing: int = 0) -> WorkQueue:
    """A queue with ``pending`` items, ``processing`` leased ones and ``dead`` dead-lettered
    ones (ids ``d-000``..., every third with the error ``timeout``, the rest ``bad input``;
    data ``{"n": i, "user": "u-<i % 3>"}``)."""
    wq = WorkQueue(r, name)
    if dead:
        wq.push([NewItem(json.dumps({"n": i, "user": f"u-{i % 3}"}).encode(), f"d-{i:03d}")
                 for i in range(dead)])
        leased = wq.lease(dead, lease_seconds=60)
        for item in leased:
            n = int(item.id[2:])
            wq.fail([item.id], error="timeout" if n % 3 == 0 else "bad input", dead=True)
    if processing:
        wq.push([NewItem(b'{"job":"run"}', f"r-{i:03d}") for i in range(processing)])
        wq.lease(processing, lease_seconds=300)
    if pending:
        wq.push([NewItem(json.dumps({"n": i}).encode(), f"p-{i:03d}") for i in range(pending)])
    return wq


def screen_text(app: DashApp) -> list[str]:
    """The terminal's lines as the user reads them (plain text, as drawn)."""
    strips = app.screen._compositor.render_strips()
    return ["".join(segment.text for segment in strip) for strip in strips]
