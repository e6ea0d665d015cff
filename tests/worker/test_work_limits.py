"""rq-cli work under a queue's fleet-wide limits (docs/limits.md), with real processes: a
worker SIGKILLed under an in-flight cap, and limits changed while workers run."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from test_cli_work import env, outcomes, start, work
from waiting import wait_for

from rq_cli.core.operations.limiting import parse_rate
from rq_cli.core.queue import WorkQueue

pytestmark = pytest.mark.timeout(120)


def test_a_sigkilled_workers_places_come_back_when_its_leases_run_out(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([b"{}"] * 4)
    wq.set_limits(max_in_flight=2)
    marker = tmp_path / "started"
    # (exec: the command itself is the sleep; the worker's guard ends it with the worker)
    first = start(server_url, "w", "--concurrency", "4", "--lease", "3", "--", "sh", "-c",
                  f'echo "$RQ_ITEM_ID" >> {marker}; exec sleep 600')
    wait_for(lambda: marker.exists() and len(marker.read_text().split()) == 2, timeout=30)
    assert wq.limits().in_flight == 2  # the cap: 2 of 4 leased, by a worker of 4 slots
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    # its places are held while its leases run: a lease is held back, exits 75 at once
    held = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url,
                           "lease", "w"], capture_output=True, text=True, env=env(),
                          timeout=60)
    assert held.returncode == 75 and held.stdout == "", held
    assert "in-flight cap is reached" in held.stderr
    # a worker waiting for a place gets one when the dead worker's leases run out (3 s):
    # it waits until the earliest lease deadline, not a poll, and not the whole --idle-exit
    t0 = time.monotonic()
    again = work(server_url, "w", "--lease", "60", "--max-items", "2", "--", "true", timeout=90)
    assert again.returncode == 0, again.stderr
    assert len(outcomes(again.stderr)) == 2  # the 2 pending items
    assert time.monotonic() - t0 < 60  # (a generous bound: 3 s is the lease's end)
    # the dead worker's 2 items: back in line when clean recovers them
    assert wq.clean(grace_seconds=0).recovered == 2
    assert len(wq.lease(5)) == 2


def test_limits_changed_while_a_worker_runs_apply_at_once(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    wq = WorkQueue(r, "w")
    wq.push([b"{}"] * 6)
    wq.set_limits(rate=parse_rate("1/h"))
    marker = tmp_path / "ran"
    worker = start(server_url, "w", "--concurrency", "2", "--", "sh", "-c",
                   f'echo "$RQ_ITEM_ID" >> {marker}')
    try:
        wait_for(lambda: marker.exists(), timeout=30)
        assert len(marker.read_text().split()) == 1  # one an hour: the others wait
        assert wq.stats().pending == 5
        wq.set_limits(rate=parse_rate("100/s"))  # a faster rate applies at once
        wait_for(lambda: len(marker.read_text().split()) == 6, timeout=60)
        wq.push([b"{}"] * 3)
        wq.set_limits(max_in_flight=1)  # a cap added while it runs: one at a time now
        wait_for(lambda: len(marker.read_text().split()) == 9, timeout=60)
        wq.clear_limits()
        wq.push([b"{}"] * 3)
        wait_for(lambda: len(marker.read_text().split()) == 12, timeout=60)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    assert worker.returncode == 0
    assert wq.stats().counters["completed"] == 12
