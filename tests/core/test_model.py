"""A model of the queue: Hypothesis drives random sequences of operations against a real
server and a plain Python model, and after every step compares them exactly.

The model keeps the lists in order (index 0 is the left end of the Redis list; leases take
from the right), so it checks not only counts but which item each lease returns. Time is
injected (``now_ms``); lease expiry is simulated by deleting the lease keys when the model's
clock passes a deadline (leases are granted for far longer than the test runs).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef, NewItem, QueueOptions

IDS = ["a", "b", "c", "d", "e", "f"]
LEASE_MS = 1_000_000  # 1000 s: real lease TTLs never run out during a test
MAX_ATTEMPTS = 3
T0 = 1_800_000_000_000


class QueueModel(RuleBasedStateMachine):
    def __init__(self, client) -> None:
        super().__init__()
        client.flushall()
        self.r = client
        opts = QueueOptions(max_attempts=MAX_ATTEMPTS, lease_seconds=LEASE_MS / 1000)
        self.workers = {s: WorkQueue(client, "m", opts, session=s) for s in ("A", "B")}
        self.q = self.workers["A"]
        self.now = T0
        self.queue: list[str] = []  # left .. right
        self.processing: list[str] = []
        self.delayed: dict[str, int] = {}
        self.dead: dict[str, int] = {}  # id -> time of death
        self.data: dict[str, bytes] = {}  # live items
        self.attempts: dict[str, int] = {}
        self.lease: dict[str, tuple[str, int]] = {}  # id -> (session, deadline)
        self.completed_true: dict[str, int] = {}
        self.serial = 0

    # -- model helpers -------------------------------------------------------------------
    def promote(self) -> None:
        due = sorted((t, i) for i, t in self.delayed.items() if t <= self.now)
        for _, i in due:
            del self.delayed[i]
            self.queue.insert(0, i)

    def unlist(self, i: str) -> None:
        if i in self.processing:
            idx = len(self.processing) - 1 - self.processing[::-1].index(i)
            del self.processing[idx]
        elif i in self.delayed:
            del self.delayed[i]
        elif i in self.queue:
            self.queue.remove(i)

    def kill(self, i: str) -> None:
        self.dead[i] = self.now
        del self.data[i]
        self.attempts.pop(i, None)
        self.lease.pop(i, None)

    def forget(self, i: str) -> None:
        del self.data[i]
        self.attempts.pop(i, None)
        self.lease.pop(i, None)

    # -- rules ---------------------------------------------------------------------------
    @rule(ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=4),
          delay=st.sampled_from([0, 0, 5_000]), front=st.booleans())
    def push(self, ids, delay, front):
        items = []
        for i in ids:
            self.serial += 1
            items.append(NewItem(f"{i}-{self.serial}".encode(), i))
        results = self.q.push(items, delay=delay / 1000, front=front, now_ms=self.now)
        added = []
        for item, res in zip(items, results, strict=True):
            # an id names one item at a time: live or dead (a dead id is refused)
            expect = item.id not in self.data and item.id not in self.dead
            assert res.added == expect, (item.id, res)
            if expect:
                self.data[item.id] = item.data
                self.attempts[item.id] = 0
                added.append(item.id)
        if delay:
            for i in added:
                self.delayed[i] = self.now + delay
        elif front:
            self.queue.extend(added)
        else:
            self.queue[:0] = list(reversed(added))

    @rule(count=st.integers(1, 3), who=st.sampled_from(["A", "B"]))
    def lease_items(self, count, who):
        got = self.workers[who].lease(count, now_ms=self.now)
        self.promote()
        expect = []
        while self.queue and len(expect) < count:
            i = self.queue.pop()
            if self.attempts[i] >= MAX_ATTEMPTS:
                self.kill(i)
                continue
            self.attempts[i] += 1
            self.processing.insert(0, i)
            self.lease[i] = (who, self.now + LEASE_MS)
            expect.append((i, self.data[i], self.attempts[i]))
        assert [(g.id, g.data, g.attempt) for g in got] == expect

    def _holder_conflict(self, i: str, session: str | None) -> bool:
        held = self.lease.get(i)
        return session is not None and held is not None and held[0] != session

    @rule(i=st.sampled_from(IDS), session=st.sampled_from([None, "A", "B"]))
    def complete(self, i, session):
        (out,) = self.q.complete([ItemRef(i, session)], now_ms=self.now)
        if self._holder_conflict(i, session):
            assert out.outcome == "conflict"
        elif i in self.data and self.attempts[i] == 0:
            assert out.outcome == "not_leased"  # never leased: left as it is
        elif i in self.data:
            assert out.outcome == "completed"
            self.completed_true[i] = self.completed_true.get(i, 0) + 1
            self.unlist(i)
            self.forget(i)
        else:
            assert out.outcome == ("already_dead" if i in self.dead else "missing")

    @rule(i=st.sampled_from(IDS), session=st.sampled_from([None, "A", "B"]),
          mode=st.sampled_from(["now", "later", "dead"]))
    def fail(self, i, session, mode):
        retry = {"now": 0, "later": 7, "dead": None}[mode]
        (out,) = self.q.fail([ItemRef(i, session)], retry_in=retry, dead=mode == "dead",
                             error="e", now_ms=self.now)
        if self._holder_conflict(i, session):
            assert out.outcome == "conflict"
        elif i not in self.data:
            assert out.outcome == ("already_dead" if i in self.dead else "missing")
        elif self.attempts[i] == 0:
            assert out.outcome == "not_leased"  # never leased: no failure counted
        else:
            self.unlist(i)
            self.lease.pop(i, None)
            if mode == "dead" or self.attempts[i] >= MAX_ATTEMPTS:
                assert out.outcome == "dead"
                self.kill(i)
            else:
                assert out.outcome == "retried"
                if retry:
                    self.delayed[i] = self.now + retry * 1000
                else:
                    self.queue.insert(0, i)

    @rule(i=st.sampled_from(IDS), session=st.sampled_from([None, "A", "B"]))
    def extend(self, i, session):
        (out,) = self.q.extend([ItemRef(i, session)], now_ms=self.now)
        if i not in self.data:
            assert out.outcome == ("already_dead" if i in self.dead else "missing")
        elif i not in self.lease:
            assert out.outcome == ("not_leased" if self.attempts[i] == 0 else "lost")
        elif self._holder_conflict(i, session):
            assert out.outcome == "conflict"
        else:
            assert out.outcome == "extended"
            self.lease[i] = (self.lease[i][0], self.now + LEASE_MS)

    @rule()
    def clean(self):
        self.q.clean(grace_seconds=0, now_ms=self.now)
        for _ in range(len(self.processing)):
            i = self.processing[-1]
            if i in self.lease:
                self.processing.insert(0, self.processing.pop())
            else:
                self.processing.pop()
                if self.attempts[i] >= MAX_ATTEMPTS:
                    self.kill(i)
                else:
                    self.queue.insert(0, i)
        self.promote()

    @rule()
    def requeue_dead(self):
        report = self.q.requeue_dead(now_ms=self.now)
        expect = []
        for _, i in sorted((t, i) for i, t in self.dead.items()):
            if i in self.data:
                continue
            expect.append(i)
            del self.dead[i]
            self.data[i] = self.r.get(f"m:item:{i}")  # data comes back as it was stored
            self.attempts[i] = 0
            self.queue.insert(0, i)
        assert report.ids == expect

    @rule(state=st.sampled_from(["pending", "processing", "delayed", "dead", "all"]))
    def purge(self, state):
        self.q.purge(state)
        if state in ("pending", "all"):
            for i in self.queue:
                self.forget(i)
            self.queue = []
        if state in ("processing", "all"):
            for i in self.processing:
                self.forget(i)
            self.processing = []
        if state in ("delayed", "all"):
            for i in self.delayed:
                self.forget(i)
            self.delayed = {}
        if state in ("dead", "all"):
            self.dead = {}
        if state == "all":  # the counters go too
            self.completed_true = {}

    @rule(ms=st.sampled_from([1_000, 6_000, 600_000, LEASE_MS]))
    def time_passes(self, ms):
        self.now += ms
        for i, (_, deadline) in list(self.lease.items()):
            if deadline <= self.now:  # the lease runs out: its keys expire
                del self.lease[i]
                self.r.delete(f"m:lease:{i}", f"m:leased_by_session:{i}")

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def server_matches_model(self):
        r = self.r
        assert [x.decode() for x in r.lrange("m:queue", 0, -1)] == self.queue
        assert [x.decode() for x in r.lrange("m:processing", 0, -1)] == self.processing
        assert {k.decode(): int(v) for k, v in r.zrange("m:delayed", 0, -1, withscores=True)
                } == self.delayed
        assert {k.decode() for k in r.zrange("m:dead", 0, -1)} == set(self.dead)
        live = {k.decode()[len("m:item:"):] for k in r.scan_iter(match="m:item:*")}
        assert live == set(self.data)
        for i, data in self.data.items():
            places = (self.queue.count(i) + self.processing.count(i) + (i in self.delayed))
            assert places == 1, f"{i} is in {places} places"
            assert r.get(f"m:item:{i}") == data
        for i in self.dead:
            assert r.exists(f"m:dead_item:{i}")

    @invariant()
    def stats_match_model(self):
        s = self.q.stats(now_ms=self.now)
        leased = sum(1 for i in self.processing if i in self.lease)
        assert (s.pending, s.processing, s.leased, s.abandoned) == (
            len(self.queue), len(self.processing), leased, len(self.processing) - leased)
        assert (s.delayed, s.due, s.dead) == (
            len(self.delayed), sum(t <= self.now for t in self.delayed.values()), len(self.dead))

    @invariant()
    def completed_once_per_push(self):
        assert all(n >= 1 for n in self.completed_true.values())
        assert (self.q.stats(now_ms=self.now).counters.get("completed", 0)
                == sum(self.completed_true.values()))


@pytest.mark.timeout(300)
def test_queue_matches_model(r):
    run_state_machine_as_test(
        lambda: QueueModel(r),
        settings=settings(max_examples=120, stateful_step_count=40, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )
