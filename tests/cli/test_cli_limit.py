"""rq-cli limit, and lease under a queue's fleet-wide limits (docs/limits.md).

Times come from the server's own arithmetic (GCRA in µs) and are checked against the
reply of the same server: no test here waits on the machine's speed, except where it says
so with a generous bound.
"""

from __future__ import annotations

import time

import redis

from rq_cli.core.operations.limiting import parse_rate
from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_limit_sets_shows_and_clears_the_limits(cli, r: redis.Redis) -> None:
    assert cli("limit", "q").one == {"queue": "q", "rate": None, "per_second": None,
                                     "burst": None, "max_in_flight": None, "in_flight": 0}
    got = cli("limit", "q", "--rate", "300/m", "--burst", "5").one
    assert (got["rate"], got["per_second"], got["burst"]) == ("300/m", 5.0, 5)
    got = cli("limit", "q", "--max-in-flight", "3").one  # the rate stays as it is
    assert (got["rate"], got["max_in_flight"]) == ("300/m", 3)
    assert cli("limit", "q").one == got
    assert r.hget("q:limits", "interval_us") == b"200000"
    got = cli("limit", "q", "--max-in-flight", "0").one  # 0: no cap
    assert (got["rate"], got["max_in_flight"]) == ("300/m", None)
    run = cli("limit", "q", "--clear")
    assert run.one["rate"] is None and run.one["max_in_flight"] is None
    assert "no limits" in run.stderr
    assert not r.exists("q:limits")


def test_bad_limits_are_usage_errors_that_change_nothing(cli, r: redis.Redis) -> None:
    assert cli("limit", "q", "--rate", "10/s").exit_code == 0
    before = r.hgetall("q:limits")
    for args in (["--rate", "fast"], ["--rate", "10/d"], ["--rate", "0/s"], ["--rate", "-1/s"],
                 ["--rate", "5000000/s"], ["--burst", "3"], ["--clear", "--rate", "1/s"],
                 ["--max-in-flight", "-1"], ["--rate", "1/s", "--burst", "0"]):
        run = cli("limit", "q", *args)
        assert run.exit_code == 2, (args, run)
        assert run.stdout == "" and len(run.stderr.strip().splitlines()) == 1, (args, run)
    assert "--rate is N/s, N/m or N/h" in cli("limit", "q", "--rate", "fast").stderr
    assert "--burst goes with a rate" in cli("limit", "q", "--burst", "3").stderr
    assert r.hgetall("q:limits") == before


def test_lease_while_the_rate_is_spent_exits_75_and_prints_nothing(cli, r: redis.Redis) -> None:
    WorkQueue(r, "q").push([b"a", b"b", b"c"])
    assert cli("limit", "q", "--rate", "1/h").exit_code == 0
    assert cli("lease", "q").exit_code == 0  # the burst of 1
    run = cli("lease", "q")
    assert run.exit_code == 75, run
    assert run.stdout == ""
    line = run.stderr.strip()
    assert len(line.splitlines()) == 1 and "rate is spent" in line and "in 59m" in line, line
    assert r.llen("q:queue") == 2  # nothing taken, nothing lost
    # --wait shorter than the time the rate needs: exits 75 after the wait, nothing taken
    started = time.monotonic()
    run = cli("lease", "q", "--wait", "0.3")
    assert run.exit_code == 75 and run.stdout == ""
    assert time.monotonic() - started >= 0.3
    assert r.llen("q:queue") == 2
    assert cli("limit", "q", "--clear").exit_code == 0
    assert cli("lease", "q").exit_code == 0


def test_count_takes_what_the_rate_allows(r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"x"] * 20)
    q.set_limits(rate=parse_rate("1/h"), burst=4)
    assert len(q.lease(10)) == 4  # the burst, whatever --count asks
    assert q.lease(10) == [] and q.held_back is not None and q.held_back[0] == "rate"
    assert r.llen("q:queue") == 16


def test_the_rate_is_exact_in_server_time(r: redis.Redis) -> None:
    """GCRA by the server's clock (now_ms given): 10/s admits one item per 100 ms, the next
    lease's time is said exactly, and a burst of 3 admits 3 after a quiet spell."""
    q = WorkQueue(r, "q")
    q.push([b"x"] * 20)
    q.set_limits(rate=parse_rate("10/s"))
    t0 = 1_000_000_000_000
    assert len(q.lease(5, now_ms=t0)) == 1
    assert q.lease(5, now_ms=t0 + 99) == []
    assert q.held_back is not None and q.held_back[0] == "rate"
    assert 0 < q.held_back[1] - time.time() <= 0.002  # 1 ms left by the server's arithmetic
    assert len(q.lease(5, now_ms=t0 + 100)) == 1
    assert len(q.lease(5, now_ms=t0 + 350)) == 1  # (no credit for the quiet 150 ms: burst 1)
    q.set_limits(rate=parse_rate("10/s"), burst=3)
    assert len(q.lease(5, now_ms=t0 + 10_000)) == 3
    assert q.lease(5, now_ms=t0 + 10_050) == []
    assert len(q.lease(5, now_ms=t0 + 10_100)) == 1


def test_the_in_flight_cap_counts_leases_and_a_complete_frees_a_place(r: redis.Redis) -> None:
    q = WorkQueue(r, "q", session="s1")
    q.push([b"x"] * 10)
    q.set_limits(max_in_flight=3)
    first = q.lease(5)
    assert len(first) == 3
    assert q.lease(1) == [] and q.held_back is not None and q.held_back[0] == "max_in_flight"
    q.complete(first[:1])
    assert r.llen("q:freed") == 1  # the token that wakes a waiting client
    assert len(q.lease(5)) == 1
    assert q.limits().in_flight == 3


def test_an_expired_lease_frees_its_place(r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"x"] * 4)
    q.set_limits(max_in_flight=2)
    t0 = 1_000_000_000_000
    assert len(q.lease(5, lease_seconds=10, now_ms=t0)) == 2
    assert q.lease(1, now_ms=t0 + 9_999) == []
    assert len(q.lease(1, now_ms=t0 + 10_000)) == 1  # the two leases ran out: 1 of 2 places


def test_lease_wait_sleeps_exactly_until_the_rate_allows(r: redis.Redis) -> None:
    """No polling: one held-back lease, one sleep, one lease (counted by the server's
    INFO commandstats), and not before the rate allows."""
    q = WorkQueue(r, "q")
    q.push([b"x"] * 3)
    q.set_limits(rate=parse_rate("4/s"))
    assert len(q.lease(1)) == 1
    r.config_resetstat()
    started = time.monotonic()
    got = q.lease(1, wait=10)
    waited = time.monotonic() - started
    assert len(got) == 1
    assert waited >= 0.2  # 250 ms after the first, less the round trips
    calls = sum(v["calls"] for k, v in r.info("commandstats").items()
                if k in ("cmdstat_fcall", "cmdstat_evalsha"))
    assert calls == 2, r.info("commandstats")


def test_a_capped_lease_wait_wakes_when_a_complete_frees_a_place(r: redis.Redis) -> None:
    import threading

    q = WorkQueue(r, "q")
    q.push([b"x"] * 3)
    q.set_limits(max_in_flight=1)
    held = q.lease(1, lease_seconds=600)
    done = threading.Event()

    def complete_when_waiting() -> None:
        # wait for the waiter's BLPOP on P:freed (an event: the server's blocked clients)
        while r.info("clients")["blocked_clients"] == 0:
            time.sleep(0.005)
        q.complete(held)
        done.set()

    completer = threading.Thread(target=complete_when_waiting, daemon=True)
    completer.start()
    got = q.lease(1, wait=60)  # not the lease's 600 s: the complete's token wakes it
    completer.join(60)
    assert len(got) == 1 and done.is_set()
    assert got[0].id != held[0].id


def test_a_limits_key_of_another_type_stops_lease_and_limit_before_any_write(
        cli, r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"a"])
    r.set("q:limits", "not ours")
    run = cli("lease", "q")
    assert run.exit_code == 69 and "WRONGTYPE" in run.stderr, run
    assert r.llen("q:queue") == 1 and r.llen("q:processing") == 0
    for args in ([], ["--rate", "1/s"], ["--clear"]):
        run = cli("limit", "q", *args)
        assert run.exit_code == 69 and "q:limits" in run.stderr, (args, run)
    assert r.get("q:limits") == b"not ours"


def test_a_held_back_lease_is_counted_as_limited(cli, r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"a", b"b"])
    q.set_limits(rate=parse_rate("1/h"))
    assert cli("lease", "q").exit_code == 0
    assert cli("lease", "q").exit_code == 75
    assert cli("lease", "q").exit_code == 75
    row = cli("stats", "q").one
    assert row["counters"]["limited"] == 2 and row["counters"]["leased"] == 1
    assert row["limits"] is True
    metrics = cli("stats", "q", "--format", "prometheus").stdout
    assert 'rq_cli_limited_total{queue="q",prefix="q"} 2' in metrics, metrics
    assert 'rq_cli_limits{queue="q",prefix="q"} 1' in metrics, metrics
    cli("limit", "q", "--clear")
    assert cli("stats", "q").one["limits"] is False


def test_doctor_says_what_limits_are_set_and_warns_of_peer_leases(cli, r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"a", b"b"])
    assert not [row for row in cli("doctor", "q").json if row["check"] == "limits"]
    q.set_limits(rate=parse_rate("50/s"), max_in_flight=3)
    (row,) = [row for row in cli("doctor", "q").json if row["check"] == "limits"]
    assert row["status"] == "ok" and "rate 50/s, at most 3 in flight" in row["detail"], row
    # a peer (v0.3) leases directly: its lease key alone, no P:leases entry
    (item_id,) = r.rpop("q:queue", 1)
    r.lpush("q:processing", item_id)
    r.set(b"q:lease:" + item_id, b"peer-session", px=60_000)
    (row,) = [row for row in cli("doctor", "q").json if row["check"] == "limits"]
    assert row["status"] == "warn" and "peer" in row["detail"], row


def test_the_consoles_model_says_the_queue_has_limits(r: redis.Redis) -> None:
    from rq_cli.console.model import Browser

    q = WorkQueue(r, "q")
    q.push([b"a"])
    assert Browser("q", q).counts()["limits"] == 0
    q.set_limits(max_in_flight=2)
    assert Browser("q", q).counts()["limits"] == 1


def test_a_tenants_own_rate_passes_its_turn_and_the_queues_limit_holds_over_all(
        cli, r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"a"] * 5, tenant="acme")
    q.push([b"b"] * 5, tenant="globex")
    got = cli("limit", "q", "--tenant", "acme", "--rate", "1/h").one
    assert (got["tenant"], got["rate"], got["burst"]) == ("acme", "1/h", 1)
    assert cli("limit", "q").one["rate"] is None  # the queue's own: none
    taken = q.lease(10)
    assert sorted(i.data for i in taken) == [b"a"] + [b"b"] * 5  # acme: 1, then it passes
    run = cli("lease", "q")  # only acme's items are left, and its rate is spent
    assert run.exit_code == 75 and run.stdout == "", run
    assert r.llen("q:tenant:acme") == 4
    assert cli("limit", "q", "--tenant", "acme", "--max-in-flight", "2").exit_code == 2
    assert cli("limit", "q", "--tenant", "acme", "--clear").one["rate"] is None
    assert len(q.lease(10)) == 4


def test_the_queues_rate_holds_over_its_tenants(r: redis.Redis) -> None:
    q = WorkQueue(r, "q")
    q.push([b"a"] * 5, tenant="acme")
    q.push([b"b"] * 5, tenant="globex")
    q.set_limits(rate=parse_rate("1/h"), burst=3)
    q.set_limits(rate=parse_rate("1/h"), tenant="acme")
    assert sorted(i.data for i in q.lease(10)) == [b"a", b"b", b"b"]
    assert q.lease(10) == [] and q.held_back is not None and q.held_back[0] == "rate"
    assert q.limits("acme").rate == "1/h" and q.limits().burst == 3


def test_lease_of_several_queues_waits_as_the_limited_one_says(r: redis.Redis) -> None:
    """Two queues, one held back by its rate with items in line: the wait sleeps, it does
    not spin on the server (a BLMOVE on a list with items returns at once)."""
    from rq_cli.core.queue import lease_many

    limited, empty = WorkQueue(r, "a"), WorkQueue(r, "b")
    limited.push([b"x"] * 3)
    limited.set_limits(rate=parse_rate("1/h"))
    assert len(limited.lease(1)) == 1
    r.config_resetstat()
    assert lease_many([limited, empty], 1, wait=1.0) == []
    calls = sum(v["calls"] for k, v in r.info("commandstats").items()
                if k in ("cmdstat_fcall", "cmdstat_evalsha"))
    assert calls <= 2 * 4, r.info("commandstats")  # (a pass per 0.5 s chunk, 2 queues each)


def test_the_limits_as_evalsha_scripts(r: redis.Redis, monkeypatch) -> None:
    """The same steps through EVALSHA (no Functions: Redis 6.2, or RQ_CLI_FUNCTIONS=0),
    where the limits' definitions are --@lazy: the rate, the cap and its token, a tenant."""
    from rq_cli.core.contract.env import ENV_FUNCTIONS

    monkeypatch.setenv(ENV_FUNCTIONS, "0")
    q = WorkQueue(r, "q")
    assert not q.caller.functions
    q.push([b"x"] * 4)
    q.push([b"t"] * 3, tenant="acme")
    q.set_limits(rate=parse_rate("1/h"), burst=3, max_in_flight=2)
    q.set_limits(rate=parse_rate("1/h"), tenant="acme")
    first = q.lease(10)
    assert len(first) == 2 and q.lease(1) == []  # the cap
    assert q.held_back is not None and q.held_back[0] == "max_in_flight"
    q.complete(first[:1])
    assert r.llen("q:freed") == 1
    second = q.lease(10)
    assert len(second) == 1  # the burst of 3 now spent
    q.complete([*first[1:], *second])  # no lease in flight: the rate holds it back
    assert q.lease(1) == [] and q.held_back is not None and q.held_back[0] == "rate"
    r.hset("q:errors", "unrelated", "x")  # not QUIET: the type checks and the limits
    assert q.lease(1) == [] and q.held_back is not None
