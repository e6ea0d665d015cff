"""rq-cli push: arguments, stdin streaming, bad lines, ids, options, output shapes."""

from __future__ import annotations

import hashlib
import json

import pytest

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def stored(r, prefix: str = "q") -> dict[str, bytes]:
    """id -> data of the pending items, read through the core."""
    wq = WorkQueue(r, prefix)
    return {i.id: i.data for i in wq.peek("pending", count=100_000)}


def test_push_arguments_prints_one_line_per_item(cli, r):
    run = cli("push", "q", '{"a": 1}', "[2]")
    assert run.exit_code == 0, run
    rows = run.json
    assert [row["added"] for row in rows] == [True, True]
    data = stored(r)
    assert data[rows[0]["id"]] == b'{"a": 1}'  # stored exactly as given, never re-serialised
    assert data[rows[1]["id"]] == b"[2]"


def test_push_argument_must_be_json_unless_raw(cli, r):
    run = cli("push", "q", "not json")
    assert run.exit_code == 65
    assert "argument 1" in run.stderr and "--raw" in run.stderr
    assert stored(r) == {}
    run = cli("push", "q", "--raw", "not json")
    assert run.exit_code == 0
    assert list(stored(r).values()) == [b"not json"]


def test_push_rejects_nan(cli, r):
    run = cli("push", "q", "NaN")
    assert run.exit_code == 65
    assert stored(r) == {}


def test_push_with_id_and_duplicate(cli, r):
    assert cli("push", "q", "--id", "job-1", "{}").one == {"id": "job-1", "added": True}
    assert cli("push", "q", "--id", "job-1", "[]").one == {"id": "job-1", "added": False,
                                                            "reason": "duplicate"}
    assert stored(r) == {"job-1": b"{}"}


def test_push_id_needs_exactly_one_item(cli):
    run = cli("push", "q", "--id", "x", "{}", "{}")
    assert run.exit_code == 2
    assert "--id" in run.stderr


def test_push_id_from_data_collapses_equal_payloads(cli, r):
    run = cli("push", "q", "--id-from-data", '{"n":1}', '{"n":1}', '{"n":2}')
    assert [row["added"] for row in run.json] == [True, False, True]
    assert run.json[0]["id"] == hashlib.sha256(b'{"n":1}').hexdigest()
    assert len(stored(r)) == 2


def test_push_stdin_with_dash(cli, r):
    lines = "".join(json.dumps({"n": i}) + "\n" for i in range(2500))
    run = cli("push", "q", "-", input=lines)
    assert run.exit_code == 0, run
    assert len(run.json) == 2500
    assert len(stored(r)) == 2500


def test_push_stdin_without_arguments_when_not_a_terminal(cli, r):
    run = cli("push", "q", input='{"a":1}\n')
    assert run.exit_code == 0, run
    assert list(stored(r).values()) == [b'{"a":1}']


def test_push_no_data_on_a_terminal_is_a_usage_error(cli):
    run = cli("push", "q", stdin_tty=True)
    assert run.exit_code == 2


def test_push_stdin_strips_terminators_and_skips_blank_lines(cli, r):
    run = cli("push", "q", "-", input=b'{"a":1}\r\n\n   \n[1, 2]\n"last"')
    assert run.exit_code == 0, run
    assert sorted(stored(r).values()) == [b'"last"', b"[1, 2]", b'{"a":1}']


def test_push_bad_line_stores_everything_before_it_and_nothing_after(cli, r):
    good = "".join(json.dumps({"n": i}) + "\n" for i in range(1500))
    text = good + "\n" + "{oops\n" + '{"after": true}\n'
    run = cli("push", "q", "-", input=text)
    assert run.exit_code == 65
    assert "line 1502" in run.stderr  # the blank line counts
    assert "1500 items stored" in run.stderr
    assert len(run.json) == 1500  # every stored item was reported on stdout
    data = stored(r)
    assert len(data) == 1500
    assert b'{"after": true}' not in data.values()


def test_push_non_utf8_line_is_refused_unless_raw(cli, r):
    run = cli("push", "q", "-", input=b'{"a":1}\n\xff\xfe\n')
    assert run.exit_code == 65
    assert "line 2" in run.stderr and "UTF-8" in run.stderr
    assert list(stored(r).values()) == [b'{"a":1}']
    r.flushdb()
    run = cli("push", "q", "--raw", "-", input=b"\xff\xfe\nplain text\n")
    assert run.exit_code == 0
    assert sorted(stored(r).values()) == [b"plain text", b"\xff\xfe"]


def test_push_summary(cli, r):
    run = cli("push", "q", "--summary", "--id-from-data", "-", input="1\n1\n2\n")
    assert run.one == {"queue": "q", "items": 3, "added": 2, "duplicates": 1,
                       "reasons": {"duplicate": 1, "dead": 0, "recently completed": 0}}


def test_push_with_ids_round_trips_peek_output(cli, r):
    cli("push", "q", "--id", "a", '{"x": [1, 2]}')
    cli("push", "q", "--raw", "--id", "b", "plain")
    WorkQueue(r, "q").push([NewItem(b"\xff\x00", id="c")])  # not UTF-8: peek prints data_b64
    exported = cli("peek", "q", "-n", "10").stdout
    r.flushdb()
    run = cli("push", "q", "--with-ids", "--raw", "-", input=exported)
    assert run.exit_code == 0, run
    assert stored(r) == {"a": b'{"x": [1, 2]}', "b": b"plain", "c": b"\xff\x00"}


def test_push_with_ids_keeps_exact_json_text(cli, r):
    line = '{"id": "k", "data": {"b": 1.50,  "a": [ ]}}\n'
    assert cli("push", "q", "--with-ids", "-", input=line).exit_code == 0
    assert stored(r) == {"k": b'{"b": 1.50,  "a": [ ]}'}


@pytest.mark.parametrize("line, message", [
    ('{"data": 1, "id": 5}', '"id" must be a string'),
    ('{"id": "x"}', 'no "data"'),
    ('[1]', "expected a JSON object"),
    ('{"id": "", "data": 1}', "cannot be empty"),
])
def test_push_with_ids_bad_objects(cli, r, line, message):
    run = cli("push", "q", "--with-ids", "-", input='{"id": "ok", "data": 0}\n' + line + "\n")
    assert run.exit_code == 65
    assert "line 2" in run.stderr and message in run.stderr
    assert stored(r) == {"ok": b"0"}


def test_push_ids_with_odd_characters(cli, r):
    for odd in ("with space", "a:b:c", "glob*[?]", "new\nline"):
        assert cli("push", "q", "--id", odd, "1").exit_code == 0
    assert set(stored(r)) == {"with space", "a:b:c", "glob*[?]", "new\nline"}


def test_push_delay_makes_items_delayed(cli, r):
    cli("push", "q", "--delay", "60", "{}")
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.delayed) == (0, 1)


def test_push_front(cli, r):
    cli("push", "q", "--id", "first", "1")
    cli("push", "q", "--id", "urgent", "--front", "2")
    assert WorkQueue(r, "q").lease().pop().id == "urgent"


def test_push_negative_delay_is_a_usage_error(cli, r):
    assert cli("push", "q", "--delay", "-1", "{}").exit_code == 2
    assert stored(r) == {}


def test_push_table_on_a_terminal(cli, r):
    run = cli("push", "q", "--id", "tid", "{}", tty=True)
    assert run.exit_code == 0
    assert "tid" in run.stdout and "yes" in run.stdout
    assert not run.stdout.lstrip().startswith("{")


def test_push_stdin_on_a_terminal_prints_a_summary(cli, r):
    run = cli("push", "q", "-", input="1\n2\n", tty=True, stdin_tty=False)
    assert run.exit_code == 0
    assert "added" in run.stdout and "2" in run.stdout


def test_push_progress_bar_only_on_a_terminal(cli, r):
    quiet = cli("push", "q", "-", input="1\n")
    assert quiet.stderr == ""
    shown = cli("push", "q", "-", input="1\n", stderr_tty=True)
    assert shown.exit_code == 0
    assert shown.json[0]["added"] is True


def test_push_server_killed_part_way(cli, make_server):
    import threading

    server = make_server()
    lines = "".join(f'{{"n": {i}}}\n' for i in range(300_000)).encode()
    killer = threading.Timer(0.3, server.kill)
    killer.start()
    try:
        run = cli("push", "q", "--id-from-data", "--summary", "-", input=lines, url=server.url)
    finally:
        killer.cancel()
    assert run.exit_code == 69, run
    assert "cannot connect" in run.stderr or "Connection" in run.stderr
    assert "confirmed before it" in run.stderr
    assert run.stderr.count("\n") == 1  # the error, with the count: one line


def test_stdin_json_is_accepted_exactly_as_the_strict_decoder_would(cli, r):
    """The fast validator (orjson) only ever speeds up acceptance: a lone surrogate escape,
    which it refuses and the standard library accepts, is still accepted; NaN and a BOM are
    still refused with the line number."""
    ok = cli("push", "q", "-", input=b'"\\ud800"\n{"a": [1, 2.5e3, null]}\n')
    assert ok.exit_code == 0 and r.llen("q:queue") == 2
    for bad in (b"NaN\n", b"\xef\xbb\xbf{}\n", b"[1,]\n"):
        res = cli("push", "q2", "-", input=b'{"fine": 1}\n' + bad)
        assert res.exit_code == 65 and "line 2" in res.stderr, (bad, res.stderr)
    assert r.llen("q2:queue") == 3  # the line before each bad one, stored
