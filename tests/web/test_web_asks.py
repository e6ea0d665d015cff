"""Asking a worker to drain or stop from the holders page of ``rq-cli web``: a confirmed
action (CSRF) that writes the worker's control key, named after who asked."""

from __future__ import annotations

import base64
import html
import json
import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from web_helpers import client, form_of, make_web

from rq_cli.core.contract.keys import Keys
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem


def held(r, name: str) -> str:
    wq = WorkQueue(r, name)
    wq.push([NewItem(b"{}", "a"), NewItem(b"{}", "b")])
    wq.lease(2, lease_seconds=300)
    return wq.session


@pytest.mark.parametrize("ask", ["drain", "stop"])
def test_a_holders_row_asks_its_worker_through_a_confirmation_with_csrf(server_url, r, ask):
    session = held(r, "team/jobs")
    key = Keys("team/jobs").control(session)
    web = make_web(server_url, "team/jobs", token="s3cret")
    auth = {"Authorization": "Basic " + base64.b64encode(b"alice:s3cret").decode()}
    c = client(web, headers=auth)
    page = c.get("/q/team%2Fjobs", params={"tab": "holders"})
    assert page.status_code == 200
    links = re.findall(rf'class="ask-{ask}" href="([^"]+)"', page.text)
    assert len(links) == 1
    confirm = c.get(html.unescape(links[0]))
    assert confirm.status_code == 200, confirm.text
    assert f"Ask worker {session}" in confirm.text and f"to {ask}:" in confirm.text
    assert r.get(key) is None  # asking is not doing
    form = {"action": ask, "session": session}
    assert c.post("/q/team%2Fjobs/do", data=form).status_code == 403  # no CSRF token
    assert r.get(key) is None
    done = c.post("/q/team%2Fjobs/do", data=form_of(confirm.text))
    assert done.status_code == 200, done.text
    assert f"asked worker {session} to {ask}" in done.text
    written = json.loads(r.get(key))
    assert written["ask"] == ask and written["session"] == session
    assert written["by"] == "alice@testclient"
    assert "alice@testclient asked: kill -TERM" in web.log.getvalue()


def test_an_unknown_session_and_read_only_ask_nothing(server_url, r):
    session = held(r, "jobs")
    c = client(make_web(server_url, "jobs"))
    missing = c.get("/q/jobs/confirm", params={"action": "drain", "session": "h:1:gone"})
    assert missing.status_code == 404
    ro = client(make_web(server_url, "jobs", read_only=True))
    page = ro.get("/q/jobs", params={"tab": "holders"}).text
    assert session in page and "ask-drain" not in page and "ask-stop" not in page
    assert ro.get("/q/jobs/confirm", params={"action": "stop", "session": session}
                  ).status_code == 403
    assert list(r.scan_iter("jobs:control:*")) == []
