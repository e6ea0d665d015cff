"""Reliability of ``rq-cli work`` at its edges (its seams included).

Real ``python -m rq_cli work`` processes against real servers the tests restart, stop
(SIGSTOP) and kill:

- a server restart under a worker: it rides the outage out (one ``unreachable`` and one
  ``outage`` line), keeps its running command going, and every item, pushed before and
  after, is done exactly once; ``--max-outage`` ends it with exit 69 after draining; a
  worker that never reached its server exits 69 at once, with or without ``--name``;
- a hung server (SIGSTOP longer than the lease): the lease is taken back, same attempt, and
  the command is not stopped;
- the outcome logged and counted for an exit 0 is the one the server gave;
- ``--name`` held by a live worker is refused (exit 75) or waited for;
- commands get no password, and ``ps`` shows none;
- an id with a NUL byte is dead-lettered as unrunnable, and the other items go on;
- ``-c 2`` prefixes a last line without a newline, and escapes an id's control characters
  in the prefix and the log; a second Ctrl-C returns items without
  counting a failure or spending an attempt; a paused queue is said to be paused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from jsonschema import Draft202012Validator
from servers import ServerProcess
from waiting import wait_for

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.output.shapes import SCHEMAS, schema

MakeServer = Callable[..., ServerProcess]
pytestmark = pytest.mark.timeout(90)


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    return {**base, **extra}


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_worker_left() -> Iterator[None]:
    """A test that fails half-way leaves no worker behind (SIGKILL: its guard does the rest)."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)


def start(url: str | None, *args: str, extra_env: dict[str, str] | None = None,
          config: Path | None = None) -> subprocess.Popen[str]:
    head = ["--config", str(config)] if config else ["--no-config"]
    if url is not None:
        head += ["--url", url]
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", *head, "work", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(**(extra_env or {})))
    _STARTED.append(proc)
    return proc


_WORK_LOG = Draft202012Validator(schema(SCHEMAS["work"]))


def log(stderr: str) -> list[dict[str, Any]]:
    """The worker's JSON log lines, each checked against its schema (rq_cli/schemas)."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    for line in lines:
        errors = list(_WORK_LOG.iter_errors(line))
        assert not errors, (line, errors[0].message)
    return lines


def items(stderr: str) -> dict[str, str]:
    return {e["id"]: e["outcome"] for e in log(stderr) if "outcome" in e and "event" not in e}


def events(stderr: str, name: str) -> list[dict[str, Any]]:
    return [e for e in log(stderr) if e.get("event") == name]


def unique(name: str) -> str:
    """A --name of its own (name locks are per host: tests running at once must not share)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def runs(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


def finish(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[str, str]:
    if proc.poll() is None:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return out, err


# -- outages ---------------------------------------------------------------------------------
def test_worker_rides_out_a_server_restart_and_does_each_item_once(
        make_server: MakeServer, tmp_path: Path) -> None:
    srv = make_server(appendonly="yes", appendfsync="always")
    client = srv.client()
    wq = WorkQueue(client, "rs")
    done = tmp_path / "done"
    wq.push([NewItem(b"{}", f"before{n}") for n in range(5)])
    # "slow" runs across the restart: it ends while the server is down
    script = f'[ "$RQ_ITEM_ID" = slow ] && sleep 1.5; echo "$RQ_ITEM_ID" >> {done}'
    proc = start(srv.url, "rs", "--lease", "30", "--", "sh", "-c", script)
    wait_for(lambda: len(runs(done)) == 5)
    wq.push([NewItem(b"{}", "slow")])
    wait_for(lambda: wq.stats().processing == 1)
    srv.stop()
    time.sleep(2.0)  # "slow" exits meanwhile: its complete waits for the server
    assert proc.poll() is None, "the worker exited during the outage"
    assert "slow" in runs(done)
    srv.start()
    wq = WorkQueue(srv.client(), "rs")
    wq.push([NewItem(b"{}", f"after{n}") for n in range(5)])
    wait_for(lambda: wq.stats().counters.get("completed", 0) == 11)
    assert proc.poll() is None
    _, err = finish(proc)
    assert proc.returncode == 0, err
    assert set(runs(done).values()) == {1} and len(runs(done)) == 11, runs(done)
    stats = wq.stats()
    assert (stats.pending, stats.processing, stats.counters["completed"]) == (0, 0, 11)
    assert len(events(err, "unreachable")) == 1, err
    (outage,) = events(err, "outage")
    assert outage["end"] > outage["start"] and 0.5 < outage["duration_s"] < 30
    assert items(err)["slow"] == "completed"
    (ended,) = events(err, "exit")
    assert ended["completed"] == 11
    assert len([line for line in err.splitlines() if "outage" in line]) == 1  # one per outage
    assert "Traceback" not in err


def test_max_outage_drains_then_exits_69(make_server: MakeServer, tmp_path: Path) -> None:
    srv = make_server()
    wq = WorkQueue(srv.client(), "mo")
    wq.push([NewItem(b"{}", "job")])
    proc = start(srv.url, "mo", "--max-outage", "2", "--", "sh", "-c",
                 f"touch {tmp_path}/go; sleep 3; touch {tmp_path}/end")
    wait_for(lambda: (tmp_path / "go").exists())
    srv.stop()
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 69, err
    assert (tmp_path / "end").exists(), "the running command was not let finish"
    assert time.monotonic() - t0 < 15
    assert events(err, "giving_up") and events(err, "unsettled")
    last = err.strip().splitlines()[-1]
    assert last.startswith("rq-cli: the server was out of reach for ") and "--max-outage 2" in last
    assert "Traceback" not in err


@pytest.mark.parametrize("name", [[], ["--name", "never"]], ids=["no-name", "name"])
def test_a_worker_that_never_reached_its_server_exits_69_at_once(name: list[str]) -> None:
    """Riding out an outage is for a worker that has been connected: one that cannot reach
    its server when it starts (a wrong URL) fails fast, with or without --name (without,
    it logged `unreachable` and waited forever)."""
    proc = start("redis://:s3cret@127.0.0.1:1/0", "q", *name, "--", "true")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 69, err
    assert err.count("\n") == 1 and err.startswith("rq-cli: cannot connect to "), err
    assert "s3cret" not in err and "unreachable" not in err


def test_a_hung_server_longer_than_the_lease_does_not_stop_the_command(
        make_server: MakeServer, tmp_path: Path) -> None:
    srv = make_server()
    wq = WorkQueue(srv.client(), "hung")
    wq.push([NewItem(b"{}", "job")])
    proc = start(srv.url, "hung", "--max-items", "1", "--lease", "1", "--heartbeat", "0.3",
                 "--", "sh", "-c", f"touch {tmp_path}/go; sleep 3.5; touch {tmp_path}/end")
    wait_for(lambda: (tmp_path / "go").exists())
    time.sleep(0.4)
    assert srv.pid is not None
    os.kill(srv.pid, signal.SIGSTOP)  # longer than the lease, shorter than the socket timeout
    time.sleep(2.0)
    os.kill(srv.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert (tmp_path / "end").exists()
    assert items(err) == {"job": "completed"}
    (retaken,) = [e for e in events(err, "lease") if e["outcome"] == "retaken"]
    assert retaken["id"] == "job"
    stats = wq.stats()
    assert stats.counters["completed"] == 1 and stats.counters["leased"] == 1  # one attempt


def test_the_outcome_logged_is_the_one_the_server_gave(server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "oc")
    wq.push([NewItem(b"{}", "job")])
    # someone else completes the item while the command runs: the worker's complete is refused
    other = f'{sys.executable} -m rq_cli --no-config --url {server_url} complete oc "$RQ_ITEM_ID"'
    proc = start(server_url, "oc", "--max-items", "1", "--", "sh", "-c", f"{other} >/dev/null")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert items(err) == {"job": "missing"}
    (ended,) = events(err, "exit")
    assert ended["completed"] == 0 and ended["lost"] == 1
    assert wq.stats().counters["completed"] == 1


# -- names -----------------------------------------------------------------------------------
def test_a_name_held_by_a_live_worker_is_refused_and_its_leases_kept(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "nm")
    wq.push([NewItem(b"{}", "job")])
    dup = unique("dup")
    first = start(server_url, "nm", "--name", dup, "--", "sh", "-c",
                  f"touch {tmp_path}/go; exec sleep 30")
    try:
        wait_for(lambda: (tmp_path / "go").exists())
        second = start(server_url, "nm", "--name", dup, "--idle-exit", "0.2", "--", "true")
        _, err = second.communicate(timeout=30)
        assert second.returncode == 75, err
        assert err.count("\n") == 1 and err.startswith(f"rq-cli: --name {dup} is held by a "
                                                       f"live worker (pid {first.pid} on ")
        (held,) = wq.peek("processing")
        assert held.lease_session is not None
        assert held.lease_session.split(":")[1] == str(first.pid) and held.attempts == 1
    finally:
        first.kill()  # SIGKILL: the restart below takes the name and the item at once
        first.communicate(timeout=30)
    t0 = time.monotonic()
    again = start(server_url, "nm", "--name", dup, "--max-items", "1", "--", "true")
    _, err = again.communicate(timeout=30)
    assert again.returncode == 0, err
    assert time.monotonic() - t0 < 10
    assert events(err, "reclaimed") and items(err) == {"job": "completed"}


def test_wait_for_name_starts_once_the_holder_exits(server_url: str, r: redis.Redis,
                                                    tmp_path: Path) -> None:
    wq = WorkQueue(r, "nw")
    wq.push([NewItem(b"{}", "job")])
    w1 = unique("w1")
    # (the first holds the name until the second says it waits for it: however slow the
    # second's start-up on a loaded machine)
    first = start(server_url, "nw", "--name", w1, "--max-items", "1", "--", "sh", "-c",
                  f"touch {tmp_path}/go; while [ ! -e {tmp_path}/release ]; do sleep 0.05; "
                  "done")
    wait_for(lambda: (tmp_path / "go").exists())
    second = start(server_url, "nw", "--name", w1, "--wait-for-name", "--idle-exit", "0.3",
                   "--", "true")
    assert second.stderr is not None
    seen = []
    for line in second.stderr:  # (until it says it waits, or ends)
        seen.append(line)
        if "waiting_for_name" in line:
            break
    (tmp_path / "release").touch()
    _, err1 = first.communicate(timeout=30)
    _, rest = second.communicate(timeout=30)
    err2 = "".join(seen) + rest
    assert first.returncode == 0 and second.returncode == 0, (err1, err2)
    (waited,) = events(err2, "waiting_for_name")
    assert waited["holder"] == f"pid {first.pid}"
    assert items(err1) == {"job": "completed"} and not events(err2, "reclaimed")


def test_wait_for_name_needs_a_name(server_url: str) -> None:
    proc = start(server_url, "q", "--wait-for-name", "--", "true")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "--wait-for-name needs --name" in err


# -- secrets ---------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.parametrize("pass_secrets", [False, True])
def test_commands_get_no_password_and_ps_shows_none(
        make_server: MakeServer, tmp_path: Path, pass_secrets: bool) -> None:
    pw = "s3cret-Pw-42"
    srv = make_server(requirepass=pw)
    wq = WorkQueue(srv.client(password=pw), "sec")
    wq.push([NewItem(b"{}", "job")])
    url = f"redis://:{pw}@127.0.0.1:{srv.port}/0"
    config = tmp_path / "rq-cli.toml"
    config.write_text(f'url = "redis://127.0.0.1:{srv.port}/0"\npassword_env = "MY_PW"\n')
    dump = tmp_path / "env"
    script = f"env > {dump}; touch {tmp_path}/go; sleep 30"
    args = ["sec", *(["--pass-secrets"] if pass_secrets else []), "--", "sh", "-c", script]
    # other variables whose values hold it (another name for the URL, a word around it)
    around = {"OTHER_URL": f"redis://:{pw}@db.example:6380/2", "X": f"pw={pw}"}
    # the password from --url (on the command line), and from the config's password_env
    for how in ("--url", "config"):
        proc = start(url, *args, extra_env={"REDIS_URL": url, **around}) if how == "--url" \
            else start(None, *args, config=config, extra_env={"MY_PW": pw, "RQ_CLI_URL": url,
                                                              **around})
        try:
            wait_for(lambda: (tmp_path / "go").exists())
            seen = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            guards = [c for c in _children(proc.pid)
                      if Path(f"/proc/{c}/cmdline").read_bytes().startswith(b"rq-cli")]
            assert guards, "no guard process found"
            for pid in guards:
                seen += Path(f"/proc/{pid}/cmdline").read_bytes()
            assert pw.encode() not in seen and b"rq-cli" in seen
            environ = dump.read_text()
            assert (pw in environ) == pass_secrets, environ
            if not pass_secrets:
                assert f"REDIS_URL=redis://127.0.0.1:{srv.port}/0" in environ or \
                    f"RQ_CLI_URL=redis://127.0.0.1:{srv.port}/0" in environ
                assert "OTHER_URL=redis://db.example:6380/2\n" in environ, environ
                assert "X=pw=***\n" in environ, environ
        finally:
            proc.kill()
            proc.communicate(timeout=30)
            (tmp_path / "go").unlink(missing_ok=True)
            wq.clean(grace_seconds=0)
            for held in wq.peek("processing"):  # the lease of the killed worker
                wq.fail([held.id], retry_in=0)


# -- hostile ids, and the worker's seams ---------------------------------------------------
def test_an_id_with_a_nul_byte_is_dead_lettered_and_the_rest_goes_on(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    bad = "bad\x00id"
    r.set(f"nul:item:{bad}".encode(), b"{}")  # as a peer client may have stored it
    r.lpush("nul:queue", bad.encode())
    WorkQueue(r, "nul").push([NewItem(b"{}", "good")])
    proc = start(server_url, "nul", "-c", "2", "--idle-exit", "0.5", "--", "sh", "-c",
                 f'echo "$RQ_ITEM_ID" >> {tmp_path}/done')
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert items(err) == {bad: "dead", "good": "completed"}
    assert (tmp_path / "done").read_text() == "good\n"
    wq = WorkQueue(r, "nul")
    (dead,) = wq.peek("dead")
    assert dead.id == bad and "cannot start the command" in (dead.error or "")
    assert "embedded null byte" in (dead.error or "")
    stats = wq.stats()
    assert (stats.pending, stats.processing) == (0, 0)


def test_concurrency_prefixes_a_last_line_without_a_newline(
        server_url: str, r: redis.Redis) -> None:
    WorkQueue(r, "pf").push([NewItem(b"{}", "a")])
    proc = start(server_url, "pf", "-c", "2", "--max-items", "1", "--", "printf",
                 "one\\nlast")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == "[a] one\n[a] last\n"


HOSTILE_ID = "t\x1b]0;pwned\x07\x1b[2J\x9b2Jx"  # sets the title, clears the screen


def test_escape_sequences_in_an_id_reach_neither_the_log_nor_the_output_prefix_raw(
        server_url: str, r: redis.Redis) -> None:
    """An id (a peer may store any) is escaped as the tables escape it, in the output
    prefix and in the log, JSON (C1 characters too) or words."""
    from rq_cli.worker.streams import log_line

    WorkQueue(r, "esc").push([NewItem(b"{}", HOSTILE_ID)])
    proc = start(server_url, "esc", "-c", "2", "--max-items", "1", "--", "sh", "-c",
                 "echo out; echo err >&2; exit 1")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    shown = "t\\x1b]0;pwned\\x07\\x1b[2J\\x9b2Jx"
    assert out == f"[{shown}] out\n"
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in out and raw not in err, (out, err)
    assert items(err) == {HOSTILE_ID: "retried"}  # (the JSON log keeps the id, escaped)
    words = log_line({"id": HOSTILE_ID, "outcome": "retried"}, as_json=False)
    assert words == f"id={shown} outcome=retried"


def test_a_second_ctrl_c_returns_items_without_a_failure_or_an_attempt(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "cc")
    wq.push([NewItem(b"{}", f"i{n}") for n in range(2)])
    proc = start(server_url, "cc", "-c", "2", "--grace", "0.3", "--", "sh", "-c",
                 f"touch {tmp_path}/$RQ_ITEM_ID; sleep 30")
    wait_for(lambda: len(list(tmp_path.iterdir())) == 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert items(err) == {"i0": "returned", "i1": "returned"}
    (ended,) = events(err, "exit")
    assert (ended["failed"], ended["returned"]) == (0, 2)
    counters = wq.stats().counters
    assert counters["failed"] == counters["retried"] == 0, counters
    again = wq.lease(2)
    assert sorted(i.id for i in again) == ["i0", "i1"] and {i.attempt for i in again} == {1}


def test_a_paused_queue_is_said_to_be_paused(server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "pz")
    wq.push([NewItem(b"{}", "job")])
    wq.pause()
    proc = start(server_url, "pz", "--idle-exit", "0.5", "--", "true")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    (paused,) = events(err, "paused")
    assert paused["queue"] == "pz" and "rq-cli resume pz" in paused["note"]
    assert wq.stats().pending == 1


@pytest.mark.parametrize(("url", "bare"), [
    ("redis://user:pw@host:6379/0", "redis://user@host:6379/0"),
    ("redis://:pw@host:6379/0", "redis://host:6379/0"),
    ("rediss://:p%40ss@host/0?ssl_cert_reqs=none", "rediss://host/0?ssl_cert_reqs=none"),
    ("redis://host:6379/0?password=pw", "redis://host:6379/0"),
    ("redis://host:6379/0?password=pw&db=1", "redis://host:6379/0?db=1"),
    ("redis://host:6379/0", "redis://host:6379/0"),
])
def test_commands_get_the_url_without_its_password(url: str, bare: str) -> None:
    from rq_cli.connection.connect import url_password
    from rq_cli.worker.env import child_environ

    env = child_environ({"RQ_CLI_URL": url, "PW": "pw", "KEEP": "x"}, ["pw"], [], False)
    assert env == {"RQ_CLI_URL": bare, "KEEP": "x"}
    assert child_environ({"RQ_CLI_URL": url}, ["pw"], [], True) == {"RQ_CLI_URL": url}
    used = url_password(url) or "unused"
    assert child_environ({"REDIS_URL": url}, [used], [], False) == {"REDIS_URL": bare}
    # under another name too: any variable whose value holds a password in use
    assert child_environ({"OTHER_URL": url}, [used], [], False) == {"OTHER_URL": bare}
    # the job's own server, another password: left as it is
    assert child_environ({"REDIS_URL": url}, ["other"], [], False) == {"REDIS_URL": url}


def test_a_refused_password_is_not_an_outage(make_server: MakeServer) -> None:
    srv = make_server(requirepass="right")
    t0 = time.monotonic()
    proc = start(f"redis://:wrong@127.0.0.1:{srv.port}/0", "q", "--", "true")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 69 and time.monotonic() - t0 < 10
    assert err.startswith("rq-cli: authentication failed for redis://:***@") and "wrong" not in err


def test_a_name_held_by_an_idle_worker_is_refused_too(server_url: str, r: redis.Redis) -> None:
    quiet = unique("quiet")
    first = start(server_url, "idle", "--name", quiet, "--", "true")
    try:
        wait_for(lambda: r.client_list() and len(r.client_list()) >= 2)
        time.sleep(0.3)
        second = start(server_url, "other", "--name", quiet, "--idle-exit", "0.2", "--", "true")
        _, err = second.communicate(timeout=30)
        assert second.returncode == 75, err
        assert f"(pid {first.pid} on " in err
    finally:
        _, err = finish(first)
    assert first.returncode == 0, err


def test_worker_rides_out_a_restart_of_a_server_without_persistence(
        make_server: MakeServer, tmp_path: Path) -> None:
    srv = make_server(save="", appendonly="no")
    done, started = tmp_path / "done", tmp_path / "started"
    wq = WorkQueue(srv.client(), "np")
    wq.push([NewItem(b"{}", "gone")])  # running when the server loses everything
    proc = start(srv.url, "np", "-c", "2", "--", "sh", "-c",
                 f'[ "$RQ_ITEM_ID" = gone ] && touch {started} && sleep 1; '
                 f'echo "$RQ_ITEM_ID" >> {done}')
    # (its command runs: leased alone, the lease's reply may not have left the server yet)
    wait_for(started.exists)
    srv.kill()
    srv.start()
    wq = WorkQueue(srv.client(), "np")
    wq.push([NewItem(b"{}", f"new{n}") for n in range(4)])
    wait_for(lambda: wq.stats().counters.get("completed", 0) == 4)
    _, err = finish(proc)
    assert proc.returncode == 0, err
    assert runs(done) == Counter(["gone", "new0", "new1", "new2", "new3"])
    outcomes = items(err)
    assert outcomes.pop("gone") == "missing"  # the server forgot it: not logged as completed
    assert set(outcomes.values()) == {"completed"}
    (ended,) = events(err, "exit")
    assert (ended["completed"], ended["lost"]) == (4, 1)


# -- the core operations behind them ---------------------------------------------------------
def test_retake_takes_back_only_a_lease_nobody_else_took(r: redis.Redis) -> None:
    wq = WorkQueue(r, "rt")
    wq.push([NewItem(b"{}", i) for i in ("free", "cleaned", "taken")])
    held = wq.lease(3, lease_seconds=0.05)
    time.sleep(0.1)  # every lease has run out
    before = r.hgetall("rt:attempts")
    r.lrem("rt:processing", 1, "cleaned")  # a cleaner put it back in line
    r.rpush("rt:queue", "cleaned")
    other = WorkQueue(r, "rt")
    r.set("rt:lease:taken", other.session)  # another session holds it now
    r.hset("rt:holders", "taken", other.session)
    got = {o.id: o.outcome for o in wq.retake([i.id for i in held] + ["nope"])}
    assert got == {"free": "extended", "cleaned": "lost", "taken": "conflict",
                   "nope": "missing"}
    assert r.hgetall("rt:attempts") == before  # the same attempt
    assert r.get("rt:lease:free") == wq.session.encode()
    assert r.pttl("rt:lease:free") > 1000  # the queue's lease, from now


def test_release_gives_the_item_and_its_attempt_back_without_a_failure(r: redis.Redis) -> None:
    wq = WorkQueue(r, "rl")
    wq.push([NewItem(b"{}", "a"), NewItem(b"{}", "b"), NewItem(b"{}", "c")])
    a, b = wq.lease(2)
    other = WorkQueue(r, "rl")
    (c,) = other.lease()
    got = {o.id: o.outcome for o in wq.release([a.id, b.id, c.id, "nope"])}
    assert got == {a.id: "returned", b.id: "returned", c.id: "conflict", "nope": "missing"}
    stats = wq.stats()
    assert (stats.pending, stats.processing) == (2, 1)
    assert stats.counters["failed"] == stats.counters["retried"] == 0
    again = wq.lease(2)
    assert {i.id for i in again} == {a.id, b.id} and {i.attempt for i in again} == {1}


def test_a_lease_whose_reply_an_outage_cut_off_is_given_back(
        make_server: MakeServer, tmp_path: Path) -> None:
    srv = make_server(appendonly="yes", appendfsync="always")
    done = tmp_path / "done"
    name = unique("or")
    proc = start(srv.url, "orph", "--name", name, "--", "sh", "-c",
                 f'echo "$RQ_ITEM_ID $RQ_ATTEMPT" >> {done}')
    probe = srv.client()
    wait_for(lambda: probe.info("clients")["blocked_clients"] >= 1)  # it waits for work
    probe.close()
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        srv.stop()
        srv.start()
        # as if the worker's lease had reached the server and the outage ate its reply
        session = f"{os.uname().nodename}:{proc.pid}:{name}"
        wq = WorkQueue(srv.client(), "orph", session=session)
        wq.push([NewItem(b"{}", "orphan")])
        assert [i.id for i in wq.lease(lease_seconds=300)] == ["orphan"]
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    try:
        wait_for(lambda: done.exists() and done.read_text())
    finally:
        _, err = finish(proc)
    assert proc.returncode == 0, err
    assert done.read_text() == "orphan 1\n"  # not after its 300 s lease; its attempt given back
    (orphan,) = events(err, "orphan")
    assert orphan["id"] == "orphan" and orphan["outcome"] == "returned"
    assert items(err) == {"orphan": "completed"}


@pytest.mark.parametrize("arg", ["redis://:pw@h:1/0", "--url=redis://u:pw@h:1/0",
                                 "redis+sentinel://h:1/m?sentinel_password=pw"])
def test_the_process_title_masks_every_password(arg: str) -> None:
    from rq_cli.worker.env import masked_title

    title = masked_title(["/usr/bin/rq-cli", "--url", arg, "work", "q", "--", "true"])
    assert title.startswith("rq-cli --url ") and title.endswith(" work q -- true")
    assert "pw" not in title and "***" in title


def test_a_killed_holder_not_yet_reaped_is_dead(server_url: str, r: redis.Redis,
                                                tmp_path: Path) -> None:
    """A zombie (killed, its parent has not waited for it) holds no name."""
    wq = WorkQueue(r, "zb")
    wq.push([NewItem(b"{}", "job")])
    name = unique("zb")
    script = f'echo "$RQ_ATTEMPT" >> {tmp_path}/runs; [ "$RQ_ATTEMPT" -gt 1 ] || exec sleep 30'
    first = start(server_url, "zb", "--name", name, "--lease", "300", "--", "sh", "-c", script)
    wait_for(lambda: (tmp_path / "runs").exists())
    os.kill(first.pid, signal.SIGKILL)  # not reaped: a zombie until communicate() below
    wait_for(lambda: Path(f"/proc/{first.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
             == "Z")
    again = start(server_url, "zb", "--name", name, "--max-items", "1", "--", "sh", "-c",
                  f'echo "$RQ_ATTEMPT" >> {tmp_path}/runs')
    _, err = again.communicate(timeout=30)
    first.communicate(timeout=30)
    assert again.returncode == 0, err
    assert (tmp_path / "runs").read_text().split() == ["1", "2"]


def test_a_password_inside_any_other_value_is_masked() -> None:
    from rq_cli.worker.env import child_environ

    env = {"X": "pw=p@ss w0rd", "Y": "--auth p%40ss%20w0rd --x", "PATH": "/usr/bin",
           "Z": "redis://u:p%40ss%20w0rd@h/0?db=1"}
    assert child_environ(env, ["p@ss w0rd"], [], False) == {
        "X": "pw=***", "Y": "--auth *** --x", "PATH": "/usr/bin", "Z": "redis://u@h/0?db=1"}
    assert child_environ(env, ["p@ss w0rd"], [], True) == env
