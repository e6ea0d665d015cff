"""The web console's audit trail (issue 38): each confirmed action is recorded in the queue's
trail with its command line, count, the browser's address, the user and the token's label;
the queue's audit page shows the trail, escaped, and links from the queue page."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from web_helpers import client, confirm_and_do, make_web, seed

from rq_cli.core.operations.audit import By, read_audit, record


def test_web_actions_are_recorded_with_who_and_shown(server_url, r):
    wq = seed(r, "emails", dead=4, pending=7)
    basic = base64.b64encode(b"alice:s3cretlongtoken").decode()
    c = client(make_web(server_url, "emails", token="s3cretlongtoken"),
               headers={"Authorization": f"Basic {basic}"})
    confirm_and_do(c, "emails", action="purge", state="pending")
    confirm_and_do(c, "emails", action="requeue", filter="--error-group 0123456789ab")
    confirm_and_do(c, "emails", action="pause")
    entries = read_audit(wq)
    assert [(e["action"], e["count"]) for e in entries] == [("pause", 1), ("purge", 7)]
    purge = entries[1]
    assert purge["command"].endswith("purge emails --state pending --yes")
    assert (purge["user"], purge["token"], purge["via"], purge["host"]) == \
        ("alice", "basic", "web", "testclient")
    assert "s3cretlongtoken" not in str(entries)
    page = c.get("/q/emails")
    assert page.status_code == 200 and 'href="/q/emails/audit"' in page.text
    audit = c.get("/q/emails/audit")
    assert audit.status_code == 200
    assert "purge emails --state pending --yes" in audit.text and "alice" in audit.text
    assert audit.text.index(">pause<") < audit.text.index(">purge<")  # newest first


def test_the_audit_page_escapes_what_it_shows(server_url, r):
    wq = seed(r, "emails", pending=1)
    record(wq, "purge", "rq-cli purge emails <script>alert(1)</script>", 1,
           By("<b>host</b>", "<i>u</i>", None, "cli"))
    r.rpush("emails:audit", "not json <img src=x onerror=alert(1)>")
    page = client(make_web(server_url, "emails")).get("/q/emails/audit")
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
    assert "<img" not in page.text and "&lt;img src=x" in page.text
    assert "<b>host" not in page.text and "<i>u" not in page.text


def test_an_empty_trail_says_so_and_a_bearer_token_is_its_label(server_url, r):
    wq = seed(r, "emails", dead=2)
    c = client(make_web(server_url, "emails", token="s3cretlongtoken"),
               headers={"Authorization": "Bearer s3cretlongtoken"})
    assert 'id="no-audit"' in c.get("/q/emails/audit").text
    confirm_and_do(c, "emails", action="requeue")
    (e,) = read_audit(wq)
    assert (e["action"], e["count"], e["user"], e["token"]) == ("requeue", 2, None, "bearer")
