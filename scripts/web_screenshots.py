#!/usr/bin/env python3
"""Take the manual's screenshots of ``rq-cli web`` (docs/console.md) with chromium.

    python scripts/web_screenshots.py            # (re)write docs/web-*.png
    python scripts/web_screenshots.py --out DIR  # elsewhere, to look first

It starts a private redis-server (nothing saved), fills three queues (one in trouble: dead
items with two errors, an abandoned lease, an old pending item; one healthy; one paused) and
an hour of history, runs the real ``rq-cli web`` on a free loopback port, and drives Debian's
chromium (``/usr/bin/chromium``, Playwright) through each screen: the overview, a queue's
dead tab with two items picked, its history, an item, a confirmation, a result, and the dead
tab on a 390-px phone. PNGs at a device scale of 1, each cut to its content (kept small).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from rq_cli.connection.servers import find_server_binary
from rq_cli.core.contract.util import server_ms
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

ROOT = Path(__file__).resolve().parents[1]
# the tests' server harness and web helpers, imported by name as the tests import them
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "web")]
from servers import ServerProcess  # noqa: E402
from web_helpers import launch_chromium, running  # noqa: E402

#: The queues the screenshots show (fill()).
QUEUES = ("emails", "thumbnails", "reports")


@contextmanager
def server() -> Iterator[redis.Redis]:
    """A private redis-server (tests/servers.py: nothing saved) and a client of it."""
    with ServerProcess(binary=find_server_binary()) as proc:
        proc.start()
        yield proc.client()


def fill(r: redis.Redis) -> None:
    """emails in trouble (dead, abandoned, old), thumbnails healthy, reports paused; an
    hour of history for emails."""
    emails = WorkQueue(r, "emails")
    now = server_ms(r)
    for minute in range(60, 0, -1):  # an hour of history: a snapshot a minute
        emails.call("history", now_ms=now - minute * 60_000)
        n = 20 + (minute * 7) % 25
        emails.push([NewItem(json.dumps({"to": f"user{i}@example.com"}).encode(),
                             f"m-{minute:02d}-{i:02d}") for i in range(n)])
        got = emails.lease(n, lease_seconds=300)
        emails.complete([g for g in got[:-3]])
        emails.fail(got[-3:-1], error="smtp timeout after 30s", dead=minute % 4 == 0)
        emails.fail(got[-1:], error="550 mailbox unavailable: bounce", dead=True)
        if minute % 15 == 0:  # someone requeues the dead now and then
            emails.requeue_dead(None)
    emails.push([NewItem(b'{"to": "old@example.com"}', "m-old")], now_ms=now - 900_000)
    emails.lease(1, lease_seconds=1, now_ms=now - 600_000)  # (a lease that ran out)
    thumbs = WorkQueue(r, "thumbnails")
    thumbs.push([NewItem(json.dumps({"path": f"/img/{i}.jpg"}).encode(), f"t-{i:03d}")
                 for i in range(12)])
    reports = WorkQueue(r, "reports")
    reports.push([NewItem(b'{"day": "2026-01-02"}', "r-001")])
    reports.pause()


def shoot(base: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    made: list[Path] = []
    with sync_playwright() as p:
        browser = launch_chromium(p)
        desk = browser.new_page(viewport={"width": 1000, "height": 640})
        phone = browser.new_page(viewport={"width": 390, "height": 760})

        def snap(page, name: str, full: bool = False) -> None:
            path = out / f"web-{name}.png"
            for attempt in range(3):  # (chromium on a loaded machine may refuse one capture)
                try:
                    page.screenshot(path=str(path), full_page=full)
                    break
                except Exception:
                    if attempt == 2:
                        raise
                    page.wait_for_timeout(1000)
            made.append(path)

        desk.goto(base + "/")
        desk.goto(base + "/?sort=dead")  # (a second load: the rates are measured)
        snap(desk, "overview")
        desk.goto(base + "/q/emails?tab=dead")
        for box in desk.locator("#items input[type=checkbox]").all()[:2]:
            box.check()
        snap(desk, "dead")
        desk.goto(base + "/q/emails?tab=history")
        snap(desk, "history")
        desk.goto(base + "/q/emails?tab=dead")
        first = desk.locator("#items a").first.get_attribute("href")
        desk.goto(base + str(first))
        snap(desk, "item")
        desk.goto(base + "/q/emails?tab=dead")
        for box in desk.locator("#items input[type=checkbox]").all()[:2]:
            box.check()
        desk.click("#requeue-picked")
        snap(desk, "confirm")
        desk.click("#do")
        snap(desk, "done")
        phone.goto(base + "/q/emails?tab=dead")
        snap(phone, "phone")
        browser.close()
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with server() as r:
        fill(r)
        port = r.connection_pool.connection_kwargs["port"]
        with running(f"redis://127.0.0.1:{port}/0", *QUEUES,
                     env={"RQ_CLI_WEB_TOKEN": ""}) as base:
            made = shoot(base, args.out)
    for path in made:
        print(f"{path} {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
