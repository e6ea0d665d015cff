"""Sharded queues through the command line on a real 3-primary Cluster (config ``shards = 3``,
``rq-cli reshard jobs 3``): every command sees one queue; a config's other count follows the
server's;
doctor checks placement; ``rq-cli work`` drains it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
from cli_helpers import Run, run_cli
from test_cluster import Cluster, cluster, nodes  # noqa: F401 (fixtures)

from rq_cli.errors import ExitCode

CONFIG = '[queues.jobs]\nprefix = "app:{{jobs}}"\nurl = "{url}"\nshards = {n}\n'


@pytest.fixture
def cli(cluster: Cluster, nodes: list[redis.Redis], tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "rq-cli.toml"

    def cli(*args: str, shards: int = 3, **kwargs: Any) -> Run:
        config.write_text(CONFIG.format(url=cluster.url, n=shards))
        return run_cli(args, url=None, home=tmp_path, **kwargs)

    return cli


def test_reshard_then_every_command_sees_one_queue(cli: Any, cluster: Cluster) -> None:  # noqa: F811
    run = cli("reshard", "jobs", "3", "--dry-run")
    assert run.exit_code == 0 and run.one["changed"] and run.one["dry_run"], run
    run = cli("reshard", "jobs", "3")
    assert run.exit_code == 0 and run.one["after"] == 3, run
    assert len(run.one["placement"]) == 3 and len(run.one["live"]) == 3
    run = cli("push", "jobs", "-", input="".join(f'{{"n": {n}}}\n' for n in range(300)))
    assert run.exit_code == 0 and len(run.json) == 300, run
    assert cli("push", "jobs", "--id", "one", "--delay", "600", '{"x": 1}').exit_code == 0
    assert cli("push", "jobs", "--id", "one", '{"x": 2}').one["reason"] == "duplicate"
    stats = cli("stats", "jobs").one
    assert (stats["pending"], stats["delayed"], len(stats["shards"])) == (300, 1, 3)
    assert sum(s["pending"] for s in stats["shards"]) == 300
    table = cli("stats", "jobs", "--shards", tty=True)
    assert table.exit_code == 0 and table.stdout.count("jobs/app:{jobs~1.") == 3, table
    assert cli("peek", "jobs", "--id", "one").one["data"] == {"x": 1}
    prom = cli("stats", "jobs", "--format", "prometheus").stdout
    assert 'rq_cli_items{queue="jobs",prefix="app:{jobs}",state="pending"} 300' in prom
    assert prom.count('rq_cli_up{queue="jobs",prefix="app:{jobs}",shard="app:{jobs~1.') == 3
    assert len(cli("peek", "jobs", "-n", "50").json) == 50
    lease = cli("lease", "jobs", "--count", "140")  # more than one shard holds
    assert len(lease.json) == 140 and {r["queue"] for r in lease.json} == {"jobs"}
    done = cli("complete", "jobs", "-", input="".join(json.dumps(r) + "\n"
                                                       for r in lease.json))
    assert Counter(r["outcome"] for r in done.json) == {"completed": 140}
    assert cli("cancel", "jobs", "one").one["outcome"] == "dead"
    assert cli("requeue-dead", "jobs", "--all").one["requeued"] == 1
    assert cli("pause", "jobs").exit_code == 0
    assert cli("lease", "jobs").exit_code == ExitCode.NOTHING
    assert cli("resume", "jobs").exit_code == 0
    assert cli("clean", "jobs", "--grace", "0").exit_code == 0
    run = cli("push", "jobs", "{}", shards=4)  # a client whose config says another count
    assert run.exit_code == 0 and "server has 3" in run.stderr, run  # follows the server's
    assert cli("stats", "jobs", shards=4).one["pending"] == 162
    plain = run_cli(["push", "app:{jobs}", "{}"], url=cluster.url, home=Path.cwd())
    assert plain.exit_code == ExitCode.CONFIG and "shards = 3" in plain.stderr, plain
    assert cli("stats", "jobs").one["pending"] == 162
    doctor = cli("doctor", "jobs")
    shards = [r for r in doctor.json if r["check"] == "shards"]
    assert shards and shards[0]["status"] == "ok", shards
    purge = cli("purge", "jobs", "--state", "all", "--yes")
    assert purge.exit_code == 0 and cli("stats", "jobs").one["pending"] == 0


def test_two_workers_drain_it_each_item_once(cli: Any, cluster: Cluster,  # noqa: F811
                                             tmp_path: Path) -> None:
    assert cli("reshard", "jobs", "3").exit_code == 0
    total = 6000  # (issue 30: 6,000 items through two `rq-cli work --concurrency 4`)
    run = cli("push", "jobs", "-", input="".join(f'{{"n": {n}}}\n' for n in range(total)))
    assert run.exit_code == 0
    out = tmp_path / "done.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "RQ_CLI_CONFIG":
           str(tmp_path / "rq-cli.toml")}
    job = f"printf '%s\\n' \"$RQ_ITEM_ID\" >> {out}"
    cpu0 = _cpu(cluster)
    with (tmp_path / "worker.err").open("ab") as errors:
        workers = [subprocess.Popen(
            [sys.executable, "-m", "rq_cli", "work", "jobs", "--concurrency", "4",
             "--idle-exit", "2", "--", "sh", "-c", job], env=env, cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=errors) for _ in range(2)]
        for w in workers:
            assert w.wait(timeout=240) == 0, (tmp_path / "worker.err").read_text()[-3000:]
    spent = [b - a for a, b in zip(cpu0, _cpu(cluster), strict=True)]
    print("server CPU per primary while the workers ran:", spent)
    assert max(spent) <= 0.45 * sum(spent), spent  # one slot: the busiest does ~all of it
    seen = Counter(out.read_text().split())
    assert len(seen) == total and set(seen.values()) == {1}
    stats = cli("stats", "jobs").one
    assert (stats["pending"], stats["processing"]) == (0, 0)


LOOP = ('while [ ! -e "$STOP" ]; do rq-cli lease jobs --count 50 --wait 1 --lease 5 2>/dev/null'
        ' | rq-cli complete jobs - >> "$OUT" 2>/dev/null; done')


@pytest.mark.timeout(400)
def test_reshard_5_then_2_under_four_lease_complete_loops(cli: Any, cluster: Cluster,  # noqa: F811
                                                          tmp_path: Path) -> None:
    assert cli("reshard", "jobs", "3").exit_code == 0
    total = 600  # (each rq-cli run opens a cluster client: about a second here)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "RQ_CLI_CONFIG": str(tmp_path / "rq-cli.toml"), "STOP": str(tmp_path / "stop"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    loops = [subprocess.Popen(["sh", "-c", LOOP], env={**env, "OUT": str(tmp_path / f"o{n}")},
                              cwd=tmp_path) for n in range(4)]
    try:
        for step, (before, shards) in enumerate(((3, 3), (3, 5), (5, 2))):
            if step:  # the operator: reshard, then the config (clients between: refused)
                assert cli("reshard", "jobs", str(shards), shards=before).exit_code == 0
            part = "".join(f'{{"id": "r{n}", "data": {{}}}}\n'
                           for n in range(step * 200, (step + 1) * 200))
            run = cli("push", "jobs", "--with-ids", "-", input=part, shards=shards)
            assert run.exit_code == 0 and len(run.json) == 200, run
            time.sleep(2)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            stats = cli("stats", "jobs", shards=2).one
            if stats["counters"]["completed"] >= total:
                break
            cli("clean", "jobs", "--grace", "0", shards=2)  # leases a refused complete left
            time.sleep(1)
    finally:
        (tmp_path / "stop").touch()
        for p in loops:
            p.wait(timeout=60)
    done = Counter(json.loads(line)["id"] for n in range(4)
                   for line in (tmp_path / f"o{n}").read_text().splitlines()
                   if json.loads(line).get("outcome") == "completed")
    assert set(done) == {f"r{n}" for n in range(total)} and max(done.values()) == 1
    stats = cli("stats", "jobs", shards=2).one
    assert (stats["pending"], stats["processing"], stats["counters"]["completed"]) == \
        (0, 0, total)


def _cpu(cluster: Cluster) -> list[float]:  # noqa: F811
    """Each primary's server CPU seconds so far (INFO cpu, user + sys)."""
    out = []
    for client in cluster.node_clients():
        info = client.info("cpu")
        out.append(float(info["used_cpu_user"]) + float(info["used_cpu_sys"]))
        client.close()
    return out


def test_a_shard_whose_primary_is_down_is_an_error_in_stats_and_check(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Cluster of its own (cluster-require-full-coverage no, so the other primaries keep
    serving), one primary SIGKILLed: `stats --shards` reads the other shards and shows the
    dead one's row with its error, the queue's totals are unreadable, `--check` exits 6 and
    Prometheus says rq_cli_up 0 for that shard (issue 30)."""
    from servers import ServerProcess
    from test_cluster import _form_cluster

    servers = []
    try:
        for i in range(3):
            directory = tmp_path_factory.mktemp(f"down-node{i}")
            servers.append(ServerProcess(directory, config={
                "cluster-enabled": "yes", "cluster-config-file": str(directory / "nodes.conf"),
                "cluster-node-timeout": 2000, "cluster-require-full-coverage": "no"}).start())
        _form_cluster(servers)
        down = Cluster(servers)
        monkeypatch.chdir(tmp_path)
        (tmp_path / "rq-cli.toml").write_text(CONFIG.format(url=down.url, n=3))

        def cli(*args: str, **kwargs: Any) -> Run:
            return run_cli(args, url=None, home=tmp_path, **kwargs)

        assert cli("reshard", "jobs", "3").exit_code == 0
        assert cli("push", "jobs", "-", input="{}\n" * 90).exit_code == 0
        before = cli("stats", "jobs").one
        assert before["pending"] == 90 and len(before["shards"]) == 3, before
        victim = next(s["prefix"] for s in before["shards"]
                      if down.node_of(s["prefix"] + ":queue") == 2)
        servers[2].kill()
        run = cli("stats", "jobs", "--check", "--max-pending", "1000")
        assert run.exit_code == ExitCode.UNKNOWN, run
        assert run.one["queue"] == "jobs" and "Connection refused" in run.one["error"], run
        assert run.stderr.startswith("rq-cli: 1 of 1 could not be checked"), run
        rows = cli("stats", "jobs", "--shards").json
        assert rows[0]["queue"] == "jobs" and rows[0]["error"], rows  # the totals: unreadable
        by_prefix = {s["prefix"]: s for row in rows for s in row.get("shards") or []}
        assert by_prefix[victim].get("error"), rows
        assert all(s.get("error") is None and s["pending"] > 0
                   for p, s in by_prefix.items() if p != victim), rows
        prom = cli("stats", "jobs", "--format", "prometheus").stdout
        assert f'rq_cli_up{{queue="jobs",prefix="app:{{jobs}}",shard="{victim}"}} 0' in prom
        assert prom.count(",shard=") >= 3
    finally:
        for node in servers:
            node.close()


REQUEUE_CONFIG = CONFIG + ('[queues.retry]\nprefix = "app:{{retry}}"\nurl = "{url}"\n'
                           '[queues.later]\nprefix = "app:{{later}}"\nurl = "{url}"\n'
                           'shards = 2\n')


def test_requeue_dead_to_another_queue_from_and_into_sharded_ones(
        cluster: Cluster, nodes: list[redis.Redis], tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rq-cli.toml").write_text(REQUEUE_CONFIG.format(url=cluster.url, n=3))

    def cli(*args: str, **kwargs: Any) -> Run:
        return run_cli(args, url=None, home=tmp_path, **kwargs)

    assert cli("reshard", "jobs", "3").exit_code == 0
    assert cli("reshard", "later", "2").exit_code == 0
    lines = "".join(f'{{"user": "u{n % 2}", "n": {n}}}\n' for n in range(300))
    ids = [r["id"] for r in cli("push", "jobs", "-", input=lines).json]
    assert Counter(r["outcome"] for r in cli("cancel", "jobs", *ids).json) == {"dead": 300}
    run = cli("requeue-dead", "jobs", "--all", "--to", "retry", "--dry-run")
    assert run.exit_code == 0 and run.one["requeued"] == 300, run
    assert cli("stats", "retry").one["pending"] == 0
    # sharded -> plain, filtered: a JSON line per item moved
    run = cli("requeue-dead", "jobs", "--to", "retry", "--match", "user == 'u1'")
    assert run.exit_code == 0 and len(run.json) == 150, run
    # a run stopped after its push: the item is live in the target with the same data
    first = cli("peek", "jobs", "--state", "dead", "-n", "1").one
    data = json.dumps(first["data"])  # the bytes pushed first
    assert cli("push", "later", "--id", first["id"], data).one["added"]
    # sharded -> sharded: the rest, the one already pushed only dropped from the dead
    run = cli("requeue-dead", "jobs", "--all", "--to", "later")
    assert run.exit_code == 0 and (run.one["requeued"], run.one["skipped"]) == (150, 0), run
    # plain -> sharded
    retry = cli("lease", "retry", "--count", "150").json
    assert cli("fail", "retry", "--dead", *[r["id"] for r in retry]).exit_code == 0
    run = cli("requeue-dead", "retry", "--all", "--to", "later")
    assert run.exit_code == 0 and run.one["requeued"] == 150, run
    assert [cli("stats", q).one["dead"] for q in ("jobs", "retry")] == [0, 0]
    leased = cli("lease", "later", "--count", "1000").json
    assert Counter(r["id"] for r in leased) == Counter(ids)  # each once: 0 lost, 0 doubled
    assert sorted(r["data"]["n"] for r in leased) == list(range(300))  # with their data
