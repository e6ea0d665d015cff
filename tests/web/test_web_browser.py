"""``rq-cli web`` in a real browser: Playwright for Python driving Debian's chromium, through
overview -> queue -> filter -> requeue with confirmation -> the server's counts checked, and
an outage and its recovery. Skips when chromium or Playwright is missing (.ci/run installs
chromium with apt-get)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("playwright.sync_api")
if not shutil.which("chromium"):
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)

import redis
from web_helpers import running, seed

from rq_cli.core.queue import WorkQueue


def test_overview_queue_filter_requeue_confirmed_then_counts(browser, server_url, r):
    wq = seed(r, "emails", dead=12, pending=1)
    seed(r, "thumbs", pending=4)
    with running(server_url, "emails", "thumbs", env={"RQ_CLI_WEB_TOKEN": ""}) as base:
        page = browser.new_page()
        page.goto(base + "/")
        assert page.locator('tr[data-queue="thumbs"] td.pending').inner_text() == "4"
        page.click('tr[data-queue="emails"] a')
        page.click("#tab-dead")
        assert page.locator("#items a").count() == 12
        page.fill("#filter", "--error timeout")
        page.press("#filter", "Enter")
        page.wait_for_url("**filter=**")
        assert page.locator("#items a").count() == 4
        page.click("#requeue")
        assert "Requeue 4 dead items of emails" in page.locator("#title").inner_text()
        assert page.locator("#cli").inner_text().endswith(
            "requeue-dead emails --error timeout")
        page.click("#do")
        assert "requeued 4 of 4 matched" in page.locator("#done").inner_text()
        s = wq.stats()
        assert (s.pending, s.dead) == (5, 8)
        page.click("#back")
        page.goto(base + "/")
        assert page.locator('tr[data-queue="emails"] td.dead').inner_text() == "8"


def test_an_outage_shows_and_recovers_in_the_browser(browser, make_server):
    srv = make_server()
    seed(redis.Redis(port=srv.port), "emails", dead=3)
    with running(srv.url, "emails") as base:
        page = browser.new_page()
        page.goto(base + "/")
        assert page.locator('tr[data-queue="emails"] td.dead').inner_text() == "3"
        srv.stop()
        page.reload()
        assert page.locator('tr[data-queue="emails"] td.error').count() == 1
        page.goto(base + "/q/emails")
        assert page.locator("#reason").count() == 1
        srv.start()
        WorkQueue(redis.Redis(port=srv.port), "emails").pause()
        page.goto(base + "/")
        assert page.locator('tr[data-queue="emails"] td.error').count() == 0
        assert "paused" in page.locator('tr[data-queue="emails"]').inner_text()


def test_a_confirmed_purge_a_stale_pause_and_dot_names_in_the_browser(browser, server_url, r):
    """Purge confirmed for 8 with 100 arriving before "Do it": 8 purged; two tabs both
    showing "pause": still paused; queues named ``.`` and ``..`` open; the pages keep to
    their Content-Security-Policy (the browser reports no violation: the style applies)."""
    from rq_cli.core.types import NewItem

    wq = seed(r, "thumbnails", pending=8)
    seed(r, "..", pending=1)
    seed(r, ".", pending=2)
    with running(server_url, "thumbnails", "..", ".", env={"RQ_CLI_WEB_TOKEN": ""}) as base:
        context = browser.new_context()
        page = context.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text))
        page.goto(base + "/q/thumbnails")
        page.click("#purge")
        assert "Delete all 8 pending items" in page.locator("#title").inner_text()
        wq.push([NewItem(b"{}", f"late-{i:03d}") for i in range(100)])
        page.click("#do")
        assert "purged 8 pending items" in page.locator("#done").inner_text()
        assert wq.stats().pending == 100
        # two tabs show "pause"; both confirm it: the queue ends paused
        other = context.new_page()
        for tab in (page, other):
            tab.goto(base + "/q/thumbnails")
            tab.click("#pause")
        page.click("#do")
        other.click("#do")
        assert "nothing changed" in other.locator("#done").inner_text()
        assert wq.stats().paused
        for name, pending in (("..", "1"), (".", "2")):
            page.goto(base + "/")
            page.click(f'tr[data-queue="{name}"] a')
            assert page.locator("h1").inner_text() == name
            assert page.locator("#tab-pending").inner_text() == f"pending ({pending})"
            page.click("#items a >> nth=0")
            assert page.locator("h1").count() == 1 and "404" not in page.content()
        # the style block runs under its nonce: the computed style is the page's own
        assert page.evaluate("getComputedStyle(document.body).margin") != "8px"
        assert not [p for p in problems if "Content Security Policy" in p], problems
