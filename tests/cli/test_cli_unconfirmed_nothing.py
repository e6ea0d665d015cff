"""--wait-replicas on a server without replicas: a call that wrote nothing waits for nothing.

A purge or requeue-dead with nothing to do (a missing queue, no dead item, a dry run) writes
nothing, so it is not "made on the server but not confirmed" (exit 8): it exits 0. A call
that did write is still exit 8 (the tests of core/operations/durable.py cover that fully).
"""

from __future__ import annotations

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

WAIT = ("--wait-replicas", "1", "--wait-timeout", "0.1")


def test_purge_of_a_missing_queue_is_exit_0(cli, r):
    for state in ("pending", "all"):
        run = cli(*WAIT, "purge", "missingq", "--state", state, "--yes")
        assert run.exit_code == 0, run
        assert "not confirmed" not in run.stderr


def test_requeue_dead_with_nothing_dead_or_a_dry_run_is_exit_0(cli, r):
    run = cli(*WAIT, "requeue-dead", "missingq", "--all")
    assert run.exit_code == 0, run
    cli("push", "q", "--id", "a", "{}")
    cli("cancel", "q", "a")
    run = cli(*WAIT, "requeue-dead", "q", "--all", "--dry-run")
    assert run.exit_code == 0, run
    assert r.zcard("q:dead") == 1


def test_a_purge_that_wrote_is_still_unconfirmed_exit_8(cli, r):
    cli("push", "q", "1", "2")
    run = cli(*WAIT, "purge", "q", "--yes")
    assert run.exit_code == 8, run
    assert "not confirmed" in run.stderr and run.stderr.count("\n") == 1
    assert r.llen("q:queue") == 0  # made, once
