"""Asking a worker to drain or stop from its holders row in ``rq-cli dash`` (Pilot, real
key presses, a real server): the question, the control key written, read-only."""

from __future__ import annotations

import json

from dash_helpers import drive, make_app, press, seed
from test_dash_console import open_queue, question

from rq_cli.console.asks import console_user
from rq_cli.core.contract.keys import Keys
from rq_cli.core.operations.control import take_asks


def test_d_and_s_on_a_holders_row_ask_its_worker_through_the_control_key(r, server_url):
    wq = seed(r, "jobs", pending=1, processing=2)
    session = wq.peek("processing", count=1)[0].lease_session
    key = Keys("jobs").control(session)

    async def script(pilot):
        await open_queue(pilot, "1")
        await press(pilot, "D")  # not on the pending tab: nothing asked
        pending_tab = r.get(key)
        await press(pilot, "5", "D")
        drain_q = question(pilot.app)
        await press(pilot, "n")
        declined = r.get(key)
        await press(pilot, "D", "y")
        drained = json.loads(r.get(key))
        await press(pilot, "S")
        stop_q = question(pilot.app)
        await press(pilot, "y")
        return pending_tab, drain_q, declined, drained, stop_q, pilot.app.done_log

    pending_tab, drain_q, declined, drained, stop_q, log = drive(
        make_app(server_url, "jobs"), script)
    assert pending_tab is None and declined is None
    assert f"Ask worker {session}" in drain_q and "2 live leases of jobs" in drain_q
    assert "to drain: finish the items it holds" in drain_q
    assert "kill -TERM" in drain_q
    assert drained["ask"] == "drain" and drained["by"] == console_user()
    assert drained["session"] == session
    assert "to stop: stop its commands" in stop_q
    assert 0 < r.ttl(key) <= 600
    asked = take_asks([wq], session)  # the stop replaced the drain
    assert asked is not None and asked.ask == "stop" and asked.by == console_user()
    assert len(log) == 2 and f"asked worker {session} to stop" in log[1]


def test_read_only_asks_no_worker(r, server_url):
    wq = seed(r, "jobs", processing=1)
    session = wq.peek("processing", count=1)[0].lease_session

    async def script(pilot):
        await open_queue(pilot, "5")
        await press(pilot, "D", "y", "S", "y")

    drive(make_app(server_url, "jobs", read_only=True), script)
    assert r.get(Keys("jobs").control(session)) is None
