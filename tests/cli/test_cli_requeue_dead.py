"""rq-cli requeue-dead: by id, --all, --limit, --to, --dry-run."""

from __future__ import annotations

import pytest

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def kill(cli, *ids: str, prefix: str = "q") -> None:
    for item_id in ids:
        cli("push", prefix, "--id", item_id, "{}")
    cli("lease", prefix, "--count", str(len(ids)))
    cli("fail", prefix, *ids, "--dead")


def test_requeue_dead_by_id(cli, r):
    kill(cli, "a", "b")
    row = cli("requeue-dead", "q", "a").one
    assert row["requeued"] == 1
    stats = WorkQueue(r, "q").stats()
    assert (stats.pending, stats.dead) == (1, 1)


def test_requeue_dead_all(cli, r):
    kill(cli, "a", "b", "c")
    assert cli("requeue-dead", "q", "--all").one["requeued"] == 3
    assert WorkQueue(r, "q").stats().dead == 0


def test_requeue_dead_limit_and_dry_run(cli, r):
    kill(cli, "a", "b", "c")
    row = cli("requeue-dead", "q", "--limit", "2", "--dry-run").one
    assert row["requeued"] == 2 and row["dry_run"] is True
    assert WorkQueue(r, "q").stats().dead == 3
    assert cli("requeue-dead", "q", "--limit", "2").one["requeued"] == 2


def test_requeue_dead_to_another_queue(cli, r):
    kill(cli, "a")
    row = cli("requeue-dead", "q", "--all", "--to", "retry").one
    assert row["to"] == "retry" and row["requeued"] == 1
    assert WorkQueue(r, "retry").stats().pending == 1


def test_requeue_dead_ids_from_peek(cli, r):
    kill(cli, "a", "b")
    dead = cli("peek", "q", "--state", "dead").stdout
    assert cli("requeue-dead", "q", "-", input=dead).one["requeued"] == 2


def test_requeue_dead_needs_a_selection(cli, r):
    kill(cli, "a")
    assert cli("requeue-dead", "q").exit_code == 2
    assert cli("requeue-dead", "q", "a", "--all").exit_code == 2
    assert WorkQueue(r, "q").stats().dead == 1


def test_requeue_dead_unknown_id_exits_3(cli):
    run = cli("requeue-dead", "q", "not-dead")
    assert run.exit_code == 3
    assert run.one["missing"] == 1


def pushed_again(r, item_id: str, prefix: str = "q") -> None:
    """A peer pushes an item with this id again while it is dead (a peer does not look at
    rq-cli's dead letters)."""
    r.set(f"{prefix}:item:{item_id}", b"{}")
    r.lpush(f"{prefix}:queue", item_id)


@pytest.mark.parametrize("how", [
    ["--all"], ["--limit", "5"], ["--older-than", "0"], ["--reason", "failed"],
    ["--reason", "failed", "--summary"], ["--all", "--dry-run"]])
def test_requeue_dead_says_which_ids_stay_dead(cli, r, how):
    """--all, --limit, --older-than and the filters skip an id a peer pushed again since
    it died, and say so on stderr, naming it (as for a named id, without exit 3)."""
    kill(cli, "a", "b", "c")
    pushed_again(r, "b")
    run = cli("requeue-dead", "q", *how)
    assert run.exit_code == 0, run
    assert "1 dead item stays dead" in run.stderr and ": b" in run.stderr, run.stderr
    assert "a live item of q has the same id" in run.stderr
    assert WorkQueue(r, "q").stats().dead == (3 if "--dry-run" in how else 1)


def test_requeue_dead_all_says_nothing_when_nothing_is_skipped(cli, r):
    kill(cli, "a")
    assert cli("requeue-dead", "q", "--all").stderr == ""
