"""Durability through crashes: acknowledged means replicated (README "Guarantees").

A Sentinel set (a primary, its replica, three sentinels) goes through repeated failovers,
each made by SIGKILLing the primary while the replica is held back, as a slow link holds it
back: the replica reaches the primary through a :class:`Link` (a TCP relay in this process)
that stops passing the primary's replication stream on for 0.3-0.6 s before the crash and
drops what it held when the primary dies. A pusher and two workers run throughout.

- With ``wait_replicas = 1`` no acknowledged push is lost and no id is completed twice
  (counting completes that were confirmed).
- Without it the same run loses acknowledged pushes: the test shows the loss the README
  describes (so this test can fail).
- ``RQ_CLI_WAIT_REPLICAS=1 rq-cli push --with-ids -`` in batches, under the same failovers,
  loses none of the ids it printed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import waiting
from servers import ServerProcess
from test_failover import JOBS, replicated_cluster  # noqa: F401  (a fixture)

from rq_cli.connection.connect import connect
from rq_cli.core.operations.durable import follow_primary
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions
from rq_cli.errors import ExitCode, Unconfirmed

SERVICE = "mymaster"
QUEUE = "d:{jobs}"
ROUNDS = 3
RATE = 150  # items pushed per second, about
DURABLE = QueueOptions(lease_seconds=3.0, wait_replicas=1, wait_timeout=2.0)
LOOSE = QueueOptions(lease_seconds=3.0)


#: waiting.wait_for, where a server may refuse a call while it fails over
wait_for = functools.partial(waiting.wait_for, ignore=(redis.RedisError, OSError))


class Link(threading.Thread):
    """A TCP relay from a replica to its primary: ``hold()`` keeps what the primary sends
    (the replication stream) from the replica, as a slow link does; when the primary's side
    closes, what was held is dropped with the link."""

    def __init__(self, target_port: int) -> None:
        super().__init__(daemon=True)
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.held = threading.Event()
        self.closed = False
        self.start()

    def hold(self) -> None:
        self.held.set()

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.listener.close()

    def run(self) -> None:
        while not self.closed:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
            except OSError:
                down.close()
                continue
            threading.Thread(target=self._relay, args=(down, up), daemon=True).start()

    def _relay(self, down: socket.socket, up: socket.socket) -> None:
        """down: the replica's side; up: the primary's."""
        pending = b""  # from the primary, held back
        try:
            while not self.closed:
                readable, _, _ = select.select([down, up], [], [], 0.05)
                if up in readable:
                    data = up.recv(65536)
                    if not data:
                        return  # the primary is gone: what was held is lost with the link
                    pending += data
                if down in readable:
                    data = down.recv(65536)
                    if not data:
                        return
                    up.sendall(data)
                if pending and not self.held.is_set():
                    down.sendall(pending)
                    pending = b""
        except OSError:
            return
        finally:
            down.close()
            up.close()


class SentinelSet:
    """A primary and a replica (through a :class:`Link`), three sentinels (quorum 2)."""

    def __init__(self, make_server: Callable[..., ServerProcess], tmp_path: Path,
                 primary_args: tuple[str, ...] = ()) -> None:
        self.primary = make_server(repl_diskless_sync_delay=0, extra_args=primary_args)
        self.replica = make_server(repl_diskless_sync_delay=0, start=False)
        self.link = Link(self.primary.port)
        self.replica.extra_args = ["--replicaof", "127.0.0.1", str(self.link.port)]
        self.replica.start()
        wait_for(lambda: _link_up(self.replica), 20, "the replica to sync")
        self.sentinels = []
        for n in range(3):
            conf = tmp_path / f"sentinel{n}.conf"
            # (failover-timeout: a sentinel "fixes" a replica that replicates through the
            # link only that long after it last changed, longer than a round; and a failed
            # election is tried again after twice that)
            conf.write_text(f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} 2\n"
                            f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                            f"sentinel failover-timeout {SERVICE} 10000\n")
            self.sentinels.append(make_server(config_file=conf, extra_args=("--sentinel",)))
        wait_for(lambda: all(self._knows(s, self.replica) for s in self.sentinels), 20,
                 "the sentinels to know the replica")
        self.url = "redis+sentinel://" + ",".join(
            f"127.0.0.1:{s.port}" for s in self.sentinels) + f"/{SERVICE}"
        self.crashes = 0

    def _knows(self, sentinel: ServerProcess, replica: ServerProcess) -> bool:
        client = sentinel.client(protocol=2)
        try:
            for row in client.execute_command("SENTINEL", "REPLICAS", SERVICE):
                fields = dict(zip(row[::2], row[1::2], strict=True))
                if fields.get(b"port") == str(replica.port).encode():
                    flags = fields.get(b"flags", b"")
                    return b"s_down" not in flags and b"disconnected" not in flags
            return False
        finally:
            client.close()

    def master_port(self) -> int:
        for sentinel in self.sentinels:
            client = sentinel.client(protocol=2)
            try:
                return int(client.execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])
            except redis.RedisError:
                continue
            finally:
                client.close()
        raise AssertionError("no sentinel answers")

    def crash(self) -> None:
        """Hold the replica back 0.3-0.6 s, SIGKILL the primary, wait for the sentinels to
        promote the replica, and bring the old primary back as the new one's replica (through
        a new link), known to the sentinels: ready for the next crash."""
        self.link.hold()
        time.sleep(random.uniform(0.3, 0.6))
        old, new = self.primary, self.replica
        old.kill()
        # (bounds for events, generous: a loaded machine slows each step many times over)
        wait_for(lambda: self.master_port() == new.port, 120, "the replica's promotion")
        self.link.close()
        self.link = Link(new.port)
        old.extra_args = ["--replicaof", "127.0.0.1", str(self.link.port)]
        old.start()
        wait_for(lambda: _link_up(old), 120, "the old primary to sync as a replica")
        wait_for(lambda: all(self._knows(s, old) for s in self.sentinels), 120,
                 "the sentinels to see the new replica")
        self.primary, self.replica = new, old
        self.crashes += 1

    def close(self) -> None:
        self.link.close()


def _master_of(sentinel: ServerProcess) -> int:
    """The primary's port as clients learn it (SENTINEL MASTER, which redis-py asks; 0
    while a failover is in progress: it still names the old one)."""
    client = sentinel.client(protocol=2)
    try:
        reply = client.execute_command("SENTINEL", "MASTER", SERVICE)
        fields = dict(zip(reply[::2], reply[1::2], strict=True))
        return 0 if b"failover_in_progress" in fields[b"flags"] else int(fields[b"port"])
    finally:
        client.close()


def _link_up(replica: ServerProcess) -> bool:
    client = replica.client(protocol=2)
    try:
        return client.info("replication").get("master_link_status") == "up"
    finally:
        client.close()


@pytest.fixture
def sentinel_set(make_server, tmp_path: Path) -> Iterator[SentinelSet]:
    group = SentinelSet(make_server, tmp_path)
    yield group
    group.close()


class Pusher(threading.Thread):
    """Pushes ids p0, p1, ... (in batches of ``batch``), about RATE a second; ``acked``: the
    ids of every push that returned."""

    def __init__(self, url: str, options: QueueOptions, batch: int = 1,
                 queue: str = QUEUE) -> None:
        super().__init__(daemon=True)
        self.queue = WorkQueue(connect(url, timeout=5.0), queue, options)
        self.batch = batch
        self.acked: list[str] = []
        self.unconfirmed: list[str] = []
        self.failures = 0
        self.errors: Counter[str] = Counter()
        self.stop = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            ids = [f"p{n + k}" for k in range(self.batch)]
            n += self.batch
            try:
                self.queue.push([NewItem(b"{}", i) for i in ids])
                self.acked.extend(ids)
            except Unconfirmed:
                self.unconfirmed.extend(ids)
            except Exception as exc:  # cut off by the crash: outcome unknown, not acknowledged
                self.failures += 1
                self.errors[type(exc).__name__] += 1
                time.sleep(0.05)
            time.sleep(self.batch / RATE)


class Worker(threading.Thread):
    """Leases one item at a time and completes it; ``confirmed``: the ids whose complete
    said ``completed`` and was acknowledged; ``ran``: every id completed on some server, or
    whose complete a crash cut off (its outcome unknown: it may have been)."""

    def __init__(self, url: str, options: QueueOptions, queue: str = QUEUE) -> None:
        super().__init__(daemon=True)
        self.queue = WorkQueue(connect(url, timeout=5.0), queue, options)
        self.confirmed: list[str] = []
        self.ran: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        last_clean = 0.0
        while not self.stop.is_set():
            try:
                items = self.queue.lease(1)
                if not items:
                    if time.monotonic() - last_clean > 1:
                        self.queue.clean()  # a lease cut off by a crash comes back
                        last_clean = time.monotonic()
                    time.sleep(0.02)
                    continue
                item = items[0]
                time.sleep(0.005)  # the work
                try:
                    (out,) = self.queue.complete([item.id])
                except Unconfirmed as exc:
                    (out,) = exc.result  # type: ignore[misc]
                    if out.outcome == "completed":
                        self.ran.append(item.id)
                    continue
                except Exception:  # cut off: it may have been completed (a crash is not a loss)
                    self.ran.append(item.id)
                    raise
                if out.outcome == "completed":
                    self.confirmed.append(item.id)
                    self.ran.append(item.id)
            except Exception:
                time.sleep(0.05)


def _run(group: SentinelSet, options: QueueOptions, batch: int) -> dict[str, Any]:
    """Push and work through ROUNDS crashes, then drain; the counts of what happened."""
    pusher = Pusher(group.url, options, batch)
    workers = [Worker(group.url, options) for _ in range(2)]
    pusher.start()
    for worker in workers:
        worker.start()
    try:
        wait_for(lambda: len(pusher.acked) >= 50, 20, "the pusher to start")
        for _ in range(ROUNDS):
            time.sleep(1.5)
            group.crash()
        time.sleep(0.5)
    finally:
        pusher.stop.set()
        pusher.join(10)
    fresh = WorkQueue(connect(group.url, timeout=5.0), QUEUE, LOOSE)

    def drained() -> bool:
        fresh.clean()
        stats = fresh.stats()
        return stats.pending + stats.processing + stats.delayed == 0
    try:
        wait_for(drained, 30, "the workers to drain the queue")
    finally:
        for worker in workers:
            worker.stop.set()
        for worker in workers:
            worker.join(10)
    acked = set(pusher.acked)
    ran = {i for w in workers for i in w.ran}
    twice = [i for i, n in Counter(i for w in workers for i in w.confirmed).items() if n > 1]
    counts = {"acknowledged": len(acked), "lost": len(acked - ran), "twice": len(twice),
              "unconfirmed": len(pusher.unconfirmed), "cut off": pusher.failures,
              "crashes": group.crashes, "errors": dict(pusher.errors)}
    print(counts)
    return counts


@pytest.mark.parametrize("batch", [1, 20])
def test_with_durability_no_acknowledged_push_is_lost(sentinel_set: SentinelSet,
                                                      batch: int) -> None:
    counts = _run(sentinel_set, DURABLE, batch)
    assert counts["crashes"] == ROUNDS
    assert counts["acknowledged"] > 100
    assert counts["lost"] == 0, counts
    assert counts["twice"] == 0, counts


def test_without_durability_a_crash_loses_acknowledged_pushes(sentinel_set: SentinelSet
                                                              ) -> None:
    """What the README says is lost without the setting: the pushes acknowledged while the
    replica was held back, on every crash."""
    counts = _run(sentinel_set, LOOSE, 1)
    assert counts["crashes"] == ROUNDS
    assert counts["lost"] > 0, counts


def test_cli_push_with_ids_loses_none_it_printed(sentinel_set: SentinelSet,
                                                 tmp_path: Path) -> None:
    """``RQ_CLI_WAIT_REPLICAS=1 rq-cli push --with-ids -``, batches of 200 lines in a loop,
    under three crashes: every id it printed is on the server at the end; a batch cut off
    (exit 69) or unconfirmed (exit 8) is pushed again, with its ids."""
    env = {**os.environ, "RQ_CLI_WAIT_REPLICAS": "1", "RQ_CLI_WAIT_TIMEOUT": "2"}
    printed: set[str] = set()
    codes: Counter[int] = Counter()
    stop = threading.Event()

    def push_loop() -> None:
        n = 0
        todo: list[str] = []
        while not stop.is_set():
            if not todo:
                todo = [f"c{n + k}" for k in range(200)]
                n += 200
            lines = "".join(json.dumps({"id": i, "data": {}}) + "\n" for i in todo)
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "rq_cli", "--url", sentinel_set.url, "--no-config",
                     "push", QUEUE, "--with-ids", "-"],
                    input=lines, capture_output=True, text=True, env=env, timeout=30)
            except subprocess.TimeoutExpired as exc:  # (a loaded machine): what it printed
                done = subprocess.CompletedProcess(exc.cmd, -1, (exc.stdout or b"").decode()
                                                   if isinstance(exc.stdout, bytes)
                                                   else exc.stdout or "", "")
                done.stdout = "".join(line + "\n" for line in done.stdout.splitlines()
                                      if line.endswith("}"))
            codes[done.returncode] += 1
            got = {json.loads(line)["id"] for line in done.stdout.splitlines()}
            printed.update(got)
            todo = [i for i in todo if i not in got]  # cut off or unconfirmed: again

    thread = threading.Thread(target=push_loop, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(printed) >= 200, 45, "the pushes to start")
        for _ in range(ROUNDS):
            sentinel_set.crash()
            time.sleep(0.3)
    finally:
        stop.set()
        thread.join(40)
    primary = sentinel_set.primary.client(protocol=2)
    on_server = {key.decode().rsplit(":", 1)[1]
                 for key in primary.scan_iter(match=f"{QUEUE}:item:*", count=1000)}
    print(f"printed {len(printed)}, exits {dict(codes)}")
    assert len(printed) >= 200
    assert printed <= on_server, f"{len(printed - on_server)} printed ids lost"


def test_unconfirmed_push_is_exit_8_with_the_ids_on_stderr(make_server) -> None:
    """wait_replicas = 1 with no replica: the items are stored but not confirmed; stdout
    lists none, stderr names each by id, exit 8."""
    server = make_server()
    lines = "".join(json.dumps({"id": f"u{n}", "data": n}) + "\n" for n in range(3))
    done = subprocess.run(
        [sys.executable, "-m", "rq_cli", "--url", server.url, "--no-config",
         "--wait-replicas", "1", "--wait-timeout", "0.1", "push", "q", "--with-ids", "-"],
        input=lines, capture_output=True, text=True, timeout=30)
    assert done.returncode == ExitCode.UNCONFIRMED, done.stderr
    assert done.stdout == ""
    named = [line.split(": ")[-1] for line in done.stderr.splitlines()
             if line.startswith("rq-cli: unconfirmed: ")]
    assert named == ["u0", "u1", "u2"]
    last = done.stderr.splitlines()[-1]
    assert "not confirmed" in last and "0 of 1 replicas" in last, last
    assert "Traceback" not in done.stderr
    assert server.client().llen("q:queue") == 3  # made: stored, not confirmed


def test_the_role_check_leaves_a_demoted_primary(sentinel_set: SentinelSet) -> None:
    """What ``rq-cli work`` runs every second behind Sentinel (``follow_primary``): after a
    failover a client's idle connection still reaches the old primary, which answers (as a
    replica, or as a primary not yet told, for up to ten seconds); the role check drops it,
    and the next call reaches the new primary."""
    client = connect(sentinel_set.url)
    old, new = sentinel_set.primary, sentinel_set.replica
    assert int(client.info("server")["tcp_port"]) == old.port
    assert not follow_primary(client)  # (nothing moved: nothing dropped)
    admin = sentinel_set.sentinels[0].client(protocol=2)

    def start() -> bool:
        try:
            return bool(admin.execute_command("SENTINEL", "FAILOVER", SERVICE))
        except redis.ResponseError:  # INPROG / NOGOODSLAVE while the state settles
            return False
    wait_for(start, 20, "SENTINEL FAILOVER to be accepted")
    wait_for(lambda: sentinel_set.master_port() == new.port, 30, "the replica's promotion")
    assert int(client.info("server")["tcp_port"]) == old.port  # the idle connection
    wait_for(lambda: all(_master_of(s) == new.port for s in sentinel_set.sentinels), 20,
             "every sentinel to name the new primary")
    assert follow_primary(client)
    assert int(client.info("server")["tcp_port"]) == new.port


# -- Cluster ----------------------------------------------------------------------------------

def test_cluster_with_durability_loses_no_acknowledged_push(
        replicated_cluster,  # noqa: F811  (the fixture of test_failover.py)
) -> None:
    """A Cluster with a replica of the queue's primary: its replica held back (SIGSTOP, 0.5 s)
    and the primary SIGKILLed under a pusher and two workers with ``wait_replicas = 1`` (the
    WAIT goes to the queue's node after each write). The replica is promoted; no
    acknowledged push is lost and no id completed twice. (A stopped replica's kernel still
    receives the stream, so the loss without the setting shows with Sentinel's relay above,
    not here.)"""
    primaries, replica = replicated_cluster
    url = f"redis+cluster://127.0.0.1:{primaries[0].port}"
    old = primaries[1]  # the primary of JOBS
    pusher = Pusher(url, DURABLE, queue=JOBS)
    workers = [Worker(url, DURABLE, queue=JOBS) for _ in range(2)]
    pusher.start()
    for worker in workers:
        worker.start()
    try:
        wait_for(lambda: len(pusher.acked) >= 50, 20, "the pusher to start")
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        acked = len(pusher.acked)
        time.sleep(0.5)
        held = len(pusher.acked) - acked  # acknowledged while the replica could not ack
        old.kill()
        replica.process.send_signal(signal.SIGCONT)
        admin = replica.client(protocol=2)
        wait_for(lambda: admin.info("replication").get("role") == "master", 30,
                 "the replica's promotion")
        # alone, the new primary confirms nothing (exit 8 for a CLI push): the old one comes
        # back as its replica (its nodes.conf says it was failed over)
        old.start()
        wait_for(lambda: _link_up(old), 30, "the old primary to sync as a replica")
        wait_for(lambda: len(pusher.acked) >= acked + 50, 30, "pushes to the new primary")
    finally:
        pusher.stop.set()
        pusher.join(10)
    fresh = WorkQueue(connect(url, timeout=5.0), JOBS, LOOSE)

    def drained() -> bool:
        fresh.clean()
        stats = fresh.stats()
        return stats.pending + stats.processing + stats.delayed == 0
    try:
        wait_for(drained, 30, "the workers to drain the queue")
    finally:
        for worker in workers:
            worker.stop.set()
        for worker in workers:
            worker.join(10)
    ran = {i for w in workers for i in w.ran}
    twice = [i for i, n in Counter(i for w in workers for i in w.confirmed).items() if n > 1]
    print(f"acknowledged {len(pusher.acked)} ({held} while the replica was held), lost "
          f"{sorted(set(pusher.acked) - ran)}, twice {len(twice)}, errors {dict(pusher.errors)}")
    # a write waits for the replica: none acknowledged while it could not ack (but the one
    # push whose reply was on its way when the replica stopped)
    assert held <= 1
    assert set(pusher.acked) <= ran
    assert not twice


def test_work_notes_an_outcome_not_confirmed_and_goes_on(make_server) -> None:
    """``rq-cli work`` with wait_replicas = 1 and no replica: each outcome is made, logged with
    a note that it was not confirmed, never recorded again; the worker goes on."""
    server = make_server()
    WorkQueue(server.client(), "wq").push([NewItem(b"{}", f"w{n}") for n in range(3)])
    done = subprocess.run(
        [sys.executable, "-m", "rq_cli", "--url", server.url, "--no-config", "--wait-replicas",
         "1", "--wait-timeout", "0.1", "work", "wq", "--idle-exit", "0.5", "--json", "--",
         "true"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (done.stdout + done.stderr).splitlines()
             if line.startswith("{")]
    items = [entry for entry in lines if "id" in entry]
    assert sorted(entry["id"] for entry in items) == ["w0", "w1", "w2"]
    for entry in items:
        assert entry["outcome"] == "completed"
        assert "not confirmed" in entry["note"] and "0 of 1 replicas" in entry["note"]
    assert server.client().llen("wq:queue") == 0
    assert WorkQueue(server.client(), "wq").stats().counters["completed"] == 3


def test_work_leaves_a_live_demoted_primary(make_server, tmp_path: Path) -> None:
    """The sentinels fail over a live primary (frozen past down-after, then back) that cannot
    be turned into a replica (REPLICAOF renamed away: as the ten seconds before the sentinels
    get to it, made endless). It still answers as a primary; a worker writing to it would wait
    there forever while the work arrives at the new primary. ``rq-cli work`` asks the
    sentinels every second: it runs the new primary's items."""
    group = SentinelSet(make_server, tmp_path, primary_args=("--rename-command", "REPLICAOF",
                                                             "", "--rename-command", "SLAVEOF",
                                                             ""))
    done = tmp_path / "done"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rq_cli", "--url", group.url, "--no-config", "work", "lv",
         "--lease", "5", "--", "sh", "-c", f'echo "$RQ_ITEM_ID" >> {done}'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        WorkQueue(group.primary.client(), "lv").push([NewItem(b"{}", "before")])
        wait_for(lambda: done.exists() and "before" in done.read_text(), 20,
                 "the worker to start")
        old, new = group.primary, group.replica
        assert old.process is not None
        old.process.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: all(_master_of(s) == new.port for s in group.sentinels), 45,
                     "every sentinel to name the new primary")
        finally:
            old.process.send_signal(signal.SIGCONT)
        assert old.client().info("replication")["role"] == "master"  # demoted, not told
        WorkQueue(new.client(), "lv").push([NewItem(b"{}", f"after{n}") for n in range(5)])
        wait_for(lambda: all(f"after{n}" in done.read_text() for n in range(5)), 15,
                 "the worker to run the new primary's items")
        assert old.client().info("replication")["role"] == "master"  # (still not told)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        group.close()
    assert "Traceback" not in err
