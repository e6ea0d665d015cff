"""A queue's fleet-wide limits through a Sentinel failover (docs/limits.md): they live in the
queue's keys (P:limits, the rate's state with them; the cap counts P:leases), so a promoted
replica holds them and goes on holding leases back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_failover import _master_port, _sentinel_failover, sentinel_group, wait_for

from rq_cli.connection.connect import connect
from rq_cli.core.operations.limiting import parse_rate
from rq_cli.core.queue import WorkQueue
from rq_cli.errors import ExitCode

__all__ = ["sentinel_group"]  # (the fixture, used by name)

Q = "app:{jobs}"


def test_limits_hold_on_the_promoted_replica(sentinel_group, tmp_path: Path) -> None:
    sentinel, replica = sentinel_group["sentinel"], sentinel_group["replica"]
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    q = WorkQueue(connect(url), Q)
    q.push([b"{}"] * 5)
    q.set_limits(rate=parse_rate("1/h"), max_in_flight=3)
    assert len(q.lease(5, lease_seconds=600)) == 1  # the rate's burst of 1
    primary = sentinel_group["primary"].client(protocol=2)
    spent = primary.hgetall(f"{Q}:limits")
    assert spent[b"tat_us"]  # the rate's state, spent for an hour
    copy = replica.client(protocol=2)
    wait_for(lambda: copy.hgetall(f"{Q}:limits") == spent, 20, "the limits to reach the replica")
    _sentinel_failover(sentinel, replica)
    assert _master_port(sentinel) == replica.port
    after = WorkQueue(connect(url), Q)
    got = after.limits()
    assert (got.rate, got.max_in_flight, got.in_flight) == ("1/h", 3, 1)
    assert after.lease(1) == [] and after.held_back is not None
    assert after.held_back[0] == "rate"
    run = subprocess.run([sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "lease",
                          Q], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == ExitCode.TEMPFAIL and run.stdout == "", run
    assert "rate is spent" in run.stderr
    assert copy.llen(f"{Q}:queue") == 4  # nothing taken on the new primary
