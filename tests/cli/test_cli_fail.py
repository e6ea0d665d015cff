"""rq-cli fail: retry with backoff or --retry-in, --dead, --error, exit codes."""

from __future__ import annotations

import time

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_fail_retries_with_a_delay(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli("fail", "q", "a", "--retry-in", "60", "--error", "smtp timeout")
    assert run.exit_code == 0, run
    row = run.one
    assert row["outcome"] == "retried"
    assert row["retry_at"] > time.time() + 50
    stats = WorkQueue(r, "q").stats()
    assert (stats.processing, stats.delayed) == (0, 1)
    assert WorkQueue(r, "q").peek("delayed")[0].error is not None


def test_fail_dead(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli("fail", "q", "a", "--dead", "--error", "bad payload")
    assert run.one["outcome"] == "dead"
    dead = WorkQueue(r, "q").peek("dead")
    assert dead[0].id == "a" and "bad payload" in (dead[0].error or "")


def test_fail_dead_and_retry_in_conflict(cli, r):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    assert cli("fail", "q", "a", "--dead", "--retry-in", "1").exit_code == 2
    assert WorkQueue(r, "q").stats().processing == 1


def test_fail_missing_exits_3(cli):
    run = cli("fail", "q", "ghost")
    assert run.exit_code == 3
    assert run.one["outcome"] == "missing"


def test_fail_from_lease_lines(cli, r):
    cli("push", "q", "1")
    leased = cli("lease", "q").stdout
    run = cli("fail", "q", "-", "--retry-in", "0", input=leased)
    assert run.one["outcome"] == "retried"


def test_fail_by_another_session_exits_4(cli):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli("fail", "q", "-", input='{"id": "a", "session": "not-me"}\n')
    assert run.exit_code == 4
