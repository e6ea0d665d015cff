"""Several processes lease and complete one queue at once, on a real server.

Every item must be completed exactly once -- one ``completed`` outcome per item across all
workers -- and none lost: with single and batched leases, with blocking waits, and with
workers that abandon leases while a cleaner process recovers them.

Workers are separate processes (``spawn``), each with its own connection, started together
behind a barrier so they really contend. Each reports the ids for which ``complete`` said
``completed``; the test counts them. A counter key outside the queue (``DONE``) tells workers
when everything is done, so they keep waiting for items a cleaner may still recover.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter
from typing import Any

import pytest
import redis

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem

P = "conc"
DONE = "test:concurrency:done"
PROCS = 4
TIME_LIMIT = 50  # seconds; each test must finish well inside pytest's own timeout


def _worker(url: str, count: int, lease_seconds: float, abandon_rate: float, seed: int,
            total: int, barrier: Any, out: Any) -> None:
    r = redis.Redis.from_url(url, socket_timeout=30)
    q = WorkQueue(r, P)
    rnd = random.Random(seed)
    completed: list[str] = []
    others: Counter[str] = Counter()
    abandoned: list[str] = []
    leased = 0
    barrier.wait()
    deadline = time.monotonic() + TIME_LIMIT
    progress, last = -1, time.monotonic()
    while time.monotonic() < deadline:
        items = q.lease(count, lease_seconds=lease_seconds, wait=0.05)
        if not items:
            done = int(r.get(DONE) or 0)
            if done >= total:
                break
            if done != progress:
                progress, last = done, time.monotonic()
            elif time.monotonic() - last > 5:  # nothing happens any more: items were lost
                break
            continue
        leased += len(items)
        refs = []
        for item in items:
            if item.data != f"payload {item.id}".encode():
                others["corrupt"] += 1
            if abandon_rate and item.attempt == 1 and rnd.random() < abandon_rate:
                abandoned.append(item.id)  # this worker "crashes" on it: the lease runs out
            else:
                refs.append(ItemRef(item.id, item.session))
        if not refs:
            continue
        n = 0
        for outcome in q.complete(refs):
            if outcome.outcome == "completed":
                completed.append(outcome.id)
                n += 1
            else:
                others[outcome.outcome] += 1
        r.incrby(DONE, n)
    out.put({"completed": completed, "others": others, "abandoned": abandoned,
             "leased": leased})
    r.close()


def _cleaner(url: str, total: int, barrier: Any, out: Any) -> None:
    r = redis.Redis.from_url(url, socket_timeout=30)
    q = WorkQueue(r, P)
    recovered = runs = 0
    barrier.wait()
    deadline = time.monotonic() + TIME_LIMIT
    progress, last = -1, time.monotonic()
    while (done := int(r.get(DONE) or 0)) < total and time.monotonic() < deadline:
        if done != progress:
            progress, last = done, time.monotonic()
        elif time.monotonic() - last > 6:  # the workers have given up
            break
        recovered += q.clean(grace_seconds=0.2).recovered
        runs += 1
        time.sleep(0.02)
    out.put({"cleaner": True, "recovered": recovered, "runs": runs})
    r.close()


def _run(r: redis.Redis, url: str, n_items: int, *, count: int = 1,
         workers: list[tuple[float, float]] | None = None, cleaner: bool = False,
         ) -> tuple[list[str], list[dict[str, Any]], dict[str, Any] | None, float]:
    """Push n_items, run the workers (lease_seconds, abandon_rate) and maybe a cleaner.
    Returns (ids, worker reports, cleaner report, seconds taken)."""
    q = WorkQueue(r, P)
    ids = [f"item-{i:06d}" for i in range(n_items)]
    pushed = q.push(NewItem(f"payload {i}".encode(), id=i) for i in ids)
    assert all(p.added for p in pushed)
    workers = workers or [(60.0, 0.0)] * PROCS
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(workers) + int(cleaner) + 1, timeout=60)
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker,
                         args=(url, count, lease, rate, seed, n_items, barrier, out))
             for seed, (lease, rate) in enumerate(workers)]
    if cleaner:
        procs.append(ctx.Process(target=_cleaner, args=(url, n_items, barrier, out)))
    for proc in procs:
        proc.start()
    try:
        barrier.wait()
        started = time.monotonic()
        reports = [out.get(timeout=TIME_LIMIT + 10) for _ in procs]
        elapsed = time.monotonic() - started
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    assert [proc.exitcode for proc in procs] == [0] * len(procs)
    cleaner_report = next((x for x in reports if "cleaner" in x), None)
    return ids, [x for x in reports if "cleaner" not in x], cleaner_report, elapsed


def _check_exactly_once(r: redis.Redis, ids: list[str], reports: list[dict[str, Any]],
                        elapsed: float) -> Counter[str]:
    completed = Counter(i for rep in reports for i in rep["completed"])
    others: Counter[str] = sum((rep["others"] for rep in reports), Counter())
    assert others["corrupt"] == 0
    never = [i for i in ids if completed[i] == 0]
    twice = [i for i in ids if completed[i] > 1]
    assert not never and not twice, (f"lost {len(never)} (e.g. {never[:3]}), "
                                     f"completed twice {len(twice)} (e.g. {twice[:3]})")
    assert set(completed) == set(ids)
    assert elapsed < TIME_LIMIT
    # nothing left behind
    q = WorkQueue(r, P)
    s = q.stats()
    assert (s.pending, s.processing, s.delayed, s.dead) == (0, 0, 0, 0)
    assert s.counters.get("completed") == len(ids)
    assert r.keys(f"{P}:item:*") == [] and r.llen(f"{P}:cleaning") == 0
    # every worker took part
    assert all(rep["completed"] for rep in reports)
    return others


@pytest.mark.parametrize("count", [1, 50])
def test_processes_complete_every_item_exactly_once(r: redis.Redis, server_url: str,
                                                    count: int) -> None:
    n = 5000 if count == 1 else 20_000
    ids, reports, _, elapsed = _run(r, server_url, n, count=count)
    others = _check_exactly_once(r, ids, reports, elapsed)
    # nobody's lease ran out, so nobody was refused or found an item gone
    assert sum(others.values()) == 0, others
    assert sum(rep["leased"] for rep in reports) == n
    print(f"{PROCS} processes, {n} items, lease(count={count}): {elapsed:.2f} s")


def test_abandoned_leases_are_recovered_and_completed_exactly_once(
        r: redis.Redis, server_url: str) -> None:
    """Two workers with 30 s leases; two with 0.3 s leases that abandon a tenth of the items
    they lease first; a cleaner process running clean(grace_seconds=0.2) over and over."""
    workers = [(30.0, 0.0), (30.0, 0.0), (0.3, 0.1), (0.3, 0.1)]
    ids, reports, cleaner, elapsed = _run(r, server_url, 5000, workers=workers,
                                          cleaner=True)
    others = _check_exactly_once(r, ids, reports, elapsed)
    abandoned = [i for rep in reports for i in rep["abandoned"]]
    assert abandoned, "the abandoning workers abandoned nothing"
    assert cleaner is not None and cleaner["recovered"] >= len(set(abandoned))
    # an abandoned item was leased again, by someone, and completed once (checked above)
    assert sum(rep["leased"] for rep in reports) >= 5000 + len(abandoned)
    assert set(others) <= {"conflict", "missing"}, others
    print(f"abandoned {len(abandoned)}, recovered {cleaner['recovered']} in "
          f"{cleaner['runs']} clean runs, other outcomes {dict(others)}: {elapsed:.2f} s")
