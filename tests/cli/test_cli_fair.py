"""Fair queues (README "Fair queues"): per-tenant sub-queues leased round-robin, weighted.

Against the suite's real server, through the command line (and the core where a crash or a
clock must be staged): turn order, weights from the config, the default tenant and peers,
items going back to their own tenant (fail, clean, deep clean, requeue-dead, delayed),
purge, stats, peek --tenant, waiting for a tenant push, and bad names and weights.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis
from cli_helpers import write_config
from redis_work_queue import Item, KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as PeerQueue

from rq_cli.core.contract.keys import Keys
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions
from rq_cli.errors import UsageError

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

pytestmark = pytest.mark.filterwarnings(  # redis-py deprecates SETEX, which the peer uses
    "ignore:Call to deprecated setex:DeprecationWarning")


def lease_order(cli, n: int, queue: str = "q") -> list[str]:
    """The data of up to n items leased one call at a time (as workers do)."""
    out: list[str] = []
    for _ in range(n):
        rows = cli("lease", queue).json
        if not rows:
            break
        out.append(str(rows[0]["data"]))
    return out


def push(cli, tenant: str | None, *data: str) -> None:
    args = ["push", "q", *data] + (["--tenant", tenant] if tenant else [])
    assert cli(*args).exit_code == 0


def test_round_robin_across_tenants_and_the_default_tenant(cli, r):
    push(cli, "big", *[f'"big{i}"' for i in range(6)])
    push(cli, "a", '"a0"', '"a1"')
    push(cli, None, '"d0"')
    push(cli, "b", '"b0"')
    # the ring starts with the default tenant, then tenants in the order they got work;
    # one item each per turn, and a tenant whose sub-queue empties leaves the ring
    assert lease_order(cli, 20) == ["d0", "big0", "a0", "b0", "big1", "a1", "big2", "big3",
                                    "big4", "big5"]
    assert cli("lease", "q").stdout == ""
    k = Keys("q")
    assert not r.exists(k.tenants) and not r.exists(k.tenant_queue("big"))


def test_a_burst_does_not_starve_the_others(cli, r):
    q = WorkQueue(r, "q")
    q.push([b"%d" % i for i in range(3000)], tenant="burst")
    for t in range(10):
        q.push([b"small"] * 5, tenant=f"t{t}")
    seen = [item for _ in range(60) for item in q.lease(1)]
    assert sum(1 for i in seen if i.data == b"small") == 50  # all 50 within 60 leases
    # with plain FIFO the small tenants would wait behind all 3000
    plain = WorkQueue(r, "plain")
    plain.push([b"%d" % i for i in range(3000)])
    plain.push([b"small"] * 50)
    assert not any(i.data == b"small" for _ in range(60) for i in plain.lease(1))


def test_one_lease_call_takes_turns_too(cli, r):
    q = WorkQueue(r, "q")
    q.push([b"a1", b"a2", b"a3"], tenant="a")
    q.push([b"b1", b"b2", b"b3"], tenant="b")
    assert [i.data for i in q.lease(5)] == [b"a1", b"b1", b"a2", b"b2", b"a3"]


def test_weights_from_the_config(cli, r, tmp_path):
    write_config(tmp_path, "[queues.q]\ntenant_weights = {heavy = 3}\n")
    push(cli, "heavy", *[f'"h{i}"' for i in range(7)])
    push(cli, "light", *[f'"l{i}"' for i in range(3)])
    assert r.hget(Keys("q").tenant_weights, "heavy") == b"3"
    assert lease_order(cli, 10) == ["h0", "h1", "h2", "l0", "h3", "h4", "h5", "l1", "h6", "l2"]


def test_weights_written_by_a_worker_and_a_turn_spans_lease_calls(cli, r):
    WorkQueue(r, "q").push([b"x%d" % i for i in range(4)], tenant="x")
    WorkQueue(r, "q").push([b"y%d" % i for i in range(4)], tenant="y")
    worker = WorkQueue(r, "q", QueueOptions(tenant_weights=(("x", 2),)))
    got = [worker.lease(1)[0].data for _ in range(6)]  # its first lease writes the weight
    assert got == [b"x0", b"x1", b"y0", b"x2", b"x3", b"y1"]


def test_untenanted_use_is_unchanged_and_a_peer_sees_only_the_default_tenant(cli, r):
    push(cli, None, '"1"', '"2"')
    assert lease_order(cli, 3) == ["1", "2"]
    assert not r.exists(Keys("q").tenants, Keys("q").fair, Keys("q").item_tenant)
    push(cli, "t", '"tenant"')
    push(cli, None, '"plain"')
    peer = PeerQueue(KeyPrefix("q"))
    item = peer.lease(r, 30, block=False)
    assert item is not None and item.data() == b'"plain"'  # peers read P:queue only
    assert peer.lease(r, 30, block=False) is None
    assert lease_order(cli, 2) == ["tenant"]


def test_fail_returns_the_item_to_its_tenant(cli, r):
    push(cli, "a", '"job"')
    item = cli("lease", "q").one
    assert cli("fail", "q", item["id"], "--retry-in", "0").exit_code == 0
    rows = cli("peek", "q", "--tenant", "a").json
    assert [row["id"] for row in rows] == [item["id"]]
    # not in the default tenant's line: plain peek shows it after that, with its tenant
    assert [(row["id"], row["tenant"]) for row in cli("peek", "q").json] == [(item["id"], "a")]
    assert r.llen(Keys("q").queue) == 0
    assert cli("stats", "q").one["tenants"] == 1
    # with a delay, it is promoted into its tenant too
    again = cli("lease", "q").one
    assert cli("fail", "q", again["id"], "--retry-in", "0.05").exit_code == 0
    time.sleep(0.1)
    assert cli("lease", "q").one["attempt"] == 3
    assert r.hget(Keys("q").item_tenant, item["id"]) == b"a"


def test_delayed_tenant_items_are_promoted_into_their_tenant(cli, r):
    q = WorkQueue(r, "q")
    q.push([b"later"], tenant="a", delay=0.05)
    assert q.stats().tenants == 0  # delayed: not in line yet
    time.sleep(0.1)
    q.push([b"b1", b"b2"], tenant="b")
    # the lease promotes it into tenant a, which joins the ring after b
    assert [i.data for i in q.lease(3)] == [b"b1", b"later", b"b2"]
    assert r.hget(Keys("q").fair, "pending") == b"0"


def test_clean_returns_abandoned_items_to_their_tenant(cli, r):
    q = WorkQueue(r, "q")
    q.push([NewItem(b"lost", id="lost")], tenant="a")
    q.lease(1, lease_seconds=0.02)
    time.sleep(0.05)
    row = cli("clean", "q", "--grace", "0").one
    assert row["recovered"] == 1
    assert [p.id for p in q.peek(tenant="a")] == ["lost"]
    assert q.stats(by_tenant=True).by_tenant == {"": 0, "a": 1}


def test_deep_clean_sees_tenant_sub_queues_and_requeues_strays_to_their_tenant(cli, r):
    q = WorkQueue(r, "q")
    q.push([NewItem(b"%d" % i, id=f"w{i}") for i in range(5)], tenant="a")
    q.push([NewItem(b"s", id="stray")], tenant="b")
    k = Keys("q")
    r.lrem(k.tenant_queue("b"), 0, "stray")  # staged: its list entry lost, its data kept
    r.lrem(k.tenants, 0, "b")
    r.hincrby(k.fair, "pending", -1)
    row = cli("clean", "q", "--deep", "--grace", "0").one
    assert row["recovered"] == 1  # the stray only: items waiting in a sub-queue are listed
    assert [p.id for p in q.peek(tenant="b")] == ["stray"]
    assert r.llen(k.tenant_queue("a")) == 5


def test_requeue_dead_returns_items_to_their_tenant(cli, r):
    push(cli, "a", '"doomed"')
    item = cli("lease", "q").one
    assert cli("fail", "q", item["id"], "--dead").exit_code == 0
    assert cli("stats", "q").one["tenants"] == 0
    assert cli("requeue-dead", "q", "--all").exit_code == 0
    assert [row["id"] for row in cli("peek", "q", "--tenant", "a").json] == [item["id"]]
    # into another queue, it arrives without a tenant
    item = cli("lease", "q").one
    cli("fail", "q", item["id"], "--dead")
    assert cli("requeue-dead", "q", "--all", "--to", "other").exit_code == 0
    assert [row["id"] for row in cli("peek", "other").json] == [item["id"]]


def test_purge_empties_the_sub_queues(cli, r):
    push(cli, "a", '"1"', '"2"')
    push(cli, "b", '"3"')
    push(cli, None, '"4"')
    assert cli("purge", "q", "--dry-run").one["pending"] == 4
    assert cli("purge", "q", "--yes").one["pending"] == 4
    assert cli("stats", "q").one["pending"] == 0
    assert cli("lease", "q").stdout == ""
    k = Keys("q")
    assert not r.exists(k.tenants, k.tenant_queue("a"), k.tenant_queue("b"), k.item_tenant)
    push(cli, "a", '"5"')
    cli("lease", "q")
    cli("purge", "q", "--state", "all", "--yes")
    assert r.keys("q:*") == [b"q:audit"]  # (the purge, recorded)


def test_stats_and_peek(cli, r):
    push(cli, "a", '"1"', '"2"')
    push(cli, "b", '"3"')
    push(cli, None, '"4"')
    row = cli("stats", "q").one
    assert (row["pending"], row["tenants"]) == (4, 2)  # a and b (the default not counted)
    rows = cli("stats", "q", "--by-tenant").json
    assert rows == [{"queue": "q", "tenant": None, "pending": 1},
                    {"queue": "q", "tenant": "a", "pending": 2},
                    {"queue": "q", "tenant": "b", "pending": 1}]
    assert [row_["data"] for row_ in cli("peek", "q", "--tenant", "a").json] == ["1", "2"]
    assert cli("peek", "q", "--tenant", "nobody").json == []
    run = cli("stats", "q", "--by-tenant", tty=True)
    assert run.exit_code == 0 and "tenant" in run.stdout


def test_with_ids_lines_carry_a_tenant(cli, r):
    lines = ('{"id": "x", "data": 1, "tenant": "a"}\n{"id": "y", "data": 2}\n'
             '{"id": "z", "data": 3, "tenant": "b"}\n')
    assert cli("push", "q", "--with-ids", "-", input=lines).exit_code == 0
    # the default tenant's items first, then each tenant's, in turn order
    assert [(row["id"], row.get("tenant")) for row in cli("peek", "q").json] == [
        ("y", None), ("x", "a"), ("z", "b")]
    assert [row["id"] for row in cli("peek", "q", "-n", "2").json] == ["y", "x"]
    assert [row["id"] for row in cli("peek", "q", "--tenant", "b").json] == ["z"]
    # --tenant is the default for lines without their own
    assert cli("push", "q", "--with-ids", "--tenant", "c", "-",
               input='{"id": "w", "data": 4}\n').exit_code == 0
    assert [row["id"] for row in cli("peek", "q", "--tenant", "c").json] == ["w"]


def test_lease_wait_wakes_up_for_a_tenant_push(cli, r):
    push(cli, "a", '"first"')  # the queue has had tenants
    cli("lease", "q")
    timer = threading.Timer(0.3, lambda: WorkQueue(redis.Redis(
        connection_pool=r.connection_pool), "q").push([b'"late"'], tenant="b"))
    timer.start()
    start = time.monotonic()
    row = cli("lease", "q", "--wait", "5").one
    timer.join()
    assert row["data"] == "late" and time.monotonic() - start < 2


@pytest.mark.parametrize("tenant", ["", "a b", "{tag}", "-x", "a*", "\u00e9t\u00e9", "x" * 257])
def test_bad_tenant_names_are_refused(cli, r, tenant):
    run = cli("push", "q", "--tenant", tenant, '"1"')
    assert run.exit_code == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "tenant" in run.stderr
    assert r.keys("q:*") == []  # nothing stored
    assert cli("peek", "q", "--tenant", tenant).exit_code == 2


def test_a_bad_tenant_in_a_with_ids_line_names_the_line(cli, r):
    lines = '{"id": "ok", "data": 1, "tenant": "a"}\n{"id": "bad", "data": 2, "tenant": 5}\n'
    run = cli("push", "q", "--with-ids", "-", input=lines)
    assert run.exit_code == 65
    assert "line 2" in run.stderr and '"tenant" must be a string' in run.stderr
    assert [row["id"] for row in cli("peek", "q", "--tenant", "a").json] == ["ok"]


def test_peek_tenant_needs_pending(cli, r):
    run = cli("peek", "q", "--tenant", "a", "--state", "dead")
    assert run.exit_code == 2 and "pending" in run.stderr


@pytest.mark.parametrize("weights, message", [
    ("{a = 0}", "from 1 to"),
    ("{a = 1.5}", "whole number"),
    ('{a = "3"}', "whole number"),
    ("{a = 1001}", "from 1 to"),
    ('{"a b" = 2}', "bad tenant name"),
    ("3", "must be a table"),
])
def test_bad_weights_in_the_config(cli, r, tmp_path, weights, message):
    write_config(tmp_path, f"[queues.q]\ntenant_weights = {weights}\n")
    run = cli("push", "q", "--tenant", "a", '"1"')
    assert run.exit_code == 78
    assert len(run.stderr.strip().splitlines()) == 1
    assert message in run.stderr and "line 2" in run.stderr
    assert r.keys("q:*") == []


def test_core_refuses_bad_tenants_and_weights(r):
    with pytest.raises(UsageError):
        WorkQueue(r, "q", QueueOptions(tenant_weights=(("a", 0),)))
    with pytest.raises(UsageError):
        WorkQueue(r, "q").push([b"1"], tenant="no spaces")
    with pytest.raises(UsageError):
        WorkQueue(r, "q").push([NewItem(b"1", tenant="")])
    assert r.keys("q:*") == []


def _commands_of_one_lease(r: redis.Redis, q: WorkQueue) -> list[str]:
    """The commands one lease(1) runs on the server (Redis 7 logs a script's own commands in
    SLOWLOG, after the script call itself)."""
    old = r.config_get("slowlog-*")
    r.config_set("slowlog-max-len", 1000)
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        assert q.lease(1)
        entries = r.slowlog_get(1000)
    finally:
        r.config_set("slowlog-log-slower-than", old["slowlog-log-slower-than"])
        r.config_set("slowlog-max-len", old["slowlog-max-len"])
    return [e["command"].split()[0].decode() for e in entries
            if not e["command"].startswith(b"SLOWLOG")]


def test_a_lease_runs_the_same_commands_with_10_or_2000_tenants(r):
    """O(1) in the number of tenants: the same commands, none reading the whole ring."""
    runs = []
    for n in (10, 2000):
        r.flushall()
        q = WorkQueue(r, "q")
        q.push([NewItem(b"x", tenant=f"t{i}") for i in range(n) for _ in range(2)])
        q.lease(1)  # the scripts loaded; a turn taken
        runs.append(sorted(_commands_of_one_lease(r, q)))
    if len(runs[0]) <= 1:
        pytest.skip("this server does not log a script's commands in SLOWLOG")
    assert runs[0] == runs[1]
    assert "LRANGE" not in runs[1] and "SCAN" not in runs[1] and "LPOS" not in runs[1]


def test_a_stream_that_names_tenants_after_plain_batches(cli, r):
    """The pipelined path (plain lines first) hands over to one call per tenant run."""
    lines = [f'{{"id": "p{i}", "data": {i}}}\n' for i in range(2500)]
    plain = "".join(lines)
    fair = "".join(f'{{"id": "t{i}", "data": {i}, "tenant": "{"ab"[i % 2]}"}}\n'
                   for i in range(30))
    run = cli("push", "q", "--with-ids", "--summary", "-", input=plain + fair + "".join(lines[:2]))
    assert run.exit_code == 0, run
    assert (run.one["added"], run.one["duplicates"]) == (2530, 2)  # (the lines repeated)
    stats = WorkQueue(r, "q").stats(by_tenant=True)
    assert stats.by_tenant == {"": 2500, "a": 15, "b": 15}
    assert [p.id for p in WorkQueue(r, "q").peek(tenant="b", count=3)] == ["t1", "t3", "t5"]


def test_peek_all_states_with_a_tenant_is_refused(cli, r):
    run = cli("peek", "q", "--tenant", "a", "--state", "all")
    assert run.exit_code == 2 and "pending" in run.stderr


def test_purge_takes_many_small_tenants_per_call(r):
    q = WorkQueue(r, "q")
    q.push([NewItem(b"x", tenant=f"t{i}") for i in range(450)] + [NewItem(b"d")])
    q.stats()  # (scripts loaded)
    r.config_resetstat()
    assert q.purge().pending == 451
    evalsha = r.info("commandstats")["cmdstat_evalsha"]
    # (a first EVALSHA refused with NOSCRIPT, then retried, counts as a failed call)
    calls = evalsha["calls"] - evalsha.get("failed_calls", 0)
    assert calls <= 451 // 200 + 2  # batches of SLOW_BATCH across tenants, not one per tenant
    assert q.stats().pending == 0
    assert not r.exists(q.keys.tenants, q.keys.item_tenant, q.keys.tenant_queue("t0"))


def test_peek_shows_the_tenant_and_a_copy_keeps_it(cli, r):
    push(cli, "a", '"1"')
    push(cli, None, '"2"')
    push(cli, "b", '"3"', '"4"')
    doomed = cli("lease", "q").one  # (the default tenant's turn: "2")
    cli("lease", "q")  # a's "1"
    cli("fail", "q", doomed["id"], "--dead")
    rows = cli("peek", "q", "--state", "all", "-n", "100").json
    assert {(row["data"], row["state"], row.get("tenant")) for row in rows} == {
        ("1", "processing", "a"), ("2", "dead", None), ("3", "pending", "b"),
        ("4", "pending", "b")}
    assert cli("peek", "q", "--id", rows[-1]["id"]).one.get("tenant") == rows[-1].get("tenant")
    # the lines re-import with their tenants (each item as a pending one)
    copy = cli("push", "copy", "--with-ids", "-", input=cli("peek", "q", "--state", "all",
                                                              "-n", "100").stdout)
    assert copy.exit_code == 0
    assert cli("stats", "copy", "--by-tenant").json == [
        {"queue": "copy", "tenant": None, "pending": 1},
        {"queue": "copy", "tenant": "b", "pending": 2},  # (pending items are read first)
        {"queue": "copy", "tenant": "a", "pending": 1}]


def test_a_dead_tenant_item_names_its_tenant(cli, r):
    push(cli, "a", '"x"')
    item = cli("lease", "q").one
    cli("fail", "q", item["id"], "--dead")
    assert cli("peek", "q", "--state", "dead").one["tenant"] == "a"


def test_concurrent_workers_lease_every_tenant_item_exactly_once(r):
    q = WorkQueue(r, "q")
    pushed = {res.id for t in range(5) for res in q.push([b"%d" % i for i in range(60)],
                                                         tenant=f"t{t}")}
    pushed |= {res.id for res in q.push([b"plain"] * 20)}
    got: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = WorkQueue(redis.Redis(connection_pool=r.connection_pool), "q")
        while items := mine.lease(7):
            mine.complete([i.id for i in items])
            with lock:
                got.extend(i.id for i in items)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == sorted(pushed)  # each once, none lost
    k = Keys("q")
    assert not r.exists(k.tenants, k.item_tenant, k.queue)
    assert r.hget(k.fair, "pending") == b"0"


def test_the_oldest_pending_age_sees_the_tenants_items(cli, r):
    """stats' oldest pending age (and so `stats --check --max-age`) counts items waiting in
    tenant sub-queues, not only the default tenant's."""
    now = int(time.time() * 1000)  # (the command line reads the server's clock)
    q = WorkQueue(r, "q")
    q.push([NewItem(b'"old"', "old")], tenant="acme", now_ms=now - 60_000)
    q.push([NewItem(b'"mid"', "mid")], tenant="globex", now_ms=now - 30_000)
    q.push([NewItem(b'"new"', "new")], now_ms=now - 1_000)
    assert q.stats(now_ms=now).oldest_pending_age_s == 60.0
    # a peer's item (no push time) in the default tenant hides nothing
    PeerQueue(KeyPrefix("q")).add_item(r, Item(b'"peer"'))
    assert q.stats(now_ms=now).oldest_pending_age_s == 60.0
    # the check alerts on the tenant's item, from the command line (exit 5)
    breach = cli("stats", "q", "--check", "--max-age", "45")
    assert breach.exit_code == 5, breach
    assert "age" in breach.stderr + breach.stdout
    # the default tenant's turn, then acme's: the old item leased, the oldest is globex's
    assert [i.id for i in q.lease(2, now_ms=now)] == ["new", "old"]
    assert r.llen(Keys("q").tenant_queue("acme")) == 0
    assert q.stats(now_ms=now).oldest_pending_age_s == 30.0
    assert cli("stats", "q", "--check", "--max-age", "45").exit_code == 0


def test_a_filter_over_pending_items_sees_every_tenant(cli, r):
    """peek/purge --state pending --match read the default tenant's list, then each tenant's
    sub-queue; a purged sub-queue that empties leaves the ring, and leases go on in turn."""
    cli("push", "q", "--id", "d1", '{"bad": true}')
    cli("push", "q", "--id", "d2", '{"bad": false}')
    cli("push", "q", "--tenant", "acme", "--with-ids", "-",
        input="".join(f'{{"id": "a{k}", "data": {{"bad": {str(k < 2).lower()}}}}}\n'
                      for k in range(3)))
    cli("push", "q", "--tenant", "globex", "--id", "g1", '{"bad": true}')
    cli("push", "q", "--tenant", "initech", "--id", "i1", '{"bad": false}')
    k = Keys("q")
    assert r.llen(k.tenants) == 4  # the default tenant and three
    seen = cli("peek", "q", "--match", "bad", "-n", "100")
    assert sorted(row["id"] for row in seen.json) == ["a0", "a1", "d1", "g1"]
    assert "4 matched of 7 pending scanned" in seen.stderr
    one = cli("peek", "q", "--tenant", "acme", "--match", "bad", "-n", "100")
    assert [row["id"] for row in one.json] == ["a0", "a1"]
    assert "2 matched of 3 pending scanned" in one.stderr
    dry = cli("purge", "q", "--match", "bad", "--dry-run").one
    assert (dry["matched"], dry["purged"]) == (4, 0)
    run = cli("purge", "q", "--match", "bad", "--yes", "--summary").one
    assert (run["matched"], run["purged"]) == (4, 4)
    # nothing of the purged items is left; globex's sub-queue emptied and left the ring
    assert not any(r.exists(f"q:item:{i}") for i in ("a0", "a1", "d1", "g1"))
    assert r.llen(k.tenant_queue("acme")) == 1 and not r.exists(k.tenant_queue("globex"))
    assert [t.decode() for t in r.lrange(k.tenants, 0, -1)].count("globex") == 0
    assert r.llen(k.tenants) == 3
    assert not r.hexists(k.item_tenant, "a0")
    stats = cli("stats", "q", "--json").one
    assert (stats["pending"], stats["tenants"]) == (3, 2)
    # the rest is leased, each item once, in turn, and the ring is gone with the last one
    assert lease_order(cli, 10) == [str({"bad": False})] * 3
    assert cli("stats", "q", "--json").one["pending"] == 0
    assert not r.exists(k.tenants)
