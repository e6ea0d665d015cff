"""rq-cli lease: JSON lines, --raw, --count, --wait, several queues, --at-most-once, exit 3."""

from __future__ import annotations

import time

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_lease_prints_the_documented_fields(cli, r):
    cli("push", "q", "--id", "a", '{"job": 1}')
    run = cli("lease", "q")
    assert run.exit_code == 0, run
    item = run.one
    assert set(item) == {"queue", "id", "data", "attempt", "lease_expires_at", "session"}
    assert item["queue"] == "q" and item["id"] == "a"
    assert item["data"] == {"job": 1}  # embedded as JSON, not a string
    assert item["attempt"] == 1
    assert item["lease_expires_at"] > time.time() + 250  # default lease 300 s
    assert item["session"].count(":") >= 2  # host:pid:random


def test_lease_shows_the_error_the_last_attempt_failed_with(cli, r):
    """A retried item's lease line carries ``last_error`` (the schema lists it), as peek
    shows it as ``error``; a first attempt's has none."""
    from jsonschema import Draft202012Validator

    from rq_cli.output.shapes import schema

    check = Draft202012Validator(schema("lease"))
    cli("push", "q", "--id", "a", '{"job": 1}')
    first = cli("lease", "q").one
    assert "last_error" not in first and check.is_valid(first)
    assert cli("fail", "q", "a", "--error", "smtp timeout", "--retry-in", "0").exit_code == 0
    assert cli("peek", "q").one["error"] == "smtp timeout"
    again = cli("lease", "q").one
    assert again["attempt"] == 2 and again["last_error"] == "smtp timeout"
    assert check.is_valid(again) and not check.is_valid({**again, "last_error": 5})
    # on a terminal: a "last error" column, only when an item shown has one
    assert cli("fail", "q", "a", "--error", "bad address", "--retry-in", "0").exit_code == 0
    table = cli("lease", "q", tty=True).stdout
    assert "last error" in table and "bad address" in table
    cli("push", "q", "--id", "b", "{}")
    assert "last error" not in cli("lease", "q", tty=True).stdout


def test_lease_non_json_data_is_a_string_and_non_utf8_is_base64(cli, r):
    cli("push", "q", "--raw", "--id", "t", "plain text")
    assert cli("lease", "q").one["data"] == "plain text"
    WorkQueue(r, "q").push([b"\xff\x01"])
    item = cli("lease", "q").one
    assert "data" not in item and item["data_b64"] == "/wE="


def test_lease_raw_prints_bare_data(cli, r):
    cli("push", "q", '{"a": 1}')
    run = cli("lease", "q", "--raw")
    assert run.stdout == '{"a": 1}\n'


def test_lease_count_and_lease_time(cli, r):
    for i in range(5):
        cli("push", "q", str(i))
    run = cli("lease", "q", "--count", "3", "--lease", "10")
    assert len(run.json) == 3
    assert all(row["lease_expires_at"] < time.time() + 11 for row in run.json)


def test_lease_nothing_exits_3(cli):
    run = cli("lease", "q")
    assert run.exit_code == 3
    assert run.stdout == ""
    assert "nothing to lease" in run.stderr


def test_lease_nothing_due_says_what_is_delayed_and_when(cli):
    """A queue holding only delayed items: lease says how many are delayed and when the
    next falls due, not "empty, or every item is leased"."""
    cli("push", "q", "--delay", "100", "{}")
    cli("push", "q", "--delay", "300", "{}")
    run = cli("lease", "q")
    assert run.exit_code == 3 and run.stdout == ""
    assert "2 items delayed, the next due " in run.stderr, run.stderr
    assert "(in 1m" in run.stderr and "empty" not in run.stderr
    cli("push", "other", "--delay", "5", "{}")
    run = cli("lease", "q", "other")
    assert "q: 2 items delayed" in run.stderr and "other: 1 item delayed, due " in run.stderr


def test_lease_wait_returns_when_nothing_comes(cli):
    start = time.monotonic()
    run = cli("lease", "q", "--wait", "0.3")
    assert run.exit_code == 3
    assert 0.25 < time.monotonic() - start < 5


def test_lease_paused_queue_exits_3(cli):
    cli("push", "q", "{}")
    cli("pause", "q")
    assert cli("lease", "q").exit_code == 3
    cli("resume", "q")
    assert cli("lease", "q").exit_code == 0


def test_lease_several_queues_strict_order(cli):
    cli("push", "low", '"l"')
    cli("push", "high", '"h"')
    assert cli("lease", "high", "low").one["queue"] == "high"
    assert cli("lease", "high", "low").one["queue"] == "low"
    assert cli("lease", "high", "low", "--order", "fair").exit_code == 3


def test_lease_bad_order_is_a_usage_error(cli):
    assert cli("lease", "q", "--order", "random").exit_code == 2


def test_lease_zero_or_negative_lease_is_a_usage_error(cli, r):
    cli("push", "q", "{}")
    assert cli("lease", "q", "--lease", "0").exit_code == 2
    assert cli("lease", "q", "--lease", "-5").exit_code == 2
    assert cli("lease", "q", "--count", "0").exit_code == 2
    assert cli("lease", "q", "--count", "99999999").exit_code == 2
    assert WorkQueue(r, "q").stats().pending == 1  # nothing was taken


def test_lease_at_most_once_completes_at_once(cli, r):
    cli("push", "q", "--id", "once", "{}")
    run = cli("lease", "q", "--at-most-once")
    assert run.one["id"] == "once"
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.processing) == (0, 0)
    assert cli("complete", "q", "once").exit_code == 3  # already gone


def test_lease_table_on_a_terminal(cli):
    cli("push", "q", "--id", "tab", '{"k": "v"}')
    run = cli("lease", "q", tty=True)
    assert run.exit_code == 0
    assert "tab" in run.stdout and '{"k": "v"}' in run.stdout


def test_lease_table_escapes_control_characters(cli, r):
    WorkQueue(r, "q").push([b'"\\u001b"', b"\x1b[31mred"])
    run = cli("lease", "q", "--count", "2", tty=True)
    assert "\x1b" not in run.stdout
    assert "\\x1b[31mred" in run.stdout
