"""Reliability: workers killed with SIGKILL, and cleaners running concurrently.

Both tests run real worker processes (``python -c WORKER``) against a real server. Each
worker appends what it does to its own journal file, one line per step, written with one
``os.write`` on an ``O_APPEND`` descriptor so a SIGKILL never leaves half a line:

    <pid> L <id> <attempt>   leased (the lease reply was received)
    <pid> P <id>             processed (the data was checked against the id)
    <pid> K <id>             about to call complete
    <pid> R <id> <outcome>   complete returned <outcome> (completed, conflict, missing)
    <pid> X <point>          about to kill itself with SIGKILL at <point>
    <pid> BAD <id>           the data leased is not the data pushed under that id

A worker killed between ``K`` and ``R`` may or may not have completed its item: the
server's ``completed`` counter settles it (one ``C`` per item in total, see the checks).

- :func:`test_sigkilled_workers_lose_nothing_and_complete_each_item_once`: several rounds
  of pushes while workers are SIGKILLed at random moments (externally, and by themselves
  right after a lease, after processing, after complete, and on "poison" items) and
  replaced; after leases expire and ``clean`` runs, every item was completed exactly once
  or dead-lettered after max attempts.
- :func:`test_concurrent_light_and_deep_cleaners_never_duplicate_or_lose`: three processes
  run ``clean`` and ``clean(deep=True)`` in a loop (overlapping crons) while workers lease
  and complete and items are pushed; atomic snapshots (MULTI/EXEC) taken all along show no
  id twice in queue/processing/delayed and no live item outside them; in the end every item
  was completed exactly once.
- :func:`test_cli_worker_whose_lease_ran_out_cannot_complete_work_leased_again`: through
  ``rq-cli``, a stalled worker's complete/fail/extend of re-leased work exit 4 and change
  nothing; a late complete of work nobody took again is accepted once.
- :func:`test_abandoned_item_is_recovered_by_a_cron_whatever_its_interval`: clean run from
  cron (clock injected) recovers a dead worker's item whatever the cron interval.

Every loop is bounded in iterations and time; every process started is killed by pid.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from rq_cli.core.codes import SIGHTINGS
from rq_cli.core.contract.keys import Keys
from rq_cli.core.contract.limits import JOURNAL_GRACE_MS
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions

# -- the worker: lease, check, process, complete; dies on purpose at chosen points -------------
WORKER = r"""
import json, os, random, signal, sys, time
import redis
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, QueueOptions

url, prefix, journal = sys.argv[1:4]
seed, lease_s, max_attempts = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
suicide, oversleep, run_for = float(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
rng = random.Random(seed)
client = redis.Redis.from_url(url, socket_timeout=15, socket_connect_timeout=5)
wq = WorkQueue(client, prefix, QueueOptions(lease_seconds=lease_s, max_attempts=max_attempts))
fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
pid = str(os.getpid())

def log(*words):
    os.write(fd, (" ".join((pid,) + words) + "\n").encode())

def die(point):
    log("X", point)
    os.kill(os.getpid(), signal.SIGKILL)

odds = {"leased": suicide * 3, "processed": suicide, "completed": suicide * 1.5}

def maybe_die(point):
    if rng.random() < odds[point]:
        die(point)

deadline = time.monotonic() + run_for
while time.monotonic() < deadline:
    items = wq.lease(rng.randint(1, 4), wait=0.2)
    if items:
        maybe_die("leased")  # the lease is granted and nobody will ever know who has it
    for it in items:
        log("L", it.id, str(it.attempt))
    for it in items:
        body = json.loads(it.data)
        if body.get("id") != it.id:
            log("BAD", it.id)
        if body.get("poison"):
            die("poison")
        log("P", it.id)
        time.sleep(rng.random() * float(os.environ.get("WORK_MS", "4")) / 1000)
        if rng.random() < oversleep:
            time.sleep(lease_s * 1.5)  # the lease runs out while the job still runs
        maybe_die("processed")
        log("K", it.id)
        outcome = wq.complete([ItemRef(it.id, it.session)])[0].outcome
        maybe_die("completed")  # completed on the server; the worker never records it
        log("R", it.id, outcome)
"""

# -- a cleaner: light and deep clean in turn, as overlapping crons would run them -------------
CLEANER = r"""
import random, sys, time
import redis
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import QueueOptions

url, prefix = sys.argv[1], sys.argv[2]
seed, grace, run_for = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rng = random.Random(seed)
client = redis.Redis.from_url(url, socket_timeout=15, socket_connect_timeout=5)
wq = WorkQueue(client, prefix, QueueOptions(max_attempts=0))
deadline = time.monotonic() + run_for
runs = [0, 0]
while time.monotonic() < deadline:
    deep = rng.random() < 0.5
    wq.clean(deep=deep, grace_seconds=grace)
    runs[deep] += 1
    time.sleep(rng.random() * 0.05)
print(runs[0], runs[1])
"""

WORKER_RUN_FOR = 90.0  # a worker leaves on its own after this long, whatever happens
POLL = 0.01
DEATH_POINTS = ("leased", "processed", "completed", "poison")


def item_data(item_id: str, poison: bool = False) -> bytes:
    body = {"id": item_id, "payload": "x" * 40}
    if poison:
        body["poison"] = True
    return json.dumps(body).encode()


@dataclass
class Journal:
    """Everything the workers wrote, by id."""

    leases: Counter[str] = field(default_factory=Counter)
    processed: Counter[str] = field(default_factory=Counter)
    outcomes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    unfinished: set[str] = field(default_factory=set)  # K without R by the same worker
    deaths: Counter[str] = field(default_factory=Counter)  # point -> count
    bad: list[str] = field(default_factory=list)
    attempts_seen: dict[str, int] = field(default_factory=dict)  # id -> highest attempt

    @classmethod
    def read(cls, directory: Path) -> Journal:
        j = cls()
        for path in sorted(directory.glob("journal-*.log")):
            open_k: dict[str, set[str]] = defaultdict(set)  # pid -> ids between K and R
            for line in path.read_text().splitlines():
                words = line.split(" ")
                pid, code = words[0], words[1]
                if code == "L":
                    j.leases[words[2]] += 1
                    j.attempts_seen[words[2]] = max(j.attempts_seen.get(words[2], 0),
                                                    int(words[3]))
                elif code == "P":
                    j.processed[words[2]] += 1
                elif code == "K":
                    open_k[pid].add(words[2])
                elif code == "R":
                    j.outcomes[words[2]].append(words[3])
                    open_k[pid].discard(words[2])
                elif code == "X":
                    j.deaths[words[2]] += 1
                elif code == "BAD":
                    j.bad.append(words[2])
                else:
                    raise AssertionError(f"unreadable journal line {line!r}")
            for ids in open_k.values():
                j.unfinished |= ids
        return j

    def completed(self) -> Counter[str]:
        return Counter(i for i, outs in self.outcomes.items() for o in outs if o == "completed")


class Fleet:
    """Worker and cleaner processes; every one is killed by pid when the fleet closes."""

    def __init__(self, directory: Path, url: str, prefix: str, seed: int) -> None:
        self.directory, self.url, self.prefix = directory, url, prefix
        self.rng = random.Random(seed)
        self.procs: list[subprocess.Popen[bytes]] = []
        self.spawned = 0
        self.killed = 0

    def _spawn(self, args: list[str], env: dict[str, str] | None = None
               ) -> subprocess.Popen[bytes]:
        self.spawned += 1
        err = open(self.directory / f"stderr-{self.spawned}.txt", "wb")  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-c", *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err,
                                env={**os.environ, **(env or {})})
        err.close()
        self.procs.append(proc)
        return proc

    def worker(self, *, lease_s: float, max_attempts: int, suicide: float, oversleep: float,
               work_ms: float = 4.0) -> subprocess.Popen[bytes]:
        n = self.spawned + 1
        return self._spawn(
            [WORKER, self.url, self.prefix, str(self.directory / f"journal-{n}.log"),
             str(self.rng.randrange(1 << 30)), str(lease_s), str(max_attempts), str(suicide),
             str(oversleep), str(WORKER_RUN_FOR)], env={"WORK_MS": str(work_ms)})

    def cleaner(self, *, grace: float, run_for: float) -> subprocess.Popen[bytes]:
        return self._spawn([CLEANER, self.url, self.prefix, str(self.rng.randrange(1 << 30)),
                            str(grace), str(run_for)])

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            self.killed += 1
        proc.wait(10)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            if proc.stdout:
                proc.stdout.close()

    def crashed(self) -> list[str]:
        """stderr of every process that exited by itself with an error (not by SIGKILL)."""
        out = []
        for n, proc in enumerate(self.procs, 1):
            if proc.returncode not in (None, 0, -signal.SIGKILL):
                text = (self.directory / f"stderr-{n}.txt").read_text(errors="replace")
                out.append(f"process {n} exited {proc.returncode}: {text[-2000:]}")
        return out


@contextmanager
def fleet(tmp_path: Path, url: str, prefix: str, seed: int) -> Iterator[Fleet]:
    f = Fleet(tmp_path, url, prefix, seed)
    try:
        yield f
    finally:
        f.close()


def item_ids(r: redis.Redis, prefix: str) -> set[str]:
    k = Keys(prefix)
    return {key[k.item_key_offset:].decode() for key in r.scan_iter(match=k.item_pattern,
                                                                     count=1000)}


def counters(r: redis.Redis, prefix: str) -> dict[str, int]:
    return {k.decode(): int(v) for k, v in r.hgetall(Keys(prefix).counters).items()}


# =============================================================================================
# 1. Workers killed with SIGKILL at random points, over several rounds
# =============================================================================================
ROUNDS = 3
EXTRA_ROUNDS = 4  # at most, only while some point of the cycle saw no kill
PER_ROUND = 1000
POISON_PER_ROUND = 3
WORKERS = 4
LEASE_S = 1.0
MAX_ATTEMPTS = 4
GRACE_S = 0.2


@pytest.mark.timeout(400)  # (its drain is bounded at 150 s: see there)
def test_sigkilled_workers_lose_nothing_and_complete_each_item_once(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    prefix = "crash"
    k = Keys(prefix)
    wq = WorkQueue(r, prefix, QueueOptions(lease_seconds=LEASE_S, max_attempts=MAX_ATTEMPTS))
    rng = random.Random(20240501)
    pushed: dict[str, bytes] = {}
    poison: set[str] = set()
    started = time.monotonic()

    with fleet(tmp_path, server_url, prefix, seed=7) as f:
        def new_worker(chaos: bool) -> subprocess.Popen[bytes]:
            return f.worker(lease_s=LEASE_S, max_attempts=MAX_ATTEMPTS,
                            suicide=0.003 if chaos else 0.0, oversleep=0.003 if chaos else 0.0)

        def cron(last: float) -> float:
            if time.monotonic() - last >= 0.25:
                wq.clean(grace_seconds=GRACE_S)
                return time.monotonic()
            return last

        # -- chaos: rounds of pushes; workers killed at random moments and replaced ------------
        external_kills = 0
        last_clean = 0.0
        workers = [new_worker(True) for _ in range(WORKERS)]

        def chaos_round(round_no: int) -> None:
            nonlocal workers, external_kills, last_clean
            batch = []
            for n in range(PER_ROUND):
                item_id = f"r{round_no}-{n:04d}"
                bad = n < POISON_PER_ROUND
                pushed[item_id] = item_data(item_id, bad)
                if bad:
                    poison.add(item_id)
                batch.append(NewItem(pushed[item_id], item_id))
            rng.shuffle(batch)
            assert all(p.added for p in wq.push(batch))
            round_end = time.monotonic() + 10.0
            round_min = time.monotonic() + 1.5  # chaos lasts at least this long per round
            next_kill = time.monotonic() + rng.uniform(0.1, 0.4)
            for _ in range(int(10.0 / POLL) + 1):  # bounded: at most the round's 10 s
                now = time.monotonic()
                if now >= round_end or (now >= round_min and r.llen(k.queue) == 0):
                    break
                if now >= next_kill:
                    f.kill(rng.choice(workers))
                    external_kills += 1
                    next_kill = now + rng.uniform(0.1, 0.4)
                workers = [w if w.poll() is None else new_worker(True) for w in workers]
                last_clean = cron(last_clean)
                time.sleep(POLL)

        def covered() -> bool:  # a kill landed at every point of the cycle
            j = Journal.read(tmp_path)
            return all(j.deaths[p] >= 1 for p in DEATH_POINTS) and bool(j.unfinished)

        for round_no in range(ROUNDS):
            chaos_round(round_no)
        # Kills land at random points; on a slow or busy machine a point may go unhit in
        # ROUNDS rounds. More rounds (bounded), until every point has been hit.
        round_no = ROUNDS
        while round_no < ROUNDS + EXTRA_ROUNDS and not covered():
            chaos_round(round_no)
            round_no += 1

        # -- calm: no more random deaths (poison still kills); drain and recover everything --
        for w in workers:
            f.kill(w)
        workers = [new_worker(False) for _ in range(WORKERS)]
        # (the drain ends when nothing is left: the bound is for a hung run, generous for a
        # loaded machine)
        drain_end = time.monotonic() + 150.0
        for _ in range(int(150.0 / POLL) + 1):
            if time.monotonic() >= drain_end:
                break
            workers = [w if w.poll() is None else new_worker(False) for w in workers]
            last_clean = cron(last_clean)
            s = wq.stats()
            if s.pending == s.processing == s.delayed == 0:
                break
            time.sleep(POLL)
        for w in workers:
            f.kill(w)
        assert not f.crashed(), "\n".join(f.crashed())

    elapsed = time.monotonic() - started
    s = wq.stats()
    assert (s.pending, s.processing, s.delayed) == (0, 0, 0), \
        f"not drained after {elapsed:.1f} s: {s}"
    # Nothing stray either: a deep clean finds nothing to recover.
    report = wq.clean(deep=True, grace_seconds=0)
    assert (report.recovered, report.dead, report.scanned) == (0, 0, 0), report
    assert r.llen(k.cleaning) == 0
    assert item_ids(r, prefix) == set(), "items left behind, in no list"

    j = Journal.read(tmp_path)
    assert not j.bad, f"leased data differs from the data pushed: {j.bad[:5]}"

    dead = {m.decode() for m in r.zrange(k.dead, 0, -1)}
    completed = j.completed()
    twice = [i for i, c in completed.items() if c > 1]
    assert not twice, f"items completed twice: {twice[:5]}"
    assert not set(completed) & dead, "an item both completed and dead-lettered"

    # Dead letters: every poison item, after exactly max attempts, with its data intact.
    # An ordinary item may die too: leased in one batch with a poison item, it shares the
    # worker's death, and clean re-queues the two side by side, so they are often leased
    # together again (lease one at a time, or fail() the poison, to avoid this).
    assert poison <= dead, f"poison items not dead-lettered: {sorted(poison - dead)}"
    for item_id in dead:
        info = json.loads(r.hget(k.dead_info, item_id))
        assert info["reason"] == "max_attempts", (item_id, info)
        assert info["attempts"] == MAX_ATTEMPTS, (item_id, info)
        assert r.get(k.dead_item(item_id)) == pushed[item_id]
    assert set(pushed) >= dead

    # Completed: recorded by a worker, or (worker killed between K and R) settled by the
    # server's counter, which counts one per successful complete.
    unrecorded = set(pushed) - dead - set(completed)
    assert unrecorded <= j.unfinished, \
        f"items neither completed nor dead, i.e. lost: {sorted(unrecorded - j.unfinished)[:5]}"
    c = counters(r, prefix)
    assert c.get("completed", 0) == len(pushed) - len(dead), \
        f"completed counter {c.get('completed')} != {len(pushed) - len(dead)} non-dead items " \
        f"(a count above means some item was completed twice, below means one was lost)"
    assert c.get("dead", 0) == len(dead)
    assert c.get("pushed") == len(pushed)
    # At-least-once: every completed item was processed (with the right data) first.
    missing_work = [i for i in set(pushed) - dead if j.processed[i] == 0]
    assert not missing_work, f"completed without ever being processed: {missing_work[:5]}"

    # The chaos really happened, at every point of the cycle, and recovery was exercised.
    assert external_kills >= 5, external_kills
    for point in DEATH_POINTS:
        assert j.deaths[point] >= 1, (point, dict(j.deaths))
    assert unrecorded, "no worker died between its complete and recording it"
    recovered = [i for i in completed if j.attempts_seen.get(i, 0) >= 2]
    assert recovered, "no item was leased again after a crash and then completed"
    assert c.get("cleaned", 0) >= 1
    print(f"\n{len(pushed)} items, {ROUNDS} rounds, {f.spawned} processes, "
          f"{external_kills} external kills, deaths {dict(j.deaths)}, {len(dead)} dead "
          f"({len(dead - poison)} not poison), {len(unrecorded)} completed by a worker that "
          f"died before recording it, {len(recovered)} completed after a re-lease, "
          f"{elapsed:.1f} s")


# =============================================================================================
# 3. Light and deep clean from several processes while workers lease and complete
# =============================================================================================
SNAPSHOT_ITEMS = 2500
LATE_ITEMS = 500
STRAYS = 150  # data key, in no list: a peer client died between SET and LPUSH
ABANDONED = 150  # in processing, lease expired: a worker died
JOURNALED = 40  # only in the v0.1 cleaning journal: a v0.1 cleaner died mid-way
GHOSTS = 40  # ids in processing without data
CLEAN_GRACE = 0.3


def snapshot(r: redis.Redis, k: Keys) -> tuple[list[bytes], list[bytes], list[bytes],
                                               list[bytes], list[bytes]]:
    """queue, processing, delayed, cleaning and the item keys, in one atomic MULTI/EXEC."""
    pipe = r.pipeline(transaction=True)
    pipe.lrange(k.queue, 0, -1).lrange(k.processing, 0, -1).zrange(k.delayed, 0, -1)
    pipe.lrange(k.cleaning, 0, -1).keys(k.item_pattern)
    q, p, d, c, keys = pipe.execute()
    return q, p, d, c, [key[k.item_key_offset:] for key in keys]


@pytest.mark.timeout(120)
def test_concurrent_light_and_deep_cleaners_never_duplicate_or_lose(
        server_url: str, r: redis.Redis, tmp_path: Path) -> None:
    prefix = "cc"
    k = Keys(prefix)
    wq = WorkQueue(r, prefix, QueueOptions(max_attempts=0))
    all_ids: dict[str, bytes] = {}

    def make(tag: str, n: int) -> list[NewItem]:
        out = []
        for i in range(n):
            item_id = f"{tag}{i:05d}"
            all_ids[item_id] = item_data(item_id)
            out.append(NewItem(all_ids[item_id], item_id))
        return out

    wq.push(make("i", SNAPSHOT_ITEMS))
    # Abandoned leases: leased by a worker that died (lease runs out in 0.3 s).
    dead_worker = WorkQueue(r, prefix, QueueOptions(max_attempts=0), session="died:1:x")
    abandoned = dead_worker.lease(ABANDONED, lease_seconds=0.3)
    assert len(abandoned) == ABANDONED
    # Strays, journaled ids and ghosts, written as crashed peer clients leave them.
    unlisted: set[bytes] = set()
    for item in make("s", STRAYS):
        r.set(k.item(item.id), item.data)
        unlisted.add(item.id.encode())
    # (the v0.1 cleaners died over a minute ago, an earlier cron run saw their journal then:
    # clean recovers a journal entry only after JOURNAL_GRACE_MS, whatever the grace)
    seconds, micros = r.time()
    then = seconds * 1000 + micros // 1000 - JOURNAL_GRACE_MS - 1000
    for item in make("j", JOURNALED):
        r.set(k.item(item.id), item.data)
        r.lpush(k.cleaning, item.id)
        r.hset(k.suspects, SIGHTINGS["cleaning"] + item.id, f"{then}:{then}")
        unlisted.add(item.id.encode())
    ghosts = {f"g{i:03d}".encode() for i in range(GHOSTS)}
    for g in ghosts:
        r.lpush(k.processing, g)
    late = make("late", LATE_ITEMS)

    violations: list[str] = []
    snapshots = 0
    seen_listed: set[bytes] = set()
    started = time.monotonic()
    with fleet(tmp_path, server_url, prefix, seed=11) as f:
        cleaners = [f.cleaner(grace=CLEAN_GRACE, run_for=8.0) for _ in range(3)]
        workers = [f.worker(lease_s=0.5, max_attempts=0, suicide=0.0, oversleep=0.005,
                            work_ms=8.0) for _ in range(3)]
        end = time.monotonic() + 60.0
        late_pos = 0
        for _ in range(int(60.0 / POLL) + 1):  # bounded: 60 s at most
            if time.monotonic() >= end:
                break
            if late_pos < len(late):  # more items keep arriving while cleaners run
                wq.push(late[late_pos:late_pos + 25])
                late_pos += 25
            q, p, d, c, live = snapshot(r, k)
            snapshots += 1
            listed = Counter(q) + Counter(p) + Counter(d)
            dups = [i for i, n in listed.items() if n > 1]
            if dups:
                violations.append(f"ids listed twice: {dups[:5]}")
            live_set = set(live)
            in_lists = set(listed)
            seen_listed |= in_lists & unlisted
            lost = live_set - in_lists - set(c) - (unlisted - seen_listed)
            if lost:
                violations.append(f"live items in no list: {sorted(lost)[:5]}")
            unexpected_ghosts = in_lists - live_set - ghosts
            if unexpected_ghosts:
                violations.append(f"ids listed without data: {sorted(unexpected_ghosts)[:5]}")
            if violations:
                break
            cleaning_done = all(cl.poll() is not None for cl in cleaners)
            if cleaning_done and late_pos >= len(late) and not live_set:
                break
            if cleaning_done:  # the crons stopped: pick up what the last runs left
                wq.clean(deep=True, grace_seconds=CLEAN_GRACE)
            time.sleep(0.02)
        for cl in cleaners:
            cl.wait(30)
        runs = [tuple(map(int, cl.stdout.read().split())) for cl in cleaners]
        for w in workers:
            f.kill(w)
        assert not f.crashed(), "\n".join(f.crashed())
    elapsed = time.monotonic() - started

    assert not violations, violations[0]
    assert snapshots >= 20
    assert all(light >= 1 and deep >= 1 for light, deep in runs), runs

    q, p, d, c, live = snapshot(r, k)
    assert (q, p, d, c, live) == ([], [], [], [], []), "not drained"
    j = Journal.read(tmp_path)
    assert not j.bad
    completed = j.completed()
    assert set(completed) == set(all_ids), sorted(set(all_ids) - set(completed))[:5]
    assert max(completed.values()) == 1, [i for i, n in completed.items() if n > 1][:5]
    cnt = counters(r, prefix)
    assert cnt["completed"] == len(all_ids)
    assert r.zcard(k.dead) == 0
    # The recoveries really happened, concurrently with the workers.
    late_lease = sum(1 for outs in j.outcomes.values() for o in outs if o != "completed")
    print(f"\n{len(all_ids)} items, {snapshots} atomic snapshots, cleaner runs (light, deep) "
          f"{runs}, {cnt.get('cleaned', 0)} recovered by clean, {late_lease} completes refused "
          f"or too late after a lease ran out, {elapsed:.1f} s")
    assert cnt.get("cleaned", 0) >= ABANDONED + STRAYS + JOURNALED


# =============================================================================================
# The same at the command line: a worker whose lease ran out cannot complete re-leased work
# =============================================================================================
def rq(url: str, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    return subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", url, *args],
                          input=stdin, capture_output=True, timeout=60, env=env)


def dump_all(r: redis.Redis) -> dict[bytes, bytes]:
    return {key: r.dump(key) for key in r.scan_iter(count=1000)}


@pytest.mark.timeout(60)
def test_cli_worker_whose_lease_ran_out_cannot_complete_work_leased_again(
        server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "st")
    wq.push([NewItem(item_data(f"s{n}"), f"s{n}") for n in range(5)])
    # Worker A leases everything, then stalls (or dies) past its lease.
    a = rq(server_url, "lease", "st", "-n", "5", "--lease", "0.5")
    assert a.returncode == 0, a.stderr
    assert len(a.stdout.splitlines()) == 5
    time.sleep(0.7)
    clean = rq(server_url, "clean", "st", "--grace", "0", "--json")
    assert json.loads(clean.stdout)["recovered"] == 5
    # Worker B gets them again: attempt 2, another session.
    b = rq(server_url, "lease", "st", "-n", "5")
    rows_b = [json.loads(line) for line in b.stdout.splitlines()]
    assert sorted(x["id"] for x in rows_b) == [f"s{n}" for n in range(5)]
    assert {x["attempt"] for x in rows_b} == {2}
    # A wakes up: its complete, fail and extend are all refused (exit 4), nothing changes.
    before = dump_all(r)
    for verb in ("complete", "fail", "extend"):
        late = rq(server_url, verb, "st", "-", stdin=a.stdout)
        assert late.returncode == 4, (verb, late.returncode, late.stderr)
        assert {json.loads(x)["outcome"] for x in late.stdout.splitlines()} == {"conflict"}
        assert dump_all(r) == before, f"a refused {verb} changed the queue"
    # B completes: exactly one completed per item; a second complete finds nothing (exit 3).
    done = rq(server_url, "complete", "st", "-", stdin=b.stdout)
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["outcome"] for x in done.stdout.splitlines()] == ["completed"] * 5
    again = rq(server_url, "complete", "st", "-", stdin=b.stdout)
    assert again.returncode == 3, again.stderr
    assert [json.loads(x)["outcome"] for x in again.stdout.splitlines()] == ["missing"] * 5
    assert int(r.hget("st:counters", "completed")) == 5

    # A lease ran out and the item went back to the queue, but nobody took it yet: the late
    # worker's complete is accepted (at-least-once: the work was done), and only once.
    wq.push([NewItem(item_data("late"), "late")])
    c = rq(server_url, "lease", "st", "--lease", "0.3")
    time.sleep(0.5)
    assert json.loads(rq(server_url, "clean", "st", "--grace", "0", "--json").stdout)[
        "recovered"] == 1
    late = rq(server_url, "complete", "st", "-", stdin=c.stdout)
    assert late.returncode == 0, late.stderr
    assert json.loads(late.stdout)["outcome"] == "completed"
    assert r.llen("st:queue") == 0 and r.llen("st:processing") == 0
    assert rq(server_url, "lease", "st").returncode == 3


# =============================================================================================
# A worker died; clean runs from cron: the item comes back, whatever the cron interval
# =============================================================================================
@pytest.mark.parametrize("grace, every", [
    (90, 60),
    (120, 120),
    (120, 300),
    (61, 3600),
], ids=lambda v: str(v))
def test_abandoned_item_is_recovered_by_a_cron_whatever_its_interval(
        r: redis.Redis, grace: int, every: int) -> None:
    """Cron runs of clean every ``every`` seconds, simulated with an injected clock (clean
    does not wait by itself when the grace period is above a minute, so nothing is lost)."""
    wq = WorkQueue(r, "cron", QueueOptions(grace_seconds=grace))
    wq.push([NewItem(b'"job"', "x")])
    assert wq.lease(lease_seconds=0.05)  # the worker dies with it; the lease runs out
    time.sleep(0.1)
    secs, micros = r.time()
    start = int(secs) * 1000 + int(micros) // 1000
    runs = 24
    for run in range(runs):
        if wq.clean(now_ms=start + run * every * 1000).recovered:
            break
    else:
        raise AssertionError(f"not recovered after {runs} cron runs, {runs * every} s")
    assert run * every >= grace  # and never before its grace period
    assert [i.id for i in wq.lease()] == ["x"]


@pytest.mark.timeout(60)
def test_deep_clean_with_a_long_grace_returns_and_a_later_run_recovers(
        server_url: str, r: redis.Redis) -> None:
    wq = WorkQueue(r, "dg")
    r.set(wq.keys.item("stray"), b'"left by a crashed client"')
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url",
                               server_url, "clean", "dg", "--deep", "--grace", "3600", "--json"],
                              capture_output=True, timeout=8)
    except subprocess.TimeoutExpired:
        raise AssertionError("clean --deep --grace 3600 was still running after 8 s") \
            from None
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 8
    report = json.loads(proc.stdout)
    assert (report["recovered"], report["suspects"]) == (0, 1)
    secs, micros = r.time()
    later = int(secs) * 1000 + int(micros) // 1000 + 3_600_001
    assert wq.clean(deep=True, now_ms=later).recovered == 1  # the next cron run, an hour on
