"""rq-cli work and rq-cli cancel, with real processes, a real server and real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from waiting import wait_for

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytestmark = pytest.mark.timeout(60)


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}


def work(url: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", url, "work",
                           *args], capture_output=True, text=True, timeout=timeout, env=env())


def start(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rq_cli", "--no-config", "--url", url,
                             "work", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env())


def log(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def outcomes(stderr: str) -> dict[str, str]:
    return {e["id"]: e["outcome"] for e in log(stderr) if "outcome" in e and "id" in e
            and "event" not in e}


def test_each_item_runs_with_its_data_on_stdin_and_its_environment(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b'{"n":1}', "a"), NewItem(b'{"n":2}', "b")])
    script = f'cat > {tmp_path}/$RQ_ITEM_ID.in; env | grep ^RQ_ | sort > {tmp_path}/$RQ_ITEM_ID.env'
    proc = work(server_url, "w", "--idle-exit", "0.2", "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.in").read_bytes() == b'{"n":1}'
    assert (tmp_path / "b.in").read_bytes() == b'{"n":2}'
    env_a = dict(line.split("=", 1) for line in (tmp_path / "a.env").read_text().splitlines())
    assert env_a["RQ_QUEUE"] == "w" and env_a["RQ_ITEM_ID"] == "a" and env_a["RQ_ATTEMPT"] == "1"
    assert float(env_a["RQ_LEASE_EXPIRES_AT"]) > time.time()
    assert env_a["RQ_WORKER_SESSION"].split(":")[0] == os.uname().nodename
    assert outcomes(proc.stderr) == {"a": "completed", "b": "completed"}
    stats = wq.stats()
    assert (stats.pending, stats.processing, stats.counters["completed"]) == (0, 0, 2)


def test_exit_codes_fail_retry_or_dead_letter(server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"7", "soft"), NewItem(b"100", "hard")])
    proc = work(server_url, "w", "--idle-exit", "0.2", "--max-items", "2", "--",
                "sh", "-c", 'read code; echo "it broke ($code)" >&2; exit $code')
    assert proc.returncode == 0, proc.stderr
    assert outcomes(proc.stderr) == {"soft": "retried", "hard": "dead"}
    assert "it broke (7)" in proc.stderr  # the command's stderr passes through
    (retried,) = wq.peek("delayed")
    assert retried.id == "soft" and retried.error == "exit code 7: it broke (7)"
    (dead,) = wq.peek("dead")
    assert dead.id == "hard" and dead.error == "exit code 100: it broke (100)"


def test_a_command_that_hangs_is_stopped_and_failed_with_timeout(
        server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "slow")])
    t0 = time.monotonic()
    proc = work(server_url, "w", "--max-items", "1", "--timeout", "0.3", "--grace", "0.2",
                "--", "sh", "-c", "trap '' TERM; sleep 30")  # ignores SIGTERM: SIGKILL ends it
    assert time.monotonic() - t0 < 15
    assert proc.returncode == 0, proc.stderr
    assert outcomes(proc.stderr) == {"slow": "timeout"}
    (item,) = wq.peek("delayed")
    assert item.error == "timeout"


def test_heartbeat_keeps_a_long_job_leased_while_another_worker_waits(
        server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "long")])
    proc = start(server_url, "w", "--max-items", "1", "--lease", "0.4", "--heartbeat", "0.1",
                 "--", "sleep", "1.5")
    wait_for(lambda: wq.stats().processing == 1)
    other = WorkQueue(r, "w")
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # well past the 0.4 s lease: never handed out again
        assert other.lease() == []
        time.sleep(0.05)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert outcomes(err) == {"long": "completed"}
    assert wq.stats().counters["leased"] == 1


def test_sigterm_drains_running_commands_then_exits_0(server_url: str, r: redis.Redis,
                                                      tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "running"), NewItem(b"{}", "waiting")])
    proc = start(server_url, "w", "--", "sh", "-c", f"touch {tmp_path}/$RQ_ITEM_ID; sleep 0.8")
    wait_for(lambda: (tmp_path / "running").exists())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert outcomes(err) == {"running": "completed"}
    assert [i.id for i in wq.peek("pending")] == ["waiting"]  # not leased after the signal


def test_a_second_signal_stops_commands_and_returns_their_items_at_once(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", f"i{n}") for n in range(2)])
    proc = start(server_url, "w", "--concurrency", "2", "--lease", "300", "--grace", "0.5",
                 "--", "sh", "-c", f"touch {tmp_path}/$RQ_ITEM_ID; sleep 30")
    wait_for(lambda: len(list(tmp_path.iterdir())) == 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert outcomes(err) == {"i0": "returned", "i1": "returned"}
    stats = wq.stats()
    assert (stats.pending, stats.processing) == (2, 0)  # back in line now, not in 300 s


def test_kill_9_then_restart_with_the_same_name_runs_the_item_again_once(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "job")])
    marker = tmp_path / "runs"
    # (exec: the command itself is the sleep, which dies with the worker on Linux)
    script = f'echo "$RQ_ATTEMPT" >> {marker}; [ "$RQ_ATTEMPT" -gt 1 ] || exec sleep 30'
    name = f"mailer-{uuid.uuid4().hex[:8]}"  # (name locks are per host: unique per run)
    first = start(server_url, "w", "--name", name, "--lease", "300", "--", "sh", "-c",
                  script)
    wait_for(lambda: marker.exists())
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)  # returns: the command died with it (nothing holds the pipes)
    (held,) = wq.peek("processing")
    assert held.lease_session is not None and held.lease_session.endswith(f":{name}")
    t0 = time.monotonic()
    again = work(server_url, "w", "--name", name, "--lease", "300", "--idle-exit", "0.3",
                 "--", "sh", "-c", script)
    assert time.monotonic() - t0 < 15  # at once: not after the 300 s lease
    assert again.returncode == 0, again.stderr
    assert marker.read_text().split() == ["1", "2"]
    assert outcomes(again.stderr) == {"job": "completed"}
    assert wq.stats().counters["completed"] == 1


def test_concurrency_runs_commands_at_the_same_time(server_url: str, r: redis.Redis,
                                                    tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", f"c{n}") for n in range(4)])
    stamp = (f'date +%s.%N > {tmp_path}/$RQ_ITEM_ID.start; sleep 0.5; '
             f'date +%s.%N > {tmp_path}/$RQ_ITEM_ID.end; echo out-$RQ_ITEM_ID')
    proc = work(server_url, "w", "--concurrency", "4", "--idle-exit", "0.3", "--", "sh", "-c",
                stamp)
    assert proc.returncode == 0, proc.stderr
    starts = [float((tmp_path / f"c{n}.start").read_text()) for n in range(4)]
    ends = [float((tmp_path / f"c{n}.end").read_text()) for n in range(4)]
    assert max(starts) < min(ends), "the four commands did not overlap"
    # with several at once, each output line carries its item's id
    assert sorted(proc.stdout.splitlines()) == [f"[c{n}] out-c{n}" for n in range(4)]


def test_cancel_stops_a_running_command_and_dead_letters_its_item(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "doomed")])
    proc = start(server_url, "w", "--max-items", "1", "--heartbeat", "0.1", "--grace", "0.2",
                 "--", "sh", "-c", f"touch {tmp_path}/go; sleep 30")
    wait_for(lambda: (tmp_path / "go").exists())
    cancel = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url",
                             server_url, "cancel", "w", "doomed", "--json"],
                            capture_output=True, text=True, env=env(), timeout=30)
    assert cancel.returncode == 0, cancel.stderr
    assert json.loads(cancel.stdout)["outcome"] == "dead"
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert outcomes(err) == {"doomed": "cancelled"}
    (dead,) = wq.peek("dead")
    assert dead.id == "doomed" and dead.dead_reason == "cancelled"


def test_cancel_of_nothing_live_exits_3(server_url: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url,
                           "cancel", "w", "nope"], capture_output=True, text=True, env=env())
    assert proc.returncode == 3
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "none of the 1 ids" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["w"], "after '--'"),
    (["w", "--"], "after '--'"),
    (["w", "--concurrency", "0", "--", "true"], "concurrency"),
    (["w", "--name", "a:b", "--", "true"], "--name"),
    (["--", "true"], "QUEUE"),
])
def test_bad_usage_is_one_line_and_exit_2(server_url: str, r: redis.Redis, args: list[str],
                                          message: str) -> None:
    WorkQueue(r, "w").push([NewItem(b"{}", "keep")])
    proc = work(server_url, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert [i.id for i in WorkQueue(r, "w").peek("pending")] == ["keep"]


def test_big_data_reaches_stdin_whole(server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    data = os.urandom(600_000)  # well over a pipe's buffer: written as the command reads
    WorkQueue(r, "w").push([NewItem(data, "big")])
    proc = work(server_url, "w", "--max-items", "1", "--", "sh", "-c",
                f"sleep 0.2; cat > {tmp_path}/got")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "got").read_bytes() == data
    assert outcomes(proc.stderr) == {"big": "completed"}


def test_a_command_that_is_not_there_is_a_usage_error(server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "keep")])
    proc = work(server_url, "w", "--", "no-such-command-here", "x")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "rq-cli: command not found or not executable: no-such-command-here"]
    assert [i.id for i in wq.peek("pending")] == ["keep"]  # nothing leased
    assert wq.stats().counters.get("leased", 0) == 0


def test_several_queues_in_strict_order(server_url: str, r: redis.Redis) -> None:
    first, second = WorkQueue(r, "w1"), WorkQueue(r, "w2")
    second.push([NewItem(b"{}", "b1")])
    first.push([NewItem(b"{}", "a1"), NewItem(b"{}", "a2")])
    proc = work(server_url, "w1", "w2", "--order", "strict", "--idle-exit", "0.3", "--",
                "true")
    assert proc.returncode == 0, proc.stderr
    assert [e["id"] for e in log(proc.stderr) if e.get("outcome") == "completed"] == \
        ["a1", "a2", "b1"]


def test_waiting_for_work_blocks_on_the_server_and_wakes_when_an_item_comes(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "long")])
    # one slot runs a long command; the other waits on the server for work meanwhile
    proc = start(server_url, "w", "--concurrency", "2", "--max-items", "2", "--", "sh", "-c",
                 f'date +%s.%N > {tmp_path}/$RQ_ITEM_ID; [ "$RQ_ITEM_ID" = long ] && '
                 f'sleep 4; true')
    wait_for(lambda: (tmp_path / "long").exists())
    r.config_resetstat()
    time.sleep(2.0)  # idle: a poll would call the lease script many times a second
    stats = r.info("commandstats")
    scripts = sum(v["calls"] for k, v in stats.items() if k.startswith("cmdstat_eval"))
    assert scripts <= 8, stats  # about one lease (and one extend) per blocking wait of 1 s
    # the idle slot is blocked in BLMOVE on the server now (commandstats counts a blocking
    # command only when it returns, which Valkey's may not have done within the 2 s)
    assert wait_for(lambda: any(c.get("cmd") == "blmove" for c in r.client_list())), \
        r.client_list()
    pushed = time.time()
    wq.push([NewItem(b"{}", "late")])
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    started = float(wait_for(lambda: (tmp_path / "late").read_text()))
    assert started - pushed < 1.0  # at once, while the long one still ran
    assert started < float((tmp_path / "long").read_text()) + 4
    assert outcomes(err) == {"long": "completed", "late": "completed"}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_kill_9_of_the_worker_stops_its_commands_and_their_children(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "job")])
    script = (f"echo $$ > {tmp_path}/shell; sleep 30 & echo $! > {tmp_path}/child; "
              f"wait")
    proc = start(server_url, "w", "--lease", "300", "--", "sh", "-c", script)
    wait_for(lambda: (tmp_path / "child").exists() and (tmp_path / "child").read_text())
    shell = int((tmp_path / "shell").read_text())
    child = int((tmp_path / "child").read_text())
    assert _alive(shell) and _alive(child)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    wait_for(lambda: not _alive(shell) and not _alive(child), timeout=8)
    (held,) = wq.peek("processing")  # still leased: back once the lease runs out (clean)
    assert held.id == "job"


def test_a_normal_exit_leaves_what_a_command_started_in_the_background(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    WorkQueue(r, "w").push([NewItem(b"{}", "job")])
    proc = work(server_url, "w", "--max-items", "1", "--", "sh", "-c",
                f"sleep 5 >/dev/null 2>&1 & echo $! > {tmp_path}/child")
    assert proc.returncode == 0, proc.stderr
    child = int((tmp_path / "child").read_text())
    time.sleep(0.3)  # the guard would have acted by now
    assert _alive(child)
    os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("keep", [False, True])
def test_a_lost_lease_is_logged_and_stops_the_command_unless_asked_not_to(
        server_url: str, r: redis.Redis, tmp_path: Path, keep: bool) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", "job")])
    # the first heartbeat comes after the lease has run out and another session took it
    proc = start(server_url, "w", "--max-items", "1", "--lease", "0.3", "--heartbeat", "1.2",
                 "--grace", "0.2",
                 *(["--keep-running-on-lost-lease"] if keep else []), "--",
                 "sh", "-c", f"touch {tmp_path}/go; sleep 2.5; touch {tmp_path}/end")
    wait_for(lambda: (tmp_path / "go").exists())
    time.sleep(0.5)
    wq.clean(grace_seconds=0)
    other = WorkQueue(r, "w")
    assert [i.id for i in other.lease(lease_seconds=60)] == ["job"]
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    (note,) = [e for e in log(err) if e.get("event") == "lease"]
    assert note["id"] == "job" and "lease lost" in note["note"]
    assert outcomes(err) == {"job": "lost"}
    assert (tmp_path / "end").exists() == keep  # stopped, or let run to its end
    (held,) = wq.peek("processing")  # the other session's item: left alone
    assert held.lease_session == other.session


@pytest.mark.parametrize("signals", [1, 2])
def test_signals_with_items_leased_ahead_leave_nothing_in_processing(
        server_url: str, r: redis.Redis, tmp_path: Path, signals: int) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", f"i{n:03}") for n in range(300)])
    # short commands: the worker leases items ahead of the running ones
    proc = start(server_url, "w", "--concurrency", "2", "--", "sh", "-c",
                 f"touch {tmp_path}/$RQ_ITEM_ID; sleep 0.02")
    wait_for(lambda: len(list(tmp_path.iterdir())) >= 20)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    done = outcomes(err)
    stats = wq.stats()
    assert stats.processing == 0  # every item leased ahead was run, or put back
    assert stats.counters["completed"] == sum(o == "completed" for o in done.values())
    assert stats.pending == 300 - stats.counters["completed"]
    assert set(done.values()) <= {"completed", "returned"}
    if signals == 1:
        assert "returned" not in done.values()


@pytest.mark.parametrize("concurrency", [1, 8])
def test_short_commands_share_round_trips(server_url: str, r: redis.Redis,
                                          concurrency: int) -> None:
    wq = WorkQueue(r, "w")
    wq.push([NewItem(b"{}", f"i{n:03}") for n in range(200)])
    r.config_resetstat()
    proc = work(server_url, "w", "--concurrency", str(concurrency), "--max-items", "200",
                "--", "true")
    assert proc.returncode == 0, proc.stderr
    assert wq.stats().counters["completed"] == 200
    stats = r.info("commandstats")
    scripts = sum(v["calls"] for k, v in stats.items() if k.startswith("cmdstat_eval"))
    # leased ahead and completed in the same round trips: far fewer calls than items
    assert scripts <= 50, stats
