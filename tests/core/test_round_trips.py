"""Round trips per operation, measured on a real server (not by reading the code).

Three independent measurements of one operation run on its own client connection:

- client side: how many times the connection wrote to the socket. redis-py writes a command,
  or a whole pipeline, in one ``send_packed_command`` and then waits for the replies, so each
  write is one round trip;
- server side, MONITOR: the top-level commands that connection sent (``tcp``), and the
  commands run inside scripts (``lua``);
- server side, ``INFO commandstats`` deltas (EVALSHA, EVAL, SCRIPT) and ``INFO stats``
  ``total_commands_processed`` (minus the measurement's own commands, calibrated on an empty
  operation), which must equal what MONITOR saw.

redis-py's ``Script`` falls back to SCRIPT LOAD + EVALSHA once when the server does not have
the script cached, so every measurement warms the operation up first.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem

PREFIX = "rt"


@dataclass
class Trips:
    """What one operation cost."""

    writes: int = 0  # client socket writes = round trips
    commands: list[str] = field(default_factory=list)  # top-level commands (MONITOR, tcp)
    nested: int = 0  # commands run inside scripts (MONITOR, lua)
    evalsha: int = 0  # INFO commandstats deltas
    fcall: int = 0
    eval: int = 0
    script: int = 0  # SCRIPT LOAD / EXISTS / ...
    processed: int = 0  # INFO stats total_commands_processed delta, calibrated

    @property
    def names(self) -> list[str]:
        return [c.split(" ", 1)[0].upper() for c in self.commands]


def _counting_connection() -> Any:
    class CountingConnection(redis.Connection):
        writes = 0

        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            type(self).writes += 1
            super().send_packed_command(command, check_health)

    return CountingConnection


class Meter:
    """Measures operations run on ``self.client`` (one connection) from a second client."""

    def __init__(self, server_port: int) -> None:
        self.conn_class = _counting_connection()
        pool = redis.ConnectionPool(port=server_port, connection_class=self.conn_class,
                                    socket_timeout=30)
        self.client = redis.Redis(connection_pool=pool)
        self.admin = redis.Redis(port=server_port, socket_timeout=30)
        # The operation's connection, as MONITOR shows it (also opens it: HELLO, SETINFO).
        self.port = str(self.client.client_info()["addr"]).rsplit(":", 1)[1]
        self.baseline = 0
        for _ in range(2):  # the second run has every connection of the meter open already
            self.baseline = self._raw(lambda: None).processed

    def _stats(self) -> tuple[int, dict[str, int]]:
        total = int(self.admin.info("stats")["total_commands_processed"])
        calls = {k: int(v["calls"]) for k, v in self.admin.info("commandstats").items()}
        return total, calls

    def _raw(self, op: Callable[[], Any]) -> Trips:
        marker = f"rq-cli-meter-{uuid.uuid4().hex}"
        total0, calls0 = self._stats()
        trips = Trips()
        with self.admin.monitor() as mon:
            writes0 = self.conn_class.writes
            op()
            trips.writes = self.conn_class.writes - writes0
            self.admin.echo(marker)
            while True:
                cmd = mon.next_command()
                if cmd["client_type"] == "lua":
                    trips.nested += 1
                elif marker in cmd["command"]:
                    break
                elif cmd["client_port"] == self.port:
                    trips.commands.append(cmd["command"])
        total1, calls1 = self._stats()
        delta = {k: calls1.get(k, 0) - calls0.get(k, 0) for k in calls1}
        trips.evalsha = delta.get("cmdstat_evalsha", 0)
        trips.eval = delta.get("cmdstat_eval", 0)
        trips.fcall = delta.get("cmdstat_fcall", 0)
        trips.script = sum(v for k, v in delta.items() if k.startswith("cmdstat_script"))
        trips.processed = total1 - total0
        return trips

    def measure(self, op: Callable[[], Any]) -> Trips:
        trips = self._raw(op)
        trips.processed -= self.baseline
        # The two server-side views agree: everything the server ran is what MONITOR saw.
        assert trips.processed == len(trips.commands) + trips.nested, trips
        return trips

    def close(self) -> None:
        self.client.close()
        self.client.connection_pool.disconnect()
        self.admin.close()


@pytest.fixture
def meter(server: Any, r: redis.Redis) -> Any:
    m = Meter(server.port)
    yield m
    m.close()


def has_functions(client: redis.Redis) -> bool:
    """Redis >= 7 and Valkey (which reports Redis 7.2 here) have FUNCTION and FCALL."""
    return int(str(client.info("server")["redis_version"]).split(".")[0]) >= 7


def one_round_trip(t: Trips) -> None:
    """One write, one script call (EVALSHA, or FCALL for the hot scripts on a server with
    Functions: rq_cli/core/scripting/calling.py) and nothing else on the wire; the work ran inside
    it."""
    assert t.writes == 1, t
    assert t.names in (["EVALSHA"], ["FCALL"]), t
    assert (t.evalsha + t.fcall, t.eval, t.script) == (1, 0, 0), t
    assert t.nested > 0, t


def test_lease_is_one_round_trip(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([f"job {i}" for i in range(200)])
    q.complete([i.id for i in q.lease()])  # warm up: scripts cached, connection open
    t = meter.measure(lambda: q.lease())
    one_round_trip(t)
    t = meter.measure(lambda: q.lease(count=50))
    one_round_trip(t)
    print(f"lease: {t.writes} round trip, {t.names}")


def test_lease_of_an_empty_queue_is_one_round_trip(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.lease()
    t = meter.measure(lambda: q.lease())
    one_round_trip(t)


def test_complete_is_one_round_trip(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([f"job {i}" for i in range(100)])
    items = q.lease(count=100)
    q.complete([items.pop().id])  # warm up
    one = items.pop()
    outcome: list[Any] = []
    t = meter.measure(lambda: outcome.extend(q.complete([ItemRef(one.id, one.session)])))
    assert [o.outcome for o in outcome] == ["completed"]
    one_round_trip(t)
    # 50 items in one call: still one round trip
    batch = [ItemRef(i.id, i.session) for i in items[:50]]
    outcome.clear()
    t = meter.measure(lambda: outcome.extend(q.complete(batch)))
    assert [o.outcome for o in outcome] == ["completed"] * 50
    one_round_trip(t)


def test_fail_extend_and_clean_are_one_round_trip_each(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([f"job {i}" for i in range(10)])
    a, b, c, d = q.lease(count=4)
    q.fail([a.id], retry_in=0)
    q.extend([b.id])
    q.clean()  # warm up all three
    one_round_trip(meter.measure(lambda: q.fail([c.id], retry_in=0)))
    one_round_trip(meter.measure(lambda: q.extend([d.id])))
    one_round_trip(meter.measure(lambda: q.clean()))


def test_push_of_one_batch_is_one_round_trip(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([b"warm up"])
    t = meter.measure(lambda: q.push([NewItem(b"x" * i) for i in range(500)]))
    one_round_trip(t)
    assert meter.client.llen(f"{PREFIX}:queue") == 501


def test_push_of_5000_items_is_pipelined(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([b"warm up"])
    results: list[Any] = []
    t = meter.measure(lambda: results.extend(q.push(f"item {i}" for i in range(5000))))
    assert len(results) == 5000 and all(p.added for p in results)
    assert meter.client.llen(f"{PREFIX}:queue") == 5001
    print(f"push of 5000 items: {t.writes} round trips, {t.evalsha} EVALSHA, "
          f"top-level commands {sorted(set(t.names))}, {t.nested} commands inside scripts")
    # a handful of round trips, not thousands: the server's clock and a probe of MULTI, then
    # one transaction per 1,000 items (core/pushing/bulk_tx.py Transactions), three in flight
    assert t.writes <= 6, t
    assert t.evalsha == 5 and t.eval == 0, t
    assert t.names.count("EXEC") == 6 and t.names.count("MSET") == 5, t
    assert len(t.commands) <= 40, t
    assert set(t.names) <= {"TIME", "MULTI", "EXEC", "SCRIPT", "MSET", "HSET", "LPUSH",
                            "EVALSHA"}, t
    # the data, stamps and line entries of a batch by plain commands: push_commit.lua runs
    # only its checks and counting (no command per item)
    assert t.nested <= 100, t
    stored = meter.client.mget([f"{PREFIX}:item:{p.id}" for p in results[::997]])
    assert stored == [f"item {i}".encode() for i in range(0, 5000, 997)]


def _stats_cost(meter: Meter, q: WorkQueue) -> Trips:
    q.stats()  # warm up
    return meter.measure(lambda: q.stats())


def test_stats_is_one_round_trip_whatever_the_queue_size(meter: Meter) -> None:
    q = WorkQueue(meter.client, PREFIX)
    q.push([b"a", b"b"])
    q.lease()
    small = _stats_cost(meter, q)
    one_round_trip(small)

    q.push(f"item {i}" for i in range(20_000))
    q.push([f"later {i}" for i in range(300)], delay=3600)
    leased = q.lease(count=2000)
    q.fail([i.id for i in leased[:100]], dead=True)
    s = q.stats()
    assert (s.pending, s.processing, s.delayed, s.dead) == (20_002 - 2001, 1901, 300, 100)
    big = _stats_cost(meter, q)
    one_round_trip(big)
    # and the work inside the script does not grow with the queue either
    assert big.nested <= small.nested + 2, (small, big)
    print(f"stats: {big.writes} round trip, {big.nested} commands inside the script "
          f"on a queue of {s.pending} pending / {s.processing} processing")


def test_cold_script_cache_costs_one_extra_load_once(meter: Meter) -> None:
    """Why the other tests warm up: on a server without the script, redis-py sends EVALSHA,
    gets NOSCRIPT, sends SCRIPT LOAD and EVALSHA again -- once per script. With Functions,
    a hot script's first FCALL finds no function, and the library is loaded, once."""
    q = WorkQueue(meter.client, PREFIX)
    q.push([b"a", b"b"])
    q.stats()
    meter.admin.script_flush()
    cold = meter.measure(lambda: q.stats())
    assert cold.writes == 3 and cold.names == ["EVALSHA", "SCRIPT", "EVALSHA"], cold
    one_round_trip(meter.measure(lambda: q.stats()))
    if has_functions(meter.admin):
        meter.admin.function_flush()
        cold = meter.measure(lambda: q.lease())
        assert cold.writes == 3 and cold.names == ["FCALL", "FUNCTION", "FCALL"], cold
        assert meter.admin.function_list()[0][1].decode().startswith("rqcli_")
        one_round_trip(meter.measure(lambda: q.lease()))
    else:  # (the first FCALL was refused by a server without Functions; EVALSHA since)
        q.lease()
        assert q.caller.functions is False
        one_round_trip(meter.measure(lambda: q.lease()))
