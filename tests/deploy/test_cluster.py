"""Redis Cluster (docs/DESIGN.md sections 2 and 6): a hash-tagged queue works on a real cluster.

The module starts its own small cluster once: three primaries, no replicas, on free ports
(with free bus ports, port + 10000), each with ``cluster-enabled yes`` and its
``cluster-config-file`` in its own directory. Slots are split in three ranges (CLUSTER
ADDSLOTSRANGE, or ADDSLOTS on servers without it), the nodes meet, and the fixture waits
(bounded) until every node reports ``cluster_state:ok`` and knows the other two. The servers
are always shut down, even when setting the cluster up fails.

Covered, through ``redis.RedisCluster`` and through ``connect("redis+cluster://...")``:
every WorkQueue operation on a prefix with a hash tag (``app:{jobs}``); the refusal of an
untagged prefix (ClusterError, naming the fix); two queues whose tags live on different
nodes; requeue-dead into a queue with the same tag, and its refusal of another tag; and
the command line end to end, in process (CliRunner) and as a real subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from cli_helpers import Run, run_cli
from redis.cluster import RedisCluster
from servers import ServerProcess

from rq_cli.connection.connect import connect
from rq_cli.core.queue import BATCH, WorkQueue, lease_many
from rq_cli.core.types import ItemRef, NewItem, QueueOptions
from rq_cli.errors import ClusterError, ExitCode, UsageError

#: The slot ranges of the three primaries (16384 slots in all).
SLOT_RANGES = ((0, 5460), (5461, 10922), (10923, 16383))
#: Longest wait for the cluster to form (gossip plus Redis' 2 s writable delay).
FORM_TIMEOUT = 30.0

#: Tags whose slots lie in three different ranges (checked by test_tags_are_spread).
JOBS = "app:{jobs}"  # slot 9631: node 1
JOBS_RETRY = "retry:{jobs}"  # the same tag, so the same slot as JOBS
MAIL = "app:{mail}"  # slot 4247: node 0
BILLING = "app:{billing}"  # slot 12682: node 2


# -- the cluster ------------------------------------------------------------------------------

@dataclass
class Cluster:
    nodes: list[ServerProcess]

    @property
    def url(self) -> str:
        """The rq-cli URL of the cluster, with the first node as the seed."""
        return self.url_via(0)

    def url_via(self, index: int) -> str:
        """The rq-cli URL of the cluster with node ``index`` as the seed (any node will do)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[index].port}"

    def node_clients(self) -> list[redis.Redis]:
        return [node.client(socket_timeout=5.0) for node in self.nodes]

    def client(self) -> RedisCluster:
        return RedisCluster(host="127.0.0.1", port=self.nodes[0].port,
                            socket_connect_timeout=2.0, socket_timeout=10.0)

    def node_of(self, key: str) -> int:
        """The index of the node that serves ``key``'s slot (from the slot ranges)."""
        from redis.crc import key_slot

        slot = key_slot(key.encode())
        return next(i for i, (lo, hi) in enumerate(SLOT_RANGES) if lo <= slot <= hi)


def _add_slots(client: redis.Redis, lo: int, hi: int) -> None:
    try:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)
    except redis.ResponseError as err:  # before Redis 7.0: one slot per argument
        if "unknown subcommand" not in str(err).lower():
            raise
        client.execute_command("CLUSTER", "ADDSLOTS", *range(lo, hi + 1))


def _form_cluster(nodes: list[ServerProcess]) -> None:
    clients = [node.client(socket_timeout=5.0) for node in nodes]
    try:
        for client, (lo, hi) in zip(clients, SLOT_RANGES, strict=True):
            _add_slots(client, lo, hi)
        for node in nodes[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        deadline = time.monotonic() + FORM_TIMEOUT
        infos: list[str] = []
        while time.monotonic() < deadline:
            infos = [c.execute_command("CLUSTER", "INFO").decode() for c in clients]
            if all("cluster_state:ok" in i and "cluster_known_nodes:3" in i
                   and "cluster_slots_assigned:16384" in i for i in infos):
                return
            time.sleep(0.05)
        logs = "\n".join(f"--- node {n.port}:\n{n.log_path.read_text()[-1500:]}" for n in nodes)
        raise RuntimeError(f"the cluster did not form within {FORM_TIMEOUT:g} s:\n"
                           + "\n".join(infos) + "\n" + logs)
    finally:
        for client in clients:
            client.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three primaries, no replicas, slots split in three; shut down at the end, always."""
    nodes: list[ServerProcess] = []
    try:
        for i in range(3):
            directory = tmp_path_factory.mktemp(f"cluster-node{i}")
            nodes.append(ServerProcess(directory, config={
                "cluster-enabled": "yes",
                "cluster-config-file": str(directory / "nodes.conf"),
                "cluster-node-timeout": 5000,
            }).start())  # picks a port whose bus port (+10000) is free too
        _form_cluster(nodes)
        yield Cluster(nodes)
    finally:
        for node in nodes:
            node.close()


@pytest.fixture
def nodes(cluster: Cluster) -> Iterator[list[redis.Redis]]:
    """A plain client per node, after every node's data was flushed."""
    clients = cluster.node_clients()
    for client in clients:
        client.flushall()
    yield clients
    for client in clients:
        client.close()


def _redis_py(cluster: Cluster) -> Any:
    return cluster.client()


def _rq_connect(cluster: Cluster) -> Any:
    return connect(cluster.url_via(2))  # a seed other than the first node: topology is read


@pytest.fixture(params=[_redis_py, _rq_connect], ids=["RedisCluster", "connect-url"])
def rc(request: pytest.FixtureRequest, cluster: Cluster,
       nodes: list[redis.Redis]) -> Iterator[Any]:
    """A cluster client on flushed nodes: made by redis-py directly, or by
    rq_cli.connection.connect."""
    client = request.param(cluster)
    assert isinstance(client, RedisCluster)
    yield client
    client.close()


def keys_on(client: redis.Redis) -> set[str]:
    return {k.decode() for k in client.scan_iter(count=1000)}


def all_keys(nodes: list[redis.Redis]) -> set[str]:
    return set().union(*(keys_on(n) for n in nodes))


# -- the cluster itself and the hash-tag rule --------------------------------------------------

def test_cluster_is_formed(cluster: Cluster, nodes: list[redis.Redis]) -> None:
    for node in nodes:
        info = node.execute_command("CLUSTER", "INFO").decode()
        assert "cluster_state:ok" in info and "cluster_size:3" in info
        assert node.info("server")["tcp_port"] in [n.port for n in cluster.nodes]
    for node, proc in zip(nodes, cluster.nodes, strict=True):
        assert (proc.directory / "nodes.conf").is_file()  # its own config file, its own dir
        assert b"myself,master" in node.execute_command("CLUSTER", "NODES")


def test_tags_are_spread(cluster: Cluster, rc: Any) -> None:
    where = {p: cluster.node_of(f"{p}:queue") for p in (JOBS, MAIL, BILLING)}
    assert sorted(where.values()) == [0, 1, 2], where
    assert rc.keyslot(f"{JOBS}:queue") == rc.keyslot(f"{JOBS_RETRY}:item:x")


@pytest.mark.parametrize("prefix, hint", [
    ("jobs", "'{jobs}'"),
    ("app:jobs", "'{app:jobs}'"),
    ("app:{}:jobs", "'{app:{}:jobs}'"),  # an empty tag is no tag: keys would hash whole
    ("app}:{jobs", "'{app}:{jobs}'"),  # a "{" with no "}" after it is no tag either
])
def test_untagged_prefix_is_refused_naming_the_fix(rc: Any, prefix: str, hint: str) -> None:
    with pytest.raises(ClusterError) as caught:
        WorkQueue(rc, prefix)
    message = str(caught.value)
    assert "hash tag" in message and hint in message, message
    assert caught.value.exit_code == ExitCode.UNAVAILABLE


def test_untagged_prefix_is_fine_without_a_cluster(cluster: Cluster) -> None:
    plain = cluster.nodes[0].client()  # a plain client of one node: no cluster rule applies
    try:
        WorkQueue(plain, "jobs")
    finally:
        plain.close()


# -- every operation on a tagged prefix --------------------------------------------------------

def test_push_lease_complete(rc: Any, nodes: list[redis.Redis], cluster: Cluster) -> None:
    q = WorkQueue(rc, JOBS)
    results = q.push([NewItem(b'{"n": 1}', id="a"), NewItem(b'{"n": 2}', id="b"), b"3"])
    assert [r.added for r in results] == [True, True, True]
    assert [r.added for r in q.push([NewItem(b"again", id="a")])] == [False]  # dedup by id
    assert q.push([b"same", b"same"], id_from_data=True)[1].added is False
    q.push([NewItem(b"urgent", id="front")], front=True)
    leased = q.lease(2, lease_seconds=30)
    assert [item.id for item in leased] == ["front", "a"]
    assert all(item.attempt == 1 and item.session == q.session for item in leased)
    assert leased[1].data == b'{"n": 1}'
    other = WorkQueue(rc, JOBS, session="someone-else")
    assert other.complete([ItemRef("a", "someone-else")])[0].outcome == "conflict"
    outcomes = q.complete([ItemRef("a", q.session), "front", "never-pushed"])
    assert [o.outcome for o in outcomes] == ["completed", "completed", "missing"]
    assert q.complete(["a"])[0].outcome == "missing"  # exactly one caller completes it
    stats = q.stats()
    assert (stats.pending, stats.processing, stats.dead) == (3, 0, 0)
    assert stats.counters["pushed"] == 5 and stats.counters["completed"] == 2
    # every key of the queue sits on the node that serves the tag, and on no other
    home = cluster.node_of(JOBS)
    assert keys_on(nodes[home]) and all("{jobs}" in k for k in keys_on(nodes[home]))
    assert all(not keys_on(n) for i, n in enumerate(nodes) if i != home)


def test_push_in_one_script_call_per_round_trip(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    seen = [len(b) for b in q.push_batches(b"%d" % i for i in range(BATCH))]
    assert seen == [BATCH]  # one chunk: one plain script call, no pipeline
    assert q.stats().pending == BATCH


@pytest.mark.parametrize("how", ["push", "push_batches"])
def test_push_more_than_one_batch(rc: Any, how: str) -> None:
    q = WorkQueue(rc, JOBS)
    if how == "push":
        n = 2 * BATCH + 5
        assert len(q.push(b"%d" % i for i in range(n))) == n
    else:
        n = 25
        batches = q.push_batches((b"%d" % i for i in range(n)), batch_size=10)
        assert [len(b) for b in batches] == [10, 10, 5]
    assert q.stats().pending == n


def test_lease_waits_on_a_cluster_and_expired_items_die(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    started = time.monotonic()
    assert q.lease(wait=0.3) == []  # blocks (BLMOVE P:queue P:queue) on the tag's node
    assert 0.25 <= time.monotonic() - started < 3
    q.push([NewItem(b"x", id="late")], expire=0.05)
    q.push([NewItem(b"later", id="later")], delay=60)
    time.sleep(0.1)
    assert q.lease() == []
    stats = q.stats()
    assert (stats.dead, stats.delayed, stats.due) == (1, 1, 0)
    assert q.peek("dead")[0].dead_reason == "expired"
    assert q.peek("delayed")[0].id == "later"


def test_fail_retry_dead_and_extend(rc: Any) -> None:
    q = WorkQueue(rc, JOBS, QueueOptions(max_attempts=2))
    q.push([NewItem(b"1", id="a"), NewItem(b"2", id="b"), NewItem(b"3", id="c")])
    assert {i.id for i in q.lease(3, lease_seconds=30)} == {"a", "b", "c"}
    extended = q.extend(["c", "nope"], lease_seconds=120)
    assert [e.outcome for e in extended] == ["extended", "missing"]
    assert extended[0].lease_expires_at is not None
    assert extended[0].lease_expires_at > time.time() + 100
    assert q.peek("processing", count=3)[0].lease_session == q.session
    failed = q.fail(["a"], error="smtp timeout", retry_in=0)
    assert failed[0].outcome == "retried" and failed[0].retry_at is not None
    assert q.fail(["b"], error="poison", dead=True)[0].outcome == "dead"
    q.clean(grace_seconds=0)  # promotes "a" if the retry went through the delayed set
    again = q.lease(lease_seconds=30)
    assert [(i.id, i.attempt) for i in again] == [("a", 2)]
    assert q.fail(["a"], error="still failing", retry_in=0)[0].outcome == "dead"  # 2 of 2
    dead = {item.id: item for item in q.peek("dead")}
    assert set(dead) == {"a", "b"}
    assert dead["b"].dead_reason == "failed" and "poison" in (dead["b"].error or "")
    assert dead["a"].dead_reason == "max_attempts"
    stats = q.stats()
    assert (stats.processing, stats.leased, stats.dead) == (1, 1, 2)


def test_clean_light_recovers_an_abandoned_lease(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    q.push([NewItem(b"1", id="a")])
    assert q.lease(lease_seconds=0.05)
    time.sleep(0.15)  # the worker "died": its lease key expired
    stats = q.stats()
    assert (stats.processing, stats.abandoned) == (1, 1)
    report = q.clean(grace_seconds=0)
    assert report.recovered == 1
    assert q.peek()[0].id == "a" and q.stats().processing == 0


def test_clean_deep_finds_strays_of_its_own_queue_only(rc: Any, nodes: list[redis.Redis],
                                                       cluster: Cluster) -> None:
    q = WorkQueue(rc, JOBS)
    mail = WorkQueue(rc, MAIL)  # another tag, on another node: its items are not ours
    q.push([NewItem(b"1", id="listed")])
    mail.push([NewItem(b"m", id=f"m{i}") for i in range(5)])
    rc.set(f"{JOBS}:item:stray", b'"lost"')  # data with no list entry (same slot: the tag)
    rc.set(f"{MAIL}:item:stray", b'"theirs"')
    assert q.clean(deep=True, grace_seconds=0, dry_run=True).recovered == 1
    report = q.clean(deep=True, grace_seconds=0)
    assert (report.scanned, report.recovered) == (2, 1)
    assert {p.id for p in q.peek()} == {"listed", "stray"}
    assert mail.stats().pending == 5  # untouched
    assert nodes[cluster.node_of(MAIL)].exists(f"{MAIL}:item:stray") == 1


def _kill(q: WorkQueue, *ids: str) -> None:
    q.push([NewItem(b'"%s"' % i.encode(), id=i) for i in ids])
    leased = q.lease(len(ids), lease_seconds=30)
    assert q.fail([i.id for i in leased], dead=True)


def test_requeue_dead_in_place(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    _kill(q, "a", "b", "c", "d")
    assert q.requeue_dead(["a", "zz"]).requeued == 1
    assert q.requeue_dead(limit=1).requeued == 1
    assert q.requeue_dead(older_than=3600).requeued == 0  # reads the server's TIME
    report = q.requeue_dead()
    assert report.requeued == 2
    stats = q.stats()
    assert (stats.pending, stats.dead) == (4, 0)


def test_filtered_requeue_purge_and_the_dedup_window(rc: Any) -> None:
    """Issue 13 on a cluster: the filtered scan (peek pages with a cursor, requeue by ids,
    purge_ids) and the de-dup window (P:dedup, in the queue's slot) work on a tagged queue."""
    from rq_cli.core.filtering import FilterReport, ItemFilter, scan

    q = WorkQueue(rc, JOBS)
    q.push([NewItem(json.dumps({"k": k}).encode(), f"i{k}") for k in range(6)])
    q.lease(6)
    q.fail([f"i{k}" for k in range(6)], dead=True)
    report = FilterReport(JOBS, "dead", "requeue")
    moved = [i for s in scan(q, "dead", ItemFilter(match="k > `2`"), report, action="requeue",
                             now_ms=None) for i in s.ids]
    assert sorted(moved) == ["i3", "i4", "i5"] and q.stats().dead == 3
    report = FilterReport(JOBS, "pending", "purge")
    purged = [i for s in scan(q, "pending", ItemFilter(match="k == `4`"), report,
                              action="purge") for i in s.ids]
    assert purged == ["i4"] and q.stats().pending == 2
    q.set_dedup_window(60)
    got = q.lease(2)
    q.complete(got)
    assert all(p.reason == "recently completed" for p in q.push(
        [NewItem(b"{}", item.id) for item in got]))
    assert rc.keyslot(q.keys.dedup) == rc.keyslot(q.keys.queue)
    assert q.dedup_ids()[1] == 2


def test_error_groups_and_history(rc: Any) -> None:
    """Issue 32 on a cluster: error groups read with HSCAN and, for --match, the payloads
    with one MGET (all in the queue's slot); the history's snapshots and reads."""
    from rq_cli.core.errgroups import group_errors
    from rq_cli.core.filtering import ItemFilter
    from rq_cli.core.history import read_history, snapshot

    q = WorkQueue(rc, JOBS)
    q.push([NewItem(json.dumps({"k": k}).encode(), f"e{k}") for k in range(4)])
    q.lease(4)
    q.fail(["e0", "e1", "e2"], error="refused by 10.0.0.1:6379", dead=True)
    q.fail(["e3"], error="refused by 10.0.0.2:6379", retry_in=600)
    groups = group_errors(q, ItemFilter(match="k >= `1`")).groups
    assert [(g.state, g.count) for g in groups] == [("dead", 2), ("retrying", 1)]
    assert groups[0].key == groups[1].key
    snapshot(q)  # (the push took this minute's already: nothing more)
    assert rc.keyslot(q.keys.history) == rc.keyslot(q.keys.queue)
    assert sum(b.deltas["pushed"] for b in read_history(q, 600)) == 4  # since the push


def test_requeue_dead_to_a_queue_with_the_same_tag(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    retry = WorkQueue(rc, JOBS_RETRY)
    _kill(q, "a", "b")
    report = q.requeue_dead(to=retry, dry_run=True)
    assert report.requeued == 2 and q.stats().dead == 2
    assert q.requeue_dead(to=retry).requeued == 2
    assert q.stats().dead == 0
    assert sorted(i.id for i in retry.lease(5)) == ["a", "b"]


def test_requeue_dead_refuses_a_queue_with_another_tag(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    _kill(q, "a")
    with pytest.raises(ClusterError, match="same hash tag"):
        q.requeue_dead(to=WorkQueue(rc, MAIL))
    assert q.stats().dead == 1  # nothing moved


def test_requeue_dead_refuses_a_queue_on_another_client(rc: Any, cluster: Cluster) -> None:
    q = WorkQueue(rc, JOBS)
    elsewhere = cluster.client()
    try:
        with pytest.raises(UsageError, match="same server"):
            q.requeue_dead(to=WorkQueue(elsewhere, JOBS_RETRY))
    finally:
        elsewhere.close()


def test_purge_each_state_and_all(rc: Any, nodes: list[redis.Redis]) -> None:
    q = WorkQueue(rc, JOBS)
    mail = WorkQueue(rc, MAIL)
    mail.push([b"keep me"])
    q.push([NewItem(b"%d" % i, id=f"p{i}") for i in range(6)])
    q.lease(2, lease_seconds=30)
    q.push([NewItem(b"d", id="later")], delay=60)
    _kill(q, "x")
    rc.set(f"{JOBS}:item:stray", b"s")
    dry = q.purge("all", dry_run=True)
    assert (dry.pending, dry.processing, dry.delayed, dry.dead, dry.strays) == (4, 2, 1, 1, 1)
    assert q.stats().pending == 4  # a dry run changes nothing
    assert q.purge("delayed").delayed == 1
    report = q.purge("all")
    assert (report.pending, report.processing, report.dead, report.strays) == (4, 2, 1, 1)
    assert not any("{jobs}" in k for k in all_keys(nodes))  # every key of the queue is gone
    assert mail.stats().pending == 1  # the other queue is untouched


def test_fair_queue_tenant_keys_share_the_slot(rc: Any, nodes: list[redis.Redis]) -> None:
    """Fair queues: tenant sub-queues and the ring live in the queue's slot; leases take
    turns, fail returns an item to its tenant, purge empties the sub-queues."""
    q = WorkQueue(rc, JOBS, QueueOptions(tenant_weights=(("big", 2),)))
    q.push([b"b%d" % i for i in range(4)], tenant="big")
    q.push([NewItem(b"s0", tenant="small"), NewItem(b"d0")])
    slot = rc.keyslot(q.keys.queue)
    for key in (q.keys.tenant_queue("big"), q.keys.tenants, q.keys.fair, q.keys.item_tenant):
        assert rc.keyslot(key) == slot
    holders = [keys_on(n) for n in nodes if any("{jobs}" in k for k in keys_on(n))]
    assert len(holders) == 1  # every key of the queue, the sub-queues too, on one node
    assert {f"{JOBS}:tenant:big", f"{JOBS}:tenant:small", f"{JOBS}:tenants"} <= holders[0]
    leased = q.lease(5, lease_seconds=30)
    got = [i.data for i in leased]
    assert got == [b"d0", b"b0", b"b1", b"s0", b"b2"]  # the default tenant's turn first
    b0 = leased[1]
    assert q.fail([b0.id], retry_in=0)[0].outcome == "retried"
    assert [p.data for p in q.peek(tenant="big")] == [b"b3", b"b0"]
    stats = q.stats(by_tenant=True)
    assert (stats.pending, stats.tenants, stats.by_tenant) == (2, 1, {"": 0, "big": 2})
    assert q.purge().pending == 2
    assert not any(":tenant:" in k or k.endswith(":tenants") for k in all_keys(nodes))


def test_stats_peek_and_pause(rc: Any) -> None:
    q = WorkQueue(rc, JOBS)
    q.push([NewItem(b'{"n": %d}' % i, id=f"i{i}") for i in range(5)])
    assert [p.id for p in q.peek(count=2)] == ["i0", "i1"]
    assert [p.id for p in q.peek(count=2, from_end="tail")] == ["i4", "i3"]
    assert q.peek(offset=4)[0].data == b'{"n": 4}'
    q.lease(lease_seconds=30)
    held = q.peek("processing")
    assert [(p.id, p.lease_session) for p in held] == [("i0", q.session)]
    stats = q.stats()
    assert (stats.queue, stats.pending, stats.processing, stats.leased) == (JOBS, 4, 1, 1)
    assert stats.oldest_pending_age_s is not None and not stats.paused
    q.pause()
    assert q.is_paused() and q.stats().paused and q.lease() == []
    q.resume()
    assert [i.id for i in q.lease()] == ["i1"]
    (holder,) = q.holders()  # holders and item read the queue's slot only
    assert (holder.session, holder.items, holder.ids) == (q.session, 2, ["i0", "i1"])
    item = q.item("i1")
    assert item is not None and (item.state, item.lease_session) == ("processing", q.session)
    assert q.item("i4").state == "pending" and q.item("nope") is None


def test_two_tags_on_different_nodes_both_work(rc: Any, nodes: list[redis.Redis],
                                               cluster: Cluster) -> None:
    queues = {p: WorkQueue(rc, p) for p in (JOBS, MAIL, BILLING)}
    homes = {p: cluster.node_of(p) for p in queues}
    assert len(set(homes.values())) == 3
    for prefix, q in queues.items():
        assert rc.get_node_from_key(q.keys.queue).port == cluster.nodes[homes[prefix]].port
        q.push([NewItem(prefix.encode(), id="one"), NewItem(b"2", id="two")])
    for prefix, q in queues.items():
        leased = q.lease(lease_seconds=30)
        assert [(i.id, i.data) for i in leased] == [("one", prefix.encode())]
        assert q.complete([ItemRef("one", q.session)])[0].outcome == "completed"
        assert q.stats().pending == 1
        tag = prefix[prefix.index("{"):]
        for i, node in enumerate(nodes):
            has = any(tag in k for k in keys_on(node))
            assert has == (i == homes[prefix]), (prefix, i)
    # several queues at once: strict order takes from the first non-empty one
    first = lease_many([queues[MAIL], queues[BILLING]], 1, lease_seconds=30)
    assert [(i.queue, i.id) for i in first] == [(MAIL, "two")]
    assert lease_many([queues[MAIL], queues[BILLING]], 1, order="fair")[0].queue == BILLING


# -- the command line ---------------------------------------------------------------------------

Cli = Callable[..., Run]


@pytest.fixture
def cli(cluster: Cluster, nodes: list[redis.Redis], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Cli:
    """rq-cli in process (Typer's CliRunner) with ``--url redis+cluster://...``, no config."""
    monkeypatch.chdir(tmp_path)

    def cli(*args: str, **kwargs: Any) -> Run:
        return run_cli(args, url=cluster.url, home=tmp_path, **kwargs)

    return cli


def test_cli_end_to_end(cli: Cli, cluster: Cluster, nodes: list[redis.Redis]) -> None:
    run = cli("push", JOBS, '{"n": 1}', '{"n": 2}', '{"n": 3}')
    assert run.exit_code == 0, run
    assert [row["added"] for row in run.json] == [True, True, True]
    run = cli("push", JOBS, "-", input='{"n": 4}\n{"n": 5}\n')
    assert run.exit_code == 0 and len(run.json) == 2, run
    assert cli("push", JOBS, "--id", "later", "--delay", "60", "{}").exit_code == 0

    peek = cli("peek", JOBS, "-n", "2")
    assert peek.exit_code == 0 and [row["data"] for row in peek.json] == [{"n": 1}, {"n": 2}]

    lease = cli("lease", JOBS, "--count", "3", "--lease", "60")
    assert lease.exit_code == 0, lease
    rows = lease.json
    assert [row["data"] for row in rows] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert all(row["queue"] == JOBS and row["attempt"] == 1 for row in rows)
    first, second, third = (row["id"] for row in rows)

    run = cli("complete", JOBS, "-", input=json.dumps(rows[0]) + "\n")  # lease's JSON lines
    assert run.exit_code == 0 and run.one["outcome"] == "completed", run
    run = cli("extend", JOBS, third, "--lease", "120")
    assert run.exit_code == 0 and run.one["outcome"] == "extended", run
    run = cli("fail", JOBS, second, "--dead", "--error", "boom")
    assert run.exit_code == 0 and run.one["outcome"] == "dead", run
    assert cli("complete", JOBS, first).exit_code == ExitCode.NOTHING  # already done

    dead = cli("peek", JOBS, "--state", "dead").one
    assert dead["id"] == second and dead["error"] == "boom"
    run = cli("requeue-dead", JOBS, "--all", "--to", JOBS_RETRY)
    assert run.exit_code == 0 and run.one["requeued"] == 1, run
    assert cli("lease", JOBS_RETRY).one["id"] == second

    run = cli("clean", JOBS, "--deep", "--grace", "0")
    assert run.exit_code == 0, run
    stats = cli("stats", JOBS).one
    assert (stats["pending"], stats["processing"], stats["delayed"], stats["dead"]) == \
        (2, 1, 1, 0), stats

    run = cli("stats", "--discover")
    assert run.exit_code == 0, run
    assert {row["queue"] for row in run.json} >= {JOBS, JOBS_RETRY}

    run = cli("purge", JOBS, "--state", "all", "--yes")
    assert run.exit_code == 0, run
    assert not any(k.startswith(JOBS + ":") for k in all_keys(nodes))


def test_cli_doctor_checks_every_primary(cli: Cli, cluster: Cluster) -> None:
    assert cli("push", JOBS, "{}").exit_code == 0  # (a queue never used is exit 6)
    run = cli("doctor", JOBS)
    assert run.exit_code == 5, run  # the nodes keep nothing on disk
    rows = run.json
    ports = {int(row["server"].rsplit(":", 1)[1].rstrip(")")) for row in rows
             if row["queue"] is None}
    assert ports == {node.port for node in cluster.nodes}
    persistence = [row for row in rows if row["check"] == "persistence"]
    assert len(persistence) == 3 and {row["status"] for row in persistence} == {"fail"}
    assert all("EVALSHA" in row["detail"] for row in rows if row["check"] == "functions")
    acl = [row for row in rows if row["check"] == "acl"]
    assert [(row["queue"], row["status"]) for row in acl] == [(JOBS, "ok")]


def test_cli_refuses_an_untagged_prefix(cli: Cli, nodes: list[redis.Redis]) -> None:
    for args in (("push", "jobs", "{}"), ("lease", "jobs"), ("stats", "app:jobs"),
                 ("purge", "jobs", "--yes")):
        run = cli(*args)
        assert run.exit_code == ExitCode.UNAVAILABLE == 69, run
        assert run.stdout == ""
        assert "hash tag" in run.stderr and "{" in run.stderr, run
        assert run.stderr.startswith("rq-cli: ") and run.stderr.count("\n") == 1
        assert "Traceback" not in run.stderr
    assert all_keys(nodes) == set()  # nothing was written anywhere


def test_cli_requeue_dead_to_another_tag_is_refused(cli: Cli) -> None:
    cli("push", JOBS, "--id", "a", "{}")
    cli("lease", JOBS)
    assert cli("fail", JOBS, "a", "--dead").exit_code == 0
    run = cli("requeue-dead", JOBS, "--all", "--to", MAIL)
    assert run.exit_code == ExitCode.UNAVAILABLE, run
    assert "same hash tag" in run.stderr
    assert cli("stats", JOBS).one["dead"] == 1


def test_cli_push_many_lines_from_stdin(cli: Cli) -> None:
    n = BATCH * 2 + 1
    run = cli("push", JOBS, "-", "--summary", input="".join(f"{i}\n" for i in range(n)))
    assert run.exit_code == 0, run
    assert cli("stats", JOBS).one["pending"] == n


def _rq_cli_command() -> list[str]:
    exe = shutil.which("rq-cli", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "rq_cli"]


def test_cli_subprocess(cluster: Cluster, nodes: list[redis.Redis], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RQ_CLI_") and k != "REDIS_URL"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")

    def rq(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([*_rq_cli_command(), "--url", cluster.url, *args], input=stdin,
                              capture_output=True, text=True, timeout=30, cwd=tmp_path,
                              env=env, check=False)

    run = rq("push", JOBS, '{"job": 1}', '{"job": 2}')
    assert run.returncode == 0, run
    assert len(run.stdout.splitlines()) == 2
    run = rq("lease", JOBS)
    assert run.returncode == 0, run
    item = json.loads(run.stdout)
    assert item["data"] == {"job": 1}
    run = rq("complete", JOBS, "-", stdin=run.stdout)
    assert run.returncode == 0 and json.loads(run.stdout)["outcome"] == "completed", run
    stats = json.loads(rq("stats", JOBS).stdout)
    assert (stats["pending"], stats["processing"]) == (1, 0)

    run = rq("push", "jobs", "{}")
    assert run.returncode == 69, run
    assert run.stdout == ""
    assert "hash tag" in run.stderr and "'{jobs}'" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
