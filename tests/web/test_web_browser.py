"""``rq-cli web`` in a real browser: Playwright for Python driving Debian's chromium, through
overview -> queue -> filter -> requeue with confirmation -> the server's counts checked, and
an outage and its recovery. Skips when chromium or Playwright is missing (.ci/run installs
chromium with apt-get)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not shutil.which("chromium"):
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)

import redis  # noqa: E402
from web_helpers import running, seed  # noqa: E402

from rq_cli.core.queue import WorkQueue  # noqa: E402


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--headless", "--disable-gpu",
                                    "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


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
