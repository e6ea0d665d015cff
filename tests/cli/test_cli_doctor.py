"""rq-cli doctor (and the warning of stats/server status): what the queues rely on, checked on
real servers set up with CONFIG SET, an ACL user, a replica and a server that is down."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from waiting import wait_for

from rq_cli.core.queue import WorkQueue
from rq_cli.health import acl as health_acl

pytest_plugins = ["cli_helpers"]

ACL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "deployments.md"  # the ACL rule
FIELDS = ["server", "queue", "check", "status", "detail", "fix"]
SERVER_CHECKS = ["latency", "version", "functions", "persistence", "eviction", "replication"]


def by_check(rows: list[dict]) -> dict[str, dict]:
    return {row["check"]: row for row in rows}


@pytest.fixture
def srv(make_server):
    """A private server (no RDB, no AOF, as the suite starts them): CONFIG SET stays here."""
    return make_server()


def test_no_persistence_is_a_fail_with_what_to_change(cli, srv):
    WorkQueue(srv.client(), "q").push([b"1"])
    run = cli("doctor", "q", url=srv.url)
    assert run.exit_code == 5, run
    rows = run.json
    assert all(list(row) == FIELDS for row in rows)
    assert [row["check"] for row in rows] == [*SERVER_CHECKS, "queue", "peers", "acl",
                                               "durability"]
    assert {row["server"] for row in rows} == {srv.url}
    assert [row["queue"] for row in rows] == [None] * len(SERVER_CHECKS) + ["q"] * 4
    found = by_check(rows)
    assert found["persistence"]["status"] == "fail"
    assert "restart loses every queue" in found["persistence"]["detail"]
    assert "appendonly yes" in found["persistence"]["fix"]
    for name in ("latency", "version", "eviction", "replication", "queue", "peers", "acl",
                 "durability"):
        assert found[name]["status"] == "ok", found[name]
        assert found[name]["fix"] is None
    assert re.search(r"round trip \d+\.\d\d ms", found["latency"]["detail"])
    assert run.stderr.startswith("rq-cli: doctor: 1 failed, 0 warnings; ")
    assert len(run.stderr.splitlines()) == 1


@pytest.fixture
def aof_srv(make_server):
    """A private server with AOF on from the start (turned on at run time, the server takes
    ten seconds to stop)."""
    return make_server(appendonly="yes", appendfsync="always")


def test_aof_on_is_ok_and_exit_0(cli, aof_srv):
    WorkQueue(aof_srv.client(), "q").push([b"1"])
    run = cli("doctor", "q", url=aof_srv.url)
    assert (run.exit_code, run.stderr) == (0, ""), run
    assert {row["status"] for row in run.json} == {"ok"}
    assert "every write on disk" in by_check(run.json)["persistence"]["detail"]


def test_rdb_only_and_eviction_are_warnings_exit_7(cli, srv):
    client = srv.client()
    client.config_set("save", "3600 1")
    client.config_set("maxmemory-policy", "allkeys-lru")
    run = cli("doctor", url=srv.url)
    assert run.exit_code == 7, run
    found = by_check(run.json)
    assert found["persistence"]["status"] == "warn"
    assert "RDB snapshots only (save 3600 1)" in found["persistence"]["detail"]
    assert found["eviction"]["status"] == "warn"
    assert "allkeys-lru" in found["eviction"]["detail"]
    assert "noeviction" in found["eviction"]["fix"]
    assert run.stderr.startswith("rq-cli: doctor: 0 failed, 2 warnings; ")


def test_eviction_with_a_memory_limit_is_a_fail(cli, aof_srv):
    client = aof_srv.client()
    client.config_set("maxmemory", "512mb")
    client.config_set("maxmemory-policy", "volatile-lru")  # lease keys have a TTL
    run = cli("doctor", url=aof_srv.url)
    assert run.exit_code == 5, run
    found = by_check(run.json)
    assert found["eviction"]["status"] == "fail"
    assert "maxmemory-policy volatile-lru" in found["eviction"]["detail"]


def test_a_down_server_is_a_fail_of_its_own_exit_6(cli, make_server):
    gone = make_server()
    url = gone.url
    gone.stop()
    run = cli("doctor", "q", url=url)
    assert run.exit_code == 6, run
    row = run.one
    assert list(row) == FIELDS
    assert (row["check"], row["status"], row["server"]) == ("connect", "fail", url)
    assert row["detail"].startswith(f"cannot connect to {url}")
    assert run.stderr.startswith("rq-cli: doctor: 1 failed, 0 warnings; ")
    assert len(run.stderr.splitlines()) == 1


def test_a_replica_is_a_fail_and_its_primary_counts_it(cli, aof_srv, make_server):
    replica = make_server(appendonly="yes")
    replica.client().replicaof("127.0.0.1", aof_srv.port)  # (6.2 reads no quoted config pair)
    run = cli("doctor", url=replica.url)
    assert run.exit_code == 5, run
    found = by_check(run.json)
    assert found["replication"]["status"] == "fail"
    assert "replica" in found["replication"]["detail"]
    wait_for(lambda: aof_srv.client().info("replication").get("connected_slaves") == 1)
    primary = by_check(cli("doctor", url=aof_srv.url).json)["replication"]
    assert primary["status"] in ("ok", "warn"), primary  # (warn while it syncs)
    assert primary["detail"].startswith("primary, 1 replica(s), up to ")


def test_config_renamed_away_is_a_warn_saying_so(cli, make_server):
    srv = make_server(extra_args=("--rename-command", "CONFIG", ""))
    run = cli("doctor", url=srv.url)
    assert run.exit_code == 7, run  # not an error: what INFO tells is used
    found = by_check(run.json)
    assert found["persistence"]["status"] == "warn"
    assert "AOF off; could not read the RDB schedule: CONFIG GET appendonly, appendfsync, " \
        "save, maxmemory-policy: not available, renamed or disabled" in \
        found["persistence"]["detail"]
    assert found["eviction"]["status"] == "ok"  # INFO memory has the policy


def test_a_table_on_a_terminal(cli, srv):
    WorkQueue(srv.client(), "q").push([b"1"])
    # (wide: under load the latency row's detail grows, and at 200 columns the table then
    # shortened the check column to "persis…": the words are what this test checks)
    run = cli("doctor", "q", url=srv.url, tty=True, width=1000)
    assert run.exit_code == 5
    assert "persistence" in run.stdout and "fail" in run.stdout and "CONFIG SET" in run.stdout
    assert not run.stdout.lstrip().startswith("{")


# -- ACL -----------------------------------------------------------------------------------------
def documented_rule() -> list[str]:
    block = re.search(r"<!-- acl-rule -->\s*```\s*\n(.*?)\n```", ACL_PAGE.read_text(), re.S)
    assert block
    return block.group(1).split()[3:]


def test_the_needed_commands_are_the_readme_rule():
    allowed = [w[1:] for w in documented_rule() if w.startswith("+")]
    # the rule also allows the transactions of a bulk push, which the doctor counts as
    # faster, not needed (without them, push.lua calls: tests/deploy/test_acl.py)
    optional = ["multi", "exec"]
    assert [w for w in allowed if w not in optional] == list(health_acl.NEEDED)
    assert set(optional) <= set(allowed) and set(optional) <= set(health_acl.FASTER)


def _user(srv, name: str, rule: list[str]) -> str:
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", name, "reset", *rule)
    return f"redis://{name}:pw-9@127.0.0.1:{srv.port}/0"


def test_a_user_without_evalsha_and_info_is_told_what_is_missing(cli, srv):
    rule = [w.replace(">PASSWORD", ">pw-9").replace("myapp:{emails}", "q")
            for w in documented_rule() if w != "+evalsha"]
    url = _user(srv, "worker", rule)
    WorkQueue(srv.client(), "q").push([b"1"])
    run = cli("doctor", "q", url=url)
    assert run.exit_code == 5, run
    found = by_check(run.json)
    # INFO and CONFIG are denied: a warn that says what could not be read, not an error
    assert found["persistence"]["status"] == "warn"
    assert "could not read the persistence settings" in found["persistence"]["detail"]
    assert "ACL" in found["persistence"]["detail"]
    assert found["version"]["status"] == "warn"
    assert found["acl"]["status"] == "fail"
    assert "may not run evalsha on q:*" in found["acl"]["detail"]
    assert "+evalsha" in found["acl"]["fix"]
    assert "pw-9" not in run.stdout + run.stderr


def test_config_denied_falls_back_to_info(cli, aof_srv):
    functions = int(aof_srv.client().info("server")["redis_version"].split(".")[0]) >= 7
    rule = [w.replace(">PASSWORD", ">pw-9").replace("myapp:{emails}", "q")
            for w in documented_rule()] + ["+info"] + (["+fcall", "+function|load"]
                                                       if functions else [])
    url = _user(aof_srv, "reader", rule)
    WorkQueue(aof_srv.client(), "q").push([b"1"])
    run = cli("doctor", "q", url=url)
    found = by_check(run.json)
    assert found["persistence"]["status"] == "ok", found  # aof_enabled:1 from INFO
    assert found["persistence"]["detail"].count("CONFIG GET") == 1  # said once, briefly
    assert "appendfsync unknown" in found["persistence"]["detail"]
    assert found["eviction"]["status"] == "ok"  # maxmemory_policy from INFO memory
    # no ACL DRYRUN for this user: the probes pass, and it says what was not checked
    assert found["acl"]["status"] == "warn"
    assert "not checked" in found["acl"]["detail"]
    assert run.exit_code == 7, run


# -- the warning of stats ------------------------------------------------------------------------
def test_stats_warns_on_a_terminal_only(cli, srv):
    client = srv.client()
    WorkQueue(client, "q").push([b"1"])
    run = cli("stats", "q", url=srv.url, tty=True)
    assert run.exit_code == 0
    assert run.stderr.startswith(f"rq-cli: warning: {srv.url} keeps nothing on disk")
    assert len(run.stderr.splitlines()) == 1
    client.config_set("maxmemory-policy", "allkeys-lru")
    client.config_resetstat()
    piped = cli("stats", "q", url=srv.url)
    assert (piped.exit_code, piped.stderr) == (0, "")
    calls = client.info("commandstats")
    assert not {"cmdstat_info", "cmdstat_config|get"} & set(calls), calls  # no round trip
    client.config_set("save", "3600 1")  # snapshots: something is kept
    run = cli("stats", "q", url=srv.url, tty=True)
    assert run.stderr == (f"rq-cli: warning: {srv.url} evicts keys when full "
                          "(maxmemory-policy allkeys-lru) (see rq-cli doctor)\n")


def test_functions_library_loaded_or_not_is_told_apart(cli, aof_srv):
    """FUNCTION LIST LIBRARYNAME takes a glob: doctor asks for this rq-cli's library by its
    own name, so a loaded library reads "loaded" (issue 29)."""
    if int(aof_srv.client().info("server")["redis_version"].split(".")[0]) < 7:
        pytest.skip("no Functions before Redis 7")
    queue = WorkQueue(aof_srv.client(), "q")
    queue.push([b"1"])
    before = by_check(cli("doctor", "q", url=aof_srv.url).json)["functions"]["detail"]
    assert "not loaded yet" in before, before
    queue.lease()  # the first worker call loads the library
    assert aof_srv.client().function_list(library="rqcli_*")
    after = by_check(cli("doctor", "q", url=aof_srv.url).json)["functions"]
    assert after["status"] == "ok"
    assert "library loaded" in after["detail"] and "not loaded" not in after["detail"], after


def test_a_queue_that_never_existed_is_unknown_exit_6(cli, aof_srv):
    """A named queue with no key and no counter on its server (a wrong URL, database or
    prefix, a new empty server) is no green check (issue 29)."""
    WorkQueue(aof_srv.client(), "used").push([b"1"])
    run = cli("doctor", "used", "jobs", url=aof_srv.url)
    assert run.exit_code == 6, run
    rows = [row for row in run.json if row["check"] == "queue"]
    assert [(row["queue"], row["status"]) for row in rows] == [("used", "ok"), ("jobs", "fail")]
    assert "never been used" in rows[1]["detail"] and rows[1]["fix"]
    assert "jobs" in run.stderr and "queue: queue jobs has no keys" in run.stderr


def test_durability_is_checked_against_the_replicas(cli, aof_srv, make_server):
    """wait_replicas = 1 with no replica is a fail (every write would exit 8); with the
    replica in sync, ok; durability off with a replica behind the primary: a warn."""
    found = by_check(cli("doctor", "q", url=aof_srv.url, env={"RQ_CLI_WAIT_REPLICAS": "1"}
                         ).json)["durability"]
    assert found["status"] == "fail", found
    assert "wait_replicas = 1, but 0 of 0 replica(s)" in found["detail"]
    replica = make_server()
    replica.client().replicaof("127.0.0.1", aof_srv.port)
    wait_for(lambda: replica.client().info("replication").get("master_link_status") == "up")
    # in sync: the replica has acknowledged the primary's offset (its first ACK can take a
    # moment on a loaded machine)
    assert aof_srv.client().execute_command("WAIT", 1, 10_000) == 1
    run = cli("doctor", "q", url=aof_srv.url, env={"RQ_CLI_WAIT_REPLICAS": "1"})
    assert by_check(run.json)["durability"]["status"] == "ok", run.json
    off = by_check(cli("doctor", "q", url=aof_srv.url).json)["durability"]
    assert off["status"] == "warn" and "a failover loses" in off["detail"], off
    assert "wait_replicas = 1" in off["fix"]


def test_peers_of_both_generations_on_one_queue_are_a_warning(cli, aof_srv):
    """A v0.3 peer's lease (P:lease only) and a v0.1 peer's (P:leased_by_session only) on
    one queue: each generation's cleaner ignores the other's lease key, so doctor warns
    (issue 29); rq-cli's own compat leases (both keys) and one generation alone do not."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from peer_v03 import V03Queue
    from redis_work_queue import KeyPrefix
    from redis_work_queue import WorkQueue as V01Queue

    client = aof_srv.client()
    queue = WorkQueue(client, "q")
    queue.push([b"1", b"2", b"3"])
    queue.lease()  # rq-cli, layout compat: both keys
    run = cli("doctor", "q", url=aof_srv.url)
    assert (run.exit_code, by_check(run.json)["peers"]["status"]) == (0, "ok"), run
    assert V03Queue("q").lease(client, 60) is not None  # a v0.3 peer alone: still ok
    assert by_check(cli("doctor", "q", url=aof_srv.url).json)["peers"]["status"] == "ok"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (the v0.1 peer uses SETEX)
        assert V01Queue(KeyPrefix("q")).lease(client, 60, block=False) is not None
    run = cli("doctor", "q", url=aof_srv.url)
    assert run.exit_code == 7, run
    found = by_check(run.json)["peers"]
    assert found["status"] == "warn" and "both generations" in found["detail"]
    assert "completed twice" in found["detail"] and "cleaner" in found["fix"]
