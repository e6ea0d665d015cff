"""Export and import are lossless: ``peek a | push b --with-ids -`` copies bytes.

- plain text prints as ``"data": "<text>", "raw": true``; the JSON string ``"<text>"`` as
  ``"data": "<text>"``; bytes that are not UTF-8 as ``data_b64``; JSON with whitespace
  around it or a line break in it as marked text: each re-imports to its exact bytes.
- ``peek --state all`` covers every state (pending, processing, delayed, dead).
- ``peek`` streams in pages: peak memory at 10x the items stays within 1.25x.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]


def stored(r: redis.Redis, prefix: str) -> dict[str, bytes]:
    """id -> data of every item of the queue (its data keys)."""
    out = {}
    for key in r.scan_iter(match=f"{prefix}:item:*", count=1000):
        out[key.decode().split(":item:", 1)[1]] = r.get(key)
    return out


def copy(cli, source: str, target: str, *args: str) -> None:
    peek = cli("peek", source, "-n", "1000", *args)
    assert peek.exit_code == 0, peek
    push = cli("push", target, "--with-ids", "-", input=peek.stdout_bytes)
    assert push.exit_code == 0, push


@pytest.mark.parametrize("data, line_has", [
    (b"plain text", '"data":"plain text","raw":true'),
    (b'"plain text"', '"data":"plain text",'),
    (b"\xff\xfe", '"data_b64":"//4="'),
    (b'  {"a": 1}  ', '"raw":true'),
    (b'{"a":\n1}', '"raw":true'),
    (b'{"b": 1.50, "a": [ ]}', '"data":{"b": 1.50, "a": [ ]}'),
    (b"", '"data":"","raw":true'),
])
def test_each_kind_of_data_round_trips(cli, r: redis.Redis, data: bytes,
                                       line_has: str) -> None:
    WorkQueue(r, "a").push([NewItem(data, id="x")])
    assert line_has in cli("peek", "a").stdout
    copy(cli, "a", "b")
    assert stored(r, "b") == {"x": data}


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payloads=st.lists(st.binary(max_size=64), min_size=1, max_size=8))
def test_peek_push_with_ids_reproduces_any_bytes(cli, r: redis.Redis,
                                                 payloads: list[bytes]) -> None:
    r.flushdb()
    items = [NewItem(data, id=f"i{n}") for n, data in enumerate(payloads)]
    WorkQueue(r, "a").push(items)
    copy(cli, "a", "b")
    assert stored(r, "b") == stored(r, "a") == {i.id: i.data for i in items}


def test_peek_state_all_covers_every_state_and_copies_them(cli, r: redis.Redis) -> None:
    wq = WorkQueue(r, "a")
    wq.push([NewItem(b'{"n":1}', id="p"), NewItem(b"leased", id="l"),
             NewItem(b"dies", id="d")])
    wq.push([NewItem(b"\x00later", id="w")], delay=600)
    # lease from the head: p, l, d were pushed in that order
    held = wq.lease(count=3, lease_seconds=600)
    wq.fail([i for i in held if i.id == "d"], dead=True, error="bad")
    wq.fail([i for i in held if i.id == "p"], retry_in=0)  # back in line, pending
    run = cli("peek", "a", "--state", "all", "-n", "100")
    assert run.exit_code == 0, run
    states = {row["id"]: row["state"] for row in run.json}
    assert states == {"p": "pending", "l": "processing", "w": "delayed", "d": "dead"}
    assert [row["state"] for row in run.json] == ["pending", "processing", "delayed", "dead"]
    copy(cli, "a", "b", "--state", "all")
    every = {i.id: i.data for s in ("pending", "processing", "delayed", "dead")
             for i in wq.peek(s, count=10)}
    assert stored(r, "b") == every  # (each a pending item of b)
    assert len(every) == 4 and every["d"] == b"dies"
    # -n counts items in all
    assert len(cli("peek", "a", "--state", "all", "-n", "3").json) == 3


def test_peek_state_all_table(cli, r: redis.Redis) -> None:
    wq = WorkQueue(r, "a")
    wq.push([NewItem(b"{}", id="p")])
    wq.push([NewItem(b"{}", id="w")], delay=600)
    run = cli("peek", "a", "--state", "all", tty=True)
    assert run.exit_code == 0
    assert "state" in run.stdout and "pending" in run.stdout and "delayed" in run.stdout


def peak_rss_kb(args: list[str]) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--no-config", *args],
                                stdout=sink, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else b""
        if proc.stderr:
            proc.stderr.close()
    return usage.ru_maxrss


def test_peek_of_a_big_queue_runs_in_flat_memory(server_url: str, r: redis.Redis) -> None:
    """peek -n 200000 peaks within 1.25x of peek -n 20000 (it held every item before)."""
    wq = WorkQueue(r, "big")
    payload = b'{"to": "someone@example.com", "body": "' + b"x" * 200 + b'"}'
    for _ in wq.push_batches(payload for _ in range(200_000)):
        pass
    small = peak_rss_kb(["--url", server_url, "peek", "big", "-n", "20000"])
    large = peak_rss_kb(["--url", server_url, "peek", "big", "-n", "200000"])
    assert large <= small * 1.25, (small, large)
