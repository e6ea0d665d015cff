"""rq-cli work and rq-cli cancel, with real processes, a real server and real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

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


def wait_for(check: Any, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


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
    first = start(server_url, "w", "--name", "mailer", "--lease", "300", "--", "sh", "-c",
                  script)
    wait_for(lambda: marker.exists())
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)  # returns: the command died with it (nothing holds the pipes)
    (held,) = wq.peek("processing")
    assert held.lease_session is not None and held.lease_session.endswith(":mailer")
    t0 = time.monotonic()
    again = work(server_url, "w", "--name", "mailer", "--lease", "300", "--idle-exit", "0.3",
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
