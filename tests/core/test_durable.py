"""Durability (``wait_replicas``, ``wait_fsync``) on real servers: a primary and a replica.

A confirmed write costs one round trip (the script and WAIT in one pipeline); bulk push waits
once per batch; a write the replicas do not confirm in time raises Unconfirmed carrying what
was made (the ids, the outcomes), and is never retried; a primary that lost its replica (as a
demoted one has) confirms nothing; WAITAOF where the server lacks it is a config error before
anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from servers import ServerProcess
from waiting import wait_for

from rq_cli.core.operations.durable import Confirmer
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions
from rq_cli.errors import ConfigError, ExitCode, Unconfirmed
from rq_cli.settings.config import parse_text

ON = QueueOptions(wait_replicas=1, wait_timeout=2.0)
SHORT = QueueOptions(wait_replicas=1, wait_timeout=0.1)


@pytest.fixture
def pair(make_server) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    primary = make_server(repl_diskless_sync_delay=0)
    replica = make_server(extra_args=("--replicaof", "127.0.0.1", str(primary.port)))
    wait_for(lambda: replica.client().info("replication").get("master_link_status") == "up")
    # the replica acknowledges the primary's offset (its first ACK can take a moment on a
    # loaded machine, longer than the 0.1 s of SHORT)
    assert primary.client().execute_command("WAIT", 1, 10_000) == 1
    yield primary, replica


class Counting(redis.Connection):
    """A connection that counts its writes to the socket: one per round trip."""

    writes = 0

    def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        Counting.writes += 1
        super().send_packed_command(*args, **kwargs)


def counted(server: ServerProcess) -> Any:
    return redis.Redis(connection_pool=redis.ConnectionPool(
        host="127.0.0.1", port=server.port, connection_class=Counting))


def test_confirmed_writes_reach_the_replica_in_one_round_trip_each(pair) -> None:
    primary, replica = pair
    q = WorkQueue(counted(primary), "q", ON)
    q.push([NewItem(b"1", "warm")])  # (loads the scripts)
    q.complete([q.lease(1)[0].id])
    Counting.writes = 0
    q.push([NewItem(b"{}", "a")])
    assert Counting.writes == 1
    assert replica.client().exists("q:item:a")  # acknowledged: the replica has it already
    (item,) = q.lease(1)
    Counting.writes = 0
    (out,) = q.complete([item.id])
    assert (out.outcome, Counting.writes) == ("completed", 1)
    assert not replica.client().exists("q:item:a")


def test_bulk_push_waits_once_per_batch(pair) -> None:
    primary, replica = pair
    q = WorkQueue(primary.client(), "q", ON)
    before = int(primary.client().info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
    batches = list(q.push_batches((b"%d" % n for n in range(1000)), batch_size=100))
    assert [len(b) for b in batches] == [100] * 10
    waits = int(primary.client().info("commandstats")["cmdstat_wait"]["calls"]) - before
    assert waits == 10
    assert replica.client().llen("q:queue") == 1000


def test_without_a_replica_a_push_is_made_not_confirmed_and_not_retried(make_server) -> None:
    server = make_server()
    q = WorkQueue(server.client(), "q", SHORT)
    with pytest.raises(Unconfirmed) as caught:
        q.push([NewItem(b"{}", "x"), NewItem(b"{}", "y")])
    assert caught.value.exit_code == ExitCode.UNCONFIRMED == 8
    assert caught.value.ids == ["x", "y"]
    assert "0 of 1 replicas confirmed it within 0.1 s" in str(caught.value)
    assert server.client().llen("q:queue") == 2  # made once: not retried
    with pytest.raises(Unconfirmed) as bulk:
        list(q.push_batches((b"%d" % n for n in range(3000)), batch_size=1000))
    assert len(bulk.value.ids) == 3000  # every batch in flight named; none yielded
    items = WorkQueue(server.client(), "q").lease(2)
    with pytest.raises(Unconfirmed) as done:
        q.complete([i.id for i in items])
    assert [o.outcome for o in done.value.result] == ["completed", "completed"]
    assert done.value.ids == [i.id for i in items]


def test_a_primary_that_lost_its_replica_confirms_nothing(pair) -> None:
    """As a demoted primary: its replica was promoted (REPLICAOF NO ONE), so WAIT says 0 and
    a write there is never acknowledged."""
    primary, replica = pair
    q = WorkQueue(primary.client(), "q", SHORT)
    # (the scripts loaded by a push not waited for: a first confirmed write within SHORT's
    # 0.1 s failed once on a loaded machine)
    WorkQueue(primary.client(), "q").push([b"1"])
    replica.client().replicaof("NO", "ONE")
    wait_for(lambda: primary.client().info("replication")["connected_slaves"] == 0)
    with pytest.raises(Unconfirmed, match="0 of 1 replicas"):
        q.push([b"2"])


def test_wait_fsync_without_waitaof_is_a_config_error_before_any_write(make_server) -> None:
    server = make_server()
    q = WorkQueue(server.client(), "q", QueueOptions(wait_fsync=True))
    if server.version.kind == "valkey" or server.version.version_tuple >= (7, 2):
        pytest.skip("this server has WAITAOF")
    with pytest.raises(ConfigError, match="WAITAOF"):
        q.push([b"1"])
    assert server.client().dbsize() == 0


def test_wait_commands() -> None:
    assert Confirmer(None, ON).commands() == [("WAIT", 1, 2000)]
    # (wait_fsync: a WAIT first, at most WAITAOF_NUDGE, hurries the replicas' disk report)
    assert Confirmer(None, QueueOptions(wait_replicas=2, wait_fsync=True)).commands() == [
        ("WAIT", 2, 500), ("WAITAOF", 1, 2, 1000)]
    assert Confirmer(None, QueueOptions(wait_fsync=True, wait_timeout=0.2)).commands() == [
        ("WAITAOF", 1, 0, 200)]
    assert not QueueOptions().durable and QueueOptions(wait_fsync=True).durable


@pytest.mark.parametrize(("text", "message"), [
    ("[defaults]\nwait_replica = 1", "did you mean 'wait_replicas'?"),
    ("[defaults]\nwait_replicas = -1", "must be 0 (off) or more"),
    ("[defaults]\nwait_replicas = 1.5", "must be an integer"),
    ("[queues.q]\nwait_timeout = 0", "must be more than 0 and at most 4 seconds"),
    ("[queues.q]\nwait_fsync = 1", "must be a boolean"),
])
def test_config_refuses_bad_durability_keys(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_text(text)


def test_config_durability_per_queue_over_defaults() -> None:
    config = parse_text("[defaults]\nwait_replicas = 1\n[queues.q]\nwait_timeout = 2\n"
                        "wait_fsync = true\n[queues.r]\nwait_replicas = 0\n")
    q, r = config.resolve("q").options, config.resolve("r").options
    assert (q.wait_replicas, q.wait_timeout, q.wait_fsync) == (1, 2.0, True)
    assert (r.wait_replicas, r.durable) == (0, False)


def _aof_pair(make_server: Any) -> tuple[Any, Any]:
    """A primary and its synced replica, both with appendfsync always; skips where the
    server has no WAITAOF (Redis < 7.2)."""
    primary = make_server(appendonly="yes", appendfsync="always", repl_diskless_sync_delay=0)
    if not (primary.version.kind == "valkey" or primary.version.version_tuple >= (7, 2)):
        pytest.skip("this server has no WAITAOF")
    replica = make_server(appendonly="yes", appendfsync="always",
                          extra_args=("--replicaof", "127.0.0.1", str(primary.port)))
    wait_for(lambda: replica.client().info("replication").get("master_link_status") == "up")
    return primary, replica


def test_wait_fsync_with_waitaof_confirms_on_disk(make_server) -> None:
    """Valkey, Redis >= 7.2: WAITAOF 1 1 after each write (primary and replica with
    appendfsync always); a server whose AOF is off is a config error before any write."""
    primary, replica = _aof_pair(make_server)
    q = WorkQueue(primary.client(), "q", QueueOptions(wait_replicas=1, wait_fsync=True,
                                                      wait_timeout=2.0))
    q.push([NewItem(b"{}", "a")])
    list(q.push_batches((b"%d" % n for n in range(300)), batch_size=100))
    assert replica.client().llen("q:queue") == 301
    bare = make_server()
    with pytest.raises(ConfigError, match="append-only file"):
        WorkQueue(bare.client(), "q", QueueOptions(wait_fsync=True)).push([b"1"])
    assert bare.client().dbsize() == 0


def test_wait_fsync_on_a_healthy_pair_confirms_well_within_a_second(make_server) -> None:
    """A replica reports what it has on disk when the primary asks (WAIT and WAITAOF ask),
    but it answers before it writes the write that came with the ask, and otherwise
    reports once a second: WAITAOF alone took about 1 s a write on an idle Valkey pair,
    and exit 8 at a shorter wait_timeout. With the WAIT sent first, each of 15 pushes is
    confirmed within 0.4 s (before: a chance of 0.4 each, as the once-a-second report
    falls in the window; measured a few ms; 0.4 s leaves a loaded machine room)."""
    primary, replica = _aof_pair(make_server)
    assert primary.client().execute_command("WAITAOF", 1, 1, 10_000) == [1, 1]
    q = WorkQueue(primary.client(), "q", QueueOptions(wait_replicas=1, wait_fsync=True,
                                                      wait_timeout=0.4))
    for n in range(15):
        q.push([NewItem(b"{}", f"i{n}")])  # (Unconfirmed, exit 8, when it took longer)
    assert replica.client().llen("q:queue") == 15
