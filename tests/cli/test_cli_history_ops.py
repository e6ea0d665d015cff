"""History from the operations (issue 38): a queue used only by push, lease and complete (no
clean, no worker, no console) has a history, written by those operations themselves at most
once a minute per queue (lua/_history.lua); a sharded queue's history sums its shards'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]


def _summed(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The counters' growth over every bucket (a run that crosses a minute has two)."""
    return {f: sum(r[f] for r in rows) for f in ("pushed", "completed", "failed", "dead")}


def test_push_lease_and_complete_alone_make_a_history(cli: Any, r: Any) -> None:
    assert cli("push", "q", "1", "2", "3").exit_code == 0
    assert cli("complete", "q", input=cli("lease", "q", "-n", "2").stdout).exit_code == 0
    rows = cli("stats", "q", "--history").json
    assert rows and {row["queue"] for row in rows} == {"q"}
    assert _summed(rows) == {"pushed": 3, "completed": 2, "failed": 0, "dead": 0}
    # at most one snapshot a minute whatever the calls (three commands: one or two minutes)
    assert 1 <= r.zcard("q:history") <= 2 and 1 <= r.zcard("q:history_hourly") <= 2
    table = cli("stats", "q", "--history", tty=True)
    assert table.exit_code == 0 and "completed" in table.stdout, table.stderr


def test_a_lease_of_a_queue_never_used_writes_no_history(cli: Any, r: Any) -> None:
    """A name typed wrong gets no keys: the snapshot needs counters to start from."""
    assert cli("lease", "nosuch").exit_code == 3  # nothing to lease
    assert not r.exists("nosuch:history", "nosuch:counters")


def test_a_sharded_queue_has_the_sum_of_its_shards_history(cli: Any, r: Any,
                                                           tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    lines = "".join(f'{{"n": {n}}}\n' for n in range(30))
    assert cli("push", "jobs", "-", input=lines).exit_code == 0
    leased = cli("lease", "jobs", "--count", "30").json
    assert cli("complete", "jobs", *[row["id"] for row in leased]).exit_code == 0
    shards = [k.decode() for k in r.scan_iter("jobs~*:history", count=1000)]
    assert len(shards) == 3  # each shard keeps its own
    rows = cli("stats", "jobs", "--history").json
    assert _summed(rows) == {"pushed": 30, "completed": 30, "failed": 0, "dead": 0}


def test_a_foreign_history_key_costs_the_operations_nothing(cli: Any, r: Any) -> None:
    """P:history of another type is not this queue's: no snapshot, and every operation works
    (the history keys are checked once a minute by the snapshot, not by each call)."""
    r.set("q:history", "someone else's")
    r.set("w:history_hourly", "someone else's")
    for queue in ("q", "w"):
        assert cli("push", queue, "1", "2").exit_code == 0
        run = cli("lease", queue, "-n", "2")
        assert run.exit_code == 0 and cli("complete", queue, input=run.stdout).exit_code == 0
        assert r.hget(f"{queue}:counters", "completed") == b"2"
    assert r.get("q:history") == b"someone else's" and not r.exists("q:history_hourly")
    assert r.get("w:history_hourly") == b"someone else's" and not r.exists("w:history")
