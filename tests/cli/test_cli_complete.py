"""rq-cli complete: ids as arguments, plain ids or lease's JSON lines on stdin, exit codes."""

from __future__ import annotations

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_complete_by_id(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli("complete", "q", "a")
    assert run.exit_code == 0
    assert run.one == {"queue": "q", "id": "a", "outcome": "completed"}
    assert WorkQueue(r, "q").stats().processing == 0


def test_lease_pipe_complete(cli, r):
    for i in range(3):
        cli("push", "q", str(i))
    leased = cli("lease", "q", "--count", "3").stdout
    run = cli("complete", "q", "-", input=leased)
    assert run.exit_code == 0, run
    assert [row["outcome"] for row in run.json] == ["completed"] * 3
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.processing) == (0, 0)


def test_complete_reads_stdin_without_dash(cli):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli("complete", "q", input="a\n\n")
    assert run.one["outcome"] == "completed"


def test_complete_plain_ids_and_json_strings_on_stdin(cli):
    cli("push", "q", "--id", "with space", "1")
    cli("push", "q", "--id", "x\ny", "1")
    cli("lease", "q", "--count", "2")
    run = cli("complete", "q", "-", input='with space\n"x\\ny"\n')
    assert [row["outcome"] for row in run.json] == ["completed", "completed"]


def test_complete_missing_exits_3(cli):
    run = cli("complete", "q", "nope")
    assert run.exit_code == 3
    assert run.one["outcome"] == "missing"
    assert "nope" in run.stderr


def test_complete_by_another_session_exits_4_and_keeps_the_item(cli, r):
    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q", "--lease", "0.05").one
    import time

    time.sleep(0.1)
    WorkQueue(r, "q").clean(grace_seconds=0)  # recovered, and leased again by someone else
    other = cli("lease", "q").one
    assert other["session"] != leased["session"]
    import json

    run = cli("complete", "q", "-", input=json.dumps(leased) + "\n")
    assert run.exit_code == 4
    assert run.one["outcome"] == "conflict"
    assert WorkQueue(r, "q").stats().processing == 1  # the other worker's lease is intact


def test_conflict_beats_missing(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    line = '{"id": "a", "session": "someone-else"}\nmissing-id\n'
    run = cli("complete", "q", "-", input=line)
    assert run.exit_code == 4
    assert {row["outcome"] for row in run.json} == {"conflict", "missing"}


def test_complete_routes_lines_by_their_queue_field(cli, r):
    cli("push", "a", "--id", "1", "{}")
    cli("push", "b", "--id", "2", "{}")
    leased = cli("lease", "a", "b").stdout + cli("lease", "a", "b").stdout
    run = cli("complete", "a", "-", input=leased)
    assert run.exit_code == 0, run
    assert sorted((row["queue"], row["id"]) for row in run.json) == [("a", "1"), ("b", "2")]


def test_complete_bad_line_applies_lines_before_it(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("push", "q", "--id", "b", "{}")
    cli("lease", "q", "--count", "2")
    run = cli("complete", "q", "-", input='a\n{"id": 3}\nb\n')
    assert run.exit_code == 65
    assert "line 2" in run.stderr
    assert run.one["id"] == "a"
    assert {i.id for i in WorkQueue(r, "q").peek("processing")} == {"b"}


def test_complete_nothing_given_is_a_usage_error(cli):
    assert cli("complete", "q", stdin_tty=True).exit_code == 2
    assert cli("complete", "q", "-", input="").exit_code == 3  # empty stdin: nothing to do


def test_complete_dash_mixed_with_ids_is_a_usage_error(cli):
    assert cli("complete", "q", "a", "-").exit_code == 2
