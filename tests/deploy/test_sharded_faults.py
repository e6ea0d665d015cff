"""Sharded queues under faults (docs/DESIGN.md section 7, "Faults"), on real local Clusters:

- :func:`test_sigkilled_workers_and_a_cron_clean_lose_nothing_and_do_nothing_twice`: ITEMS
  items (30,000 by default; ``RQ_SHARD_ITEMS`` to change) pushed into a queue of 3 shards on
  3 primaries in KILLS + 1 parts, drained by 6 worker processes, while a cron-like loop runs
  ``clean``; once the workers are half way through a part, one is SIGKILLed and replaced and
  the next part is pushed (mid-run however fast the machine: the kills wait on progress,
  not on a clock); every item completed exactly once, none left. The workers never stop on
  their own (a killed worker's items come back only after its lease ends, by when idle
  workers could all have gone); the test ends them once the queue is empty.
- :func:`test_a_primary_failing_over_mid_run_loses_nothing`: a coordinated CLUSTER FAILOVER of
  the primary of one shard while workers run: the other shards carry on, nothing is lost.
- :func:`test_a_sigkilled_primary_stops_only_its_shard_and_its_replica_takes_over`: the
  other shards' items keep being completed while it is down; its replica takes over; every
  item is completed (at least once: asynchronous replication may forget a complete).

Each worker appends ``R <id> <outcome>`` after each complete, one ``os.write`` on an
``O_APPEND`` descriptor, so a SIGKILL never leaves half a line; the server's ``completed``
counter settles the items of a worker killed between its complete and its journal line.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import redis
from test_cluster import Cluster, cluster, nodes  # noqa: F401 (fixtures)
from test_failover import replicated_cluster, wait_for  # noqa: F401 (fixtures)

from rq_cli.connection.connect import connect
from rq_cli.core.contract.limits import SHARD_META_REFRESH
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.sharding.shardmeta import shard_of
from rq_cli.core.types import ItemRef, NewItem, QueueOptions

BASE = "app:{jobs}"
ITEMS = int(os.environ.get("RQ_SHARD_ITEMS", "30000"))
OPTS = QueueOptions(lease_seconds=3.0, grace_seconds=0.5)
KILLS = 4  # workers SIGKILLed mid-run (each replaced)

WORKER = r"""
import os, sys
from rq_cli.connection.connect import connect
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import ItemRef, QueueOptions

url, base, journal = sys.argv[1:4]
fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
q = ShardedQueue(connect(url), base, QueueOptions(lease_seconds=3.0), shards=3)
while True:  # until the test ends it: a killed peer's items come back after its lease
    got = q.lease(50, wait=1.0)
    if not got:
        continue
    done = q.complete([ItemRef(i.id, i.session) for i in got])
    os.write(fd, "".join(f"R {o.id} {o.outcome}\n" for o in done).encode())
"""


def _start(url: str, journal: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", WORKER, url, BASE, str(journal)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_sigkilled_workers_and_a_cron_clean_lose_nothing_and_do_nothing_twice(
        cluster: Cluster, nodes: list[redis.Redis], tmp_path: Path) -> None:  # noqa: F811
    client = connect(cluster.url)
    reshard(client, BASE, 3)
    q = ShardedQueue(client, BASE, OPTS, shards=3)
    ids = [f"i{n}" for n in range(ITEMS)]
    parts = [ids[n * ITEMS // (KILLS + 1):(n + 1) * ITEMS // (KILLS + 1)]
             for n in range(KILLS + 1)]

    def push(part: list[str]) -> None:
        for n in range(0, len(part), 5000):
            assert all(r.added for r in q.push([NewItem(b"{}", i) for i in part[n:n + 5000]]))

    push(parts[0])
    journal = tmp_path / "journal"
    stop = threading.Event()

    def cron() -> None:
        cleaner = ShardedQueue(connect(cluster.url), BASE, OPTS)
        while not stop.is_set():
            cleaner.clean(grace_seconds=0.5)
            stop.wait(1.0)

    cleaning = threading.Thread(target=cron)
    cleaning.start()
    workers = [_start(cluster.url, journal) for _ in range(6)]
    killed = 0
    try:
        rng = random.Random(30)
        pushed = len(parts[0])
        for part in parts[1:]:  # half way through a part: SIGKILL one, start another, push
            half = pushed - len(part) // 2
            wait_for(lambda h=half: q.stats().counters["completed"] >= h, 240,
                     f"{half} items completed")  # (a bound for a hang, not a speed)
            victim = workers.pop(rng.randrange(len(workers)))
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            killed += 1
            workers.append(_start(cluster.url, journal))
            push(part)
            pushed += len(part)

        def drained() -> bool:
            s = q.stats()
            return s.pending + s.processing + s.delayed == 0
        wait_for(drained, 240, "the queue to be drained")  # (a bound for a hang)
    finally:
        stop.set()
        cleaning.join()
        for w in workers:
            if w.poll() is None:
                w.kill()
            w.wait()
    assert killed == KILLS
    s = q.stats()
    assert (s.pending, s.processing, s.delayed, s.dead) == (0, 0, 0, 0), s
    assert s.counters["completed"] == ITEMS  # each item completed once on the server
    outcomes = Counter(line.split()[1] for line in journal.read_text().splitlines()
                       if line.endswith(" completed"))
    assert max(outcomes.values()) == 1  # nobody was told "completed" twice for one id
    assert set(outcomes) <= set(ids) and len(outcomes) >= ITEMS - KILLS * 50


def test_a_primary_failing_over_mid_run_loses_nothing(replicated_cluster: Any) -> None:  # noqa: F811
    primaries, replica = replicated_cluster
    url = f"redis+cluster://127.0.0.1:{primaries[0].port}"
    client = connect(url)
    plan = reshard(client, BASE, 3)
    assert len(plan.placement) == 3
    q = ShardedQueue(client, BASE, OPTS, shards=3)
    total = 3000
    ids = [f"f{n}" for n in range(total)]
    q.push([NewItem(b"{}", i) for i in ids])
    completed: Counter[str] = Counter()
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def work() -> None:
        wq = ShardedQueue(connect(url), BASE, OPTS)
        while not stop.is_set():
            try:
                got = wq.lease(10, wait=0.2)
            except Exception as e:  # every shard down: not expected here
                errors.append(f"lease: {e}")
                time.sleep(0.2)
                continue
            refs = [ItemRef(i.id, i.session) for i in got]
            for _ in range(100):  # the item's shard may be switching: try again
                try:
                    done = wq.complete(refs)
                    break
                except Exception as e:
                    errors.append(f"complete: {e}")
                    time.sleep(0.1)
            else:
                continue
            with lock:
                for o in done:
                    if o.outcome == "completed":
                        completed[o.id] += 1
            time.sleep(0.01)  # (the run lasts long enough for the failover to land in it)

    def cron() -> None:
        cleaner = ShardedQueue(connect(url), BASE, OPTS)
        while not stop.is_set():
            try:
                cleaner.clean(grace_seconds=0.5)
            except Exception as e:
                errors.append(f"clean: {e}")
            stop.wait(1.0)

    threads = [threading.Thread(target=work) for _ in range(3)] + [threading.Thread(target=cron)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: sum(completed.values()) > total // 4, 60, "a quarter done")
        admin = replica.client(protocol=2)
        admin.execute_command("CLUSTER", "FAILOVER")  # coordinated: no write is lost
        wait_for(lambda: admin.info("replication").get("role") == "master", 20,
                 "the replica's promotion")
        admin.close()

        def drained() -> bool:
            s = q.stats()
            return set(completed) == set(ids) and s.pending + s.processing == 0
        wait_for(drained, 120, "every item completed")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert set(completed) == set(ids) and max(completed.values()) == 1
    assert q.stats().counters["completed"] == total


def test_a_sigkilled_primary_stops_only_its_shard_and_its_replica_takes_over(
        replicated_cluster: Any) -> None:  # noqa: F811
    """Replication is asynchronous: the items are pushed and replicated (WAIT) before the
    kill, so none can be lost; a complete the dead primary took and had not replicated is
    done again (at least once), never lost."""
    primaries, replica = replicated_cluster
    url = f"redis+cluster://127.0.0.1:{primaries[0].port}"
    client = connect(url)
    reshard(client, BASE, 3)
    q = ShardedQueue(client, BASE, OPTS, shards=3)
    total = 3000
    ids = [f"k{n}" for n in range(total)]
    q.push([NewItem(b"{}", i) for i in ids])
    doomed = primaries[1].client(protocol=2)
    doomed.execute_command("WAIT", 1, 5000)  # the replica has every item
    doomed.close()
    on_doomed = {p for p, at in ((p, cluster_index(client, p, primaries)) for p in q.meta.live)
                 if at == 1}
    assert len(on_doomed) == 1
    completed: Counter[str] = Counter()
    by_shard: Counter[str] = Counter()
    stop = threading.Event()
    lock = threading.Lock()

    def work() -> None:
        wq = ShardedQueue(connect(url), BASE, OPTS)
        while not stop.is_set():
            try:
                got = wq.lease(10, wait=0.2)
                done = wq.complete([ItemRef(i.id, i.session) for i in got])
            except Exception:  # the shard switching (or the whole cluster, briefly)
                time.sleep(0.2)
                continue
            with lock:
                for item, o in zip(got, done, strict=True):
                    if o.outcome == "completed":
                        completed[o.id] += 1
                        by_shard[item.queue] += 1
            time.sleep(0.02)

    def cron() -> None:
        cleaner = ShardedQueue(connect(url), BASE, OPTS)
        while not stop.is_set():
            with contextlib.suppress(Exception):  # (a shard between primaries: next round)
                cleaner.clean(grace_seconds=0.5)
            stop.wait(1.0)

    threads = [threading.Thread(target=work) for _ in range(3)] + [threading.Thread(target=cron)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: sum(completed.values()) > total // 5, 60, "a fifth done")
        assert cluster_index(client, BASE, primaries) == 1  # (the record's slot: the base tag's)
        killed = time.monotonic()
        primaries[1].kill()  # SIGKILL: the replica takes over after the node timeout
        # The queue's record (P:shards, in the base tag's slot) is on the killed primary too:
        # past SHARD_META_REFRESH every worker's read of it fails, and the other shards go on
        # (they stopped with it before). Counted from then, within the node timeout (5 s: the
        # cluster still says ok, its replica not yet promoted); a loaded machine's workers
        # take a while to give up on the dead shard's connection.
        time.sleep(max(0.0, killed + SHARD_META_REFRESH + 0.5 - time.monotonic()))
        others = [s for s in q.meta.live if s not in on_doomed]
        # (fresh work on the other shards: fast workers may have emptied them by now)
        fresh = [f"x{n}" for n in range(600)]
        fresh = [i for i in fresh if q.meta.live[shard_of(i, len(q.meta.live))] in others]
        for s in others:
            q.shard(s).push([NewItem(b"{}", i) for i in fresh
                             if q.meta.live[shard_of(i, len(q.meta.live))] == s])
        ids += fresh
        killed_at = {s: by_shard[s] for s in q.meta.live}
        deadline = killed + 4.5
        while time.monotonic() < deadline and \
                not all(by_shard[s] > killed_at[s] for s in others):
            time.sleep(0.1)
        assert all(by_shard[s] > killed_at[s] for s in others), (by_shard, killed_at)
        admin = replica.client(protocol=2)
        wait_for(lambda: admin.info("replication").get("role") == "master", 60,
                 "the replica's promotion")
        admin.close()
        wait_for(lambda: set(completed) == set(ids), 120, "every item completed")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert set(completed) == set(ids)  # none lost (some may have been done twice)


def cluster_index(client: Any, prefix: str, primaries: list[Any]) -> int:
    """Which of ``primaries`` serves ``prefix``'s slot."""
    node = client.get_node_from_key(prefix + ":queue")
    return next(i for i, p in enumerate(primaries) if p.port == node.port)
