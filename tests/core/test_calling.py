"""How script calls reach the server (rq_cli/core/scripting/calling.py): the hot scripts as FCALL of
one Functions library where the server has Functions, else EVALSHA; and both ways give the
same replies and leave the same keys.

Against the suite's server: on Redis >= 7 and Valkey the FCALL path is checked, on Redis 6.2
(CI's third run) the fallback to EVALSHA.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis

from rq_cli.core.contract.env import ENV_FUNCTIONS
from rq_cli.core.contract.limits import SETTLE_CHUNK
from rq_cli.core.contract.specs import SPECS
from rq_cli.core.queue import WorkQueue
from rq_cli.core.scripting.scripts import HOT, library
from rq_cli.core.types import ItemRef, NewItem

NOW = 1_700_000_000_000


def ref(item: Any) -> ItemRef:
    return ItemRef(item.id, item.session)


def refs(items: list[Any]) -> list[ItemRef]:
    return [ref(i) for i in items]


def has_functions(client: redis.Redis) -> bool:
    """Redis >= 7 and Valkey (which reports Redis 7.2 here) have FUNCTION and FCALL."""
    return int(str(client.info("server")["redis_version"]).split(".")[0]) >= 7


def calls(client: redis.Redis) -> dict[str, int]:
    """Script calls so far: FCALL, EVALSHA that ran (each EVALSHA refused with NOSCRIPT is
    followed by one SCRIPT LOAD), FUNCTION LOAD. (A server without FCALL counts none.)"""
    stats = client.info("commandstats")

    def n(name: str) -> int:
        return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))

    # (Redis 6.2 counts SCRIPT LOAD as "script": no subcommand statistics before 7.0)
    return {"fcall": n("fcall"), "evalsha": n("evalsha") - n("script|load") - n("script"),
            "function|load": n("function|load")}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


def libraries(client: redis.Redis) -> list[str]:
    if not has_functions(client):
        return []
    return [lib[1].decode() for lib in client.function_list()]


@pytest.fixture
def no_functions(r: redis.Redis) -> Any:
    """The server without any library (FLUSHALL keeps them)."""
    if has_functions(r):
        r.function_flush()
    yield
    if has_functions(r):
        r.function_flush()


def test_the_library_names_every_hot_script_and_the_specs_agree() -> None:
    lib = library()
    assert lib.code.startswith(f"#!lua name={lib.name}\n")
    assert set(lib.functions) == set(HOT) and set(HOT) <= set(SPECS)
    for name, function in lib.functions.items():
        assert function == f"{lib.name}_{name}"
        assert f"redis.register_function('{function}', run_{name})" in lib.code
    # nothing made lazily, and no per-call header outside the functions
    assert "setmetatable(L" not in lib.code and "L." not in lib.code


def test_hot_scripts_run_as_fcall_where_the_server_has_functions(
        r: redis.Redis, no_functions: None) -> None:
    q = WorkQueue(r, "fx")
    q.push([NewItem(b'{"n": 1}', "a"), NewItem(b'{"n": 2}', "b")])
    before = calls(r)
    (a,) = q.lease()
    got = delta(before, calls(r))
    if not has_functions(r):  # (its FCALL refused as an unknown command, then EVALSHA)
        assert q.caller.functions is False
        assert got == {"fcall": 0, "evalsha": 1, "function|load": 0}, got
        before = calls(r)
        q.complete([ref(a)])
        assert delta(before, calls(r)) == {"fcall": 0, "evalsha": 1, "function|load": 0}
        return
    assert q.caller.functions is True
    # the first FCALL found no function; the library was loaded once, the call made again
    assert got == {"fcall": 2, "evalsha": 0, "function|load": 1}, got
    assert libraries(r) == [library().name]
    q.stats()  # (its script into the server's cache: its first EVALSHA is refused, NOSCRIPT)
    before = calls(r)
    assert q.complete([ref(a)])[0].outcome == "completed"
    (b,) = q.lease()
    assert q.extend([ref(b)])[0].outcome == "extended"
    assert q.fail([ref(b)], retry_in=0)[0].outcome == "retried"
    assert q.stats().pending == 1
    # four hot calls as FCALL; stats (not hot) as EVALSHA; nothing loaded again
    assert delta(before, calls(r)) == {"fcall": 4, "evalsha": 1, "function|load": 0}
    # a second queue object (another process) finds the library loaded
    before = calls(r)
    assert [i.id for i in WorkQueue(r, "fx").lease()] == ["b"]
    assert delta(before, calls(r)) == {"fcall": 1, "evalsha": 0, "function|load": 0}


def test_a_flushed_library_is_loaded_again_and_nothing_is_lost(
        r: redis.Redis, no_functions: None) -> None:
    if not has_functions(r):
        pytest.skip("the server has no Functions")
    q = WorkQueue(r, "fx")
    q.push([NewItem(b"1", "a"), NewItem(b"2", "b")])
    q.lease()
    r.function_flush()  # (an operator's FUNCTION FLUSH, or a server restarted without RDB)
    (b,) = q.lease()
    assert b.id == "b" and b.data == b"2"
    assert libraries(r) == [library().name]
    assert r.lrange("fx:processing", 0, -1) == [b"b", b"a"]


def test_the_environment_can_turn_fcall_off(r: redis.Redis, no_functions: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_FUNCTIONS, "0")
    q = WorkQueue(r, "fx")
    q.push([b"x"])
    before = calls(r)
    (item,) = q.lease()
    q.complete([ref(item)])
    assert q.caller.functions is False
    assert delta(before, calls(r)) == {"fcall": 0, "evalsha": 2, "function|load": 0}
    assert libraries(r) == []


@pytest.mark.parametrize("denied", [["-fcall"], ["-function"]])
def test_an_acl_user_without_fcall_or_function_load_gets_evalsha(
        make_server: Any, denied: list[str]) -> None:
    """The documented ACL rule (README "ACL") names EVALSHA, not FCALL: such a user works,
    through EVALSHA after one refused FCALL (or FUNCTION LOAD)."""
    srv = make_server(requirepass="admin-pw")
    admin = srv.client(protocol=2)
    if not has_functions(admin):
        pytest.skip("the server has no Functions")
    admin.execute_command("ACL", "SETUSER", "w", "on", ">w-pw", "~*", "+@all", *denied)
    user = redis.Redis(port=srv.port, username="w", password="w-pw", socket_timeout=30)
    q = WorkQueue(user, "fx")
    q.push([NewItem(b"1", "a")])
    (a,) = q.lease()
    assert a.id == "a" and q.caller.functions is False
    assert [o.outcome for o in q.complete([ref(a)])] == ["completed"]
    assert admin.llen("fx:processing") == 0
    user.close()
    admin.close()


def _story(q: WorkQueue) -> list[Any]:
    """Every hot script, with the clock given: replies that do not depend on the way."""
    out: list[Any] = []
    q.push([NewItem(f"{n}".encode(), f"i{n}") for n in range(6)], now_ms=NOW)
    first = q.lease(count=3, now_ms=NOW)
    out.append([(i.id, i.data, i.attempt, i.lease_expires_at) for i in first])
    out.append(q.complete(refs(first[:1]), now_ms=NOW + 1))
    out.append(q.extend(refs(first[1:2]), now_ms=NOW + 2))
    out.append(q.fail(refs(first[2:]), retry_in=0, now_ms=NOW + 3))
    out.append(q.fail(refs(first[1:2]), dead=True, now_ms=NOW + 4))
    done, more = q.complete_and_lease([], 2, now_ms=NOW + 5)
    out.append((done, [(i.id, i.data, i.attempt) for i in more]))
    done, more = q.complete_and_lease(refs(more[:1]), 1, now_ms=NOW + 6)
    out.append((done, [(i.id, i.data, i.attempt) for i in more]))
    out.append(q.complete([ItemRef("nope"), ref(more[0])], now_ms=NOW + 7))
    return out


def _keys(client: redis.Redis, prefix: str) -> dict[str, Any]:
    """Every key of the queue with its value (the lease keys' values name the session)."""
    out: dict[str, Any] = {}
    for key in client.scan_iter(f"{prefix}:*"):
        name = key.decode()[len(prefix):]
        kind = client.type(key).decode()
        if kind == "string":
            out[name] = client.get(key)
        elif kind == "list":
            out[name] = client.lrange(key, 0, -1)
        elif kind == "hash":
            out[name] = {k: v for k, v in client.hgetall(key).items()}
        elif kind == "zset":
            out[name] = client.zrange(key, 0, -1, withscores=True)
    return out


def test_fcall_and_evalsha_give_the_same_replies_and_keys(
        r: redis.Redis, no_functions: None, monkeypatch: pytest.MonkeyPatch) -> None:
    if not has_functions(r):
        pytest.skip("the server has no Functions: EVALSHA is the only way")
    fast = WorkQueue(r, "fast", session="s1")
    by_fcall = _story(fast)
    assert fast.caller.functions is True
    monkeypatch.setenv(ENV_FUNCTIONS, "0")
    slow = WorkQueue(r, "slow", session="s1")
    by_evalsha = _story(slow)
    assert slow.caller.functions is False
    # (the outcomes name their items: equal lists are equal stories, item for item)
    assert by_fcall == by_evalsha
    assert len(by_fcall[0]) == 3 and by_fcall[-1][1].outcome == "completed"
    # the keys the two ways left behind are the same, key for key
    fast_keys, slow_keys = _keys(r, "fast"), _keys(r, "slow")
    assert len(fast_keys) >= 6 and fast_keys == slow_keys


@pytest.mark.parametrize("functions", [True, False])
def test_a_settle_of_many_calls_in_one_pipeline_reloads_a_flushed_script_once(
        r: redis.Redis, no_functions: None, monkeypatch: pytest.MonkeyPatch,
        functions: bool) -> None:
    """complete and fail send their calls (limits.SETTLE_CHUNK, FAIL_CHUNK ids each) in one
    pipeline (Caller.run_all): with the library or script flushed meanwhile, every call is
    refused alike and none runs; it is loaded once and the pipeline sent again, each id
    settled once."""
    if functions and not has_functions(r):
        pytest.skip("the server has no Functions")
    if not functions:
        monkeypatch.setenv(ENV_FUNCTIONS, "0")
    q = WorkQueue(r, "fx")
    n = 3 * SETTLE_CHUNK
    q.push([NewItem(b"x", f"i{k}") for k in range(n)])
    leased = q.lease(n)
    done, failed = leased[:n // 2], leased[n // 2:]
    for settle, items, outcome in ((q.complete, done, "completed"),
                                   (lambda refs: q.fail(refs, retry_in=0), failed, "retried")):
        if functions:
            r.function_flush()
        else:
            r.script_flush()
        outcomes = settle([ref(i) for i in items])
        assert [o.id for o in outcomes] == [i.id for i in items]
        assert {o.outcome for o in outcomes} == {outcome}
    counters = r.hgetall("fx:counters")
    assert (int(counters[b"completed"]), int(counters[b"failed"])) == (n // 2, n - n // 2)
    assert r.llen("fx:processing") == 0 and r.llen("fx:queue") == n - n // 2
