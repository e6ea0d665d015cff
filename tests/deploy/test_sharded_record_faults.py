"""The record of a sharded queue while its own primary is down (docs/DESIGN.md section 7,
"Copies of the record"; issue 37 item 6), on a real local 3-primary Cluster of its own (run
with ``cluster-require-full-coverage no``, so the other primaries keep serving their slots
once the dead one is marked failed): a new client opens the queue from a copy of the record
and pushes into the shards on the other primaries; the CLI, configured with another count,
does too (exit 0), and a ``lease | complete`` line works the shards that answer; ``rq-cli work``
started while that primary is down works the items of the other shards and says once which
shard does not answer."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import rq_cli_command, run_cli, write_config
from servers import ServerProcess
from test_cluster import Cluster, _form_cluster

from rq_cli.connection.connect import connect
from rq_cli.core.contract.keys import shards_key
from rq_cli.core.contract.limits import RECORD_COPIES
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.shardcopies import copy_base
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.sharding.shardmeta import shard_of
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]

BASE = "app:{rec}"


@pytest.fixture
def lenient_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes: list[ServerProcess] = []
    try:
        for i in range(3):
            directory = tmp_path_factory.mktemp(f"lenient-node{i}")
            nodes.append(ServerProcess(directory, config={
                "cluster-enabled": "yes",
                "cluster-config-file": str(directory / "nodes.conf"),
                "cluster-node-timeout": 5000,
                "cluster-require-full-coverage": "no",
            }).start())
        _form_cluster(nodes)
        yield Cluster(nodes)
    finally:
        for node in nodes:
            node.close()


def test_a_new_client_opens_the_queue_while_the_records_primary_is_down(
        lenient_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = lenient_cluster
    client = connect(cluster.url)
    reshard(client, BASE, 3)
    record_node = cluster.node_of(shards_key(BASE))
    copies = {cluster.node_of(shards_key(copy_base(BASE, k))) for k in range(RECORD_COPIES)}
    assert copies - {record_node}, "every copy on the record's primary: pick another base"
    live = ShardedQueue(client, BASE).meta.live
    alive = next(i for i in range(3) if i != record_node)
    cluster.nodes[record_node].kill()
    # a new client, seeded with a live node: opens from a copy, pushes to a live shard
    fresh = ShardedQueue(connect(cluster.url_via(alive)), BASE, shards=3)
    assert fresh.meta.live == live
    item_id = next(i for i in (f"x{n}" for n in range(1000))
                   if cluster.node_of(live[shard_of(i, 3)] + ":queue") != record_node)
    assert fresh.push([NewItem(b"{}", item_id)])[0].added
    # the command line, configured with another count: stored, exit 0
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, f'[queues.jobs]\nprefix = "{BASE}"\nurl = '
                           f'"{cluster.url_via(alive)}"\nshards = 5\n')
    other = next(i for i in (f"y{n}" for n in range(1000))
                 if cluster.node_of(live[shard_of(i, 3)] + ":queue") != record_node)
    run = run_cli(["push", "jobs", "--id", other, "{}"], url=None, home=tmp_path)
    assert run.exit_code == 0 and run.one["added"], run
    assert "server has 3" in run.stderr, run
    # a `lease | complete` line: the items of the shards that answer
    leased = run_cli(["lease", "jobs", "--count", "10"], url=None, home=tmp_path)
    assert leased.exit_code == 0 and {r["id"] for r in leased.json} == {item_id, other}, leased
    done = run_cli(["complete", "jobs", "-"], url=None, home=tmp_path,
                   input="".join(json.dumps(r) + "\n" for r in leased.json))
    assert done.exit_code == 0 and {r["outcome"] for r in done.json} == {"completed"}, done


def _beside_the_record(cluster: Cluster, tag: str) -> tuple[ShardedQueue, int, int, list[str]]:
    """BASE resharded into 3; its queue, the node holding its record, another node, and 6 ids
    (``tag`` + a number) whose shards are not on the record's node."""
    client = connect(cluster.url)
    reshard(client, BASE, 3)
    queue = ShardedQueue(client, BASE)
    record_node = cluster.node_of(shards_key(BASE))
    live = queue.meta.live
    ids = [i for i in (f"{tag}{n}" for n in range(1000))
           if cluster.node_of(live[shard_of(i, 3)] + ":queue") != record_node][:6]
    return queue, record_node, next(i for i in range(3) if i != record_node), ids


def test_a_worker_started_while_the_records_primary_is_down_works_the_other_shards(
        lenient_cluster: Cluster, tmp_path: Path) -> None:
    cluster = lenient_cluster
    queue, record_node, alive, ids = _beside_the_record(cluster, "w")
    live = queue.meta.live
    assert any(cluster.node_of(p + ":queue") == record_node for p in live), \
        "no shard on the record's primary: pick another base"
    assert all(r.added for r in queue.push([NewItem(b"{}", i) for i in ids]))
    cluster.nodes[record_node].kill()
    done = tmp_path / "done"
    # the worker exits once it has worked the items (the timeout only bounds a hang: on a
    # loaded machine the CLI takes seconds to start and reach the cluster)
    run = subprocess.run(_worker(cluster.url_via(alive), len(ids), done, tmp_path),
                         capture_output=True, text=True, timeout=100, cwd=tmp_path,
                         env=_env(tmp_path))
    assert run.returncode == 0, run.stderr
    assert sorted(done.read_text().split()) == sorted(ids), run.stderr
    _said_once(run.stderr)
    check = ShardedQueue(connect(cluster.url_via(alive)), BASE, shards=3)
    assert sum(check.shard(p).stats().counters["completed"] for p in live
               if cluster.node_of(p + ":queue") != record_node) == len(ids)


def test_a_running_worker_goes_on_with_the_other_shards_when_the_records_primary_fails(
        lenient_cluster: Cluster, tmp_path: Path) -> None:
    cluster = lenient_cluster
    queue, record_node, alive, ids = _beside_the_record(cluster, "r")
    done = tmp_path / "done"
    worker = subprocess.Popen(_worker(cluster.url_via(alive), len(ids), done, tmp_path),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              cwd=tmp_path, env=_env(tmp_path))
    try:
        assert all(r.added for r in queue.push([NewItem(b"{}", i) for i in ids[:3]]))
        _wait_for(lambda: len(_lines(done)) == 3, worker)  # the worker is running
        cluster.nodes[record_node].kill()
        assert worker.stderr is not None
        seen: list[str] = []  # the worker, waiting for work, notices the shard (its lease passes)
        while not seen or "shard_unreachable" not in seen[-1]:
            seen.append(worker.stderr.readline())
            assert seen[-1], "".join(seen)  # (it exited)
        fresh = ShardedQueue(connect(cluster.url_via(alive)), BASE, shards=3)
        assert all(r.added for r in fresh.push([NewItem(b"{}", i) for i in ids[3:]]))
        _, rest = worker.communicate(timeout=100)  # (a bound on a hang, as above)
        stderr = "".join(seen) + rest
    finally:
        worker.kill()
    assert worker.returncode == 0, stderr
    assert sorted(_lines(done)) == sorted(ids), stderr
    _said_once(stderr)


def _said_once(stderr: str) -> None:
    """The worker's log says once that a shard is unreachable, and never that the server
    is (no outage)."""
    events = [json.loads(line).get("event") for line in stderr.splitlines()
              if line.startswith("{")]
    assert events.count("shard_unreachable") == 1 and "unreachable" not in events, stderr


def _worker(url: str, items: int, done: Path, directory: Path) -> list[str]:
    """``rq-cli work jobs`` (configured in ``directory``: the queue sharded, seeded with
    ``url``) for ``items`` items, each command noting its id in ``done``."""
    write_config(directory, f'[queues.jobs]\nprefix = "{BASE}"\nurl = "{url}"\nshards = 3\n')
    return [*rq_cli_command(), "work", "jobs", "--max-items", str(items), "--max-outage", "20",
            "--", "sh", "-c", f'cat >/dev/null; echo "$RQ_ITEM_ID" >> {done}']


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RQ_CLI_", "_RQ_CLI_")) and k != "REDIS_URL"}
    env["XDG_CONFIG_HOME"] = str(home / "xdg")
    return env


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _wait_for(done: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    """Wait until ``done()`` (a generous bound: 100 s, for a loaded machine), failing at
    once if ``process`` exits first."""
    deadline = time.monotonic() + 100
    while not done():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
