"""rq-cli limit on a sharded queue (docs/limits.md, "Sharded queues"): each live shard holds a
share, the limits hold over all the shards together, reshard spreads them over the new
shards, and a cap smaller than the shard count is refused (exit 78)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis
from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]


def shard_limits(r: redis.Redis, prefixes: list[str]) -> list[dict[bytes, bytes]]:
    return [{k: v for k, v in r.hgetall(f"{p}:limits").items() if k != b"tat_us"}
            for p in prefixes]


def test_limits_are_shared_by_the_shards_and_hold_over_all_of_them(
        cli: Any, r: redis.Redis, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    live = cli("reshard", "jobs", "3", "--create").one["live"]
    got = cli("limit", "jobs", "--rate", "30/h", "--burst", "3", "--max-in-flight", "6").one
    assert got.pop("per_second") == 0.008  # (a float in JSON: 3 decimals)
    assert got == {"queue": "jobs", "rate": "30/h", "burst": 3,
                   "max_in_flight": 6, "in_flight": 0}
    assert shard_limits(r, live) == [
        {b"rate": b"30/h", b"interval_us": b"360000000", b"burst": b"1",
         b"max_in_flight": b"2"}] * 3
    assert cli("push", "jobs", "-", input="{}\n" * 30).exit_code == 0
    leased = cli("lease", "jobs", "--count", "30").json
    assert len(leased) == 3  # the burst: 1 per shard, 3 over the queue
    run = cli("lease", "jobs")
    assert run.exit_code == 75 and run.stdout == "" and "rate is spent" in run.stderr, run
    assert cli("limit", "jobs").one["in_flight"] == 3


def test_a_cap_smaller_than_the_shard_count_is_refused_with_78(
        cli: Any, r: redis.Redis, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    live = cli("reshard", "jobs", "3", "--create").one["live"]
    run = cli("limit", "jobs", "--max-in-flight", "2")
    assert run.exit_code == 78 and run.stdout == "", run
    assert len(run.stderr.strip().splitlines()) == 1 and "at least 3" in run.stderr
    assert shard_limits(r, live) == [{}] * 3  # nothing written
    assert cli("limit", "jobs", "--max-in-flight", "4").exit_code == 0
    run = cli("reshard", "jobs", "5")  # 5 shards could not share a cap of 4
    assert run.exit_code == 78 and "reshard to 4 shards or fewer" in run.stderr, run
    shards = cli("stats", "jobs").one["shards"]
    assert len(shards) == 3 and all(s["live"] for s in shards)  # still the 3, no resize
    assert cli("limit", "jobs").one["max_in_flight"] == 4


def test_reshard_spreads_the_limits_over_the_new_shards(
        cli: Any, r: redis.Redis, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    cli("reshard", "jobs", "3", "--create")
    assert cli("limit", "jobs", "--rate", "30/s", "--burst", "4", "--max-in-flight", "7"
               ).exit_code == 0
    live = cli("reshard", "jobs", "2").one["live"]
    assert shard_limits(r, live) == [
        {b"rate": b"30/s", b"interval_us": b"66666", b"burst": b"2", b"max_in_flight": b"4"},
        {b"rate": b"30/s", b"interval_us": b"66666", b"burst": b"2", b"max_in_flight": b"3"}]
    got = cli("limit", "jobs").one
    assert (got["rate"], got["max_in_flight"]) == ("30/s", 7)
    assert cli("limit", "jobs", "--clear").exit_code == 0
    assert shard_limits(r, live) == [{}, {}]
