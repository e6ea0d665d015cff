"""``rq-cli web``'s pages and actions through Starlette's TestClient, against a real server:
the overview, a queue's tabs, an item, the confirmed actions, the token, CSRF, read-only and
an outage."""

from __future__ import annotations

import base64
import html
import io
import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from web_helpers import client, confirm_and_do, csrf_of, form_of, make_web, seed

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem


def test_the_overview_shows_every_queue_with_its_counts(server_url, r):
    seed(r, "emails", dead=5, pending=3)
    WorkQueue(r, "thumbs").pause()
    c = client(make_web(server_url, "emails", "thumbs"))
    page = c.get("/")
    assert page.status_code == 200
    assert 'data-queue="emails"' in page.text and 'data-queue="thumbs"' in page.text
    assert re.search(r'<td class="n dead[^"]*" data-label="dead">5</td>', page.text)
    assert re.search(r'<td class="n pending" data-label="pending">3</td>', page.text)
    assert "paused" in page.text.split('data-queue="thumbs"')[1]


def test_a_queues_tabs_a_page_at_a_time_filters_and_an_item_escaped(server_url, r):
    wq = seed(r, "emails", dead=60, pending=2)
    from rq_cli.core.types import NewItem

    wq.push([NewItem(b'{"html": "<script>alert(1)</script>"}', "evil"),
             NewItem(b"plain \x07 text", "a/b c")])
    c = client(make_web(server_url, "emails"))
    dead = c.get("/q/emails", params={"tab": "dead"})
    assert dead.status_code == 200
    assert dead.text.count("/q/emails/item/d-") == 50 and 'id="next"' in dead.text
    second = c.get("/q/emails", params={"tab": "dead", "offset": 50})
    assert second.text.count("/q/emails/item/d-") == 10 and "51\u201360 of 60" in second.text
    timeouts = c.get("/q/emails", params={"tab": "dead", "filter": "--error timeout"})
    assert timeouts.text.count("/q/emails/item/d-") == 20
    assert c.get("/q/emails", params={"filter": "--nope x"}).status_code == 400
    item = c.get("/q/emails/item/evil")
    assert "<script>alert" not in item.text and "&lt;script&gt;alert(1)" in item.text
    assert c.get("/q/emails/item/nothing").status_code == 404
    odd = c.get("/q/emails").text
    assert "/q/emails/item/a%2Fb%20c" in odd
    plain = c.get("/q/emails/item/a%2Fb%20c")
    assert plain.status_code == 200 and "plain \\x07 text" in plain.text
    for tab in ("holders", "errors", "history", "processing", "delayed"):
        assert c.get("/q/emails", params={"tab": tab}).status_code == 200, tab
    groups = c.get("/q/emails", params={"tab": "errors"}).text
    assert "bad input" in groups and "timeout" in groups


def test_a_tabs_table_has_a_column_per_declared_item_field(server_url, r):
    """The tables follow rq_cli/core/contract/fields.py: a header per per-item field with a column,
    and its cell (an error under its own class)."""
    from rq_cli.core.contract.fields import PEEK, carried

    seed(r, "emails", dead=3, pending=0)
    dead = client(make_web(server_url, "emails")).get("/q/emails", params={"tab": "dead"})
    header = re.search(r"<tr>(?:<th></th>)?<th>id</th>.*?</tr>", dead.text)
    assert header is not None
    for field in carried(PEEK):
        assert (f"<th>{field.column}</th>" in header.group()) == bool(field.column)
    assert dead.text.count('<td class="error" data-label="error">') == 3


def test_requeue_through_the_confirmation_moves_exactly_the_matching_items(server_url, r):
    wq = seed(r, "emails", dead=30)
    web = make_web(server_url, "emails")
    c = client(web)
    confirm, done = confirm_and_do(c, "emails", action="requeue", filter="--error timeout")
    assert "Requeue 10 dead items of emails" in confirm
    assert "rq-cli --url redis://127.0.0.1:" in confirm
    assert "requeue-dead emails --error timeout" in confirm
    assert "requeued 10 of 10 matched" in done
    s = wq.stats()
    assert (s.pending, s.dead) == (10, 20)
    assert "testclient asked: rq-cli" in web.log.getvalue()  # who asked, and what
    # an error group: its key read from the errors tab
    page = c.get("/q/emails", params={"tab": "errors"}).text
    group = re.search(r"<td class=\"error\">bad input</td><td><code>(\w+)</code>", page)
    assert group, page
    confirm, done = confirm_and_do(c, "emails", action="requeue",
                                   filter=f"--error-group {group.group(1)}")
    assert "Requeue 20 dead items" in confirm and "requeued 20 of 20" in done
    assert (wq.stats().pending, wq.stats().dead) == (30, 0)


def test_purge_and_pause_are_confirmed_with_their_counts(server_url, r):
    wq = seed(r, "emails", dead=4, pending=7)
    c = client(make_web(server_url, "emails"))
    confirm, done = confirm_and_do(c, "emails", action="purge", state="pending")
    assert "Delete all 7 pending items" in confirm and "purged 7 pending items" in done
    assert wq.stats().pending == 0 and wq.stats().dead == 4
    confirm, done = confirm_and_do(c, "emails", action="pause")
    assert "rq-cli --url" in confirm and " pause emails" in confirm and "paused" in done
    assert wq.stats().paused
    # a second "pause" (a stale page, a replayed form) names its end state: still paused
    confirm, done = confirm_and_do(c, "emails", action="pause")
    assert "Pause emails" in confirm and "nothing changed" in done and wq.stats().paused
    confirm, done = confirm_and_do(c, "emails", action="resume")
    assert "Resume emails" in confirm and not wq.stats().paused


def test_an_action_without_its_csrf_token_is_refused(server_url, r):
    wq = seed(r, "emails", dead=3)
    c = client(make_web(server_url, "emails"))
    c.get("/")  # (the session cookie)
    assert c.post("/q/emails/do", data={"action": "requeue"}).status_code == 403
    assert c.post("/q/emails/do", data={"action": "requeue", "csrf": "0" * 64}).status_code == 403
    other = client(make_web(server_url, "emails"))
    token = csrf_of(other.get("/q/emails/confirm", params={"action": "requeue"}).text)
    assert c.post("/q/emails/do", data={"action": "requeue", "csrf": token}).status_code == 403
    assert wq.stats().dead == 3


def test_read_only_hides_and_refuses_every_action(server_url, r):
    wq = seed(r, "emails", dead=3)
    c = client(make_web(server_url, "emails", read_only=True))
    page = c.get("/q/emails", params={"tab": "dead"})
    assert page.status_code == 200 and 'id="requeue"' not in page.text
    assert c.get("/q/emails/confirm", params={"action": "requeue"}).status_code == 403
    writable = client(make_web(server_url, "emails"))
    token = csrf_of(writable.get("/q/emails/confirm", params={"action": "requeue"}).text)
    c.cookies.update(writable.cookies)
    assert c.post("/q/emails/do", data={"action": "requeue", "csrf": token}).status_code == 403
    assert wq.stats().dead == 3


def test_a_token_is_required_on_every_request_bearer_or_basic(server_url, r):
    seed(r, "emails", dead=1)
    c = client(make_web(server_url, "emails", token="s3cret"))
    refused = c.get("/")
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
    assert c.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/no/such/page").status_code == 401  # every request, known or not
    assert c.post("/q/emails/do").status_code == 401
    assert c.get("/q/emails/do").status_code == 401
    assert c.get("/q/emails/do", headers={"Authorization": "Bearer s3cret"}).status_code == 405
    assert c.get("/nope", headers={"Authorization": "Bearer s3cret"}).status_code == 404
    assert c.get("/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    basic = base64.b64encode(b"alice:s3cret").decode()
    page = c.get("/q/emails", headers={"Authorization": f"Basic {basic}"})
    assert page.status_code == 200 and "alice@" in page.text and "s3cret" not in page.text
    wrong = base64.b64encode(b"alice:nope").decode()
    assert c.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401


def test_an_outage_is_an_error_row_and_page_and_it_recovers(make_server):
    srv = make_server()
    import redis

    seed(redis.Redis(port=srv.port), "emails", dead=2)
    c = client(make_web(srv.url, "emails"))
    assert c.get("/").status_code == 200
    srv.stop()
    down = c.get("/")
    assert down.status_code == 200 and 'class="error"' in down.text
    page = c.get("/q/emails")
    assert page.status_code == 503 and 'id="reason"' in page.text
    srv.start()
    seed(redis.Redis(port=srv.port), "emails", dead=2)
    back = c.get("/")
    assert back.status_code == 200
    assert '<td class="n dead hot-dead" data-label="dead">2</td>' in back.text
    assert c.get("/q/emails").status_code == 200


def test_passwords_never_reach_a_page(make_server):
    import redis

    srv = make_server(requirepass="pw-s3cret-9")
    seed(redis.Redis(port=srv.port, password="pw-s3cret-9"), "emails", dead=2)
    url = f"redis://:pw-s3cret-9@127.0.0.1:{srv.port}/0"
    c = client(make_web(url, "emails"))
    pages = [c.get("/"), c.get("/q/emails", params={"tab": "dead"}),
             c.get("/q/emails/confirm", params={"action": "requeue"})]
    assert all(p.status_code == 200 for p in pages)
    assert "rq-cli --url 'redis://:***@127.0.0.1:" in pages[2].text.replace("&#39;", "'")
    srv.stop()
    pages += [c.get("/"), c.get("/q/emails")]
    assert pages[-1].status_code == 503
    for page in pages:
        assert "pw-s3cret-9" not in page.text


def test_the_history_tab_draws_the_snapshots(server_url, r):
    from rq_cli.core.contract.keys import HISTORY_FIELDS

    c = client(make_web(server_url, "emails", "quiet"))
    empty = c.get("/q/quiet", params={"tab": "history"}).text  # (never used)
    assert "no history yet" in empty
    seed(r, "emails", pending=3)  # the first push snapshots the counters (nothing counted)
    seed(r, "emails", dead=2)
    page = c.get("/q/emails", params={"tab": "history"}).text
    assert '<svg id="history"' in page and page.count("<polyline") == len(HISTORY_FIELDS)
    assert "no history yet" not in page
    rows = page.split('id="history-table"')[1].split("</table>")[0].split("</tr>")[1:]
    counts = [[int(n) for n in re.findall(r'<td class="n" data-label="\w+">(\d+)</td>', row)]
              for row in rows]
    # (one bucket, or two if the seeding crossed a minute): pushed, ..., dead, requeued
    assert [sum(c[i] for c in counts if c) for i in range(5)] == [5, 0, 2, 2, 0]


def test_the_history_graph_has_its_axes_labelled_and_a_series_per_counter(server_url, r):
    import time

    from rq_cli.console.chart import zone
    from rq_cli.core.contract.keys import HISTORY_FIELDS
    from rq_cli.core.contract.util import server_ms

    wq = seed(r, "emails", pending=1)
    r.delete("emails:history", "emails:history_hourly")  # (the seeding push's snapshot)
    now = server_ms(r)
    first = now - 30 * 60_000
    wq.call("history", now_ms=first)  # 30 minutes ago, then 40 pushed, then a minute ago
    wq.push([NewItem(b"x", f"h-{i}") for i in range(40)])
    # (the push's own snapshot of this minute goes: the 40 fall between the two below)
    r.zremrangebyscore("emails:history", first // 60_000 + 1, "+inf")
    wq.call("history", now_ms=now - 60_000)
    page = client(make_web(server_url, "emails")).get("/q/emails",
                                                      params={"tab": "history"}).text
    svg = page.split('<svg id="history"')[1].split("</svg>")[0]
    # one series per counter of the history
    assert re.findall(r'data-field="(\w+)"', svg) == list(HISTORY_FIELDS)
    # counts on the y axis: 0, the middle, a rounded top (40 over 29 minutes: 1.4 a
    # minute, so 2), and what they count
    y_axis = svg.split('class="y-axis"')[1].split("</g>")[0]
    assert re.findall(r">([\d.,]+)</text>", y_axis) == ["0", "1", "2"]
    assert "per minute" in y_axis
    # time on the x axis: the first snapshot's minute, local time, the zone said
    x_axis = svg.split('class="x-axis"')[1].split("</g>")[0]
    labels = re.findall(r">([\d:-]+(?: [\d:]+)?)</text>", x_axis)
    assert len(labels) >= 2
    assert labels[0] == time.strftime("%H:%M", time.localtime(first // 60_000 * 60))
    assert f"time in {zone()}" in page and f"at ({zone()})" in page


ODD_NAMES = ("team/emails", "50%", "why?", "#1", "with space", "naïve/ünï", "a%2Fb", ".", "..",
             "~home", "~")


def test_queue_names_with_url_unsafe_characters_round_trip_through_every_link(server_url, r):
    for name in ODD_NAMES:
        wq = seed(r, name, dead=1, pending=1)
        wq.push([NewItem(b"x", "x/y?z")])
    c = client(make_web(server_url, *ODD_NAMES))
    overview = c.get("/").text
    links = re.findall(r'<td class="q"><a href="(/q/[^"]+)">', overview)
    assert len(links) == len(ODD_NAMES)
    for name, link in zip(ODD_NAMES, links, strict=True):
        page = c.get(link)
        assert page.status_code == 200, (name, page.text)
        assert f"<h1>{html.escape(name)}" in page.text or html.escape(name) in page.text
        assert page.text.count("/item/") == 2  # its own two pending items, no other queue's
        for tab in ("dead", "holders", "errors", "history"):
            tabbed = c.get(link, params={"tab": tab})
            assert tabbed.status_code == 200, (name, tab)
        item_links = re.findall(r'href="(/q/[^"]+/item/[^"]+)"', page.text)
        for item_link in item_links:
            item = c.get(html.unescape(item_link))
            assert item.status_code == 200, (name, item_link, item.text)
        assert any("x%2Fy%3Fz" in link for link in item_links)
        # a confirmed action on it: pause, then the queue is paused (and only it)
        confirm = c.get(f"{link}/confirm", params={"action": "pause"})
        assert confirm.status_code == 200, (name, confirm.text)
        action = re.search(r'<form method="post" action="([^"]+)"', confirm.text).group(1)
        done = c.post(html.unescape(action), data=form_of(confirm.text))
        assert done.status_code == 200, (name, done.text)
        assert WorkQueue(r, name).stats().paused, name
        assert html.escape(name) in done.text
    assert c.get("/q/team").status_code == 404  # "team/emails" is one name, not a path


def test_odd_queue_names_through_a_real_uvicorn(server_url, r):
    import httpx
    from web_helpers import running

    seed(r, "team/emails", pending=1)
    with running(server_url, "team/emails", "50%") as base:
        page = httpx.get(base + "/")
        links = re.findall(r'<td class="q"><a href="(/q/[^"]+)">', page.text)
        assert links == ["/q/team%2Femails", "/q/50%25"]
        for link in links:
            assert httpx.get(base + link).status_code == 200
        item = re.search(r'href="(/q/[^"]+/item/[^"]+)"', httpx.get(base + links[0]).text)
        assert httpx.get(base + html.unescape(item.group(1))).status_code == 200


def test_the_errors_tab_of_a_sharded_queue_groups_every_shard(server_url, r, tmp_path):
    from rq_cli.cli.common import State
    from rq_cli.cli.dash import global_options
    from rq_cli.cli.inspect import stats_targets
    from rq_cli.core.sharding.resharding import reshard
    from rq_cli.core.sharding.sharded import ShardedQueue
    from rq_cli.web.guard import Guard
    from rq_cli.web.pages import Web

    config = tmp_path / "rq-cli.toml"
    config.write_text('[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    reshard(r, "jobs", 3)
    sq = ShardedQueue(r, "jobs", shards=3)
    sq.push([NewItem(b"{}", f"i-{n}") for n in range(12)])
    leased = sq.lease(12, lease_seconds=60)
    assert len({i.queue for i in leased}) > 1  # (several shards hold them)
    sq.fail([i.id for i in leased], error="smtp timeout", dead=True)
    st = State(url=server_url, config_path=str(config))
    c = client(Web(stats_targets(st, ["jobs"], False), guard=Guard(None),
                   cli_prefix=global_options(st), st=st, log=io.StringIO()))
    page = c.get("/q/jobs", params={"tab": "errors"})
    assert page.status_code == 200, page.text
    assert "smtp timeout" in page.text and '<td class="n">12</td>' in page.text


def test_the_views_refresh_themselves_and_a_confirmation_and_the_dead_tab_do_not(
        server_url, r):
    seed(r, "emails", dead=2, pending=1)
    c = client(make_web(server_url, "emails"))
    for path in ("/", "/q/emails", "/q/emails?tab=history"):
        assert c.get(path).headers.get("refresh") == "10", path
    # a page a person acts on is left as read: the dead tab (picked items), a confirmation
    assert "refresh" not in c.get("/q/emails?tab=dead").headers
    assert "refresh" not in c.get("/q/emails/confirm", params={"action": "pause"}).headers


def test_picked_dead_items_are_requeued_or_deleted_by_id_and_no_other(server_url, r):
    wq = seed(r, "emails", dead=5)
    c = client(make_web(server_url, "emails"))
    # the confirmation lists the ids; its form carries them; doing it touches only those
    page = c.get("/q/emails/confirm", params=[("action", "delete-ids"), ("id", "d-001"),
                                              ("id", "d-003")])
    assert page.status_code == 200 and "Delete 2 dead items of emails" in page.text
    assert re.findall(r'name="id" value="([^"]+)"', page.text) == ["d-001", "d-003"]
    wq.requeue_dead(["d-003"])  # (one moves on before "Do it": left alone)
    data = {**form_of(page.text), "id": ["d-001", "d-003"]}
    posted = c.post("/q/emails/do", data=data, follow_redirects=False)
    assert posted.status_code == 303
    assert posted.headers["location"].startswith("/q/emails/done/")
    assert "deleted 1 of 2 (1 no longer dead)" in c.get(posted.headers["location"]).text
    assert wq.item("d-001") is None and wq.item("d-003").state == "pending"
    assert sorted(i.id for i in wq.peek("dead", count=10)) == ["d-000", "d-002", "d-004"]
    # none picked, one picked twice, or more than a page: refused, nothing done
    for ids in ([], ["d-000", "d-000"], [f"x-{i}" for i in range(51)]):
        got = c.get("/q/emails/confirm",
                    params=[("action", "requeue-ids"), *(("id", i) for i in ids)])
        assert got.status_code == 400 and "pick 1 to 50 dead items" in got.text
    assert wq.stats().dead == 3


def test_the_batches_tab_shows_each_batch_with_its_progress(server_url, r):
    wq = WorkQueue(r, "emails")
    wq.push([b"1", b"2", b"3", b"4"], batch="news-42")
    wq.complete(wq.lease(2))
    wq.fail(wq.lease(1), error="x", dead=True)
    c = client(make_web(server_url, "emails"))
    empty = c.get("/q/emails", params={"tab": "batches"})
    assert empty.status_code == 200 and 'data-batch="news-42"' in empty.text
    row = empty.text.split('data-batch="news-42"')[1].split("</tr>")[0]
    cells = re.findall(r'<td class="n[^"]*">([^<]*)</td>', row)
    assert cells == ["4", "1", "0", "0", "2", "1", "75%"], cells
    from rq_cli.core.operations import batchops

    assert batchops.forget(wq, "news-42") == 1
    gone = c.get("/q/emails", params={"tab": "batches"})
    assert 'data-batch="news-42"' not in gone.text and "no batches" in gone.text
