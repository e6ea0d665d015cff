"""Failovers on real servers: Sentinel (``SENTINEL FAILOVER``) and Cluster (``CLUSTER FAILOVER``).

A worker loop (lease one, complete it) runs through a failover. Replication is asynchronous, so
work done on the old primary at the very moment of the switch may be redone (at-least-once);
what must never happen is a lost item: afterwards every pushed id was completed, and the new
primary holds none of them. A call cut off by the switch is an rq-cli error of exit 69
("outcome unknown"), never a traceback or another code.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import waiting
from servers import ServerProcess
from test_cluster import SLOT_RANGES, _form_cluster

from rq_cli.connection.connect import connect, translate_error
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem, QueueOptions
from rq_cli.errors import ExitCode, RqError

ITEMS = 300
OPTIONS = QueueOptions(lease_seconds=2.0, grace_seconds=0.5)


#: waiting.wait_for, where a server may refuse a call while it fails over
wait_for = functools.partial(waiting.wait_for, ignore=(redis.RedisError,))


def wait_progressing(condition: Callable[[], Any], progress: Callable[[], Any], stall: float,
                     what: str) -> None:
    """Wait until ``condition()`` holds, for as long as ``progress()`` keeps changing: it
    fails only after ``stall`` seconds without a change (a loaded machine is slow, not
    stuck), so no total time is guessed."""
    last, deadline = progress(), time.monotonic() + stall
    while not condition():
        now = progress()
        if now != last:
            last, deadline = now, time.monotonic() + stall
        if time.monotonic() > deadline:
            raise AssertionError(f"no progress for {stall:g} s waiting for {what}")
        time.sleep(0.05)


def _link_up(replica: ServerProcess) -> bool:
    client = replica.client(protocol=2)
    try:
        return client.info("replication").get("master_link_status") == "up"
    finally:
        client.close()


class Worker(threading.Thread):
    """Leases and completes one item at a time until ``done()``; every failure is recorded
    (it must translate to an rq-cli error of exit 69) and the loop goes on."""

    def __init__(self, queue: WorkQueue, url: str, done: Callable[[], bool],
                 work_seconds: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.queue, self.url, self.done = queue, url, done
        self.work_seconds = work_seconds  # per item: the failover lands mid-run
        self.completed: list[str] = []
        self.errors: list[RqError] = []
        self.crash: BaseException | None = None
        self.stop = threading.Event()
        self.switched = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set() and not self.done():
                try:
                    items = self.queue.lease(1)
                    if not items:
                        self.queue.clean()  # recovers a lease cut off by the switch
                        time.sleep(0.1)
                        continue
                    item = items[0]
                    time.sleep(self.work_seconds)
                    outcome = self.queue.complete([ItemRef(item.id, item.session)])[0]
                    if outcome.outcome == "completed":
                        self.completed.append(item.id)
                except Exception as err:
                    translated = translate_error(err, self.url)
                    if translated is None:
                        raise
                    self.errors.append(translated)
                    time.sleep(0.1)
        except BaseException as err:  # reported by the test
            self.crash = err


def _run_through(worker: Worker, failover: Callable[[], None], timeout: float = 60) -> None:
    """Start the worker, fail over once it is busy, and wait until it is done (its ``done``
    sees ``worker.switched`` set once the failover has happened)."""
    worker.start()
    wait_for(lambda: len(worker.completed) >= 20 or worker.crash, 30, "the worker to start")
    started = time.monotonic()
    failover()
    worker.switched.set()
    print(f"failover took {time.monotonic() - started:.2f} s; {len(worker.completed)} done")
    assert len(set(worker.completed)) < ITEMS, "the worker finished before the failover"
    started = time.monotonic()
    worker.join(timeout)
    worker.stop.set()
    assert worker.crash is None, repr(worker.crash)
    assert not worker.is_alive(), "the worker did not finish"
    print(f"then {time.monotonic() - started:.2f} s to drain; errors: {worker.errors}")
    for error in worker.errors:
        assert error.exit_code == ExitCode.UNAVAILABLE, error
        assert "\n" not in str(error)


# -- Sentinel ---------------------------------------------------------------------------------

@pytest.fixture
def sentinel_group(make_server, tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    """A primary, its replica and one sentinel (quorum 1) on loopback."""
    primary = make_server(repl_diskless_sync_delay=0)
    replica = make_server(extra_args=("--replicaof", "127.0.0.1", str(primary.port)))
    wait_for(lambda: _link_up(replica), 20, "the replica to sync")
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"sentinel monitor mymaster 127.0.0.1 {primary.port} 1\n"
                    "sentinel down-after-milliseconds mymaster 2000\n"
                    "sentinel failover-timeout mymaster 4000\n")
    sentinel = make_server(config_file=conf, extra_args=("--sentinel",))
    yield {"primary": primary, "replica": replica, "sentinel": sentinel}


def _master_port(sentinel: ServerProcess) -> int:
    client = sentinel.client(protocol=2)
    try:
        _host, port = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        return int(port)
    finally:
        client.close()


def _sentinel_failover(sentinel: ServerProcess, to: ServerProcess) -> None:
    client = sentinel.client(protocol=2)

    def knows_replica() -> bool:
        replicas = client.execute_command("SENTINEL", "REPLICAS", "mymaster")
        return any(str(to.port).encode() in b" ".join(map(bytes, r)) for r in replicas)

    try:
        wait_for(knows_replica, 20, "the sentinel to know the replica")

        def start() -> bool:
            try:
                return bool(client.execute_command("SENTINEL", "FAILOVER", "mymaster"))
            except redis.ResponseError:  # INPROG / NOGOODSLAVE while the state settles
                return False

        wait_for(start, 20, "SENTINEL FAILOVER to be accepted")
        wait_for(lambda: _master_port(sentinel) == to.port, 20, "the replica's promotion")
        # GET-MASTER-ADDR-BY-NAME names the promoted replica while the failover is still in
        # progress; SENTINEL MASTER(S), which clients ask (redis-py), names the old primary
        # until the switch: a client connecting meanwhile writes to it, and loses that when
        # it is demoted. Wait for the switch.
        wait_for(lambda: _switched(client, to.port), 20, "the sentinel's switch")
    finally:
        client.close()


def _switched(client: redis.Redis, port: int) -> bool:
    reply = client.execute_command("SENTINEL", "MASTER", "mymaster")
    fields = dict(zip(reply[::2], reply[1::2], strict=True))
    return fields[b"port"] == str(port).encode() and b"failover_in_progress" not in \
        fields[b"flags"]


def test_sentinel_failover_loses_no_item(sentinel_group, tmp_path: Path) -> None:
    sentinel, replica = sentinel_group["sentinel"], sentinel_group["replica"]
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    q = WorkQueue(connect(url), "app:{jobs}", OPTIONS)
    ids = [f"i{n}" for n in range(ITEMS)]
    q.push([NewItem(b"{}", i) for i in ids])
    wait_for(lambda: replica.client(protocol=2).exists(f"app:{{jobs}}:item:{ids[-1]}"), 10,
             "the items to reach the replica")

    def drained() -> bool:
        """Every id completed once, and the current primary (asked afresh) holds none."""
        if not worker.switched.is_set() or not set(ids) <= set(worker.completed):
            return False
        fresh = WorkQueue(connect(url), "app:{jobs}", OPTIONS)
        try:
            stats = fresh.stats()
        except Exception:
            return False
        finally:
            fresh.client.close()
        return stats.pending + stats.processing + stats.delayed == 0

    worker = Worker(q, url, drained)
    _run_through(worker, lambda: _sentinel_failover(sentinel, replica))
    assert _master_port(sentinel) == replica.port
    assert set(worker.completed) == set(ids)
    new_primary = replica.client(protocol=2)
    assert new_primary.llen("app:{jobs}:queue") == 0
    assert not list(new_primary.scan_iter(match="app:{jobs}:item:*"))


def test_a_call_cut_off_by_a_sentinel_failover_is_exit_69(sentinel_group, tmp_path: Path
                                                           ) -> None:
    """``lease --wait`` blocks on the primary (BLMOVE) while the sentinel demotes it (up to
    ten seconds after the promotion: its INFO period): the call is cut, one line, exit 69."""
    sentinel, replica = sentinel_group["sentinel"], sentinel_group["replica"]
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    command = [sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "lease", "q",
               "--wait", "40"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    try:
        # The lease must be blocked on the old primary before the failover starts: a client
        # slow to start (a loaded CI machine) would otherwise ask the sentinel after the
        # switch and wait on the new primary for the whole 40 s.
        old = sentinel_group["primary"].client(protocol=2)
        wait_for(lambda: old.info("clients")["blocked_clients"] >= 1, 20,
                 "the lease to block on the primary")
        old.close()
        _sentinel_failover(sentinel, replica)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"cut: {err!r}")
    assert proc.returncode == ExitCode.UNAVAILABLE, (proc.returncode, err)
    assert err.startswith("rq-cli: ") and len(err.splitlines()) == 1, err
    assert "lost the connection to" in err and "outcome is unknown" in err, err
    assert "Traceback" not in err and out == ""
    # after the switch the same URL reaches the new primary
    after = subprocess.run([sys.executable, "-m", "rq_cli", "--url", url, "--no-config",
                            "push", "q", "{}"], capture_output=True, text=True, timeout=30,
                           cwd=tmp_path)
    assert after.returncode == 0, after.stderr
    assert replica.client(protocol=2).llen("q:queue") == 1


def test_rq_cli_work_rides_out_a_sentinel_failover(sentinel_group, tmp_path: Path) -> None:
    """A real ``rq-cli work`` through ``SENTINEL FAILOVER``: it never exits, and every item,
    pushed before or after the switch, is run (work on the old primary in the switch's
    window may be redone: at-least-once) and none is left on the new primary."""
    sentinel, replica = sentinel_group["sentinel"], sentinel_group["replica"]
    url = f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    q = WorkQueue(connect(url), "w:{jobs}", OPTIONS)
    before = [f"b{n}" for n in range(40)]
    q.push([NewItem(b"{}", i) for i in before])
    # (replication is asynchronous: the switch must find the items on the replica, or a
    # failover a moment later loses them, which is what durability settings are for, not
    # what this test is about)
    held = replica.client(protocol=2)
    wait_for(lambda: held.hget("w:{jobs}:counters", "pushed") == b"40", 30,
             "the replica to hold the items pushed")
    held.close()
    done = tmp_path / "done"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "work", "w:{jobs}",
         "--lease", "2", "--", "sh", "-c", f'sleep 0.05; echo "$RQ_ITEM_ID" >> {done}'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        wait_for(lambda: done.exists() and len(done.read_text().split()) >= 5, 20,
                 "the worker to start")
        _sentinel_failover(sentinel, replica)
        assert proc.poll() is None, proc.communicate()
        after = [f"a{n}" for n in range(10)]
        fresh = WorkQueue(connect(url), "w:{jobs}", OPTIONS)
        wait_for(lambda: fresh.push([NewItem(b"{}", i) for i in after]), 30,
                 "a push to the new primary")

        def drained() -> bool:
            try:
                fresh.clean()  # what the switch cut off comes back
                stats = fresh.stats()
            except redis.RedisError:  # (the switch settling)
                return False
            ran = set(done.read_text().split())
            return stats.pending + stats.processing + stats.delayed == 0 and \
                set(before + after) <= ran
        # progress: each item run (a line); a lease cut off by the switch comes back after
        # lease_seconds and a clean, so a stall of 60 s is no slow machine but a stuck worker
        wait_progressing(drained, lambda: done.read_text().count("\n"), 60,
                         "every item to be run")
        assert proc.poll() is None, "the worker exited"
    finally:
        if proc.poll() is None:
            proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert not list(replica.client(protocol=2).scan_iter(match="w:{jobs}:item:*"))


# -- Cluster ----------------------------------------------------------------------------------

JOBS = "app:{jobs}"  # slot 9631: the second primary's range


@pytest.fixture
def replicated_cluster(tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[tuple[list[ServerProcess], ServerProcess]]:
    """Three primaries (slots split in three) and a replica of the one that serves JOBS."""
    nodes: list[ServerProcess] = []

    def node(i: int) -> ServerProcess:
        directory = tmp_path_factory.mktemp(f"failover-node{i}")
        return ServerProcess(directory, config={
            "cluster-enabled": "yes", "cluster-config-file": str(directory / "nodes.conf"),
            "cluster-node-timeout": 5000, "repl-diskless-sync-delay": 0}).start()

    try:
        for i in range(3):
            nodes.append(node(i))
        _form_cluster(nodes)
        replica = node(3)
        nodes.append(replica)
        primary = nodes[1]
        assert SLOT_RANGES[1][0] <= 9631 <= SLOT_RANGES[1][1]
        admin = replica.client(protocol=2)
        admin.execute_command("CLUSTER", "MEET", "127.0.0.1", nodes[0].port)
        primary_id = primary.client(protocol=2).execute_command("CLUSTER", "MYID").decode()
        wait_for(lambda: primary_id in str(admin.execute_command("CLUSTER", "NODES")), 20,
                 "the new node to learn the primary")
        admin.execute_command("CLUSTER", "REPLICATE", primary_id)
        wait_for(lambda: _link_up(replica), 30, "the cluster replica to sync")
        replica_id = admin.execute_command("CLUSTER", "MYID").decode()
        admin.close()
        for other in nodes[:3]:  # (a manual failover needs the primaries to know the replica)
            client = other.client(protocol=2)
            wait_for(lambda c=client: _knows_replica(c, replica_id), 30,
                     f"node {other.port} to see the replica")
            client.close()
        yield nodes[:3], replica
    finally:
        for proc in nodes:
            proc.close()


def _knows_replica(client: redis.Redis, node_id: str) -> bool:
    """The raw CLUSTER NODES text lists ``node_id`` with the slave flag."""
    text = client.execute_command("CLUSTER", "NODES")
    text = text.decode() if isinstance(text, bytes) else str(text)
    return any(line.startswith(node_id) and "slave" in line.split()[2]
               for line in text.splitlines())


def test_cluster_failover_loses_no_item(replicated_cluster) -> None:
    primaries, replica = replicated_cluster
    url = f"redis+cluster://127.0.0.1:{primaries[0].port}"
    q = WorkQueue(connect(url), JOBS, OPTIONS)
    ids = [f"i{n}" for n in range(ITEMS)]
    q.push([NewItem(b"{}", i) for i in ids])

    def drained() -> bool:
        if not worker.switched.is_set() or not set(ids) <= set(worker.completed):
            return False
        stats = q.stats()
        return stats.pending + stats.processing == 0

    def failover() -> None:
        admin = replica.client(protocol=2)
        admin.execute_command("CLUSTER", "FAILOVER")  # coordinated: no write is lost
        wait_for(lambda: admin.info("replication").get("role") == "master", 20,
                 "the replica's promotion")
        admin.close()

    worker = Worker(q, url, drained)
    _run_through(worker, failover)
    assert set(worker.completed) == set(ids)
    assert len(worker.errors) <= 1, worker.errors  # at most one call reports outcome unknown
    assert len(worker.completed) == ITEMS  # a coordinated failover redoes nothing
    promoted = replica.client(protocol=2)
    assert promoted.info("replication")["role"] == "master"
    assert promoted.llen(f"{JOBS}:queue") == 0
