"""A sharded queue on a single server (README "Sharded queues"): it works the same, doctor says
it brings no scale there, an unsharded queue becomes sharded with its items kept, and a
shard's own prefix is a plain queue a peer client can work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]


def test_single_server_sharded_queue_and_doctor(cli: Any, tmp_path: Path) -> None:
    assert cli("push", "jobs", "--id", "old", "{}").exit_code == 0  # unsharded so far
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 2\n')
    run = cli("reshard", "jobs", "2")
    assert run.exit_code == 0 and run.one["draining"] == ["jobs"], run
    assert run.one["live"] == ["jobs~1.0", "jobs~1.1"] and run.one["placement"] == {}
    assert cli("push", "jobs", '{"n": 1}', '{"n": 2}', '{"n": 3}').exit_code == 0
    assert cli("push", "jobs", "--id", "old", "{}").one["reason"] == "duplicate"
    stats = cli("stats", "jobs").one
    assert stats["pending"] == 4 and [s["live"] for s in stats["shards"]] == [True, True, False]
    leased = cli("lease", "jobs", "--count", "10").json
    assert len(leased) == 4
    assert cli("complete", "jobs", *[r["id"] for r in leased]).exit_code == 0
    doctor = cli("doctor", "jobs")
    (row,) = [r for r in doctor.json if r["check"] == "shards"]
    assert row["status"] == "warn" and "no scale" in row["detail"], row
    # a shard is a queue of the usual layout: any client can work it by its prefix
    assert cli("--no-config", "push", "jobs~1.0", "--id", "direct", "{}").exit_code == 0
    assert cli("--no-config", "stats", "jobs~1.0").one["pending"] == 1


def test_filters_walk_every_shard_with_one_limit(cli: Any, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    lines = "".join(f'{{"user": "u{n % 2}", "n": {n}}}\n' for n in range(60))
    assert cli("push", "jobs", "-", input=lines).exit_code == 0
    peek = cli("peek", "jobs", "-n", "100", "--match", "user == 'u1'")
    assert len(peek.json) == 30 and {r["data"]["user"] for r in peek.json} == {"u1"}
    leased = cli("lease", "jobs", "--count", "60").json
    assert cli("fail", "jobs", "--dead", *[r["id"] for r in leased]).exit_code == 0
    run = cli("requeue-dead", "jobs", "--match", "user == 'u0'", "--limit", "20")
    assert run.exit_code == 0 and len(run.json) == 20, run
    run = cli("purge", "jobs", "--state", "dead", "--match", "user == 'u1'", "--yes")
    assert run.exit_code == 0, run
    stats = cli("stats", "jobs").one
    assert (stats["pending"], stats["dead"]) == (20, 10), stats


def test_the_dash_model_reads_a_sharded_queue_as_one(cli: Any, tmp_path: Path,
                                                    server_url: str) -> None:
    from rq_cli.connection.connect import connect
    from rq_cli.console.model import Browser
    from rq_cli.core.sharding.sharded import ShardedQueue

    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    sq = ShardedQueue(connect(server_url), "jobs")
    # items of different shards pushed within one millisecond (as a fast machine's bulk push
    # does): their order must still be one order, read from the head or from the tail
    sq.push([f'{{"n": {n}}}' for n in range(40)], now_ms=1_700_000_000_000)
    browser = Browser("jobs", sq)  # type: ignore[arg-type]
    counts = browser.counts()
    assert counts["pending"] == 40
    pages = [browser.page("pending", offset, 15, total=40).rows for offset in (0, 15, 30)]
    assert [len(rows) for rows in pages] == [15, 15, 10]
    ids = [r.id for rows in pages for r in rows]
    assert len(set(ids)) == 40  # no page overlaps another, none left out
    assert ids == [r.id for r in sq.peek("pending", count=40)]
    assert ids[::-1] == [r.id for r in sq.peek("pending", count=40, from_end="tail")]
    assert browser.page("holders", 0, 10).rows == []


def test_requeue_dead_to_another_queue_on_a_single_server(cli: Any, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n'
                           '[queues.later]\nprefix = "later"\nshards = 2\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    assert cli("reshard", "later", "2").exit_code == 0
    ids = [r["id"] for r in cli("push", "jobs", "-", input="".join(
        f'{{"n": {n}}}\n' for n in range(40))).json]
    assert cli("cancel", "jobs", *ids).exit_code == 0
    run = cli("requeue-dead", "jobs", "--limit", "10", "--to", "plain")  # one script a batch
    assert run.exit_code == 0 and run.one["requeued"] == 10, run
    run = cli("requeue-dead", "jobs", "--all", "--to", "later")  # into a sharded queue
    assert run.exit_code == 0 and run.one["requeued"] == 30, run
    assert cli("stats", "jobs").one["dead"] == 0
    assert (cli("stats", "plain").one["pending"], cli("stats", "later").one["pending"]) == \
        (10, 30)


def test_lease_on_an_empty_or_delayed_sharded_queue_says_what_one_queue_says(
        cli: Any, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    for args in ((), ("--wait", "0.2")):
        run = cli("lease", "jobs", *args)
        assert run.exit_code == 3 and run.stdout == "", run
        assert "empty, or every item is leased" in run.stderr, run
    cli("push", "jobs", "--delay", "300", "{}")
    cli("push", "jobs", "--delay", "100", "{}")
    cli("push", "jobs", "--delay", "200", "{}")
    for args in ((), ("--wait", "0.2")):
        run = cli("lease", "jobs", *args)
        assert run.exit_code == 3 and run.stdout == "", run
        assert "3 items delayed, the next due " in run.stderr, run
        assert "(in 1m" in run.stderr, run  # the soonest of every shard's (100 s)
    assert cli("stats", "jobs").one["delayed"] == 3  # nothing taken


def test_errors_groups_every_shard_of_a_sharded_queue(cli: Any, tmp_path: Path,
                                                      server_url: str) -> None:
    from rq_cli.connection.connect import connect
    from rq_cli.console.model import Browser
    from rq_cli.core.sharding.sharded import ShardedQueue

    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    assert cli("push", "jobs", "-", input="".join(f'{{"n": {n}}}\n' for n in range(30))
               ).exit_code == 0
    leased = [r["id"] for r in cli("lease", "jobs", "--count", "30").json]
    assert len(leased) == 30
    assert cli("fail", "jobs", "--dead", "--error", "timeout after 5 s", *leased[:20]
               ).exit_code == 0
    assert cli("fail", "jobs", "--error", "bad input 7", *leased[20:]).exit_code == 0
    run = cli("errors", "jobs")
    assert run.exit_code == 0, run
    groups = {(g["state"], g["count"]) for g in run.json}
    assert groups == {("dead", 20), ("retrying", 10)}, run.json
    browser = Browser("jobs", ShardedQueue(connect(server_url), "jobs"))  # the consoles' tab
    assert {(g.state, g.count) for g in browser.page("errors", 0, 10).rows} == groups
    dead = next(g for g in run.json if g["state"] == "dead")
    run = cli("requeue-dead", "jobs", "--error-group", dead["key"])
    assert run.exit_code == 0, run
    assert cli("stats", "jobs").one["dead"] == 0


def test_a_sharded_queues_prefix_read_as_a_plain_queue_says_it_is_sharded(
        cli: Any, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.work]\nprefix = "app:jobs"\nshards = 3\n')
    assert cli("reshard", "work", "3").exit_code == 0
    assert cli("push", "work", "-", input='{"n": 1}\n' * 30).exit_code == 0
    for args in (("--prefix",), ("--no-config",)):
        run = cli(*args, "stats", "app:jobs")
        assert run.exit_code == 0 and run.one["pending"] == 0, run  # (what its prefix holds)
        assert "sharded on the server (3 shards)" in run.stderr, run
        assert "never been used" not in run.stderr, run
        run = cli(*args, "lease", "app:jobs")
        assert run.exit_code == 2 and run.stdout == "", run
        assert "sharded on the server (3 shards)" in run.stderr, run
        run = cli(*args, "stats", "app:jobs", "--check", "--max-pending", "10")
        assert run.exit_code == 6 and "sharded on the server" in run.stdout, run
    assert "its configured name work" in cli("--prefix", "lease", "app:jobs").stderr
    assert "set shards = 3 on its [queues.app:jobs]" in cli(
        "--no-config", "lease", "app:jobs").stderr
    assert cli("stats", "work").one["pending"] == 30  # nothing was taken


def test_queues_and_discovery_list_a_sharded_queue_once(cli: Any, tmp_path: Path) -> None:
    assert cli("push", "jobs", "--id", "old", "{}").exit_code == 0  # drained by the resize
    assert cli("push", "plain", "{}").exit_code == 0
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 2\n')
    assert cli("reshard", "jobs", "2").exit_code == 0
    assert cli("push", "jobs", "-", input='{"n": 1}\n' * 20).exit_code == 0
    rows = cli("queues").json
    assert [(r["queue"], r["configured"], r["discovered"]) for r in rows] == [
        ("jobs", True, True), ("plain", False, True)], rows
    found = cli("--no-config", "stats", "--discover").json
    assert {r["queue"]: r["pending"] for r in found} == {"jobs": 21, "plain": 1}, found


def test_a_workers_log_lines_name_the_sharded_queue_and_rq_queue_its_shard(
        cli: Any, tmp_path: Path, server_url: str) -> None:
    import json
    import os
    import subprocess
    import sys

    config = write_config(tmp_path, '[queues.jobs]\nprefix = "app:jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    assert cli("push", "jobs", "-", input='{"n": 1}\n' * 9).exit_code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    # each command says which prefix it ran for on stderr (a log event) and fails its item
    proc = subprocess.run(
        [sys.executable, "-m", "rq_cli", "--config", str(config), "--url", server_url, "work",
         "jobs", "--max-items", "9", "--", "sh", "-c", 'echo "$RQ_QUEUE" >&2; exit 100'],
        capture_output=True, text=True, timeout=60, env=env)  # (a bound on a hang, not a race)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    ran = [e for e in lines if e.get("outcome") == "dead"]
    said = [e for e in lines if e.get("event") == "stderr"]
    assert len(ran) == 9 and len(said) == 9, proc.stderr
    assert {e["queue"] for e in ran + said} == {"app:jobs"}, proc.stderr
    assert {e["line"] for e in said} <= {"app:jobs~1.0", "app:jobs~1.1", "app:jobs~1.2"}


def test_doctor_looks_for_peers_of_both_generations_in_every_shard(
        cli: Any, tmp_path: Path, server_url: str) -> None:
    import sys
    import warnings

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from peer_v03 import V03Queue
    from redis_work_queue import KeyPrefix
    from redis_work_queue import WorkQueue as V01Queue

    from rq_cli.connection.connect import connect
    from rq_cli.core.sharding.shardmeta import shard_of

    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    assert cli("push", "jobs", "-", input='{"n": 1}\n' * 30).exit_code == 0
    assert len(cli("lease", "jobs", "--count", "6").json) == 6

    def peers() -> dict[str, Any]:
        (row,) = [r for r in cli("doctor", "jobs").json if r["check"] == "peers"]
        return row

    row = peers()
    assert row["status"] == "ok" and "6 ids of processing looked at in 3 shards" in \
        row["detail"], row
    # (two items surely in shard jobs~1.1 for the peers: the random ids of the push may
    # leave it fewer after the 6 leases, and did once in CI)
    for item_id in [i for i in (f"p{n}" for n in range(100)) if shard_of(i, 3) == 1][:2]:
        assert cli("push", "jobs", "--id", item_id, '{"n": 2}').exit_code == 0
    client = connect(server_url)
    assert V03Queue("jobs~1.1").lease(client, 60) is not None  # peers work one shard each
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (the v0.1 peer uses SETEX)
        assert V01Queue(KeyPrefix("jobs~1.1")).lease(client, 60, block=False) is not None
    row = peers()
    assert row["status"] == "warn" and "both generations lease here on shard jobs~1.1" in \
        row["detail"], row


def test_items_pushed_to_the_front_go_before_every_ordinary_item_of_the_queue(
        cli: Any, tmp_path: Path, server_url: str) -> None:
    from rq_cli.connection.connect import connect
    from rq_cli.core.sharding.sharded import ShardedQueue

    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    ordinary = {r["id"] for r in cli("push", "jobs", "-", input='{"n": 1}\n' * 30).json}
    front = {r["id"] for r in cli("push", "jobs", "--front", "-", input='{"f": 1}\n' * 15).json}
    front |= {r["id"] for r in cli("push", "jobs", "--front", *['{"f": 2}'] * 15).json}
    assert len(ordinary) == len(front) == 30
    # peek shows the order leases take, and the tail is the head read backwards
    head = [r["id"] for r in cli("peek", "jobs", "-n", "60").json]
    assert set(head[:30]) == front and set(head[30:]) == ordinary
    assert [r["id"] for r in cli("peek", "jobs", "-n", "60", "--from", "tail").json] == \
        head[::-1]
    for n in range(20):  # one lease at a time, from a random first shard each
        (row,) = cli("lease", "jobs").json
        assert row["id"] in front, (n, row)
    sq = ShardedQueue(connect(server_url), "jobs")  # a worker's loop: complete, lease next
    _, got = sq.complete_and_lease([], 1)
    while got and got[0].id in front:
        front.discard(got[0].id)
        done, got = sq.complete_and_lease([got[0]], 1)
        assert [o.outcome for o in done] == ["completed"]
    assert len(front) == 20 and got and got[0].id in ordinary, front  # (the CLI took 20)
    sq.refresh(force=True)
    assert not any(sq.fronts.values())  # the hint is spent
    assert cli("stats", "jobs").one["pending"] == 29


def test_the_front_hint_outlives_the_removal_of_the_queues_old_unsharded_prefix(
        cli: Any, tmp_path: Path, server_url: str) -> None:
    from rq_cli.connection.connect import connect
    from rq_cli.core.sharding.resharding import settle
    from rq_cli.core.sharding.sharded import ShardedQueue

    assert cli("push", "jobs", "--id", "old", "{}").exit_code == 0  # unsharded so far
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0  # "jobs" itself drains
    assert cli("push", "jobs", "-", input='{"n": 1}\n' * 30).exit_code == 0
    front = {r["id"] for r in cli("push", "jobs", "--front", *['{"f": 1}'] * 5).json}
    client = connect(server_url)
    old = ShardedQueue(client, "jobs").shard("jobs")
    (item,) = old.lease(1)
    assert item.id == "old" and old.complete([item])[0].outcome == "completed"
    assert settle(client, "jobs", settle_s=0) == ["jobs"]  # its keys unlinked, but the hint's
    assert {cli("lease", "jobs").one["id"] for _ in range(5)} == front
