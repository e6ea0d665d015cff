"""Reliability: hostile input, each case handled on purpose.

Every case is either accepted intact, or refused with a clear error and a documented exit
code; in every case the stored data is unchanged, or exactly what was accepted. "Unchanged"
is checked byte for byte: :func:`snapshot` DUMPs every key of the database before and after.

The CLI runs as ``python -m rq_cli`` in a subprocess with pipes (real stdin bytes, real
exit codes, stdout and stderr apart). Exit codes (rq_cli.errors.ExitCode): 2 usage, 3 nothing,
65 bad input, 69 server unavailable or refusing (auth, wrong key type), 78 config.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from servers import ServerProcess

from rq_cli.core.contract.keys import Keys
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

MakeServer = Callable[..., ServerProcess]
USAGE, NOTHING, DATA, UNAVAILABLE, CONFIG = 2, 3, 65, 69, 78
PUSH_COUNT = re.compile(r"^rq-cli: push: \d+ items stored")


def rq(*args: str, url: str | None = None, stdin: bytes = b"", config: Path | None = None,
       timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    """``python -m rq_cli [--url URL] [--config F | --no-config] ARGS``, bounded in time."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    head = ["--config", str(config)] if config is not None else ["--no-config"]
    if url is not None:
        head += ["--url", url]
    return subprocess.run([sys.executable, "-m", "rq_cli", *head, *args], input=stdin,
                          capture_output=True, timeout=timeout, env=env)


def error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The one error line of a refused command (``push -`` may first report its count)."""
    err = proc.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if not PUSH_COUNT.match(line)]
    assert len(lines) == 1 and lines[0].startswith("rq-cli: "), err
    return lines[0]


def usage_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    """A usage error (exit 2): Typer's 'Error: ...' block or an rq-cli line; no traceback."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == USAGE, (proc.returncode, err)
    assert "Traceback" not in err, err
    assert "Error: " in err or err.startswith("rq-cli: "), err
    return err


def snapshot(r: redis.Redis, *, but: tuple[str, ...] = ()) -> dict[bytes, bytes]:
    """Every key of the database (but those named) and its serialized value (DUMP), for
    byte-exact comparison."""
    return {key: r.dump(key) for key in r.scan_iter(count=1000) if key.decode() not in but}


def jsonl(proc: subprocess.CompletedProcess[bytes]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def stored_queue(r: redis.Redis, prefix: str) -> list[bytes]:
    """The data of the pending items, in the order they will be leased."""
    k = Keys(prefix)
    return [r.get(k.item(i.decode())) for i in reversed(r.lrange(k.queue, 0, -1))]


# =============================================================================================
# stdin lines: invalid JSON, blank lines, non-UTF-8, CRLF
# =============================================================================================
def test_invalid_json_line_is_reported_by_number_and_what_came_before_is_stored(
        server_url: str, r: redis.Redis) -> None:
    lines = b'{"a": 1}\n\n   \n"two"\n{"a":\n{"after": true}\n'
    proc = rq("push", "j", "-", url=server_url, stdin=lines)
    assert proc.returncode == DATA
    line = error_line(proc)
    assert "line 5" in line and "JSON" in line, line
    assert "--raw" in proc.stderr.decode() or "JSON" in line
    assert [row["added"] for row in jsonl(proc)] == [True, True]
    assert stored_queue(r, "j") == [b'{"a": 1}', b'"two"']  # exactly the lines before it


@pytest.mark.parametrize("bad, why", [
    (b"NaN", "not JSON"), (b"Infinity", "not JSON"), (b"{'single': 1}", "quotes"),
    (b"[1, 2", "unclosed"), (b"1 2", "two values"), (b'"unterminated', "string"),
    (b'{"a": 1}}', "extra brace"),
])
def test_each_kind_of_invalid_json_is_refused_and_nothing_stored(
        server_url: str, r: redis.Redis, bad: bytes, why: str) -> None:
    proc = rq("push", "j", "-", url=server_url, stdin=bad + b"\n")
    assert proc.returncode == DATA, (why, proc.stderr)
    assert "line 1" in error_line(proc)
    assert snapshot(r) == {}
    # as an argument too
    proc = rq("push", "j", bad.decode(), url=server_url)
    assert proc.returncode == DATA, (why, proc.stderr)
    error_line(proc)
    assert snapshot(r) == {}


def test_blank_lines_are_skipped_but_counted_and_crlf_is_not_data(
        server_url: str, r: redis.Redis) -> None:
    proc = rq("push", "b", "-", url=server_url,
              stdin=b'\n1\r\n  \n\t\n"x y"\n\r\n{"k": [1, 2]}\r\n\n')
    assert proc.returncode == 0, proc.stderr
    assert stored_queue(r, "b") == [b"1", b'"x y"', b'{"k": [1, 2]}']
    # a bad line after blank ones: the number is the file's line number
    proc = rq("push", "b2", "-", url=server_url, stdin=b"\n\n\n1\n\n\nbad\n")
    assert proc.returncode == DATA
    assert "line 7" in error_line(proc)
    assert stored_queue(r, "b2") == [b"1"]
    # only blank lines: nothing to do, nothing stored
    before = snapshot(r)
    proc = rq("push", "b3", "-", url=server_url, stdin=b"\n \n\r\n")
    assert proc.returncode in (0, NOTHING), proc.stderr
    assert snapshot(r) == before


def test_non_utf8_is_refused_as_json_and_kept_byte_exact_with_raw(
        server_url: str, r: redis.Redis) -> None:
    payload = b"caf\xe9 \xff\xfe\x00 end"  # latin-1, invalid UTF-8, a NUL
    proc = rq("push", "u", "-", url=server_url, stdin=b'"ok"\n' + payload + b"\n")
    assert proc.returncode == DATA
    line = error_line(proc)
    assert "line 2" in line and "UTF-8" in line, line
    assert stored_queue(r, "u") == [b'"ok"']

    proc = rq("push", "raw", "--raw", "-", url=server_url, stdin=payload + b"\n")
    assert proc.returncode == 0, proc.stderr
    assert stored_queue(r, "raw") == [payload]
    # peek prints it as base64, which push --with-ids reads back: export/import is exact
    peek = rq("peek", "raw", "--json", url=server_url)
    assert peek.returncode == 0
    row = jsonl(peek)[0]
    assert "data" not in row and row["data_b64"]
    again = rq("push", "copy", "--with-ids", "-", url=server_url, stdin=peek.stdout)
    assert again.returncode == 0, again.stderr
    assert stored_queue(r, "copy") == [payload]
    # and a worker gets the exact bytes
    lease = rq("lease", "raw", "--raw", url=server_url)
    assert lease.returncode == 0
    assert lease.stdout == payload + b"\n"

    # a non-UTF-8 id on stdin is refused with its line number; nothing completed
    before = snapshot(r)
    proc = rq("complete", "raw", "-", url=server_url, stdin=b"\xff\xfe\n")
    assert proc.returncode == DATA
    assert "line 1" in error_line(proc)
    assert snapshot(r) == before


@pytest.mark.timeout(120)
def test_64_mib_payload_is_stored_and_leased_intact(server_url: str, r: redis.Redis) -> None:
    size = 64 * 1024 * 1024
    body = bytes(range(0x61, 0x7B)) * (size // 26 + 1)
    payload = b'"' + body[: size - 2] + b'"'  # one JSON string, exactly 64 MiB
    assert len(payload) == size
    digest = hashlib.sha256(payload).digest()
    proc = rq("push", "big", "-", url=server_url, stdin=payload + b"\n", timeout=90)
    assert proc.returncode == 0, proc.stderr[-500:]
    (item_id,) = [row["id"] for row in jsonl(proc)]
    stored = r.get(Keys("big").item(item_id))
    assert stored is not None and len(stored) == size
    assert hashlib.sha256(stored).digest() == digest
    del stored
    lease = rq("lease", "big", "--raw", url=server_url, timeout=90)
    assert lease.returncode == 0, lease.stderr[-500:]
    assert hashlib.sha256(lease.stdout[:-1]).digest() == digest and lease.stdout[-1:] == b"\n"
    done = rq("complete", "big", item_id, url=server_url)
    assert done.returncode == 0, done.stderr
    # only the counters and their history (taken by the push) are left
    assert sorted(r.keys()) == [b"big:counters", b"big:history", b"big:history_hourly"]


# =============================================================================================
# ids with spaces, colons, newlines and glob characters (ids that would name another
# queue's keys, such as "x:item:y", are refused: tests/core/test_reliability_poison.py)
# =============================================================================================
HOSTILE_IDS = ["a b", " padded ", "a:b", "x:itemy:y", "nl\nx", "cr\rx", "tab\tx", "*", "?",
               "[ab]", "back\\slash", "ünïcødé ✓", "-", "--flag", "{tag}", "%s%n", "i" * 4096]


def test_ids_with_hostile_characters_round_trip(server_url: str, r: redis.Redis) -> None:
    lines = b"".join(json.dumps({"id": i, "data": {"n": n}}).encode() + b"\n"
                     for n, i in enumerate(HOSTILE_IDS))
    proc = rq("push", "ids", "--with-ids", "-", url=server_url, stdin=lines)
    assert proc.returncode == 0, proc.stderr
    assert [row["id"] for row in jsonl(proc)] == HOSTILE_IDS
    k = Keys("ids")
    for n, item_id in enumerate(HOSTILE_IDS):
        assert r.get(k.item(item_id)) == json.dumps({"n": n}).encode(), item_id
    assert r.llen(k.queue) == len(HOSTILE_IDS)
    # an id given as an argument
    proc = rq("push", "ids", "--id", "arg id: *?", '"by argument"', url=server_url)
    assert proc.returncode == 0, proc.stderr
    assert r.get(k.item("arg id: *?")) == b'"by argument"'

    # a deep clean sees nothing stray among them (its SCAN and lists agree); it changes
    # nothing but the history it snapshots (README "stats --history")
    history = (k.history, k.history_hourly)
    before = snapshot(r, but=history)
    clean = rq("clean", "ids", "--deep", "--grace", "0", "--json", url=server_url)
    assert clean.returncode == 0, clean.stderr
    report = jsonl(clean)[0]
    assert (report["recovered"], report["scanned"]) == (0, len(HOSTILE_IDS) + 1)
    assert snapshot(r, but=history) == before
    # peek shows every id exactly
    peek = rq("peek", "ids", "-n", "100", "--json", url=server_url)
    assert sorted(row["id"] for row in jsonl(peek)) == sorted([*HOSTILE_IDS, "arg id: *?"])
    # lease | complete, as a shell pipeline would: every one completed, nothing left
    lease = rq("lease", "ids", "-n", "100", url=server_url)
    assert lease.returncode == 0
    done = rq("complete", "ids", "-", url=server_url, stdin=lease.stdout)
    assert done.returncode == 0, done.stderr
    assert sorted(row["id"] for row in jsonl(done)) == sorted([*HOSTILE_IDS, "arg id: *?"])
    assert {row["outcome"] for row in jsonl(done)} == {"completed"}
    assert [key for key in r.scan_iter()
            if key.decode() not in (k.counters, *history)] == []


@pytest.mark.parametrize("bad_id, why", [
    ("", "empty"), ("i" * 4097, "too long"), (5, "not a string"), (None, "null"),
])
def test_bad_ids_are_refused_with_the_line_and_earlier_lines_kept(
        server_url: str, r: redis.Redis, bad_id: object, why: str) -> None:
    lines = (b'{"id": "ok-1", "data": 1}\n{"id": "ok-2", "data": 2}\n'
             + json.dumps({"id": bad_id, "data": 3}).encode() + b"\n"
             + b'{"id": "after", "data": 4}\n')
    proc = rq("push", "bad", "--with-ids", "-", url=server_url, stdin=lines)
    if bad_id is None:  # a null id means "make one up", like a missing id
        assert proc.returncode == 0, proc.stderr
        assert len(stored_queue(r, "bad")) == 4
        return
    assert proc.returncode == DATA, (why, proc.stderr)
    assert "line 3" in error_line(proc)
    assert stored_queue(r, "bad") == [b"1", b"2"]
    before = snapshot(r)
    proc = rq("complete", "bad", "-", url=server_url,
              stdin=json.dumps({"id": bad_id}).encode() + b"\n")
    assert proc.returncode == DATA, (why, proc.stderr)
    assert snapshot(r) == before


# =============================================================================================
# prefixes with glob characters: SCAN must not match other queues
# =============================================================================================
# Each hostile prefix, and a queue its *unescaped* SCAN pattern would also match.
# (Not covered, because no escaping can help: a queue named "P:item:x" shares its keys with
# queue P's items whose ids start with "x:item:", an ambiguity of the peer key schema.)
GLOB_PREFIXES = {"g*": "gzz", "g?": "gz", "g[ab]": "ga", "g\\": "g", "h[!x]": "hy",
                 "h\\*": "h\\x", "sp ace*": "sp ace:x"}


def test_glob_prefixes_never_touch_other_queues(server_url: str, r: redis.Redis) -> None:
    def fill(prefix: str, pending: int, strays: int) -> None:
        WorkQueue(r, prefix).push([NewItem(json.dumps([prefix, n]).encode(), f"p{n}")
                                   for n in range(pending)])
        for n in range(strays):  # data key in no list, as a crashed peer client leaves it
            r.set(Keys(prefix).item(f"s{n}"), json.dumps([prefix, "stray", n]))

    for neighbour in GLOB_PREFIXES.values():
        fill(neighbour, 4, 3)
    neighbours = snapshot(r)
    for prefix in GLOB_PREFIXES:
        fill(prefix, 5, 2)

    for prefix in GLOB_PREFIXES:
        stats = rq("stats", prefix, "--json", url=server_url)
        assert stats.returncode == 0, stats.stderr
        assert jsonl(stats)[0]["pending"] == 5
        clean = rq("clean", prefix, "--deep", "--grace", "0", "--json", url=server_url)
        assert clean.returncode == 0, clean.stderr
        report = jsonl(clean)[0]
        assert (report["scanned"], report["recovered"]) == (7, 2), (prefix, report)
        dry = rq("purge", prefix, "--state", "all", "--dry-run", "--json", url=server_url)
        assert dry.returncode == 0, dry.stderr
        assert jsonl(dry)[0]["total"] == 7, (prefix, jsonl(dry))
        purge = rq("purge", prefix, "--state", "all", "--yes", "--json", url=server_url)
        assert purge.returncode == 0, purge.stderr
        assert jsonl(purge)[0]["total"] == 7, (prefix, jsonl(purge))
    # Every hostile queue is gone but for its audit trail (the purge, recorded), and every
    # neighbour is byte for byte as it was.
    left = snapshot(r)
    assert set(left) - set(neighbours) == {Keys(p).audit.encode() for p in GLOB_PREFIXES}
    assert {k: left[k] for k in neighbours} == neighbours
    # discovery lists the neighbours by their exact names
    found = rq("queues", "--json", url=server_url)
    assert found.returncode == 0, found.stderr
    names = {row["prefix"] for row in jsonl(found)}
    assert set(GLOB_PREFIXES.values()) <= names


# =============================================================================================
# keys of the wrong type where a queue's list should be
# =============================================================================================
FOREIGN = {
    "string": lambda r, key: r.set(key, b"another app's value"),
    "hash": lambda r, key: r.hset(key, b"field", b"value"),
}

# (name, args, stdin, which of the queue's keys the command must read or write)
COMMANDS = [
    ("push", ["push", "w", '{"a": 1}'], b"", {"queue"}),
    ("push-stdin", ["push", "w", "-"], b'{"a": 1}\n{"a": 2}\n', {"queue"}),
    ("push-front", ["push", "w", "--front", "--id", "x", "1"], b"", {"queue"}),
    ("lease", ["lease", "w"], b"", {"queue"}),
    ("lease-wait", ["lease", "w", "--wait", "0.3"], b"", {"queue"}),
    ("stats", ["stats", "w"], b"", {"queue", "processing"}),
    ("peek", ["peek", "w"], b"", {"queue"}),
    ("peek-processing", ["peek", "w", "-s", "processing"], b"", {"processing"}),
    ("clean", ["clean", "w"], b"", {"processing"}),
    ("clean-deep", ["clean", "w", "--deep", "--grace", "0"], b"", {"queue", "processing"}),
    ("purge", ["purge", "w", "--yes"], b"", {"queue"}),
    ("purge-processing", ["purge", "w", "-s", "processing", "--yes"], b"", {"processing"}),
    ("complete", ["complete", "w", "nope"], b"", set()),
    ("requeue-dead", ["requeue-dead", "w", "--all"], b"", set()),
]


def check_wrong_type_outcome(r: redis.Redis, proc: subprocess.CompletedProcess[bytes],
                             before: dict[bytes, bytes], foreign_key: str, must_refuse: bool
                             ) -> None:
    """Refused: exit 69, one clear line, nothing changed. Else: the foreign key untouched."""
    if proc.returncode == UNAVAILABLE or must_refuse:
        assert proc.returncode == UNAVAILABLE, (proc.returncode, proc.stderr)
        line = error_line(proc)
        assert "WRONGTYPE" in line or "type" in line, line
        after = snapshot(r)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert not changed, f"refused with exit 69, yet changed {changed}"
    else:
        assert proc.returncode in (0, NOTHING), (proc.returncode, proc.stderr)
        assert r.dump(foreign_key) == before[foreign_key.encode()]


@pytest.mark.parametrize("role, kind", [("queue", "hash"), ("processing", "string")])
@pytest.mark.parametrize("name, args, stdin, needs", [
    pytest.param(*c, id=c[0]) for c in COMMANDS])
def test_foreign_key_where_the_queue_list_should_be(
        server_url: str, r: redis.Redis, kind: str, role: str, name: str, args: list[str],
        stdin: bytes, needs: set[str]) -> None:
    """Another application owns ``w:queue`` (or ``w:processing``): a prefix collision."""
    key = getattr(Keys("w"), role)
    FOREIGN[kind](r, key)
    before = snapshot(r)
    proc = rq(*args, url=server_url, stdin=stdin)
    check_wrong_type_outcome(r, proc, before, key, must_refuse=role in needs)


# A live queue whose list is replaced by another type later (an operator's mistake, a
# colliding application): item "a" leased, "b" and "c" pending. (name, role, args, stdin)
CLOBBERED = [
    ("push", "queue", ["push", "w", "--id", "n", "1"], b""),
    ("push-stdin", "queue", ["push", "w", "-"], b"1\n2\n"),
    ("lease", "queue", ["lease", "w"], b""),
    ("lease", "processing", ["lease", "w"], b""),
    ("complete", "processing", ["complete", "w", "a"], b""),
    ("fail", "processing", ["fail", "w", "a", "--retry-in", "0"], b""),
    ("fail-dead", "processing", ["fail", "w", "a", "--dead"], b""),
    ("clean", "processing", ["clean", "w", "--grace", "0"], b""),
    ("purge-all", "queue", ["purge", "w", "--state", "all", "--yes"], b""),
    ("purge-all", "processing", ["purge", "w", "--state", "all", "--yes"], b""),
]
# Scripts are not transactions: Redis keeps the writes a script made before a command in it
# failed, so every writing script checks the types of the queue's keys before writing.


@pytest.mark.parametrize("name, role, args, stdin", [
    pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in CLOBBERED])
def test_clobbered_queue_list_is_refused_without_partial_writes(
        server_url: str, r: redis.Redis, name: str, role: str, args: list[str],
        stdin: bytes) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(f'"{i}"'.encode(), i) for i in ("a", "b", "c")])
    assert [i.id for i in wq.lease()] == ["a"]
    key = getattr(Keys("w"), role)
    r.delete(key)
    FOREIGN["string"](r, key)
    before = snapshot(r)
    proc = rq(*args, url=server_url, stdin=stdin)
    must = not (name.startswith("fail") or name == "clean")  # those may not need the key
    check_wrong_type_outcome(r, proc, before, key, must_refuse=must or role == "processing")


# =============================================================================================
# zero or negative lease times, absurd counts and durations
# =============================================================================================
REFUSED = [
    ["lease", "q", "--lease", "0"],
    ["lease", "q", "--lease", "-1"],
    ["lease", "q", "--lease", "0.0001"],
    ["lease", "q", "--lease", "-0"],
    ["lease", "q", "--lease", "nan"],
    ["lease", "q", "--lease", "inf"],
    ["lease", "q", "--lease", "1e12"],
    ["lease", "q", "--count", "0"],
    ["lease", "q", "--count", "-1"],
    ["lease", "q", "--count", "10001"],
    ["lease", "q", "--count", "99999999999999999999999"],
    ["lease", "q", "--count", "1.5"],
    ["lease", "q", "--wait", "-1"],
    ["lease", "q", "--wait", "inf"],
    ["extend", "q", "ITEM", "--lease", "0"],
    ["extend", "q", "ITEM", "--lease", "-5"],
    ["peek", "q", "-n", "-1"],
    ["peek", "q", "-n", "99999999999999999999999"],
    ["push", "q", "--delay", "-1", "1"],
    ["push", "q", "--delay", "nan", "1"],
    ["push", "q", "--expire", "0", "1"],
    ["push", "q", "--expire", "-1", "1"],
    ["push", "q", "--expire", "inf", "1"],
    ["fail", "q", "ITEM", "--retry-in", "-1"],
    ["fail", "q", "ITEM", "--retry-in", "inf"],
    ["clean", "q", "--grace", "-1"],
    ["clean", "q", "--grace", "inf"],
    ["requeue-dead", "q", "--limit", "-1"],
    ["requeue-dead", "q", "--older-than", "-1"],
    ["requeue-dead", "q", "--older-than", "nan"],
]


@pytest.fixture
def leased_queue(server_url: str, r: redis.Redis) -> tuple[str, dict[bytes, bytes]]:
    """Queue q: one leased item (its id returned), one pending; and the snapshot."""
    wq = WorkQueue(r, "q")
    wq.push([NewItem(b"1", "leased"), NewItem(b"2", "pending")])
    assert [i.id for i in wq.lease()] == ["leased"]
    return "leased", snapshot(r)


@pytest.mark.parametrize("args", REFUSED, ids=[" ".join(a) for a in REFUSED])
def test_bad_times_and_counts_are_refused_and_change_nothing(
        server_url: str, r: redis.Redis, leased_queue: tuple[str, dict[bytes, bytes]],
        args: list[str]) -> None:
    item_id, before = leased_queue
    proc = rq(*[item_id if a == "ITEM" else a for a in args], url=server_url)
    usage_error(proc)
    assert snapshot(r) == before


def test_tiny_lease_is_a_real_lease_that_runs_out(server_url: str, r: redis.Redis) -> None:
    assert rq("push", "t", "--id", "x", "1", url=server_url).returncode == 0
    lease = rq("lease", "t", "--lease", "0.001", url=server_url)
    assert lease.returncode == 0
    time.sleep(0.05)
    extend = rq("extend", "t", "-", url=server_url, stdin=lease.stdout)
    assert extend.returncode == 4, extend.stderr  # the lease is lost, and says so
    clean = rq("clean", "t", "--grace", "0", "--json", url=server_url)
    assert jsonl(clean)[0]["recovered"] == 1
    again = rq("lease", "t", url=server_url)
    assert json.loads(again.stdout)["attempt"] == 2


def test_huge_but_finite_retry_delay_reports_a_sane_time(
        server_url: str, r: redis.Redis, leased_queue: tuple[str, dict[bytes, bytes]]) -> None:
    item_id, before = leased_queue
    proc = rq("fail", "q", item_id, "--retry-in", "1e300", url=server_url)
    if proc.returncode == USAGE:  # refusing it is fine
        assert snapshot(r) == before
        return
    assert proc.returncode == 0, proc.stderr
    retry_at = jsonl(proc)[0]["retry_at"]
    assert retry_at > time.time(), f"retry_at {retry_at} is in the past"


def test_huge_finite_delays_are_accepted_or_refused_consistently(
        server_url: str, r: redis.Redis) -> None:
    proc = rq("push", "d", "--id", "far", "--delay", "1e300", "1", url=server_url)
    if proc.returncode == USAGE:
        assert snapshot(r) == {}
        return
    assert proc.returncode == 0, proc.stderr
    peek = jsonl(rq("peek", "d", "-s", "delayed", "--json", url=server_url))
    assert peek[0]["id"] == "far" and peek[0]["due_at"] > time.time()
    assert rq("lease", "d", url=server_url).returncode == NOTHING  # not due
    assert jsonl(rq("stats", "d", "--json", url=server_url))[0]["delayed"] == 1


# =============================================================================================
# config files with unknown keys or wrong types: exit 78, naming the file, line and key
# =============================================================================================
BAD_CONFIGS = [
    ("urll = 'redis://127.0.0.1:1/0'\n", ["line 1", "urll", "did you mean 'url'"]),
    ("[defaults]\nlease_secondz = 5\n", ["line 2", "lease_secondz", "lease_seconds"]),
    ("[queues.q]\nprefix = 'q'\nmax_atempts = 3\n", ["line 3", "max_atempts", "max_attempts"]),
    ("[defaults]\nmax_attempts = 'five'\n", ["line 2", "max_attempts"]),
    ("[defaults]\nmax_attempts = 2.5\n", ["max_attempts"]),
    ("[defaults]\nmax_attempts = true\n", ["max_attempts"]),
    ("[defaults]\nmax_attempts = -1\n", ["max_attempts"]),
    ("[defaults]\nlease_seconds = 0\n", ["lease_seconds"]),
    ("[defaults]\nlease_seconds = -3\n", ["lease_seconds"]),
    ("[defaults]\nlease_seconds = nan\n", ["lease_seconds"]),
    ("[defaults]\nlease_seconds = '300'\n", ["lease_seconds"]),
    ("[defaults]\ngrace_seconds = -1\n", ["grace_seconds"]),
    ("[defaults]\nlayout = 'v9'\n", ["layout"]),
    ("[defaults]\nrequeue = 'middle'\n", ["requeue"]),
    ("[queues.q]\nprefix = 5\n", ["prefix"]),
    ("[queues.q]\nprefix = ''\n", ["prefix"]),
    ("[queues.q]\nurl = ['a']\n", ["url"]),
    ("[queues]\nq = 'text'\n", ["queues.q"]),
    ("queues = 3\n", ["queues"]),
    ("defaults = 'x'\n", ["defaults"]),
    ("url = \n", ["invalid TOML"]),
    ("[defaults\n", ["invalid TOML"]),
    ("\xff\xfe = 1\n", ["UTF-8"]),
]
NON_FINITE_CONFIGS = [
    ("[defaults]\nlease_seconds = inf\n", ["lease_seconds"]),
    ("[defaults]\ngrace_seconds = inf\n", ["grace_seconds"]),
    ("[defaults]\nretry_backoff = inf\n", ["retry_backoff"]),
    ("[defaults]\nretry_backoff_max = inf\n", ["retry_backoff_max"]),
]


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rq-cli.toml"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    return path


@pytest.mark.parametrize("text, expected", BAD_CONFIGS, ids=[repr(c[0]) for c in BAD_CONFIGS])
def test_bad_config_exits_78_naming_file_and_key(
        server_url: str, r: redis.Redis, tmp_path: Path, text: str, expected: list[str]) -> None:
    path = write_config(tmp_path, text)
    proc = rq("push", "q", "1", url=server_url, config=path)
    assert proc.returncode == CONFIG, (proc.returncode, proc.stderr)
    line = error_line(proc)
    assert "rq-cli.toml" in line, line
    for word in expected:
        assert word in line, (word, line)
    assert snapshot(r) == {}


def test_bad_config_stops_every_command(server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    path = write_config(tmp_path, "[defaults]\nlease_secondz = 5\n")
    for args in (["stats", "q"], ["lease", "q"], ["complete", "q", "x"], ["clean", "q"],
                 ["peek", "q"], ["purge", "q", "--yes"], ["requeue-dead", "q", "--all"],
                 ["config", "show"], ["queues"]):
        proc = rq(*args, url=server_url, config=path)
        assert proc.returncode == CONFIG, (args, proc.returncode, proc.stderr)
        assert "lease_secondz" in error_line(proc)
    assert snapshot(r) == {}


@pytest.mark.parametrize("text, expected", NON_FINITE_CONFIGS,
                         ids=[repr(c[0]) for c in NON_FINITE_CONFIGS])
def test_non_finite_durations_in_config_exit_78(
        server_url: str, r: redis.Redis, tmp_path: Path, text: str, expected: list[str]) -> None:
    wq = WorkQueue(r, "q")
    wq.push([NewItem(b"1", "x")])
    assert wq.lease()
    before = snapshot(r)
    path = write_config(tmp_path, text)
    for args in (["lease", "q"], ["clean", "q"], ["fail", "q", "x"]):
        proc = rq(*args, url=server_url, config=path)
        assert proc.returncode == CONFIG, (args, proc.returncode, proc.stderr)
        line = error_line(proc)
        assert all(word in line for word in expected), line
    assert snapshot(r) == before


def test_config_errors_are_found_before_any_connection(tmp_path: Path) -> None:
    path = write_config(tmp_path, "url = 'redis://127.0.0.1:1/0'\n[defaults]\nbogus = 1\n")
    started = time.monotonic()
    proc = rq("stats", "q", config=path)
    assert proc.returncode == CONFIG, proc.stderr
    assert "bogus" in error_line(proc)
    assert time.monotonic() - started < 5


# =============================================================================================
# a server that refuses us
# =============================================================================================
def test_server_refusing_auth_exits_69_and_changes_nothing(make_server: MakeServer) -> None:
    srv = make_server(requirepass="right-pw-1")
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", "limited", "on", ">limited-pw", "~*", "-@all",
                          "+ping", "+hello", "+auth", "+client")
    base = f"127.0.0.1:{srv.port}/0"
    cases = [
        (f"redis://{base}", "authentication failed"),
        (f"redis://:wrong-pw-2@{base}", "authentication failed"),
        (f"redis://nobody:right-pw-1@{base}", "authentication failed"),
        (f"redis://limited:limited-pw@{base}", "permission denied"),
    ]
    before = snapshot(admin)
    for url, expected in cases:
        for args, stdin in ((["push", "q", "-"], b"1\n2\n"), (["lease", "q"], b""),
                            (["clean", "q", "--deep"], b"")):
            proc = rq(*args, url=url, stdin=stdin)
            assert proc.returncode == UNAVAILABLE, (url, args, proc.returncode, proc.stderr)
            line = error_line(proc)
            assert expected in line, (url, line)
            assert "pw" not in line, line  # no password in the message
    assert snapshot(admin) == before
    ok = rq("push", "q", "1", url=f"redis://:right-pw-1@{base}")
    assert ok.returncode == 0, ok.stderr
    admin.close()
