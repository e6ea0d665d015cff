"""``rq-cli dash`` driven by Textual's Pilot with real key presses against a real server:
navigation, paging, the item view, each action with its confirmation (yes and no), search,
the command bar, read-only, a server that goes away and comes back."""

from __future__ import annotations

import io
import time

import pytest
import redis
from dash_helpers import drive, make_app, press, screen_text, seed, settle, type_in
from rich.console import Console
from textual.widgets import DataTable, Static
from waiting import clear_of_a_minute_turn

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.dash.app import OverviewScreen
from rq_cli.dash.item import ItemScreen
from rq_cli.dash.queue_screen import QueueScreen
from rq_cli.dash.widgets import ConfirmScreen, HelpScreen


def cells(app) -> list[list[str]]:
    """The rows of the table on screen, as text."""
    table = app.screen.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def ids_shown(app) -> list[str]:
    return [row[1] for row in cells(app)]


def text_of(widget: Static) -> str:
    """What a Static shows, as plain text (a rich Table or Syntax drawn 200 columns wide)."""
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(widget.content)
    return console.export_text().rstrip("\n")


def status(app) -> str:
    return text_of(app.screen.query_one("#status", Static))


def notes(app) -> str:
    return text_of(app.screen.query_one("#notes", Static))


def question(app) -> str:
    assert isinstance(app.screen, ConfirmScreen), app.screen
    return " ".join(text_of(w) for w in app.screen.query(Static))


async def open_queue(pilot, tab_key: str) -> None:
    await press(pilot, "enter")
    assert isinstance(pilot.app.screen, QueueScreen)
    await press(pilot, tab_key)


# -- looking ---------------------------------------------------------------------------------

def test_the_overview_shows_each_queue_with_its_counts_and_paused_queues_stand_out(r, server_url):
    seed(r, "emails", dead=4, pending=3, processing=2)
    WorkQueue(r, "thumbs").pause()

    async def script(pilot):
        return cells(pilot.app), notes(pilot.app)

    rows, said = drive(make_app(server_url, "emails", "thumbs"), script)
    by_name = {row[0].split()[0]: row for row in rows}
    assert by_name["emails"][1:6] == ["3", "2", "0", "0", "4"]  # pending leased aband. delayed dead
    assert by_name["thumbs"][0] == "thumbs (paused)" and by_name["thumbs"][1] == "0"
    assert "paused: thumbs" in said


def test_find_narrows_the_overview_and_sort_orders_it(r, server_url):
    seed(r, "a-small", pending=1)
    seed(r, "b-big", pending=5)
    seed(r, "c-other", dead=2)

    async def script(pilot):
        await press(pilot, "slash")
        await type_in(pilot, "b-")
        found = [row[0] for row in cells(pilot.app)]
        await press(pilot, "slash", "ctrl+u", "enter")
        await press(pilot, "s", "s")  # given -> name -> pending
        by_pending = [row[0] for row in cells(pilot.app)]
        return found, by_pending

    found, by_pending = drive(make_app(server_url, "c-other", "a-small", "b-big"), script)
    assert found == ["b-big"]
    assert by_pending == ["b-big", "a-small", "c-other"]


@pytest.mark.parametrize(("state", "key"), [("dead", "4"), ("pending", "1")])
def test_a_queue_pages_through_its_items_in_order(r, server_url, state, key):
    # the far half of a list is read from its tail: the last page must still be in order
    wq = seed(r, "jobs", **{state: 60})
    order = [item.id for item in wq.peek(state, count=60)]

    async def script(pilot):
        await open_queue(pilot, key)
        size = pilot.app.screen.page_size
        first = ids_shown(pilot.app)
        await press(pilot, "n")
        second = ids_shown(pilot.app)
        await press(pilot, "n")
        third = ids_shown(pilot.app)
        await press(pilot, "G")
        last = ids_shown(pilot.app)
        await press(pilot, "b")
        before_last = ids_shown(pilot.app)
        await press(pilot, "g")
        again = ids_shown(pilot.app)
        return size, first, second, third, last, before_last, again, status(pilot.app)

    size, first, second, third, last, before_last, again, said = drive(
        make_app(server_url, "jobs"), script, size=(100, 24))
    assert size < 30  # a screen of 24 rows holds one page: paging is needed
    assert first == order[:size] and again == first
    assert second == order[size:2 * size]
    assert third == order[2 * size:3 * size]  # (partly from the tail)
    assert last == order[-size:]
    assert before_last == order[60 - 2 * size:60 - size]
    assert f"{state}: 1-{size} of 60" in said


def test_pending_and_processing_show_their_items_and_holders_the_sessions(r, server_url):
    wq = seed(r, "jobs", pending=3, processing=2)
    session = wq.peek("processing", count=1)[0].lease_session

    async def script(pilot):
        await open_queue(pilot, "1")
        pending = ids_shown(pilot.app)
        await press(pilot, "2")
        processing = cells(pilot.app)
        await press(pilot, "5")
        holders = cells(pilot.app)
        return pending, processing, holders

    pending, processing, holders = drive(make_app(server_url, "jobs"), script)
    assert pending == ["p-000", "p-001", "p-002"]
    assert [row[1] for row in processing] == ["r-000", "r-001"]
    assert all(row[4] == session for row in processing)
    assert len(holders) == 1 and holders[0][1] == session and holders[0][4] == "2"


def test_the_item_view_pretty_prints_json_and_shows_binary_and_hostile_data_safely(r, server_url):
    wq = seed(r, "jobs", dead=1)
    deep = b"[" * 2000 + b"]" * 2000
    wq.push([NewItem(b"\xff\xfe\x00bin", "bin"), NewItem(deep, "deep"),
             NewItem(b"\x1b[31mred\x07", "esc")])

    async def look(pilot, item_id: str) -> tuple[str, str]:
        await press(pilot, "colon")
        await type_in(pilot, "pending")
        table = pilot.app.screen.query_one(DataTable)
        row = [str(table.get_row_at(i)[1]) for i in range(table.row_count)].index(item_id)
        table.move_cursor(row=row)
        await press(pilot, "enter")
        screen = pilot.app.screen
        assert isinstance(screen, ItemScreen)
        shown = text_of(screen.query_one("#data", Static))
        kind = screen.query_one("VerticalScroll").border_title
        await press(pilot, "q")
        return str(kind), shown

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "enter")
        screen = pilot.app.screen
        assert isinstance(screen, ItemScreen)
        fields = text_of(screen.query_one("#fields", Static))
        dead = (screen.query_one("VerticalScroll").border_title,
                text_of(screen.query_one("#data", Static)))
        await press(pilot, "q")
        return fields, dead, [await look(pilot, i) for i in ("bin", "deep", "esc")]

    fields, dead, others = drive(make_app(server_url, "jobs"), script)
    assert "d-000" in fields and "timeout" in fields and "dead since" in fields
    assert dead[0] == "json" and '\n  "user": "u-0"' in dead[1]  # indented
    (kb, binary), (kd, deep_shown), (ke, esc) = others
    assert kb == "binary" and binary == "base64: //4AYmlu"
    assert kd == "text" and deep_shown.startswith("[[[")  # shown, not crashed
    assert ke == "json" or ke == "text"
    assert "\x1b" not in esc and "\\x1b" in esc and "\\x07" in esc


# -- acting ----------------------------------------------------------------------------------

def test_requeue_of_a_filtered_set_asks_first_and_does_exactly_that(r, server_url):
    wq = seed(r, "jobs", dead=9)  # d-000, d-003, d-006 failed with "timeout"

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "slash")
        await type_in(pilot, "--error timeout")
        shown = ids_shown(pilot.app)
        await press(pilot, "A")
        asked = question(pilot.app)
        await press(pilot, "n")  # no: nothing changes
        untouched = wq.stats().dead
        await press(pilot, "A")
        await press(pilot, "y")
        return shown, asked, untouched, ids_shown(pilot.app), pilot.app.done_log

    shown, asked, untouched, after, log = drive(make_app(server_url, "jobs"), script)
    assert shown == ["d-000", "d-003", "d-006"]
    assert "Requeue 3 dead items of jobs" in asked
    assert f"rq-cli --url {server_url} --no-config requeue-dead jobs --error timeout" in asked
    assert untouched == 9
    s = wq.stats()
    assert (s.dead, s.pending) == (6, 3)
    assert sorted(i.id for i in wq.peek("pending", count=10)) == ["d-000", "d-003", "d-006"]
    assert after == []  # the filtered dead view is empty now
    assert log == [f"rq-cli --url {server_url} --no-config requeue-dead jobs --error timeout  ->  "
                   "requeued 3 of 3 matched (7 scanned, 0 moved on meanwhile) (at most the 3 "
                   "confirmed)"]  # (the scan stops at the confirmed count: d-007, d-008 unread)


def test_requeue_of_selected_items_moves_those_only(r, server_url):
    wq = seed(r, "jobs", dead=5)

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "down", "space", "space")  # selects d-001 and d-002
        asked_status = status(pilot.app)
        await press(pilot, "R")
        asked = question(pilot.app)
        await press(pilot, "y")
        return asked_status, asked

    said, asked = drive(make_app(server_url, "jobs"), script)
    assert "2 selected" in said
    assert "Requeue 2 dead items of jobs" in asked and "requeue-dead jobs d-001 d-002" in asked
    assert [i.id for i in wq.peek("pending", count=10)] == ["d-001", "d-002"]
    assert wq.stats().dead == 3


def test_purge_of_a_filtered_set_deletes_only_the_matching_items(r, server_url):
    wq = seed(r, "jobs", dead=6)

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "slash")
        await type_in(pilot, "user == 'u-1'")  # a bare JMESPath expression: --match
        await press(pilot, "X")
        asked = question(pilot.app)
        destructive = pilot.app.screen.has_class("destructive")
        await press(pilot, "y")
        return asked, destructive

    asked, destructive = drive(make_app(server_url, "jobs"), script)
    assert destructive
    assert "Delete 2 dead items of jobs matching --match" in asked
    assert "purge jobs --state dead --match" in asked and "--yes" in asked
    assert sorted(i.id for i in wq.peek("dead", count=10)) == ["d-000", "d-002", "d-003",
                                                              "d-005"]
    assert r.exists(wq.keys.item("d-001")) == 0


def test_pause_and_resume_from_the_overview(r, server_url):
    wq = seed(r, "jobs", pending=1)

    async def script(pilot):
        await press(pilot, "p")
        asked = question(pilot.app)
        await press(pilot, "y")
        paused = wq.stats().paused
        await press(pilot, "r")  # the overview reads it again
        await press(pilot, "p")
        asked_again = question(pilot.app)
        await press(pilot, "y")
        return asked, paused, asked_again

    asked, paused, asked_again = drive(make_app(server_url, "jobs"), script)
    assert asked.startswith("Pause jobs") and "rq-cli --url" in asked and asked.count("pause")
    assert paused is True
    assert asked_again.startswith("Resume jobs")
    assert wq.stats().paused is False


def test_cancel_and_extend_a_running_item(r, server_url):
    wq = seed(r, "jobs", processing=2)
    before = {i.id: i.lease_expires_at for i in wq.peek("processing", count=2)}

    async def script(pilot):
        await open_queue(pilot, "2")
        await press(pilot, "e")
        extend = question(pilot.app)
        await press(pilot, "y")
        await press(pilot, "down", "x")
        cancel = question(pilot.app)
        await press(pilot, "y")
        return extend, cancel

    extend, cancel = drive(make_app(server_url, "jobs"), script)
    assert "Extend the lease of r-000 in jobs to 300 s" in extend
    assert "extend jobs - --lease 300" in extend
    assert "Cancel 1 item of jobs" in cancel and "cancel jobs r-001" in cancel
    [left] = wq.peek("processing", count=5)
    assert left.id == "r-000" and left.lease_expires_at >= before["r-000"]
    [dead] = wq.peek("dead", count=5)
    assert (dead.id, dead.dead_reason) == ("r-001", "cancelled")


def test_clean_now_recovers_an_expired_lease(r, server_url):
    wq = WorkQueue(r, "jobs")
    wq.push([b"x"])
    wq.lease(1, lease_seconds=0.2)
    time.sleep(0.4)

    async def script(pilot):
        await press(pilot, "c")
        asked = question(pilot.app)
        await press(pilot, "y")
        return asked, pilot.app.done_log

    asked, log = drive(make_app(server_url, "jobs"), script)
    assert asked.startswith("Clean jobs now") and "clean jobs" in asked
    assert wq.stats().pending == 1 and "recovered 1" in log[0]


def test_the_command_bar_opens_a_queue_switches_tabs_and_quits(r, server_url):
    seed(r, "a", pending=1)
    seed(r, "b", dead=2)

    async def script(pilot):
        await press(pilot, "colon")
        await type_in(pilot, "open b")
        opened = pilot.app.screen.target.name
        await press(pilot, "colon")
        await type_in(pilot, "dead")
        shown = ids_shown(pilot.app)
        await press(pilot, "colon")
        await type_in(pilot, "nonsense")
        await press(pilot, "colon")
        await type_in(pilot, "q")
        return opened, shown

    app = make_app(server_url, "a", "b")
    opened, shown = drive(app, script)
    assert opened == "b" and shown == ["d-000", "d-001"]
    assert app.return_code == 0


def test_a_bad_filter_is_said_and_the_view_keeps_its_rows(r, server_url):
    seed(r, "jobs", dead=3)

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "slash")
        await type_in(pilot, "--match 'a =='")
        return ids_shown(pilot.app), pilot.app.said

    shown, said = drive(make_app(server_url, "jobs"), script)
    assert shown == ["d-000", "d-001", "d-002"]
    assert said and "--match" in said[-1] and "a ==" in said[-1], said


def test_help_lists_the_keys(r, server_url):
    seed(r, "jobs", pending=1)

    async def script(pilot):
        await press(pilot, "question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        await press(pilot, "escape")
        return isinstance(pilot.app.screen, OverviewScreen)

    assert drive(make_app(server_url, "jobs"), script)


# -- read-only ---------------------------------------------------------------------------------

def test_read_only_hides_every_action_and_changes_nothing(r, server_url):
    wq = seed(r, "jobs", dead=3, processing=1)

    async def script(pilot):
        footer_keys = {b.binding.key for b in pilot.app.screen.active_bindings.values()
                       if b.enabled}
        await press(pilot, "p", "c")
        overview = type(pilot.app.screen)
        await open_queue(pilot, "4")
        queue_keys = {b.binding.key for b in pilot.app.screen.active_bindings.values()
                      if b.enabled}
        await press(pilot, "space", "R", "A", "X")
        await press(pilot, "2", "x", "e")
        await press(pilot, "colon")
        await type_in(pilot, "pause")
        return footer_keys, overview, queue_keys, type(pilot.app.screen)

    footer, overview, queue_keys, last = drive(make_app(server_url, "jobs", read_only=True),
                                               script)
    assert overview is OverviewScreen and last is QueueScreen  # no question was ever asked
    assert not {"p", "c"} & footer and {"s", "enter"} <= footer
    assert not {"R", "A", "X", "x", "e", "P", "C"} & queue_keys
    assert {"n", "b"} <= queue_keys
    s = wq.stats()
    assert (s.dead, s.processing, s.paused) == (3, 1, False)


# -- a server that goes away -----------------------------------------------------------------

def restartable(make_server, **items: int):
    """A private server holding queue ``jobs`` (``seed``), saved so a restart keeps it."""
    srv = make_server()
    client = redis.Redis.from_url(srv.url)
    seed(client, "jobs", **items)
    client.save()
    client.close()
    return srv


def test_a_server_restart_is_an_error_row_then_the_queue_comes_back(make_server):
    srv = restartable(make_server, pending=2)

    async def script(pilot):
        first = cells(pilot.app)[0][1]
        srv.stop()
        await press(pilot, "r")
        down = cells(pilot.app)[0][1], notes(pilot.app)
        srv.start()
        await press(pilot, "r")
        back = cells(pilot.app)[0][1]
        await open_queue(pilot, "1")
        return first, down, back, ids_shown(pilot.app)

    first, (down, said), back, shown = drive(make_app(srv.url, "jobs"), script)
    assert first == "2" and down == "error" and "cannot connect" in said
    assert back == "2" and shown == ["p-000", "p-001"]


def test_a_queue_screen_shows_a_read_error_and_recovers(make_server):
    srv = restartable(make_server, dead=2)

    async def script(pilot):
        await open_queue(pilot, "4")
        srv.stop()
        await press(pilot, "r")
        down = status(pilot.app), ids_shown(pilot.app)
        srv.start()
        await press(pilot, "r")
        return down, status(pilot.app), ids_shown(pilot.app)

    (said, kept), back, shown = drive(make_app(srv.url, "jobs"), script)
    assert said.startswith("error: ") and kept == ["d-000", "d-001"]
    assert not back.startswith("error") and shown == ["d-000", "d-001"]


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_it_fits_small_and_large_terminals(r, server_url, size):
    seed(r, "jobs", dead=40)

    async def script(pilot):
        await open_queue(pilot, "4")
        await settle(pilot)
        return pilot.app.screen.page_size, len(ids_shown(pilot.app))

    page, shown = drive(make_app(server_url, "jobs"), script, size=size)
    assert shown == min(page, 40) and page == size[1] - 12  # (the history graph: 5 lines)


def test_the_mouse_switches_tabs_and_opens_an_item(r, server_url):
    seed(r, "jobs", dead=3, pending=2)

    async def script(pilot):
        await press(pilot, "enter")
        await pilot.click("#dead")
        await settle(pilot)
        tab = pilot.app.screen.tab
        await pilot.click(DataTable, offset=(6, 2))  # the second row (under the header)
        await settle(pilot)
        await pilot.click(DataTable, offset=(6, 2))  # a click on the row under the cursor
        await settle(pilot)
        return tab, pilot.app.screen

    tab, screen = drive(make_app(server_url, "jobs"), script)
    assert tab == "dead"
    assert isinstance(screen, ItemScreen) and screen.item_id == "d-001"


def test_a_page_emptied_by_an_action_steps_back_to_the_items_left(r, server_url):
    wq = seed(r, "jobs", dead=40)

    async def script(pilot):
        await open_queue(pilot, "4")
        size = pilot.app.screen.page_size
        await press(pilot, "G")
        # someone else requeues the last page's items meanwhile
        wq.requeue_dead([i.id for i in wq.peek("dead", count=40)][40 - size:])
        await press(pilot, "r")
        return size, ids_shown(pilot.app), status(pilot.app)

    size, shown, said = drive(make_app(server_url, "jobs"), script, size=(100, 24))
    left = 40 - size
    assert shown == [f"d-{i:03d}" for i in range(max(0, left - size), left)]
    assert f"of {left}" in said


def test_the_pending_tab_of_a_fair_queue_steps_through_its_tenants(r, server_url):
    wq = WorkQueue(r, "jobs")
    wq.push([NewItem(b"{}", "plain")])
    wq.push([NewItem(b"{}", "a-1"), NewItem(b"{}", "a-2")], tenant="acme")

    async def script(pilot):
        await open_queue(pilot, "1")
        default = ids_shown(pilot.app), status(pilot.app)
        await press(pilot, "t")
        return default, (ids_shown(pilot.app), status(pilot.app))

    (shown, said), (tenant_shown, tenant_said) = drive(make_app(server_url, "jobs"), script)
    assert shown == ["plain"] and "tenant (default)" in said and " of " not in said
    assert tenant_shown == ["a-1", "a-2"] and "tenant acme" in tenant_said


def test_sorting_keeps_the_cursor_on_the_same_queue(r, server_url):
    seed(r, "a-small", pending=1)
    seed(r, "b-big", pending=5)
    seed(r, "c-other", dead=2)

    async def script(pilot):
        await press(pilot, "down")  # a-small (given order: c-other, a-small, b-big)
        on = [pilot.app.screen.selected()]
        for _ in range(4):  # name, pending, dead, age
            await press(pilot, "s")
            on.append(pilot.app.screen.selected())
        await press(pilot, "enter")
        on.append(pilot.app.screen.target.name)
        return on

    on = drive(make_app(server_url, "c-other", "a-small", "b-big"), script)
    assert on == ["a-small"] * 6


@pytest.mark.parametrize("width", [80, 100])
def test_errors_and_data_get_the_room_and_the_footer_keeps_q_and_help(r, server_url, width):
    wq = WorkQueue(r, "billing-sync")
    wq.push([NewItem(b'{"invoice": "inv-000001", "customer": "acme-corporation"}',
                     "0f3c9a7e-0000-4b1e-9d2f-6a7c1e0b9d00")])
    [item] = wq.lease(1, lease_seconds=60)
    wq.fail([item.id], error="connection refused: billing.internal:5432 (ECONNREFUSED)",
            dead=True)

    async def script(pilot):
        await open_queue(pilot, "4")
        return screen_text(pilot.app)

    lines = drive(make_app(server_url, "billing-sync"), script, size=(width, 24))
    [row] = [line for line in lines if "0f3c9a7e" in line]
    assert "connection refused: billing.int" in row  # not "connection ref"
    assert '{"invoice": "inv-' in row  # not '{"'
    footer = lines[-1]
    assert "q Quit/back" in footer and "? Help" in footer


def test_a_filtered_list_says_how_many_items_match(r, server_url):
    seed(r, "jobs", dead=60)  # every third (20) failed with "timeout"

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "slash")
        await type_in(pilot, "--error timeout")
        first = status(pilot.app)
        await press(pilot, "n")
        return first, status(pilot.app)

    first, second = drive(make_app(server_url, "jobs"), script, size=(100, 24))
    assert "of 20 matching" in first and "(more)" not in first
    assert "of 20 matching" in second


def test_the_match_count_is_a_lower_bound_when_stopped_early(r):
    from rq_cli.console.model import Browser, parse_filter
    wq = seed(r, "jobs", dead=250)
    flt, _ = parse_filter("--error timeout")
    seen = []
    browser = Browser("jobs", wq)
    assert browser.count_matches("dead", flt, stop=lambda: True,
                                 progress=lambda m, s: seen.append((m, s))) == (34, False)
    assert seen == [(34, 100)]
    assert browser.count_matches("dead", flt) == (84, True)


def test_an_outage_is_one_error_for_the_server_with_the_queues_it_affects(make_server):
    srv = make_server()
    client = redis.Redis.from_url(srv.url)
    for name in ("jobs", "mail", "thumbs"):
        seed(client, name, pending=1)
    client.close()

    async def script(pilot):
        srv.stop()
        await press(pilot, "r")
        return notes(pilot.app)

    said = drive(make_app(srv.url, "jobs", "mail", "thumbs"), script)
    errors = [line for line in said.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, said
    assert "cannot connect" in errors[0] and "(3 queues: jobs, mail, thumbs)" in errors[0]
    assert f"127.0.0.1:{srv.port}" in errors[0]


def test_the_trend_bars_share_one_scale_across_queues(r, server_url):
    seed(r, "small", pending=2)
    WorkQueue(r, "big").push([NewItem(b"x", f"b-{i}") for i in range(5000)])

    async def script(pilot):
        title = text_of(pilot.app.screen.query_one("#title"))
        return {row[0]: row[-1] for row in cells(pilot.app)}, title

    trend, title = drive(make_app(server_url, "small", "big"), script)
    assert trend == {"small": "▁", "big": "█"}
    assert "trend 0-5,000 (one scale)" in title


def test_p_pauses_and_resumes_in_a_queue_as_on_the_overview_and_P_still_works(r, server_url):
    wq = seed(r, "jobs", pending=1)

    async def script(pilot):
        await open_queue(pilot, "1")
        await press(pilot, "p")
        asked = question(pilot.app)
        await press(pilot, "y")
        paused = wq.stats().paused
        await press(pilot, "P")
        asked_again = question(pilot.app)
        await press(pilot, "y", "q")
        await press(pilot, "P")  # the overview takes P too
        on_overview = question(pilot.app)
        await press(pilot, "n")
        return asked, paused, asked_again, on_overview

    asked, paused, asked_again, on_overview = drive(make_app(server_url, "jobs"), script)
    assert asked.startswith("Pause jobs") and paused is True
    assert asked_again.startswith("Resume jobs") and wq.stats().paused is False
    assert on_overview.startswith("Pause jobs")


def test_the_errors_tab_groups_dead_items_and_requeues_or_purges_a_group(r, server_url):
    wq = seed(r, "jobs", dead=12)  # 4 "timeout", 8 "bad input"

    async def script(pilot):
        await open_queue(pilot, "7")
        groups = [(row[2], row[3], row[5]) for row in cells(pilot.app)]
        keys = {row[5]: row[1] for row in cells(pilot.app)}
        await press(pilot, "down", "R")  # the second group: timeout
        asked = question(pilot.app)
        await press(pilot, "y")
        after_requeue = wq.stats()
        await press(pilot, "up", "X")  # bad input, now the only dead group
        deleted = question(pilot.app)
        await press(pilot, "y")
        return groups, keys, asked, after_requeue, deleted

    groups, keys, asked, after, deleted = drive(make_app(server_url, "jobs"), script)
    assert groups == [("dead", "8", "bad input"), ("dead", "4", "timeout")]
    assert asked.startswith("Requeue 4 dead items of jobs in error group")
    assert f"requeue-dead jobs --error-group {keys['timeout']}" in asked
    assert (after.dead, after.pending) == (8, 4)
    assert deleted.startswith("Delete 8 dead items of jobs in error group")
    assert f"purge jobs --state dead --error-group {keys['bad input']} --yes" in deleted
    assert wq.stats().dead == 0 and wq.stats().pending == 4


def test_enter_on_an_error_group_shows_its_dead_items(r, server_url):
    seed(r, "jobs", dead=12)

    async def script(pilot):
        await open_queue(pilot, "7")
        await press(pilot, "down", "enter")
        return pilot.app.screen.tab, ids_shown(pilot.app), status(pilot.app)

    tab, shown, said = drive(make_app(server_url, "jobs"), script)
    assert tab == "dead" and shown == ["d-000", "d-003", "d-006", "d-009"]
    assert "filter --error-group" in said and "of 4 matching" in said


def test_the_queue_view_graphs_its_history_and_the_console_snapshots_it_once_a_minute(
        r, server_url):
    from rq_cli.console.chart import zone
    from rq_cli.core.contract.keys import HISTORY_FIELDS
    from rq_cli.core.contract.util import server_ms
    from rq_cli.core.history import read_history

    wq = seed(r, "jobs", pending=3)
    r.delete(wq.keys.history, wq.keys.history_hourly)  # (the seeding push's: made by hand)
    clear_of_a_minute_turn(r, 40)  # (the console's two refreshes in one minute, as "now")
    now = server_ms(r)
    # two snapshots a minute apart, 30 more pushed between them: 30 a minute in the graph
    wq.call("history", now_ms=now - 120_000)
    wq.push([NewItem(b"x", f"h-{i}") for i in range(30)], now_ms=now - 90_000)
    wq.call("history", now_ms=now - 60_000)
    app = make_app(server_url, "jobs")

    async def script(pilot):
        await open_queue(pilot, "1")
        graph = text_of(pilot.app.screen.query_one("#history", Static))
        taken = pilot.app.overview.snapshot_history()  # a second refresh within the minute
        return graph, taken

    graph, taken = drive(app, script, size=(100, 30))
    legend, *plot, axis = graph.splitlines()
    # one series per counter of the history, with its last minute's count
    assert all(f"● {f} " in legend for f in HISTORY_FIELDS), legend
    assert f"({zone()})" in legend  # the zone the times are in
    # the count axis: 0 and a rounded top (30 a minute: 50), the middle; the plot's rows
    assert [line.split("┤")[0].strip() for line in plot if "┤" in line] == ["50", "25"]
    assert len(plot) == 3 and any("•" in line for line in plot)
    # the time axis: the first and the last bucket's minute, local time
    minute = time.strftime("%H:%M", time.localtime((now - 120_000) // 60_000 * 60))
    assert axis.split("└")[0].strip() == "0" and minute in axis, axis
    assert time.strftime("%H:%M", time.localtime(now // 60_000 * 60)) in axis, axis
    assert taken == 0  # at most once a minute
    assert len(read_history(wq, 600, hourly=False)) == 3  # the console's own snapshot too


def test_the_overview_shows_each_servers_memory_and_maxmemory_headroom(make_server):
    srv = make_server(maxmemory="100mb")
    client = redis.Redis.from_url(srv.url)
    seed(client, "jobs", pending=1)
    used = int(client.info("memory")["used_memory"])
    client.close()

    async def script(pilot):
        return notes(pilot.app), pilot.app.overview.memory

    said, [memory] = drive(make_app(srv.url, "jobs"), script)
    line = next(x for x in said.splitlines() if x.startswith("memory:"))
    assert f"127.0.0.1:{srv.port}" in line and "of maxmemory 100 MiB" in line
    assert "headroom" in line and memory.maxmemory == 100 * 1048576
    assert abs(memory.used - used) < 1048576 and not memory.low


def test_a_server_without_maxmemory_says_so(r, server_url):
    seed(r, "jobs", pending=1)

    async def script(pilot):
        return notes(pilot.app)

    assert "no maxmemory (no limit)" in drive(make_app(server_url, "jobs"), script)


def test_marks_one_a_range_and_all_matching_then_acting_on_the_marks(r, server_url):
    wq = seed(r, "jobs", dead=12)  # d-000, d-003, d-006, d-009 failed with "timeout"

    async def script(pilot):
        await open_queue(pilot, "4")
        await press(pilot, "down", "space")  # d-001 marked, the cursor on d-002
        await press(pilot, "down", "down", "v")  # d-001..d-004
        ranged = sorted(pilot.app.screen.selected)
        await press(pilot, "R")
        asked = question(pilot.app)
        await press(pilot, "n", "u")
        await press(pilot, "slash")
        await type_in(pilot, "--error timeout")
        await press(pilot, "slash", "ctrl+u", "enter")  # the filter off; * needs one
        await press(pilot, "asterisk")
        said = list(pilot.app.said)
        await press(pilot, "slash")
        await type_in(pilot, "--error timeout")
        await press(pilot, "asterisk")
        await press(pilot, "slash", "ctrl+u", "enter")  # the marks stay
        matching = sorted(pilot.app.screen.selected)
        await press(pilot, "R")
        asked_all = question(pilot.app)
        await press(pilot, "y")
        return ranged, asked, said, matching, asked_all, status(pilot.app)

    ranged, asked, said, matching, asked_all, _shown = drive(make_app(server_url, "jobs"),
                                                            script)
    assert ranged == ["d-001", "d-002", "d-003", "d-004"]
    assert asked.startswith("Requeue 4 dead items") and "d-001 d-002 d-003 d-004" in asked
    assert any("* marks the items matching a filter" in s for s in said)
    assert matching == ["d-000", "d-003", "d-006", "d-009"]
    assert asked_all.startswith("Requeue 4 dead items")
    assert sorted(i.id for i in wq.peek("pending", count=10)) == matching
