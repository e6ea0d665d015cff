"""The worker's state, its signals, its guard and its server calls (``rq-cli work``).

:class:`WorkerBase` holds what every part of the worker reads: the queues, the running
commands (``jobs``), the items leased ahead and finished, the tallies, the event loop's
poller and pipes. The parts build on it in layers, each using only those below:
settle.py (outcomes), leasing.py (leases and the lease thread), spawn.py (commands),
beats.py (timers and lease extensions), loop.py (the event loop, outages).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any

from ..core.codes import Ask
from ..core.operations.control import Asked
from ..core.queue import WorkQueue
from ..core.types import LeasedItem
from .guard import SESSION_ENV, guard
from .model import (
    COMPLETE_WITHIN,
    MAX_AHEAD,
    PREFETCH_SECONDS,
    PREFETCH_UNDER,
    REAP_POLL,
    WAIT_CHUNK,
    Held,
    Job,
    WorkerOptions,
    WorkerStats,
    resolve_command,
)
from .outage import Outage, transient
from .poll import Poller


class WorkerBase:
    """The worker's state (see the package's docstring for what it does)."""

    def __init__(self, queues: Sequence[WorkQueue], command: Sequence[str],
                 options: WorkerOptions, log: Callable[[dict[str, Any]], None],
                 stdout: IO[bytes] | None = None, stderr: IO[bytes] | None = None,
                 describe: Callable[[BaseException], str] = str) -> None:
        self.queues = list(queues)
        self.command = list(command)
        self.path = resolve_command(self.command)
        self.opts = options
        self.log = log
        self.out = stdout or sys.stdout.buffer
        self.err = stderr or sys.stderr.buffer
        self.session = self.queues[0].session
        self.base_env = dict(os.environ if options.env is None else options.env)
        self.base_env[SESSION_ENV] = self.session
        self.jobs: dict[int, Job] = {}  # by pid
        self.ahead: deque[Held] = deque()  # leased, not started yet
        self.finished: list[Held] = []  # exited 0: to complete in the next round trip
        self.finished_at = 0.0  # monotonic: when the oldest of them exited
        self.stats = WorkerStats()
        self.signals = 0
        self.signal_names: list[str] = []
        self._signals_logged = 0
        self.leased = 0
        self.empty = False  # the last lease found fewer items than asked for
        self.avg_duration: float | None = None
        self.role_due = 0.0  # monotonic: when to ask the sentinels where the primary is
        self.beat_due = math.inf  # monotonic: no held item needs an extension before
        self.history_due = 0.0  # monotonic: when to snapshot the queues' history next
        self.control_due = 0.0  # monotonic: when to read the control keys next (asks)
        self.asks_seen: dict[str, bytes] = {}  # control key -> the ask last read there
        lease = self.queues[0].options.lease_seconds if options.lease_seconds is None \
            else options.lease_seconds
        self.lease_seconds = lease
        self.heartbeat = options.heartbeat or max(lease / 3, 0.05)
        self.prefix_output = options.concurrency > 1
        self.sel = Poller()
        self.outage = Outage(log, describe, options.max_outage)
        self.unsettled: list[Callable[[], None]] = []  # server calls held during an outage
        self.gave_up: str | None = None  # the outage lasted past --max-outage: why
        self.paused: set[str] = set()  # queues found paused (logged once)
        self.shards_down: set[str] = set()  # shards found unreachable (logged once)
        self._pause_checked = -math.inf  # monotonic
        self._waiter_paused: set[str] | None = None  # the lease thread's finding
        self._sweep_due = False  # an outage ended: look for leases whose reply it cut off
        self._waiter: threading.Thread | None = None
        self._waiter_got: list[LeasedItem] | BaseException | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self.sel.register(self._wake_r, False, ("wake", None))
        self._sig_r, self._sig_w = os.pipe()
        for fd in (self._sig_r, self._sig_w):
            os.set_blocking(fd, False)
        self.sel.register(self._sig_r, False, ("signal", None))
        self._old_wakeup: int | None = None
        self._guard_w: int | None = None
        self._guard_pid: int | None = None

    def _on_signal(self, signum: int, frame: Any) -> None:
        # Only note it: the loop logs and acts (it is woken through the wakeup fd).
        self.signals += 1
        self.signal_names.append(signal.Signals(signum).name)

    def _note_signals(self) -> None:
        while self._signals_logged < self.signals:
            self._signals_logged += 1
            self.log({"event": "draining" if self._signals_logged == 1 else "stopping",
                      "signal": self.signal_names[self._signals_logged - 1],
                      "running": len(self.jobs)})

    def _on_ask(self, asked: Asked) -> None:
        """A console asked (core/operations/control.py): a drain as a first SIGTERM, a stop as a
        second; logged with who asked. One asking for less than is under way is logged."""
        self._note_signals()
        want = 2 if asked.ask == Ask.STOP else 1
        event = "draining" if want == 1 else "stopping"
        entry = {"event": event if self.signals < want else "asked", "ask": asked.ask.value,
                 "asked_by": asked.by, "running": len(self.jobs)}
        if self.signals < want:
            self.signal_names += [f"asked by {asked.by}"] * (want - self.signals)
            self.signals = self._signals_logged = want
        self.log(entry)

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # inherited as ignored, SIGCHLD would have the kernel reap the commands: their exit
        # codes would be lost
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self._old_wakeup = signal.set_wakeup_fd(self._sig_w, warn_on_full_buffer=False)

    def start_guard(self) -> None:
        """Fork the guard process (see the module's docstring). POSIX only; once."""
        if self._guard_pid is not None or not hasattr(os, "fork"):
            return
        life_r, life_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the guard: never returns
            try:
                guard(life_r, self.session, self.opts.grace)
            finally:
                os._exit(0)
        os.close(life_r)
        self._guard_w, self._guard_pid = life_w, pid

    def stop_guard(self) -> None:
        """A normal exit: tell the guard to leave the commands' leftovers alone."""
        if self._guard_w is None or self._guard_pid is None:
            return
        try:
            os.write(self._guard_w, b"x")
            os.close(self._guard_w)
            os.waitpid(self._guard_pid, 0)
        except OSError:
            pass
        self._guard_w = self._guard_pid = None

    def close(self) -> None:
        """Give back the signal wakeup fd and the loop's pipes (after ``run``)."""
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
            self._old_wakeup = None
        if self._waiter is not None:
            self._waiter.join(WAIT_CHUNK * 2)
        self.sel.close()
        for fd in (self._wake_r, self._wake_w, self._sig_r, self._sig_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _call(self, op: Callable[[], None], hold: bool = True) -> bool:
        """Run the server call ``op``; out of reach: False, and ``op`` is held for later."""
        if not self.outage.down:
            try:
                op()
                return True
            except Exception as err:
                if not transient(err):
                    raise
                self.outage.failed(err)
        if hold:
            self.unsettled.append(op)
        return False

    def _room(self) -> int:
        return max(self.opts.concurrency - len(self.jobs), 0)

    def _quota_left(self) -> int | None:
        return None if self.opts.max_items is None else self.opts.max_items - self.leased

    def _quota_done(self) -> bool:
        left = self._quota_left()
        return left is not None and left <= 0

    def _idle_over(self, since: float) -> bool:
        return self.opts.idle_exit is not None and time.monotonic() - since >= self.opts.idle_exit

    def _leasing(self) -> bool:
        return self.signals == 0 and not self._quota_done() and not self.outage.down \
            and self.gave_up is None

    def _prefetch(self) -> int:
        """How many items to hold leased ahead: none for long commands (or before the first
        has run), else about PREFETCH_SECONDS of work."""
        avg, n = self.avg_duration, self.opts.concurrency
        if avg is None or avg >= PREFETCH_UNDER:
            return 0
        return min(max(n, math.ceil(n * PREFETCH_SECONDS / max(avg, 1e-4))), MAX_AHEAD)

    def _timeout(self) -> float:
        """Seconds the loop may wait for events: until the next timer is due."""
        now = time.monotonic()
        wake = now + WAIT_CHUNK
        for job in self.jobs.values():
            if job.deadline is not None and job.stopped is None:
                wake = min(wake, job.deadline)
            if job.kill_at is not None:
                wake = min(wake, job.kill_at)
            if job.pidfd is None:
                wake = min(wake, now + REAP_POLL)
        if self.outage.down:
            return max(min(wake, now + self.outage.wait()) - now, 0.0)
        wake = min(wake, self.beat_due)
        if self.finished:
            wake = min(wake, self.finished_at + COMPLETE_WITHIN)
        return max(wake - now, 0.0)

    def _hold(self, wq: WorkQueue, item: LeasedItem, reclaimed: bool = False) -> Held:
        next_beat = time.monotonic() + self.heartbeat
        self.beat_due = min(self.beat_due, next_beat)
        return Held(wq, item, item.lease_expires_at, next_beat, reclaimed)

    def _held(self) -> list[Held]:
        return [j.held for j in self.jobs.values()
                if j.stopped is None and j.held.lost is None] + list(self.ahead)
