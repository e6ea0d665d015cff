"""A sharded queue's record is the truth and keeps one queue's promises across a resize
(docs/DESIGN.md section 7; issue 37 items 1, 2, 5, 10, issue 43), on a single server:

- a config whose count disagrees with the server's is followed, with a note and a doctor
  warning; the first push creates the queue with the config's count;
- de-dup holds across a resize: an id completed in its window, or dead, is refused again,
  also once the drained shard is removed;
- a push into a retired shard (a client with a stale list) is refused there and stored in
  a live shard;
- reshard's refusals: a queue that exists nowhere, a garbage record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis
from cli_helpers import write_config

from rq_cli.core.queue import WorkQueue
from rq_cli.core.sharding.resharding import reshard, settle
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.sharding.shardmeta import read, shard_of
from rq_cli.core.types import NewItem
from rq_cli.errors import ExitCode

pytest_plugins = ["cli_helpers"]

CONFIG = '[queues.jobs]\nprefix = "app:{{jobs}}"\nshards = {n}\n'


def test_a_config_count_that_disagrees_is_followed(cli: Any, tmp_path: Path,
                                                   server_url: str) -> None:
    write_config(tmp_path, CONFIG.format(n=3))
    assert cli("stats", "jobs").one["pending"] == 0  # nothing created by a read
    assert not redis.Redis.from_url(server_url).exists("app:{jobs}:shards")
    run = cli("push", "jobs", "{}")  # the first push creates it with the config's count
    assert run.exit_code == 0 and run.stderr == "", run
    assert len(cli("stats", "jobs").one["shards"]) == 3
    write_config(tmp_path, CONFIG.format(n=5))  # another client's config: the server's 3 hold
    run = cli("push", "jobs", "-", input="".join(f'{{"n": {n}}}\n' for n in range(20)))
    assert run.exit_code == 0 and len(run.json) == 20, run
    assert run.stderr.count("configured with shards = 5 but the server has 3") == 1, run
    stats = cli("stats", "jobs").one
    assert stats["pending"] == 21 and len(stats["shards"]) == 3, stats
    leased = cli("lease", "jobs", "--count", "21")
    assert leased.exit_code == 0 and len(leased.json) == 21, leased
    assert cli("complete", "jobs", *[r["id"] for r in leased.json]).exit_code == 0
    assert cli("clean", "--all").exit_code == 0
    doctor = cli("doctor", "jobs")
    rows = [r for r in doctor.json if r["check"] == "shards"]
    assert any(r["status"] == "warn" and "shards = 5" in r["detail"] for r in rows), rows


def test_dedup_and_dead_ids_are_refused_across_a_resize(cli: Any, tmp_path: Path,
                                                        server_url: str) -> None:
    write_config(tmp_path, CONFIG.format(n=2))
    assert cli("reshard", "jobs", "2").exit_code == 0
    assert cli("push", "jobs", "--id", "X", "--dedup-window", "3600", "{}").exit_code == 0
    (x,) = cli("lease", "jobs").json
    assert cli("complete", "jobs", x["id"]).one["outcome"] == "completed"
    dead = [f"d{n}" for n in range(50)]
    assert cli("push", "jobs", "-", "--with-ids", input="".join(
        f'{{"id": "{i}", "data": {{}}}}\n' for i in dead)).exit_code == 0
    assert cli("cancel", "jobs", *dead).exit_code == 0
    assert cli("reshard", "jobs", "5").one["after"] == 5
    write_config(tmp_path, CONFIG.format(n=5))
    assert cli("push", "jobs", "--id", "X", "{}").one["reason"] == "recently completed"
    again = cli("push", "jobs", "-", "--with-ids", input="".join(
        f'{{"id": "{i}", "data": {{}}}}\n' for i in dead))
    assert again.exit_code == 0 and {r["reason"] for r in again.json} == {"dead"}, again
    assert cli("requeue-dead", "jobs", "--all").one["requeued"] == 50
    leased = cli("lease", "jobs", "--count", "200").json
    assert len(leased) == 50  # not 100
    # the drained shards removed: X's de-dup entry was carried into its live shard
    client = redis.Redis.from_url(server_url)
    assert cli("complete", "jobs", "-", input="".join(
        json.dumps(r) + "\n" for r in leased)).exit_code == 0
    assert len(settle(client, "app:{jobs}", settle_s=0)) == 2
    assert not read(client, "app:{jobs}").draining
    assert cli("push", "jobs", "--id", "X", "{}").one["reason"] == "recently completed"
    # (d0 was completed in its old shard, within the window: carried too)
    assert cli("push", "jobs", "--id", "d0", "{}").one["reason"] == "recently completed"


def test_a_push_into_a_retired_shard_goes_to_a_live_one(server_url: str) -> None:
    client = redis.Redis.from_url(server_url)
    reshard(client, "app:{late}", 2)
    stale = ShardedQueue(client, "app:{late}")  # read the record, then "paused"
    old = list(stale.meta.live)
    reshard(client, "app:{late}", 3)
    assert settle(client, "app:{late}", settle_s=0) == old  # removed: tombstones left
    ids = [f"i{n}" for n in range(40)]
    stored = stale.push([NewItem(b"{}", i) for i in ids])
    assert all(r.added for r in stored), stored
    batches = list(ShardedQueue(client, "app:{late}").stream([NewItem(b"{}", "j")]))
    assert [b.flags for b in batches] == ["1"]
    for prefix in old:  # nothing written there: only the tombstone is left
        assert WorkQueue(client, prefix).stats().pending == 0
        assert [k.decode() for k in client.scan_iter(match=f"{prefix}:*")] == \
            [f"{prefix}:retired"]
    fresh = ShardedQueue(client, "app:{late}")
    assert fresh.stats().pending == 41 and len(fresh.meta.live) == 3
    stale2 = ShardedQueue(client, "app:{late}")
    stale2.meta.live = old  # a stream from a stale list: refused there, re-sent
    stale2.meta.count = 2
    stale2._read_at = float("inf")  # (no re-read before the refusal)
    out = [r for b in stale2.push_batches([NewItem(b"{}", "k"), NewItem(b"{}", "i0")])
           for r in b]
    assert sorted((r.id, r.added) for r in out) == [("i0", False), ("k", True)]
    assert shard_of("k", 3) in range(3)


def test_reshard_refuses_a_missing_queue_and_a_garbage_record(cli: Any, server_url: str) -> None:
    run = cli("reshard", "typo", "3")
    assert run.exit_code == ExitCode.USAGE and "--create" in run.stderr, run
    assert not redis.Redis.from_url(server_url).exists("typo:shards")
    assert cli("reshard", "typo", "3", "--create").one["after"] == 3
    client = redis.Redis.from_url(server_url)
    client.hset("bad:shards", mapping={"count": "x", "live": "[]"})
    run = cli("reshard", "bad", "2", "--create")
    assert run.exit_code == ExitCode.DATA and "--replace" in run.stderr, run
    assert client.hgetall("bad:shards") == {b"count": b"x", b"live": b"[]"}
    plain = cli("push", "bad", "{}")  # a plain push there: the same one line, nothing stored
    assert plain.exit_code == ExitCode.DATA and "--replace" in plain.stderr, plain
    assert not client.exists("bad:queue")
    assert cli("reshard", "bad", "2", "--replace", "--create").one["after"] == 2


def test_the_acl_rule_covers_the_shards() -> None:
    from rq_cli.core.sharding.shardmeta import acl_patterns

    assert acl_patterns("t:{sq}") == ["t:{sq}:*", "t:{sq~*"]
    assert acl_patterns("jobs") == ["jobs:*", "jobs~*"]
