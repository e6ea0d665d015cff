"""``rq-cli web`` readable at a glance, in a real browser (Playwright driving Debian's
chromium, against the real ``rq-cli web`` and a real server): a queue in trouble in colour,
the overview sorted by a column, the dead tab on a 390-px phone without sideways
scrolling, per-item requeue and delete doing exactly the ids picked, and a redirect (303)
after each POST. Skips when chromium or Playwright is missing."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("playwright.sync_api")
if not shutil.which("chromium"):
    pytest.skip("no chromium (apt-get install chromium)", allow_module_level=True)

from web_helpers import running, seed

from rq_cli.core.types import NewItem

NO_TOKEN = {"RQ_CLI_WEB_TOKEN": ""}


def colour(page, selector: str, prop: str = "background-color") -> str:
    return page.evaluate("([s, p]) => getComputedStyle(document.querySelector(s))"
                         ".getPropertyValue(p)", [selector, prop])


def test_a_queue_in_trouble_is_in_colour_and_a_healthy_one_is_not(browser, server_url, r):
    seed(r, "emails", dead=3, pending=1)
    seed(r, "thumbs", pending=2)
    with running(server_url, "emails", "thumbs", env=NO_TOKEN) as base:
        page = browser.new_page()
        page.goto(base + "/")
        trouble = 'tr[data-queue="emails"] td.dead'
        healthy = 'tr[data-queue="thumbs"] td.dead'
        # the dead count of the queue in trouble: red, bold, its row tinted; the other plain
        assert colour(page, trouble, "color") == "rgb(187, 0, 0)"
        assert colour(page, trouble, "font-weight") == "700"
        assert colour(page, trouble) != colour(page, healthy)
        assert colour(page, healthy) == "rgba(0, 0, 0, 0)"
        assert colour(page, healthy, "color") == "rgb(34, 34, 34)"
        assert "dead items" in page.locator('tr[data-queue="emails"]').inner_text()
        # the abandoned column is there, and the page reloads itself (no script)
        assert page.locator("#sort-abandoned").inner_text() == "abandoned"
        assert page.locator("script").count() == 0


def test_the_overview_sorts_by_a_column(browser, server_url, r):
    for name, dead in (("a", 1), ("b", 7), ("c", 3)):
        seed(r, name, dead=dead)
    with running(server_url, "a", "b", "c", env=NO_TOKEN) as base:
        page = browser.new_page()
        page.goto(base + "/")
        order = "Array.from(document.querySelectorAll('tr[data-queue]')).map(r => r.dataset.queue)"
        assert page.evaluate(order) == ["a", "b", "c"]  # as given
        page.click("#sort-dead")
        page.wait_for_url("**sort=dead")
        assert page.evaluate(order) == ["b", "c", "a"]  # the most dead first
        page.click("#sort-name")
        page.wait_for_url("**sort=name")
        assert page.evaluate(order) == ["a", "b", "c"]


def test_the_dead_tab_fits_a_phone_without_sideways_scrolling(browser, server_url, r):
    wq = seed(r, "emails", dead=4)
    long = "x" * 300  # a long error and id: they wrap, the page does not scroll sideways
    wq.push([NewItem(b'{"to": "' + b"y" * 200 + b'"}', "id-" + "z" * 120)])
    [got] = wq.lease(1, lease_seconds=60)
    wq.fail([got], error=long, dead=True)
    with running(server_url, "emails", env=NO_TOKEN) as base:
        context = browser.new_context(viewport={"width": 390, "height": 844})
        page = context.new_page()
        for path in ("/", "/q/emails?tab=dead", "/q/emails?tab=history",
                     "/q/emails/item/id-" + "z" * 120):
            page.goto(base + path)
            scroll, client = page.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert client == 390 and scroll <= client, (path, scroll, client)
        page.goto(base + "/q/emails?tab=dead")
        assert page.locator("#items tr[data-id]").count() == 5


def test_per_item_requeue_and_delete_do_exactly_the_picked_ids_and_redirect(
        browser, server_url, r):
    wq = seed(r, "emails", dead=6)
    dead = sorted(i.id for i in wq.peek("dead", count=10))
    with running(server_url, "emails", env=NO_TOKEN) as base:
        page = browser.new_page()
        posts: list[tuple[str, int]] = []
        page.on("response", lambda a: posts.append((a.url, a.status))
                if a.request.method == "POST" else None)
        # requeue two picked ids: those two go back to pending, no other
        page.goto(base + "/q/emails?tab=dead")
        picked = dead[1:3]
        for item_id in picked:
            page.check(f'#items tr[data-id="{item_id}"] input[type=checkbox]')
        page.click("#requeue-picked")
        assert "Requeue 2 dead items of emails" in page.locator("#title").inner_text()
        assert page.locator("#ids li").all_inner_texts() == picked
        assert page.locator("#cli").inner_text().endswith(f"requeue-dead emails {' '.join(picked)}")
        page.click("#do")
        page.wait_for_url("**/q/emails/done/**")
        assert "requeued 2" in page.locator("#done").inner_text()
        assert sorted(i.id for i in wq.peek("pending", count=10)) == picked
        assert sorted(i.id for i in wq.peek("dead", count=10)) == [
            i for i in dead if i not in picked]
        # a reload of the result shows it again and does nothing more
        page.reload()
        assert "requeued 2" in page.locator("#done").inner_text()
        assert wq.stats().pending == 2
        # delete one dead item from its own page: that one is gone, the others stay
        gone = dead[4]
        page.goto(base + f"/q/emails/item/{gone}")
        assert page.locator("#timeline").inner_text().count("dead") >= 1
        page.click("#delete-item")
        assert page.locator("#ids li").all_inner_texts() == [gone]
        page.click("#do")
        page.wait_for_url("**/q/emails/done/**")
        assert "deleted 1 of 1" in page.locator("#done").inner_text()
        left = sorted(i.id for i in wq.peek("dead", count=10))
        assert left == [i for i in dead if i not in picked and i != gone]
        assert wq.item(gone) is None
        # each POST was answered with a redirect (303) to the result's page
        assert [status for url, status in posts] == [303, 303], posts
        assert all(url.endswith("/q/emails/do") for url, _ in posts)
