"""Reliability: the server crashes, restarts or hangs.

- :func:`test_acknowledged_pushes_survive_server_sigkill_with_aof`: with ``appendonly yes``
  and ``appendfsync always``, every push acknowledged before a SIGKILL of the server is
  there after the restart, with its data; the batch in flight is all or nothing; the same
  client works again after the restart.
- :func:`test_commands_fail_fast_while_the_server_is_down`: every command run while the
  server is down exits 69 within seconds with one line on stderr, and works after restart.
- :func:`test_commands_give_up_on_a_hung_server`: a server that accepts connections but
  never answers (SIGSTOP) makes commands exit 69 in bounded time, not hang.
- :func:`test_bulk_push_killed_part_way_resumes_without_duplicates`: ``rq-cli push q -``
  from a big file whose server is killed part-way exits 69, says on stderr how many items
  were stored (and those are there after the restart), and re-running the same input with
  ``--id-from-data`` or ``--with-ids`` stores the rest without duplicates.
- :func:`test_bulk_push_interrupted_or_killed_resumes_without_duplicates`: the same when
  rq-cli itself is stopped by Ctrl-C (exit 130, the count on stderr) or SIGKILL.
- ``test_lost_reply_of_*``: a loopback proxy (:class:`ReplyDropper`) lets a command reach the
  server and throws its answer away. A lost lease reply holds its items for one lease, then
  clean recovers them; a lost complete or push answer must not come back as a wrong one.

The CLI runs as ``python -m rq_cli`` in a subprocess, with pipes, as a script would run it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import ServerProcess

from rq_cli.connection.connect import connect
from rq_cli.core.contract.keys import Keys
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

MakeServer = Callable[..., ServerProcess]
AOF = {"appendonly": "yes", "appendfsync": "always"}


def rq(url: str, *args: str, stdin: bytes | None = None, stdin_file: Path | None = None,
       timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m rq_cli --url URL --no-config ARGS`` with pipes; bounded in time."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    cmd = [sys.executable, "-m", "rq_cli", "--url", url, "--no-config", *args]
    if stdin_file is not None:
        with open(stdin_file, "rb") as f:
            return subprocess.run(cmd, stdin=f, capture_output=True, timeout=timeout, env=env)
    return subprocess.run(cmd, input=stdin if stdin is not None else b"", capture_output=True,
                          timeout=timeout, env=env)


PUSH_COUNT = re.compile(r"^rq-cli: push: \d+ items stored")


def one_line_error(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The error of a failed command: one line starting with 'rq-cli: ', no traceback.

    ``push -`` first says how many items it stored (on purpose, even 0): that line is allowed.
    """
    err = proc.stderr.decode()
    lines = [line for line in err.splitlines() if not PUSH_COUNT.match(line)]
    assert len(lines) == 1 and lines[0].startswith("rq-cli: "), err
    assert "Traceback" not in err
    return lines[0]


# =============================================================================================
# 2. Server SIGKILL and restart with AOF
# =============================================================================================
CYCLES = 3


@pytest.mark.timeout(90)
def test_acknowledged_pushes_survive_server_sigkill_with_aof(make_server: MakeServer) -> None:
    srv = make_server(**AOF)
    client = connect(srv.url, timeout=2.0)  # the CLI's own client options (retry once)
    wq = WorkQueue(client, "aof")
    k = wq.keys
    rng = random.Random(5)
    acked: dict[str, bytes] = {}
    in_doubt: list[list[str]] = []
    serial = 0

    for cycle in range(CYCLES):
        stop = threading.Event()
        failure: list[BaseException] = []

        def pusher(cycle: int, stop: threading.Event, failure: list[BaseException]) -> None:
            nonlocal serial
            deadline = time.monotonic() + 20.0
            while not stop.is_set() and time.monotonic() < deadline:
                batch = []
                for _ in range(rng.randint(1, 300)):  # at most one script call
                    serial += 1
                    item_id = f"c{cycle}-{serial:07d}"
                    batch.append(NewItem(f'{{"n":{serial}}}'.encode(), item_id))
                try:
                    results = wq.push(batch)
                except Exception as exc:  # the server went away: this batch is in doubt
                    in_doubt.append([i.id for i in batch])
                    failure.append(exc)
                    return
                assert all(p.added for p in results)
                acked.update((i.id, i.data) for i in batch)

        before = len(acked)
        thread = threading.Thread(target=pusher, args=(cycle, stop, failure), daemon=True)
        thread.start()
        time.sleep(rng.uniform(0.3, 0.8))
        srv.kill()  # SIGKILL: no shutdown, no final AOF rewrite
        thread.join(10)
        assert not thread.is_alive(), "the pusher hangs on a dead server"
        assert failure, "the pusher never noticed the server died"
        assert len(acked) > before + 100, "too few pushes acknowledged to mean anything"

        srv.start()  # same port, same directory: the AOF is replayed
        # The same client (and WorkQueue) works again after the restart.
        assert wq.push([NewItem(b'"probe"', f"probe-{cycle}")], front=True)[0].added
        assert wq.lease()[0].id == f"probe-{cycle}"
        assert wq.complete([f"probe-{cycle}"])[0].outcome == "completed"

        stored_ids = {key[k.item_key_offset:].decode()
                      for key in client.scan_iter(match=k.item_pattern, count=1000)}
        missing = [i for i in acked if i not in stored_ids]
        assert not missing, f"{len(missing)} acknowledged pushes lost, e.g. {missing[:3]}"
        pipe = client.pipeline(transaction=False)
        for item_id in acked:
            pipe.get(k.item(item_id))
        assert pipe.execute() == list(acked.values()), "stored data differs from pushed data"
        doubt = in_doubt[-1]
        kept = [i for i in doubt if i in stored_ids]
        assert len(kept) in (0, len(doubt)), \
            f"a batch (one script) was half applied: {len(kept)} of {len(doubt)} stored"
        if kept:
            acked.update((i, client.get(k.item(i))) for i in kept)
        # Lists and counters agree with the items: nothing duplicated, nothing unlisted.
        queue = client.lrange(k.queue, 0, -1)
        assert len(queue) == len(set(queue)) == len(stored_ids) == len(acked)
        assert {q.decode() for q in queue} == stored_ids
        pushed = int(client.hget(k.counters, "pushed"))
        assert pushed == len(acked) + cycle + 1  # + the probes, completed since

    print(f"\n{len(acked)} items pushed over {CYCLES} server kills; in-doubt batches "
          f"{[len(d) for d in in_doubt]}, kept {sum(1 for d in in_doubt for i in d if i in acked)}")
    client.close()


# Every command, while the server is down; (args, stdin).
DOWN_COMMANDS: list[tuple[list[str], bytes | None]] = [
    (["push", "q", '{"a": 1}'], None),
    (["push", "q", "-"], b'{"a": 1}\n{"a": 2}\n'),
    (["lease", "q"], None),
    (["lease", "q", "--wait", "2"], None),
    (["complete", "q", "some-id"], None),
    (["fail", "q", "some-id"], None),
    (["extend", "q", "some-id"], None),
    (["stats", "q"], None),
    (["stats"], None),
    (["peek", "q"], None),
    (["queues"], None),
    (["clean", "q"], None),
    (["clean", "q", "--deep"], None),
    (["requeue-dead", "q", "--all"], None),
    (["purge", "q", "--yes"], None),
    (["pause", "q"], None),
    (["resume", "q"], None),
]


@pytest.mark.timeout(300)  # (a dozen start-ups: seconds each on a loaded machine)
def test_commands_fail_fast_while_the_server_is_down(make_server: MakeServer) -> None:
    srv = make_server(**AOF)
    assert rq(srv.url, "push", "q", "--id", "keep", '"kept"').returncode == 0
    srv.kill()
    for args, stdin in DOWN_COMMANDS:
        # (what "at once" means on this machine now: a command that asks no server, run
        # just before; a retried connection would add its back-off seconds to it)
        started = time.monotonic()
        assert rq(srv.url, "config", "show").returncode == 0
        start_up = time.monotonic() - started
        started = time.monotonic()
        proc = rq(srv.url, *args, stdin=stdin, timeout=60)
        took = time.monotonic() - started
        assert proc.returncode == 69, (args, proc.returncode, proc.stderr)
        line = one_line_error(proc)
        assert "cannot connect" in line and srv.url in line, (args, line)
        if args[0] in ("stats", "queues", "clean"):  # each queue shown; failed: an error row
            row = json.loads(proc.stdout)
            assert "cannot connect" in row["error"], row
        else:
            assert proc.stdout == b"", (args, proc.stdout)
        # (a refused connection is reported at once: the rest is start-up, seconds on a
        # loaded machine; a hung server's timeout is the next test's)
        assert took < 3 * start_up + 5.0, \
            f"{args} took {took:.1f} s to report a dead server (start-up {start_up:.1f} s)"

    srv.start()
    assert rq(srv.url, "stats", "q").returncode == 0
    leased = rq(srv.url, "lease", "q")
    assert leased.returncode == 0
    row = json.loads(leased.stdout)
    assert (row["id"], row["data"]) == ("keep", "kept")  # acknowledged before the crash
    done = rq(srv.url, "complete", "q", "-", stdin=leased.stdout)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "completed"


@pytest.mark.timeout(90)
def test_commands_give_up_on_a_hung_server(make_server: MakeServer) -> None:
    srv = make_server()
    assert rq(srv.url, "push", "q", "1").returncode == 0
    assert srv.pid is not None
    os.kill(srv.pid, signal.SIGSTOP)  # accepts connections (the kernel does), never answers
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
        started = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", srv.url,
                                   "--no-config", *args], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for args in (["stats", "q"], ["push", "q", "2"], ["lease", "q"])]
        outs = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise AssertionError("a command hangs on a server that does not answer") \
                    from None
            outs.append((proc.returncode, err.decode()))
        took = time.monotonic() - started
    finally:
        os.kill(srv.pid, signal.SIGCONT)
    for code, err in outs:
        assert code == 69, (code, err)
        assert len(err.splitlines()) == 1 and err.startswith("rq-cli: "), err
        assert "Timeout" in err or "timed out" in err, err
    assert took < 30, f"took {took:.1f} s"
    # The push may or may not have happened (the reply was lost); nothing else changed.
    client = srv.client()
    assert client.llen("q:queue") in (1, 2)
    assert client.llen("q:processing") in (0, 1)
    client.close()


@pytest.mark.timeout(90)
def test_reads_on_a_hung_server_say_nothing_changed(make_server: MakeServer) -> None:
    """stats --format prometheus, stats --check and doctor only read: on a hung server they
    say that nothing was changed, never that an outcome is unknown (issue 29)."""
    srv = make_server()
    assert rq(srv.url, "push", "q", "1").returncode == 0
    assert srv.pid is not None
    os.kill(srv.pid, signal.SIGSTOP)  # accepts connections (the kernel does), never answers
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
        procs = [subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", srv.url,
                                   "--no-config", *args], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for args in (["stats", "q", "--format", "prometheus"],
                              ["stats", "q", "--check", "--max-pending", "5"],
                              ["doctor", "q"])]
        outs = [proc.communicate(timeout=40) for proc in procs]
    finally:
        os.kill(srv.pid, signal.SIGCONT)
    codes = [proc.returncode for proc in procs]
    assert codes == [0, 6, 6], (codes, outs)
    for out, err in outs:
        said = (out + err).decode()
        assert "outcome is unknown" not in said, said
        assert "only reads, so nothing was changed" in said, said


# =============================================================================================
# 4. A bulk push from a file, server killed part-way, then re-run
# =============================================================================================
BULK_LINES = 150_000
KILL_AFTER = 30_000  # items in the queue when the server (or rq-cli) is killed


def write_input(path: Path, mode: str) -> list[tuple[str, bytes]]:
    """The input file; returns (id, data) per line as the queue should store it."""
    rows = []
    with open(path, "wb") as f:
        for n in range(BULK_LINES):
            data = json.dumps({"n": n, "to": f"user{n}@example.com"}).encode()
            if mode == "with-ids":
                item_id = f"job-{n:06d}"
                f.write(b'{"id": "' + item_id.encode() + b'", "data": ' + data + b"}\n")
            else:
                item_id = hashlib.sha256(data).hexdigest()
                f.write(data + b"\n")
            rows.append((item_id, data))
    return rows


def push_until_server_killed(srv: ServerProcess, source: Path, tmp_path: Path, queue: str,
                             *args: str, before_kill: Callable[[Any], None] | None = None,
                             ) -> tuple[int, str, bytes]:
    """``rq-cli push QUEUE - ARGS`` from ``source``; once KILL_AFTER items are in line, the
    server is SIGKILLed (``before_kill`` first gets a client of it). Returns rq-cli's exit
    code, stderr and stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
    watcher = srv.client()
    out_path, err_path = tmp_path / "out.jsonl", tmp_path / "err.txt"
    with open(source, "rb") as stdin, open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", srv.url,
                                 "--no-config", "push", queue, "-", *args],
                                stdin=stdin, stdout=out, stderr=err, env=env)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                if watcher.llen(f"{queue}:queue") >= KILL_AFTER:
                    break
                time.sleep(0.005)
            assert proc.poll() is None, "the push finished before the server could be killed"
            if before_kill is not None:
                before_kill(watcher)
            srv.kill()
            code = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    watcher.close()
    return code, err_path.read_text(), out_path.read_bytes()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["id-from-data", "with-ids"])
def test_bulk_push_killed_part_way_resumes_without_duplicates(
        make_server: MakeServer, tmp_path: Path, mode: str) -> None:
    srv = make_server(**AOF)
    source = tmp_path / "items.jsonl"
    rows = write_input(source, mode)
    flag = "--id-from-data" if mode == "id-from-data" else "--with-ids"
    code, stderr, stdout = push_until_server_killed(srv, source, tmp_path, "bulk", flag)
    assert code == 69, (code, stderr)
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert all(line.startswith("rq-cli: ") for line in lines), stderr
    assert ("cannot connect" in lines[-1] or "lost the connection" in lines[-1]
            or "Connection" in lines[-1]), stderr
    match = re.search(r"(\d+) items stored", stderr)
    assert match, f"stderr does not say how many items were stored: {stderr!r}"
    reported = int(match.group(1))
    printed = [json.loads(line) for line in stdout.splitlines()]
    assert len(printed) == reported, (len(printed), reported)
    assert all(p["added"] for p in printed)
    assert [p["id"] for p in printed] == [i for i, _ in rows[:reported]]

    srv.start()
    client = srv.client()
    k = Keys("bulk")
    stored = client.llen(k.queue)
    assert stored >= reported > 0, (stored, reported)
    # Every item reported stored is there, with its data, after the crash and restart.
    pipe = client.pipeline(transaction=False)
    for item_id, _ in rows[:reported]:
        pipe.get(k.item(item_id))
    assert pipe.execute() == [d for _, d in rows[:reported]]
    # What is stored is a prefix of the input: batches are applied in order, whole.
    assert {q.decode() for q in client.lrange(k.queue, 0, -1)} == {i for i, _ in rows[:stored]}

    again = rq(srv.url, "push", "bulk", "-", flag, stdin_file=source, timeout=90)
    assert again.returncode == 0, again.stderr
    results = [json.loads(line) for line in again.stdout.splitlines()]
    assert len(results) == BULK_LINES
    assert [r["id"] for r in results] == [i for i, _ in rows]
    assert sum(1 for r in results if not r["added"]) == stored  # the first run's items
    queue = client.lrange(k.queue, 0, -1)
    assert len(queue) == len(set(queue)) == BULK_LINES, "duplicates or missing items"
    # items + queue list + enqueued hash + counters + their history (per minute, per hour)
    assert client.dbsize() == BULK_LINES + 5
    counters = {f.decode(): int(v) for f, v in client.hgetall(k.counters).items()}
    assert counters == {"pushed": BULK_LINES, "duplicates": stored}
    sample = random.Random(1).sample(rows, 500)
    assert [client.get(k.item(i)) for i, _ in sample] == [d for _, d in sample]
    client.close()
    print(f"\n{mode}: {reported} reported stored, {stored} actually stored at the kill")


@pytest.mark.timeout(90)
def test_bulk_push_transactions_killed_part_way_are_whole_or_absent(
        make_server: MakeServer, tmp_path: Path) -> None:
    """A plain ``push -`` (new random ids: a transaction per batch, core/pushing/bulk.py) with the
    server SIGKILLed part-way and restarted from its AOF: every batch is there whole (its
    data, line entries and count: the v7 ids carry the push time) or not at all, and what
    rq-cli said is stored is."""
    srv = make_server(**AOF)
    source = tmp_path / "items.jsonl"
    rows = write_input(source, "id-from-data")  # (plain JSON lines; no ids given here)

    def went_through_transactions(watcher: Any) -> None:
        assert watcher.info("commandstats").get("cmdstat_exec", {}).get("calls", 0) > 1

    code, stderr, stdout = push_until_server_killed(
        srv, source, tmp_path, "plain", before_kill=went_through_transactions)
    assert code == 69, (code, stderr)
    match = re.search(r"(\d+) items stored", stderr)
    assert match, stderr
    reported = int(match.group(1))
    printed = [json.loads(line) for line in stdout.splitlines()]
    assert len(printed) == reported > 0 and all(p["added"] for p in printed)

    srv.start()
    client = srv.client()
    k = Keys("plain")
    queue = [q.decode() for q in client.lrange(k.queue, 0, -1)]
    stored = len(queue)
    assert stored >= reported and stored % 1000 == 0, (stored, reported)  # whole batches
    assert len(set(queue)) == stored
    items = {key[k.item_key_offset:].decode()
             for key in client.scan_iter(match=k.item_pattern, count=1000)}
    assert items == set(queue)  # no batch half there: data exactly for the ids in line
    assert not client.exists(k.enqueued)  # (the v7 ids carry the push time)
    assert int(client.hget(k.counters, "pushed")) == stored
    # in line in input order (the oldest at the right end): the first `stored` lines, each
    # with its data
    in_order = queue[::-1]
    assert in_order[:reported] == [p["id"] for p in printed]
    pipe = client.pipeline(transaction=False)
    for item_id in in_order:
        pipe.get(k.item(item_id))
    assert pipe.execute() == [d for _, d in rows[:stored]]
    client.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_bulk_push_interrupted_or_killed_resumes_without_duplicates(
        server: ServerProcess, server_url: str, tmp_path: Path, sig: signal.Signals) -> None:
    """rq-cli itself dies (SIGKILL) or is interrupted (Ctrl-C) part-way through a bulk push."""
    source = tmp_path / "items.jsonl"
    rows = write_input(source, "id-from-data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
    client = server.client()
    k = Keys("bulk")
    baseline = int(client.info("clients")["connected_clients"])
    out_path, err_path = tmp_path / "out.jsonl", tmp_path / "err.txt"
    with open(source, "rb") as stdin, open(out_path, "wb") as out_f, \
            open(err_path, "wb") as err_f:
        proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server_url,
                                 "--no-config", "push", "bulk", "-", "--id-from-data"],
                                stdin=stdin, stdout=out_f, stderr=err_f, env=env)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and client.llen(k.queue) < KILL_AFTER:
                assert proc.poll() is None, "the push finished before it could be stopped"
                time.sleep(0.005)
            assert client.llen(k.queue) >= KILL_AFTER, "the push did not get going"
            proc.send_signal(sig)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out, err = out_path.read_bytes(), err_path.read_bytes()
    # Scripts the dead process had already sent still run: the server closes its connection
    # only after reading them all, so wait for that before counting.
    for _ in range(500):  # at most 5 s
        if int(client.info("clients")["connected_clients"]) <= baseline:
            break
        time.sleep(0.01)
    stored = client.llen(k.queue)
    assert 0 < stored < BULK_LINES
    # complete lines only: a SIGKILL may cut the last one short
    printed = [json.loads(line) for line in out.split(b"\n")[:-1]]
    assert len(printed) <= stored  # what it confirmed is stored (maybe more, in flight)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, (proc.returncode, err)
        text = err.decode()
        assert "Traceback" not in text
        match = re.search(r"(\d+) items stored", text)
        assert match and int(match.group(1)) == len(printed), text
        assert len(text.splitlines()) == 1, text  # one line: what was stored, and what to do
        assert text.startswith("rq-cli: interrupted: push: exactly "), text
    else:
        assert proc.returncode == -signal.SIGKILL
    again = rq(server_url, "push", "bulk", "-", "--id-from-data", "--summary",
               stdin_file=source, timeout=90)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert (summary["items"], summary["added"], summary["duplicates"]) == (
        BULK_LINES, BULK_LINES - stored, stored)
    queue = client.lrange(k.queue, 0, -1)
    assert len(queue) == len(set(queue)) == BULK_LINES
    assert {q.decode() for q in queue} == {i for i, _ in rows}
    client.close()


# =============================================================================================
# A lost reply: the server ran the command, the connection broke before the answer came back
# =============================================================================================
class ReplyDropper:
    """A loopback TCP proxy in front of a server that, once armed, lets the next request
    containing one of ``triggers`` (a script call: EVALSHA, or FCALL of a hot script on a
    server with Functions) through, waits for the server's answer, throws it away and closes
    the client's connection: the command ran, the client never hears of it. Every other byte
    is forwarded unchanged. Threads are daemons and every socket times out."""

    def __init__(self, port: int, triggers: tuple[bytes, ...] = (b"EVALSHA", b"FCALL")
                 ) -> None:
        import socket

        self.target = ("127.0.0.1", port)
        self.triggers = triggers
        self.armed = False
        self.dropped = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        import socket

        while not self.stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                continue
            server = socket.create_connection(self.target, timeout=10)
            client.settimeout(10)
            doomed = threading.Event()
            threading.Thread(target=self._up, args=(client, server, doomed), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, doomed),
                             daemon=True).start()

    def _up(self, client: Any, server: Any, doomed: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                with self.lock:
                    if self.armed and any(t in data for t in self.triggers):
                        self.armed = False
                        doomed.set()
                server.sendall(data)
        except OSError:
            pass

    def _down(self, server: Any, client: Any, doomed: threading.Event) -> None:
        import socket

        try:
            while data := server.recv(65536):
                if doomed.is_set():  # the answer to the doomed request: lose it
                    self.dropped += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        for sock in (client, server):  # shutdown first: it wakes the other pump at once
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.fixture
def dropper(server: ServerProcess, r: Any) -> Iterator[ReplyDropper]:
    # (a server without Functions refuses the CLI's first FCALL as an unknown command: that
    # reply is not the one to lose)
    functions = int(str(r.info("server")["redis_version"]).split(".")[0]) >= 7
    proxy = ReplyDropper(server.port, (b"EVALSHA", b"FCALL") if functions else (b"EVALSHA",))
    yield proxy
    proxy.close()


def warm_scripts(r: Any) -> None:
    """Load the scripts into the server's cache (and the library, where the server has
    Functions), so the CLI's first script call runs at once."""
    wq = WorkQueue(r, "warm")
    wq.push([NewItem(b"1", "w")])
    wq.lease()
    wq.complete(["w"])
    wq.fail(["nothing"])
    r.delete("warm:counters")


def test_lost_reply_of_complete_is_not_reported_as_missing(
        server_url: str, r: Any, dropper: ReplyDropper) -> None:
    warm_scripts(r)
    wq = WorkQueue(r, "lost")
    wq.push([NewItem(b'"job"', "job")])
    wq.lease()
    dropper.armed = True
    proc = rq(dropper.url, "complete", "lost", "job")
    assert dropper.dropped == 1, "the fault was not injected"
    assert r.get("lost:item:job") is None  # this very call completed the item
    # Exit 0 (completed) or 69 (the connection broke: outcome unknown) are both true; exit 3
    # "no such live item (already completed, or never pushed)" tells the worker its own
    # successful complete failed.
    assert proc.returncode in (0, 69), (proc.returncode, proc.stdout, proc.stderr)


def test_lost_reply_of_push_is_not_reported_as_a_duplicate(
        server_url: str, r: Any, dropper: ReplyDropper) -> None:
    warm_scripts(r)
    dropper.armed = True
    proc = rq(dropper.url, "push", "lost", "--id", "new-item", '"data"')
    assert dropper.dropped == 1, "the fault was not injected"
    assert r.get("lost:item:new-item") == b'"data"'
    if proc.returncode == 0:
        assert json.loads(proc.stdout)["added"] is True, proc.stdout  # it was this call's add
    else:
        assert proc.returncode == 69, (proc.returncode, proc.stderr)
    counters = {k.decode(): int(v) for k, v in r.hgetall("lost:counters").items()}
    assert counters.get("duplicates", 0) == 0, counters


def test_lost_reply_of_lease_holds_items_one_lease_then_clean_recovers_them(
        server_url: str, r: Any, dropper: ReplyDropper) -> None:
    """Inherent to any lease over a network: items whose lease reply was lost are held by
    nobody until the lease runs out; then clean puts them back, and nothing is lost."""
    warm_scripts(r)
    wq = WorkQueue(r, "lost")
    wq.push([NewItem(f'"{n}"'.encode(), f"i{n}") for n in range(6)])
    dropper.armed = True
    proc = rq(dropper.url, "lease", "lost", "--count", "3", "--lease", "1")
    assert dropper.dropped == 1, "the fault was not injected"
    assert proc.returncode in (0, 69), proc.stderr
    printed = [json.loads(line) for line in proc.stdout.splitlines()]
    orphans = {i.decode() for i in r.lrange("lost:processing", 0, -1)} - {
        p["id"] for p in printed}
    assert len(orphans) == 3  # leased by the call whose answer was lost
    if printed:
        done = rq(server_url, "complete", "lost", "-", stdin=proc.stdout)
        assert done.returncode == 0, done.stderr
    time.sleep(1.2)
    clean = rq(server_url, "clean", "lost", "--grace", "0", "--json")
    assert json.loads(clean.stdout)["recovered"] == 3
    rest = rq(server_url, "lease", "lost", "--count", "10")
    again = [json.loads(line) for line in rest.stdout.splitlines()]
    assert {a["id"] for a in again} | {p["id"] for p in printed} == {f"i{n}" for n in range(6)}
    assert {a["attempt"] for a in again if a["id"] in orphans} == {2}
    assert rq(server_url, "complete", "lost", "-", stdin=rest.stdout).returncode == 0
    assert int(r.hget("lost:counters", "completed")) == 6
