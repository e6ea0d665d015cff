"""Reliability: poison payloads and names that would collide with another queue.

Whatever bytes are stored, every reading command shows them (as JSON when the stdlib or orjson
can read them, else as text with ``"raw": true`` or as ``data_b64``) and exits with a
documented code; a lease never strands what it took. Queue prefixes, ids and tenants that would
give one queue another queue's key are refused with one line (exit 2) before anything is
stored. The CLI runs as ``python -m rq_cli`` in a subprocess with pipes; the server is real.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from rq_cli.core.contract.keys import (
    FIXED_NAMES,
    NAME_FAMILIES,
    Keys,
    name_collision,
    prefix_collision,
)
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.errors import UsageError

USAGE, NOTHING, DATA, CONFIG = 2, 3, 65, 78
DOCUMENTED = {0, USAGE, NOTHING, DATA, CONFIG}

DEEP = b"[" * 2000 + b"]" * 2000  # deeper than rq-cli reads as JSON (MAX_JSON_DEPTH)
HUGE_INT = b'{"n": ' + b"7" * 5000 + b"}"  # over CPython's 4,300-digit int() limit
#: id -> stored bytes: every kind of payload a peer client or a --raw push can leave
POISON = {
    "deep": DEEP,
    "deep-object": b'{"a":' * 1500 + b"1" + b"}" * 1500,
    "deep-600": b"[" * 600 + b"]" * 600,  # under orjson's limit and the stdlib's, over rq-cli's
    "huge-int": HUGE_INT,
    "not-utf8": b"\xff\xfe\x00binary\x80",
    "nul": b'{"a": "x\\u0000y"}',
    "raw-nul": b"a\x00b",
    "empty": b"",
    "long": b'"' + b"x" * 300_000 + b'"',
    "text": b"plain text, not JSON",
    "nan": b"NaN",
    "bad-unicode-escape": b'"\\ud800"',
    "trailing-vt": b"0\x0b",
}


def rq(*args: str, url: str, stdin: bytes = b"", config: Path | None = None,
       timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    head = ["--config", str(config)] if config is not None else ["--no-config"]
    return subprocess.run([sys.executable, "-m", "rq_cli", *head, "--url", url, *args],
                          input=stdin, capture_output=True, timeout=timeout, env=env)


def clean_exit(proc: subprocess.CompletedProcess[bytes], *codes: int) -> str:
    """The command's stderr, after checking it ended on purpose (no bug, no traceback)."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode in (codes or DOCUMENTED), (proc.returncode, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    return err


def lines(proc: subprocess.CompletedProcess[bytes]) -> list[dict]:
    # (integers kept as their digits: int() refuses over 4,300 of them)
    return [json.loads(line, parse_int=str) for line in proc.stdout.splitlines()]


def stored_bytes(row: dict) -> bytes:
    """What a JSON line of lease/peek says the stored data is (module docstring of render)."""
    if "data_b64" in row:
        return base64.b64decode(row["data_b64"])
    if row.get("raw"):
        return row["data"].encode("utf-8", "surrogatepass")
    return json.dumps(row["data"], separators=(",", ":")).encode()


def peer_push(r: redis.Redis, prefix: str, items: dict[str, bytes]) -> None:
    """Items as a peer client writes them: the data key and an LPUSH, nothing else."""
    k = Keys(prefix)
    for item_id, data in items.items():
        r.set(k.item(item_id), data)
        r.lpush(k.queue, item_id)


def test_every_reader_shows_poison_a_peer_stored(server_url: str, r: redis.Redis) -> None:
    peer_push(r, "pz", POISON)
    for state in ("pending", "all"):
        proc = rq("peek", "pz", "--state", state, "-n", "100", url=server_url)
        clean_exit(proc, 0)
        rows = {row["id"]: row for row in lines(proc)}
        assert set(rows) == set(POISON)
        for item_id in ("deep", "deep-object", "not-utf8", "raw-nul", "text", "long"):
            assert stored_bytes(rows[item_id]) == POISON[item_id], item_id
        assert rows["deep"]["raw"] is True  # shown as its text: no decoder reads it
        assert rows["huge-int"]["data"] == {"n": "7" * 5000}  # JSON: embedded as it is
        assert "raw" not in rows["huge-int"]
    for item_id in POISON:
        proc = rq("peek", "pz", "--id", item_id, url=server_url)
        clean_exit(proc, 0)
        assert [row["id"] for row in lines(proc)] == [item_id]
    # tables on a terminal are drawn by the same code; --raw gives the bytes back
    proc = rq("peek", "pz", "--id", "deep", "--raw", url=server_url)
    clean_exit(proc, 0)
    assert proc.stdout == DEEP + b"\n"


def test_a_lease_hands_out_every_poison_item_and_strands_none(
        server_url: str, r: redis.Redis) -> None:
    peer_push(r, "pz", POISON)
    proc = rq("lease", "pz", "--count", str(len(POISON)), url=server_url)
    clean_exit(proc, 0)
    leased = lines(proc)
    assert sorted(row["id"] for row in leased) == sorted(POISON)
    # nothing is in processing that was not handed out
    assert sorted(i.decode() for i in r.lrange(Keys("pz").processing, 0, -1)) == sorted(POISON)
    for row in leased:
        if row["id"] not in ("nul", "nan", "huge-int", "bad-unicode-escape", "trailing-vt",
                             "empty"):
            assert stored_bytes(row) == POISON[row["id"]], row["id"]
    # the readers of processing, and the lease lines piped into complete
    clean_exit(rq("peek", "pz", "--state", "processing", url=server_url), 0)
    clean_exit(rq("holders", "pz", url=server_url), 0)
    done = rq("complete", "pz", "-", url=server_url, stdin=proc.stdout)
    clean_exit(done, 0)
    assert {row["outcome"] for row in lines(done)} == {"completed"}
    assert r.llen(Keys("pz").processing) == 0


def test_a_worker_runs_every_poison_item(server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    peer_push(r, "pw", POISON)
    out = tmp_path / "seen"
    proc = rq("work", "pw", "--max-items", str(len(POISON)), "--idle-exit", "5", "--",
              "sh", "-c", f'cat > /dev/null && echo "$RQ_ITEM_ID" >> {out}', url=server_url,
              timeout=90)
    clean_exit(proc, 0)
    assert sorted(out.read_text().split("\n")[:-1]) == sorted(POISON)
    k = Keys("pw")
    assert r.llen(k.processing) == 0 and r.llen(k.queue) == 0


def test_push_refuses_json_nested_too_deep_and_stores_nothing_after_it(
        server_url: str, r: redis.Redis) -> None:
    proc = rq("push", "pp", "-", url=server_url, stdin=b'{"ok": 1}\n' + DEEP + b"\n[2]\n")
    err = clean_exit(proc, DATA)
    assert "line 2" in err and "nested deeper than 512" in err and "1 item" in err, err
    k = Keys("pp")
    assert [r.get(k.item(i.decode())) for i in r.lrange(k.queue, 0, -1)] == [b'{"ok": 1}']
    # --raw stores it as it is, and it reads back byte for byte
    clean_exit(rq("push", "pp", "--raw", "-", url=server_url, stdin=DEEP + b"\n"), 0)
    proc = rq("peek", "pp", "-n", "10", url=server_url)
    assert DEEP in [stored_bytes(row) for row in lines(proc)]


def test_exported_poison_reimports_byte_for_byte(server_url: str, r: redis.Redis) -> None:
    peer_push(r, "src", POISON)
    export = rq("peek", "src", "-n", "100", url=server_url)
    clean_exit(export, 0)
    imported = rq("push", "dst", "--with-ids", "-", url=server_url, stdin=export.stdout)
    clean_exit(imported, 0)
    src, dst = Keys("src"), Keys("dst")
    for item_id, data in POISON.items():
        assert r.get(dst.item(item_id)) == r.get(src.item(item_id)) == data, item_id
    # data_b64 of a deep text: stored as its bytes
    line = json.dumps({"id": "b64", "data_b64": base64.b64encode(DEEP).decode()}).encode()
    clean_exit(rq("push", "b64q", "--with-ids", "-", url=server_url, stdin=line + b"\n"), 0)
    assert r.get(Keys("b64q").item("b64")) == DEEP


def test_filters_read_huge_integers_and_pass_over_deep_payloads(
        server_url: str, r: redis.Redis) -> None:
    peer_push(r, "pf", POISON)
    proc = rq("peek", "pf", "--match", "n > `1`", "-n", "100", url=server_url)
    err = clean_exit(proc, 0)
    assert [row["id"] for row in lines(proc)] == ["huge-int"]
    # deep/not-JSON payloads never match and are counted, not a crash
    assert "not JSON" in err, err
    # the same filters over dead items: requeue-dead and purge
    q = WorkQueue(r, "pf")
    leased = q.lease(len(POISON))
    q.fail([i.id for i in leased], dead=True, error="poison")
    moved = rq("requeue-dead", "pf", "--match", "n > `1`", url=server_url)
    clean_exit(moved, 0)
    assert [row["id"] for row in lines(moved)] == ["huge-int"]
    purged = rq("purge", "pf", "--state", "dead", "--match", "a == `1`", "--yes",
                url=server_url)
    clean_exit(purged, 0, NOTHING)
    assert r.zcard(Keys("pf").dead) == len(POISON) - 1


def test_a_peer_dead_info_that_is_not_rq_clis_json_is_shown_without_details(
        server_url: str, r: redis.Redis) -> None:
    k = Keys("pd")
    r.set(k.dead_item("x"), b"{}")
    r.zadd(k.dead, {"x": 1000})
    r.hset(k.dead_info, "x", b"{not json")
    proc = rq("peek", "pd", "--state", "dead", url=server_url)
    clean_exit(proc, 0)
    assert [(row["id"], row["data"]) for row in lines(proc)] == [("x", {})]


def test_a_config_nested_too_deep_is_a_config_error(server_url: str, tmp_path: Path) -> None:
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    err = clean_exit(rq("stats", "q", url=server_url, config=config), CONFIG)
    assert err.count("\n") == 1 and "nested too deep" in err, err


# -- names that would collide with another queue's keys ---------------------------------------
@pytest.mark.parametrize("args", [
    ("push", "job:lease", "{}"),
    ("push", "job:leased_by_session", "{}"),
    ("push", "job:dead_item", "{}"),
    ("push", "job:tenant", "{}"),
    ("push", "job:item", "{}"),
    ("push", "a:item:b", "{}"),
    ("push", "job", "--id", "queue", "{}"),
    ("push", "job", "--id", "processing", "{}"),
    ("push", "job", "--id", "x:dead_info", "{}"),
    ("push", "job", "--id", "lease:7", "{}"),
    ("push", "tt", "--tenant", "queue", "{}"),
    ("cancel", "dd", "queue"),
    ("lease", "job:lease"),
    ("stats", "q:dead_item:x"),
])
def test_names_that_would_collide_are_refused_and_nothing_is_stored(
        server_url: str, r: redis.Redis, args: tuple[str, ...]) -> None:
    r.set("sentinel", b"1")
    err = clean_exit(rq(*args, url=server_url), USAGE)
    assert err.count("\n") == 1 and err.startswith("rq-cli: ") and "cannot be used" in err, err
    assert [k for k in r.scan_iter()] == [b"sentinel"]


def test_the_overwrite_of_the_issue_cannot_happen(server_url: str, r: redis.Redis) -> None:
    """``push job --id queue`` then ``lease job`` overwrote queue ``job:lease``'s pending list:
    now the prefix and the id are both refused, and a legitimate queue next to it is intact."""
    clean_exit(rq("push", "job", "{}", url=server_url), 0)
    clean_exit(rq("push", "job", "--id", "queue", "{}", url=server_url), USAGE)
    clean_exit(rq("push", "job:lease", "{}", url=server_url), USAGE)
    clean_exit(rq("lease", "job", url=server_url), 0)
    assert r.type("job:lease:queue") == b"none"


def test_tenants_in_a_with_ids_line_and_a_config_are_held_to_the_rule(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    line = b'{"id": "a", "data": 1, "tenant": "processing"}\n'
    err = clean_exit(rq("push", "t", "--with-ids", "-", url=server_url, stdin=line), DATA)
    assert "line 1" in err and "cannot be used" in err
    line = b'{"id": "counters", "data": 1}\n'
    clean_exit(rq("push", "t", "--with-ids", "-", url=server_url, stdin=line), DATA)
    assert r.dbsize() == 0
    config = tmp_path / "rq-cli.toml"
    config.write_text('[queues.bad]\nprefix = "x:lease"\n')
    err = clean_exit(rq("stats", "bad", url=server_url, config=config), CONFIG)
    assert "rq-cli.toml line 2" in err and "cannot be used" in err, err
    config.write_text('[queues.bad]\nprefix = "a\\u0000b"\n')
    err = clean_exit(rq("stats", "bad", url=server_url, config=config), CONFIG)
    assert "control character" in err, err


def test_legitimate_names_keep_working(r: redis.Redis) -> None:
    for prefix in ("jobs", "myapp:{emails}", "a:b:c", "queue", "lease", "x:leases", "{t}:items"):
        assert prefix_collision(prefix) is None, prefix
        WorkQueue(r, prefix)
    for name in ("user:42", "a:b", "queued", "item", "x-lease:1", "ünï"):
        assert name_collision(name) is None, name
    q = WorkQueue(r, "ok")
    assert [p.added for p in q.push([NewItem(b"1", "user:42")])] == [True]


def test_the_rule_comes_from_the_key_schema(r: redis.Redis) -> None:
    """Every family of the schema and every fixed key name is covered, with no list of its
    own: a family as a prefix segment, a fixed name as an id or tenant."""
    k = Keys("P")
    for family in NAME_FAMILIES:
        assert prefix_collision(f"P:{family}") is not None
        with pytest.raises(UsageError, match="cannot be used"):
            WorkQueue(r, f"P:{family}:x")
    families = {k.item("i"), k.lease("i"), k.leased_by_session("i"), k.dead_item("i"),
                k.tenant_queue("i")}
    assert {key.split(":")[1] for key in families} == set(NAME_FAMILIES)
    for name in FIXED_NAMES:
        assert name_collision(name) is not None
        assert getattr(k, name) == f"P:{name}"  # a fixed key of queue P is P:<name>
    with pytest.raises(UsageError, match="NUL"):
        WorkQueue(r, "q").push([NewItem(b"1", "a\0b")])
