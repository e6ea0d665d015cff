"""``rq-cli web`` acts only on what was confirmed and only for its own pages: a confirmed
count is the most an action does, however many items arrive before "Do it" (a sharded
queue: per shard); pause and resume name their end state; a foreign ``Host`` gets no page, a
foreign ``Origin`` changes nothing; every answer carries a Content-Security-Policy."""

from __future__ import annotations

import json

import pytest
from test_web_command import rq
from web_helpers import client, csrf_of, form_of, make_web, seed

from rq_cli.console.actions import Actions, run_action
from rq_cli.console.model import Browser
from rq_cli.core.queue import WorkQueue
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import ExitCode
from rq_cli.web.views import STYLESHEET_URL


def _more(wq: WorkQueue, n: int, tag: str = "late") -> None:
    wq.push([NewItem(json.dumps({"late": i}).encode(), f"{tag}-{i:03d}") for i in range(n)])


def test_a_purge_confirmed_for_8_purges_8_when_100_arrive_before_do_it(server_url, r):
    wq = seed(r, "thumbnails", pending=8)
    c = client(make_web(server_url, "thumbnails"))
    page = c.get("/q/thumbnails/confirm", params={"action": "purge", "state": "pending"})
    assert "Delete all 8 pending items of thumbnails" in page.text
    _more(wq, 100)  # they arrive between the confirmation and "Do it"
    done = c.post("/q/thumbnails/do", data=form_of(page.text))
    assert done.status_code == 200 and "purged 8 pending items" in done.text
    assert wq.stats().pending == 100  # exactly the 8 shown are gone: the oldest
    assert {i.id for i in wq.peek("pending", count=200)} == {f"late-{i:03d}"
                                                             for i in range(100)}


def test_a_requeue_confirmed_for_6_requeues_6_when_more_die_before_do_it(server_url, r):
    wq = seed(r, "emails", dead=6)
    c = client(make_web(server_url, "emails"))
    page = c.get("/q/emails/confirm", params={"action": "requeue"})
    assert "Requeue 6 dead items" in page.text
    _more(wq, 20)
    for item in wq.lease(20, lease_seconds=60):
        wq.fail([item.id], error="later", dead=True)
    done = c.post("/q/emails/do", data=form_of(page.text))
    assert "requeued 6" in done.text and (wq.stats().pending, wq.stats().dead) == (6, 20)
    # filtered: at most the count the dry run found
    page = c.get("/q/emails/confirm", params={"action": "requeue", "filter": "--error later"})
    assert "Requeue 20 dead items" in page.text
    form = form_of(page.text)
    assert form["count"] == "20"
    form["count"] = "5"  # (as if only 5 had matched when the page was shown)
    done = c.post("/q/emails/do", data=form)
    assert "requeued 5 of" in done.text and wq.stats().dead == 15


def test_a_replayed_purge_form_purges_nothing_more(server_url, r):
    wq = seed(r, "thumbnails", pending=8)
    c = client(make_web(server_url, "thumbnails"))
    page = c.get("/q/thumbnails/confirm", params={"action": "purge", "state": "pending"})
    assert "purged 8" in c.post("/q/thumbnails/do", data=form_of(page.text)).text
    _more(wq, 20)
    again = c.post("/q/thumbnails/do", data=form_of(page.text))
    assert again.status_code == 409 and wq.stats().pending == 20
    made_up = {**form_of(page.text), "confirmation": "made-up"}
    assert c.post("/q/thumbnails/do", data=made_up).status_code == 409
    assert wq.stats().pending == 20


def test_a_form_without_its_confirmed_count_does_nothing(server_url, r):
    wq = seed(r, "emails", dead=3, pending=4)
    c = client(make_web(server_url, "emails"))
    page = c.get("/q/emails/confirm", params={"action": "purge", "state": "pending"})
    for count in ("", "lots", "-1", '{"emails": -1}', "[4]"):
        form = {**form_of(page.text), "count": count}
        done = c.post("/q/emails/do", data=form)
        assert done.status_code == 400 and "no confirmed count" in done.text, count
    assert (wq.stats().pending, wq.stats().dead) == (4, 3)


def test_a_sharded_queue_purges_at_most_each_shards_confirmed_count(r):
    reshard(r, "jobs", 3)
    sq = ShardedQueue(r, "jobs")
    sq.push([NewItem(b"{}", f"old-{i}") for i in range(30)])
    caps = Browser("jobs", sq).confirmed("pending")
    assert sorted(caps) == [q.prefix for q in sq.shards] and sum(caps.values()) == 30
    sq.push([NewItem(b"{}", f"new-{i}") for i in range(90)])
    done = run_action(Actions("jobs", sq).purge_state("pending", caps))
    assert done.startswith("purged 30 pending items"), done
    left = {i.id for i in sq.peek("pending", count=200)}
    assert left == {f"new-{i}" for i in range(90)}  # each shard lost only its own old ones


def test_a_second_pause_from_a_stale_page_leaves_the_queue_paused(server_url, r):
    wq = seed(r, "emails", pending=1)
    c = client(make_web(server_url, "emails"))
    tab1 = c.get("/q/emails/confirm", params={"action": "pause"})
    tab2 = c.get("/q/emails/confirm", params={"action": "pause"})
    page = c.get("/q/emails/confirm", params={"action": "resume"})
    assert c.post("/q/emails/do", data=form_of(tab1.text)).status_code == 200
    again = c.post("/q/emails/do", data=form_of(tab2.text))
    assert "nothing changed" in again.text and wq.stats().paused
    assert c.post("/q/emails/do", data=form_of(page.text)).status_code == 200  # resumed
    assert not wq.stats().paused
    again = c.post("/q/emails/do", data=form_of(tab1.text))  # a replayed form: nothing
    assert again.status_code == 409 and "done already" in again.text
    assert not wq.stats().paused
    # the queue page offers what ends the state it shows
    assert 'action=pause"' in c.get("/q/emails").text
    wq.pause()
    assert 'action=resume"' in c.get("/q/emails").text


PAGES = ("/", "/q/emails", "/q/emails?tab=history", "/q/emails/item/p-000",
         "/q/emails/confirm?action=pause", "/nowhere", "/q/nowhere")


@pytest.mark.parametrize("host", ["evil.example:8325", "evil.example", "localhost.evil.example",
                                  "127.0.0.1.evil.example", "", "[::1"])
def test_a_foreign_host_gets_no_page_and_changes_nothing(server_url, r, host):
    wq = seed(r, "emails", pending=2)
    c = client(make_web(server_url, "emails"))
    page = c.get("/q/emails/confirm", params={"action": "pause"})
    for path in PAGES:
        got = c.get(path, headers={"host": host})
        assert got.status_code == 421 and "emails" not in got.text, (path, got.text)
        assert "Content-Security-Policy" in got.headers
    got = c.post("/q/emails/do", data=form_of(page.text), headers={"host": host})
    assert got.status_code == 421 and not wq.stats().paused


@pytest.mark.parametrize("host", ["localhost", "localhost:8325", "127.0.0.1:1", "[::1]:8325",
                                  "LOCALHOST.", "console.lan:8325"])
def test_its_own_host_names_get_the_pages(server_url, r, host):
    from rq_cli.web.guard import Guard
    from rq_cli.web.serve import allowed_hosts

    seed(r, "emails", pending=2)
    web = make_web(server_url, "emails")
    web.guard = Guard(hosts=allowed_hosts("127.0.0.1", ["console.lan"]))
    assert client(web).get("/", headers={"host": host}).status_code == 200


def test_a_wildcard_bind_answers_its_addresses_not_names(server_url, r):
    from rq_cli.web.guard import Guard
    from rq_cli.web.serve import allowed_hosts

    web = make_web(server_url, "emails")
    web.guard = Guard(hosts=allowed_hosts("0.0.0.0", []), any_address=True)
    c = client(web)
    assert c.get("/", headers={"host": "192.0.2.7:8325"}).status_code == 200
    assert c.get("/", headers={"host": "0.0.0.0:8325"}).status_code == 200
    assert c.get("/", headers={"host": "evil.example:8325"}).status_code == 421


@pytest.mark.parametrize("headers", [
    {"origin": "http://evil.example:8325"}, {"origin": "null"},
    {"origin": "http://localhost:1"}, {"origin": "file://"},
    {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"},
    {"origin": "http://localhost", "sec-fetch-site": "cross-site"}])
def test_a_post_from_another_origin_changes_nothing(server_url, r, headers):
    wq = seed(r, "emails", pending=5, dead=2)
    c = client(make_web(server_url, "emails"))
    for params in ({"action": "pause"}, {"action": "purge", "state": "pending"},
                   {"action": "requeue"}):
        page = c.get("/q/emails/confirm", params=params)
        got = c.post("/q/emails/do", data=form_of(page.text), headers=headers)
        assert got.status_code == 403 and "another site" in got.text, params
    s = wq.stats()
    assert (s.pending, s.dead, s.paused) == (5, 2, False)
    # its own origin (as a browser sends it) does it
    page = c.get("/q/emails/confirm", params={"action": "pause"})
    got = c.post("/q/emails/do", data=form_of(page.text),
                 headers={"origin": "http://localhost", "sec-fetch-site": "same-origin"})
    assert got.status_code == 200 and wq.stats().paused


def test_every_page_has_a_content_security_policy_and_no_script(server_url, r):
    seed(r, "emails", pending=2, dead=1)
    c = client(make_web(server_url, "emails"))
    page = c.get("/q/emails/confirm", params={"action": "pause"})
    answers = [c.get(p) for p in PAGES]
    answers.append(c.post("/q/emails/do", data=form_of(page.text)))
    answers.append(c.post("/q/emails/do", data={"csrf": csrf_of(page.text)}))
    answers.append(client(make_web(server_url, "emails", token="a" * 20)).get("/"))
    assert {a.status_code for a in answers} >= {200, 400, 401, 404}
    for a in answers:
        policy = a.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy, policy
        assert "<script" not in a.text and "javascript:" not in a.text
        assert " style=" not in a.text
        # styles only from the console's own stylesheet: no style block, no nonce
        assert "style-src 'self'" in policy and "nonce" not in policy, policy
        assert "<style" not in a.text
        if a.headers["content-type"].startswith("text/html") and a.status_code != 401:
            assert f'<link rel="stylesheet" href="{STYLESHEET_URL}">' in a.text
    sheet = c.get(STYLESHEET_URL)
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/css")
    assert "@media (max-width: 640px)" in sheet.text


def test_a_short_token_is_refused_beyond_loopback(server_url):
    got = rq("--url", server_url, "web", "--bind", "192.0.2.1:1",
             env={"RQ_CLI_WEB_TOKEN": "short-token"})
    assert got.returncode == ExitCode.USAGE and "16 or more" in got.stderr
    assert got.stderr.count("\n") == 1 and "short-token" not in got.stderr
    # on loopback a short token is the user's choice (it goes on to a port in use)
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        got = rq("--url", server_url, "web", "--bind", f"127.0.0.1:{taken.getsockname()[1]}",
                 env={"RQ_CLI_WEB_TOKEN": "short-token"})
    assert "16 or more" not in got.stderr and "cannot listen" in got.stderr
