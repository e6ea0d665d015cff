"""A batch through a Sentinel failover (docs/batches.md): the record moves with the items (each
transition is one script, replicated whole), so on the new primary it still adds up, the
batch finishes once every item is completed, and ``rq-cli wait`` on the Sentinel URL says so.
Work done on the old primary at the moment of the switch may be redone (at-least-once): the
batch counts each item once, as completed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_failover import (  # noqa: F401 (sentinel_group: the fixture)
    OPTIONS,
    Worker,
    _run_through,
    _sentinel_failover,
    sentinel_group,
    wait_for,
)

from rq_cli.connection.connect import connect
from rq_cli.core.operations import batchops
from rq_cli.core.queue import WorkQueue

ITEMS = 300


def test_a_batch_finishes_through_a_sentinel_failover(sentinel_group,  # noqa: F811
                                                      tmp_path: Path) -> None:
    sentinel, replica = sentinel_group["sentinel"], sentinel_group["replica"]
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    q = WorkQueue(connect(url), "app:{jobs}", OPTIONS)
    pushed = q.push([b"%d" % n for n in range(ITEMS)], batch="b")
    assert all(p.added for p in pushed)
    wait_for(lambda: replica.client(protocol=2).hget("app:{jobs}:batch:b", "total") ==
             str(ITEMS).encode(), 10, "the batch to reach the replica")

    def done() -> bool:
        if not worker.switched.is_set():
            return False
        fresh = WorkQueue(connect(url), "app:{jobs}", OPTIONS)
        try:
            row = batchops.read(fresh, "b")
        except Exception:
            return False
        finally:
            fresh.client.close()
        return bool(row and row["done"])

    worker = Worker(q, url, done)
    _run_through(worker, lambda: _sentinel_failover(sentinel, replica))
    row = batchops.read(WorkQueue(replica.client(protocol=2), "app:{jobs}"), "b")
    assert row is not None
    assert (row["total"], row["completed"], row["dead"], row["done"]) == (ITEMS, ITEMS, 0, True)
    assert set(worker.completed) == {p.id for p in pushed}  # each once or more (redone)
    run = subprocess.run([sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "wait",
                          "app:{jobs}", "b", "--timeout", "60"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["completed"] == ITEMS
