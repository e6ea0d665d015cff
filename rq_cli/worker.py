"""The shell worker behind ``rq-cli work``: lease items, run a command per item, settle.

Built on WorkQueue's public API only, around one event loop (epoll, or poll) in
the main thread. It waits, all at once, for: a command to exit (a pidfd per command, Linux
5.3+), its stderr and (with several at once) stdout to have output, its stdin to take more
of the item's data, a signal (``signal.set_wakeup_fd``), and the lease thread's answer. No
thread per command, no polling.

Commands are started with ``os.posix_spawn`` (vfork and exec: far cheaper than forking the
Python process), in their own process group, with the item's data on a stdin pipe and
``RQ_QUEUE``, ``RQ_ITEM_ID``, ``RQ_ATTEMPT``, ``RQ_LEASE_EXPIRES_AT`` and
``RQ_WORKER_SESSION`` in their environment.

Leasing. A command that exits 0 is completed in the next round trip, which also leases the
next items (``complete_and_lease``), at most ``COMPLETE_WITHIN`` seconds later. When commands
are short (they ran under ``PREFETCH_UNDER`` seconds on average), the worker holds about
``PREFETCH_SECONDS`` of work leased ahead (at least ``concurrency`` items, at most
``MAX_AHEAD``), so that a slot that frees up starts its next command at once and the round
trip runs while commands do; a refill is asked for when half of them are used, so a round
trip serves many items. Long commands get no items ahead: none waits behind them. When the
queue is empty and a slot is free, one lease thread waits on the server (``lease(wait=...)``:
BLMOVE, not a poll) while the loop goes on settling commands.

Outcomes: exit 0 completes the item; ``DEAD_EXIT`` dead-letters it at once (a permanent
failure); any other exit, a signal or ``--timeout`` fails it (retried with the queue's
backoff; dead-lettered at ``max_attempts``), with the tail of its stderr (or ``timeout``) as
the error. A lease is extended (every item held, in one call per queue) once a third of it
has passed, so short commands never cost an extension; one that ran out with nobody else
holding the item is taken back (``retake``); a lease lost (another session holds it, or the
item was cancelled) stops the command unless ``keep_running_on_lost_lease``. An exit 0 is
logged and counted once the server has answered its complete, with the server's outcome.

Outages (rq_cli/worker_outage.py) end nothing: server calls are held (``_call``), commands
go on; once the server answers, leases are extended or taken back, held calls sent.

Signals: the first SIGTERM/SIGINT stops leasing and lets running commands finish (and runs
the few items already leased ahead); a second stops them (SIGTERM to their process group,
SIGKILL after the grace period) and puts their items, and those leased ahead, straight back
in line (``release``: not a failure, the attempt given back), instead of waiting for their
leases to run out. Commands run in their own process group, so a Ctrl-C on the terminal reaches
the worker, not them.

SIGKILL of the worker: a small guard process, forked at start, sees the worker's end of a
pipe close. Unless the worker said goodbye (a normal exit), it sends SIGTERM to every process
whose environment carries this worker's ``RQ_WORKER_SESSION`` (the commands and whatever
they started), and SIGKILL after the grace period to those still there. Their items come
back once the leases run out (``clean``), or at once to a restart with the same ``--name``.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .core.limits import BATCH
from .core.queue import WorkQueue, lease_many
from .core.types import ItemOutcome, ItemRef, LeasedItem
from .errors import UsageError
from .worker_env import fail_unrunnable, unrunnable
from .worker_outage import Outage, give_back_orphans, transient
from .worker_poll import CHUNK, SESSION_ENV, Poller, Stream, drain, guard, killpg

#: The command's exit code that dead-letters its item at once (a permanent failure; 100 is
#: free in sysexits and in the shells' own codes).
DEAD_EXIT = 100
#: Longest blocking wait for work per call, seconds (the lease thread's).
WAIT_CHUNK = 1.0
#: Commands shorter than this on average (seconds): items are leased ahead.
PREFETCH_UNDER = 1.0
#: Work held leased ahead for short commands, in seconds of their average duration (at
#: least ``concurrency`` items, at most ``MAX_AHEAD``).
PREFETCH_SECONDS = 0.1
MAX_AHEAD = 100
#: Longest time an item that exited 0 waits for the round trip that completes it, seconds.
COMPLETE_WITHIN = 0.2
#: Longest time without a pidfd (not Linux) between checks for exited commands, seconds.
REAP_POLL = 0.01
#: Seconds between checks, while the queue gives nothing, that it is paused (to say so).
PAUSE_CHECK = 5.0
#: Yields of the CPU to a command that closed its output, waiting for its exit.
EXIT_SPIN = 20

#: Signals Python ignores that a command must get back at their defaults (as subprocess does).
_SIGDEF = tuple(s for s in (getattr(signal, "SIGPIPE", None), getattr(signal, "SIGXFSZ", None))
                if s is not None)


@dataclass
class WorkerOptions:
    concurrency: int = 1
    timeout: float | None = None  # seconds a command may run
    grace: float = 5.0  # seconds between SIGTERM and SIGKILL
    lease_seconds: float | None = None  # default: the queue's
    max_items: int | None = None
    idle_exit: float | None = None  # seconds without work before exiting
    order: str = "strict"
    keep_running_on_lost_lease: bool = False
    heartbeat: float | None = None  # seconds between lease extensions (default: lease / 3)
    max_outage: float | None = None  # seconds without the server before draining (None: never)
    env: dict[str, str] | None = None  # the commands' environment (default: the worker's)


@dataclass
class _Held:
    """An item this worker holds the lease of: leased ahead, or running."""

    wq: WorkQueue
    item: LeasedItem
    expires: float  # epoch seconds
    next_beat: float  # monotonic: extend the lease from then on
    reclaimed: bool = False
    lost: str | None = None  # "lost" or "cancelled": someone else owns the item now
    entry: dict[str, Any] | None = None  # exited 0: its log line, once the server has answered

    @property
    def ref(self) -> ItemRef:
        return ItemRef(self.item.id, self.item.session)


@dataclass
class _Job:
    held: _Held
    pid: int
    pidfd: int | None
    started: float
    deadline: float | None
    streams: list[Stream]
    stdin: int | None
    data: memoryview
    stderr_tail: bytearray = field(default_factory=bytearray)
    stopped: str | None = None  # why the worker stopped it: timeout, lost, cancelled, shutdown
    kill_at: float | None = None  # monotonic: SIGKILL the group if it is still running
    status: int | None = None  # exit code once reaped (negative: killed by that signal)
    ended: float = 0.0  # monotonic, once reaped


@dataclass
class WorkerStats:
    completed: int = 0
    failed: int = 0
    dead: int = 0
    returned: int = 0
    lost: int = 0  # settled by someone else: lease lost, cancelled, or the complete refused

    @property
    def handled(self) -> int:
        return self.completed + self.failed + self.dead + self.returned + self.lost


def resolve_command(command: Sequence[str]) -> str:
    """The path to execute for ``command`` (PATH searched once, not per item); a usage error
    when there is none."""
    if not command:
        raise UsageError("no command to run")
    name = command[0]
    path = shutil.which(name) if os.sep not in name else (
        name if os.access(name, os.X_OK) and not os.path.isdir(name) else None)
    if path is None:
        raise UsageError(f"command not found or not executable: {name}")
    return path


class Worker:
    """Run ``command`` for items of ``queues`` (WorkQueues sharing one session)."""

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
        self.jobs: dict[int, _Job] = {}  # by pid
        self.ahead: deque[_Held] = deque()  # leased, not started yet
        self.finished: list[_Held] = []  # exited 0: to complete in the next round trip
        self.finished_at = 0.0  # monotonic: when the oldest of them exited
        self.stats = WorkerStats()
        self.signals = 0
        self.signal_names: list[str] = []
        self._signals_logged = 0
        self.leased = 0
        self.empty = False  # the last lease found fewer items than asked for
        self.avg_duration: float | None = None
        self.beat_due = math.inf  # monotonic: no held item needs an extension before
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

    # -- signals -------------------------------------------------------------------------
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

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # inherited as ignored, SIGCHLD would have the kernel reap the commands: their exit
        # codes would be lost
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self._old_wakeup = signal.set_wakeup_fd(self._sig_w, warn_on_full_buffer=False)

    # -- the guard: commands do not outlive a worker killed with SIGKILL -------------------
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

    # -- main loop -----------------------------------------------------------------------
    def run(self, reclaim: Callable[[str], bool] | None = None) -> WorkerStats:
        """Work until stopped (signals, ``max_items``, ``idle_exit``); returns the tallies."""
        if reclaim is not None:
            for wq in self.queues:
                self._take(wq.reclaim(reclaim, lease_seconds=self.lease_seconds), True)
        idle_since = time.monotonic()
        while True:
            self._note_signals()
            if self.signals >= 2:
                self.stop_all("shutdown")
                self._return_ahead()
            if self.outage.down:
                self._ride_out()
            if self._sweep_due and self._waiter is None and not self.outage.down:
                self._call(self._sweep, hold=False)  # (none of its leases is in flight now)
            self._start_ahead()
            if self.jobs or self.ahead:
                idle_since = time.monotonic()  # idle: from when the last work ended
            elif self._waiter is None and (
                    self.signals or self.gave_up or self._quota_done()
                    or (self.empty and self._idle_over(idle_since))):
                break
            if self._leasing() and self._waiter is None and self._lease():
                idle_since = time.monotonic()
                self._start_ahead()
            if self.finished and not self.outage.down and \
                    time.monotonic() - self.finished_at >= COMPLETE_WITHIN:
                self._complete()  # no lease round trip took them along in time
            if self._poll_once(self._timeout()):
                idle_since = time.monotonic()
        self._settle_last()
        return self.stats

    # -- outages: the server out of reach (rq_cli/worker_outage.py) ------------------------
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

    def _ride_out(self) -> None:
        """In an outage: past ``--max-outage``, drain; else try the server when due, and once
        it answers, re-check the leases and send what was held."""
        if self.gave_up is None and self.outage.over():
            self.gave_up = (f"the server was out of reach for {self.outage.lasted():.1f} s "
                            f"(--max-outage {self.opts.max_outage:g}): {self.outage.error}")
            self.log({"event": "giving_up", "running": len(self.jobs),
                      "note": f"out of reach for over {self.opts.max_outage:g} s: running "
                              f"commands finish, then exit 69"})
        if self.gave_up is not None or self.signals:
            self.ahead.clear()  # not started: their leases run out, clean puts them back
        if not self.outage.probe(self._ping, self._sig_w):  # (wakes the loop when done)
            return
        self.outage.ended()
        held = self._held()
        if held:
            self._beat(held)  # extend, or take back, every lease it holds
        ops, self.unsettled = self.unsettled, []
        for n, op in enumerate(ops):
            if not self._call(op):
                self.unsettled += ops[n + 1:]
                return
        if self.finished:
            self._complete()
        self._sweep_due = True

    def _sweep(self) -> None:
        """After an outage: give back leases whose reply it cut off (worker_outage.py)."""
        known = {j.held.item.id for j in self.jobs.values()} | \
            {h.item.id for h in [*self.ahead, *self.finished]}
        give_back_orphans(self.queues, self.session, known, self.log)
        self._sweep_due = False

    def _ping(self) -> None:
        for wq in self.queues:
            wq.client.ping()

    def _settle_last(self) -> None:
        """At the end: record what is held; what cannot be is said once (exit 69)."""
        if self.outage.down:  # one last try, given the time of a ping
            self.outage.next_try = 0.0
            self._ride_out()
            deadline = time.monotonic() + WAIT_CHUNK
            while self.outage.wait() and time.monotonic() < deadline:
                time.sleep(0.01)
            self._ride_out()
        elif self.finished:
            self._complete()
        left = len(self.unsettled) + len(self.finished)
        if left and self.outage.down:
            self.log({"event": "unsettled", "items": left,
                      "note": "the server is out of reach: these outcomes were not recorded; "
                              "the items come back when their leases run out"})
            self.gave_up = self.gave_up or (f"{left} outcomes could not be recorded: "
                                            f"{self.outage.error}")

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

    # -- leasing and settling ----------------------------------------------------------------
    def _hold(self, wq: WorkQueue, item: LeasedItem, reclaimed: bool = False) -> _Held:
        next_beat = time.monotonic() + self.heartbeat
        self.beat_due = min(self.beat_due, next_beat)
        return _Held(wq, item, item.lease_expires_at, next_beat, reclaimed)

    def _held(self) -> list[_Held]:
        return [j.held for j in self.jobs.values()
                if j.stopped is None and j.held.lost is None] + list(self.ahead)

    def _lease(self) -> int:
        """Lease what the slots (and, for short commands, the items held ahead) want,
        completing the finished items in the same round trip; when the queue is empty and a
        slot is free, start the lease thread instead. Returns the number of items leased."""
        room, prefetch = self._room(), self._prefetch()
        if room == 0 and (self.empty or len(self.ahead) > prefetch // 2):
            return 0  # enough held; an empty queue is waited on only for a free slot
        want = room + prefetch - len(self.ahead)
        left = self._quota_left()
        if left is not None:
            want = min(want, left)
        if want <= 0:
            return 0
        if self.empty and room > 0:
            self._start_waiter(min(room, want))
            return 0
        finished, self.finished = self.finished, []
        items: list[LeasedItem]
        try:
            if len(self.queues) == 1 and len(finished) <= BATCH:
                wq = self.queues[0]
                outcomes, items = wq.complete_and_lease([h.ref for h in finished], want,
                                                        lease_seconds=self.lease_seconds)
                self._note_completions(finished, [o.outcome for o in outcomes])
            else:
                self._complete(finished)
                finished = []
                items = lease_many(self.queues, want, lease_seconds=self.lease_seconds,
                                   order=self.opts.order)
            paused = None if items else self._paused_now()
        except Exception as err:
            if not transient(err):
                raise
            self.outage.failed(err)
            self._hold_finished(finished)
            return 0
        self._take(items)
        self.empty = len(items) < want
        self._note_paused(paused)
        return len(items)

    def _take(self, items: list[LeasedItem], reclaimed: bool = False) -> None:
        by_prefix = {wq.prefix: wq for wq in self.queues}
        for item in items:
            self.leased += 1
            held = self._hold(by_prefix[item.queue], item, reclaimed)
            if (why := unrunnable(item)) is not None:  # settled now: never held ahead
                self._cannot_start(held, why, dead=True)
            else:
                self.ahead.append(held)

    def _start_waiter(self, count: int) -> None:
        """Wait for work on the server in the lease thread (the loop goes on meanwhile)."""
        wait = WAIT_CHUNK if self.opts.idle_exit is None else \
            min(WAIT_CHUNK, max(self.opts.idle_exit, 0.01))

        def wait_for_work() -> None:
            try:
                got = lease_many(self.queues, count, lease_seconds=self.lease_seconds,
                                 wait=wait, order=self.opts.order)
                if not got:
                    self._waiter_paused = self._paused_now()
                self._waiter_got = got
            except BaseException as err:  # handed to the loop, raised there
                self._waiter_got = err
            os.write(self._wake_w, b"w")

        self._waiter_got = None
        self._waiter = threading.Thread(target=wait_for_work, name="rq-cli-lease", daemon=True)
        self._waiter.start()

    def _waiter_done(self) -> bool:
        """Take the lease thread's items; True when it found any."""
        assert self._waiter is not None
        self._waiter.join()
        self._waiter = None
        got, self._waiter_got = self._waiter_got, None
        if self._waiter_paused is not None:
            self._note_paused(self._waiter_paused)
            self._waiter_paused = None
        if isinstance(got, BaseException):
            if not transient(got):
                raise got
            self.outage.failed(got)
            return False
        items = got or []
        self._take(items)
        self.empty = not items
        return bool(items)

    def _paused_now(self) -> set[str] | None:
        """The queues paused now (to say so): at most every PAUSE_CHECK s."""
        if time.monotonic() - self._pause_checked < PAUSE_CHECK:
            return None
        self._pause_checked = time.monotonic()
        return {wq.prefix for wq in self.queues if wq.is_paused()}

    def _note_paused(self, paused: set[str] | None) -> None:
        if paused is None:
            return
        for prefix in sorted(paused - self.paused):
            self.log({"event": "paused", "queue": prefix,
                      "note": f"the queue is paused: nothing is leased until "
                              f"'rq-cli resume {prefix}'"})
        for prefix in sorted(self.paused - paused):
            self.log({"event": "resumed", "queue": prefix})
        self.paused = paused

    def _complete(self, finished: list[_Held] | None = None) -> None:
        """Complete the items that exited 0 (held while the server is out of reach)."""
        if finished is None:
            finished, self.finished = self.finished, []
        for wq in self.queues:
            mine = [h for h in finished if h.wq is wq]
            if not mine:
                continue
            if not self.outage.down:
                try:
                    outcomes = wq.complete([h.ref for h in mine])
                    self._note_completions(mine, [o.outcome for o in outcomes])
                    continue
                except Exception as err:
                    if not transient(err):
                        raise
                    self.outage.failed(err)
            self._hold_finished(mine)

    def _hold_finished(self, finished: list[_Held]) -> None:
        if finished and not self.finished:
            self.finished_at = time.monotonic()
        self.finished.extend(finished)

    def _note_completions(self, finished: list[_Held], outcomes: list[str]) -> None:
        """Log (and count) each item with the outcome the server gave its complete."""
        for held, outcome in zip(finished, outcomes, strict=True):
            entry = held.entry or {"queue": held.item.queue, "id": held.item.id}
            entry["outcome"] = outcome
            if outcome == "completed":
                self.stats.completed += 1
            else:
                self.stats.lost += 1
                entry["note"] = "not completed: the lease was lost (another session holds " \
                                "the item, or it is gone)"
            self.log(entry)

    def _release(self, held: _Held, entry: dict[str, Any]) -> None:
        """Give ``held`` back (the second signal): not a failure, its attempt given back."""
        (out,) = held.wq.release([held.item.id])
        entry["outcome"] = out.outcome
        if out.outcome == "returned":
            self.stats.returned += 1
        else:
            self.stats.lost += 1
        self.log(entry)

    def _fail(self, held: _Held, entry: dict[str, Any], error: str, dead: bool,
              timeout: bool = False) -> None:
        (out,) = fail_unrunnable(held.wq, held.item, error) if unrunnable(held.item) \
            else held.wq.fail([held.ref], error=error, dead=dead)
        if out.outcome in ("dead", "retried"):
            self.stats.dead += out.outcome == "dead"
            self.stats.failed += out.outcome == "retried"
            entry["outcome"] = "timeout" if timeout else out.outcome
        else:
            self.stats.lost += 1
            entry["outcome"] = out.outcome
        self.log(entry)

    def _return_ahead(self) -> None:
        """Put the items leased ahead straight back in line (the second signal)."""
        while self.ahead:
            held = self.ahead.popleft()
            entry = {"queue": held.item.queue, "id": held.item.id,
                     "attempt": held.item.attempt, "exit_code": None, "duration_s": 0.0}
            self._call(lambda h=held, e=entry: self._release(h, e))  # type: ignore[misc]

    def _settle(self, job: _Job) -> None:
        """Note ``job``'s outcome: completed (in the next round trip), failed, dead..."""
        code = job.status
        held = job.held
        item = held.item
        duration = job.ended - job.started
        self.avg_duration = duration if self.avg_duration is None else \
            0.8 * self.avg_duration + 0.2 * duration
        entry: dict[str, Any] = {"queue": item.queue, "id": item.id, "attempt": item.attempt,
                                 "exit_code": code, "duration_s": round(duration, 3)}
        if held.lost is not None:
            entry["outcome"] = held.lost  # someone else owns the item now: touch nothing
            self.stats.lost += 1
            self.log(entry)
        elif job.stopped == "shutdown":
            self._call(lambda: self._release(held, entry))
        elif code == 0 and job.stopped is None:
            held.entry = entry  # logged with the server's answer (_note_completions)
            self._hold_finished([held])
        else:
            error = self._error(job, code)
            dead = code == DEAD_EXIT and job.stopped is None
            timeout = job.stopped == "timeout"
            self._call(lambda: self._fail(held, entry, error, dead, timeout))

    @staticmethod
    def _error(job: _Job, code: int | None) -> str:
        if job.stopped == "timeout":
            return "timeout"
        tail = bytes(job.stderr_tail).decode("utf-8", "replace").strip()
        what = f"exit code {code}" if code is not None and code >= 0 else \
            f"killed by signal {-(code or 0)}"
        return f"{what}: {tail}" if tail else what

    # -- commands --------------------------------------------------------------------------
    def _start_ahead(self) -> None:
        while self.ahead and self._room() > 0 and self.signals < 2 and not self.outage.down:
            self._start(self.ahead.popleft())

    def _start(self, held: _Held) -> None:
        item = held.item
        if held.reclaimed:
            self.log({"event": "reclaimed", "queue": item.queue, "id": item.id,
                      "attempt": item.attempt})
        env = dict(self.base_env)
        env["RQ_QUEUE"] = item.queue
        env["RQ_ITEM_ID"] = item.id
        env["RQ_ATTEMPT"] = str(item.attempt)
        env["RQ_LEASE_EXPIRES_AT"] = f"{held.expires:.3f}"
        in_r, in_w = os.pipe()
        err_r, err_w = os.pipe()
        mine = [in_w, err_r]
        theirs = [in_r, err_w]
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, in_r, 0),
                                          (os.POSIX_SPAWN_DUP2, err_w, 2)]
        out_r = None
        if self.prefix_output:
            out_r, out_w = os.pipe()
            mine.append(out_r)
            theirs.append(out_w)
            actions.append((os.POSIX_SPAWN_DUP2, out_w, 1))
        now = time.monotonic()
        try:
            pid = os.posix_spawn(self.path, self.command, env, file_actions=actions,
                                 setpgroup=0, setsigdef=_SIGDEF)
        except (OSError, ValueError) as err:
            for fd in mine + theirs:
                os.close(fd)
            self._cannot_start(held, getattr(err, "strerror", None) or str(err),
                               dead=isinstance(err, ValueError))  # (ValueError: never runs)
            return
        for fd in theirs:
            os.close(fd)
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None  # not Linux 5.3+: the loop checks with waitpid(WNOHANG) instead
        tag = f"[{item.id}] ".encode() if self.prefix_output else b""
        job = _Job(held, pid, pidfd, now, now + self.opts.timeout if self.opts.timeout else None,
                   [], in_w, memoryview(item.data), stderr_tail=bytearray())
        err_stream = Stream(err_r, self.err, tag, job.stderr_tail)
        job.streams.append(err_stream)
        if out_r is not None:
            job.streams.append(Stream(out_r, self.out, tag, None))
        self.jobs[pid] = job
        for stream in job.streams:
            os.set_blocking(stream.fd, False)
            self.sel.register(stream.fd, False, ("out", (job, stream)))
        if pidfd is not None:
            self.sel.register(pidfd, False, ("exit", job))
        os.set_blocking(in_w, False)
        self._feed(job)

    def _cannot_start(self, held: _Held, error: str, dead: bool = False) -> None:
        """The command could not be started: fail the item, so it is retried with the
        queue's backoff (it vanished, out of processes...), or dead-letter it at once when
        it can never run (``dead``: an id that cannot be passed in the environment)."""
        entry = {"queue": held.item.queue, "id": held.item.id, "attempt": held.item.attempt,
                 "exit_code": None, "duration_s": 0.0, "error": error}
        self._call(lambda: self._fail(held, entry, f"cannot start the command: {error}",
                                      dead))

    def _feed(self, job: _Job) -> None:
        """Write what the command's stdin takes now; close it once all is written."""
        fd = job.stdin
        if fd is None:
            return
        try:
            while job.data:
                n = os.write(fd, job.data[:CHUNK])
                job.data = job.data[n:]
        except BlockingIOError:  # the pipe is full: go on when it is writable
            if not self.sel.has(fd):
                self.sel.register(fd, True, ("in", job))
            return
        except OSError:  # the command exited or closed its stdin without reading: fine
            pass
        self._close_stdin(job)

    def _close_stdin(self, job: _Job) -> None:
        if job.stdin is None:
            return
        if self.sel.has(job.stdin):
            self.sel.unregister(job.stdin)
        os.close(job.stdin)
        job.stdin = None

    def _poll_once(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for events and handle them; returns True when the lease
        thread brought items."""
        got = False
        for kind, what in self.sel.wait(timeout):
            if kind == "exit":
                job = what
                if job.pid in self.jobs:
                    self._reap(job)
            elif kind == "out":
                job, stream = what
                if not stream.copy(self.sel) and stream in job.streams:
                    job.streams.remove(stream)
                    if not job.streams and job.pid in self.jobs:
                        self._exiting(job)
            elif kind == "in":
                self._feed(what)
            elif kind == "wake":
                drain(self._wake_r)
                got = self._waiter_done() or got
            else:
                drain(self._sig_r)
        for job in [j for j in self.jobs.values() if j.pidfd is None]:
            self._reap(job)
        self._note_signals()
        self._timers()
        return got

    def _exiting(self, job: _Job) -> None:
        """``job``'s command closed its output: it is most likely exiting (a process's files
        are closed before its parent is told). Give it the CPU to finish and reap it now,
        rather than sleep and wake once more for its pidfd (at most ``EXIT_SPIN`` yields)."""
        if job.pidfd is None:
            return  # the loop checks it soon anyway
        for _ in range(EXIT_SPIN):
            try:
                if os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    os.sched_yield()
                    continue
            except ChildProcessError:
                pass
            self._reap(job)
            return

    def _reap(self, job: _Job) -> None:
        """If ``job``'s command has exited: collect it, its last output, and settle it."""
        if job.pidfd is None:  # (with a pidfd, this is called once it has exited)
            try:
                if os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    return
            except ChildProcessError:
                pass
        if job.stopped is not None:
            # the group may have members left (a shell's child): kill them while the
            # leader's pid (the group's id) is still held by its zombie, so it is not reused
            killpg(job.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(job.pid, 0)
        except ChildProcessError:  # reaped by someone else: its exit code is unknown, so
            status = 255 << 8  # it counts as a failure (exit 255), never as done
        job.status = os.waitstatus_to_exitcode(status)
        job.ended = time.monotonic()
        del self.jobs[job.pid]
        if job.pidfd is not None:
            self.sel.unregister(job.pidfd)
            os.close(job.pidfd)
        self._close_stdin(job)
        for stream in job.streams:
            if stream.copy(self.sel):  # still open: a process it started holds it; let go
                stream.close(self.sel)
        self._start_ahead()  # the slot's next command first: settling can wait a moment
        self._settle(job)

    def _timers(self) -> None:
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.deadline is not None and now >= job.deadline:
                self._kill(job, "timeout")
            if job.kill_at is not None and now >= job.kill_at:
                job.kill_at = None
                killpg(job.pid, signal.SIGKILL)
        if now >= self.beat_due and not self.outage.down:
            held = self._held()
            if any(h.next_beat <= now for h in held):
                # the others due within half a beat go along: one call for the lot
                soon = now + self.heartbeat / 2
                self._beat([h for h in held if h.next_beat <= soon])
            self.beat_due = min((h.next_beat for h in self._held()), default=math.inf)

    def _kill(self, job: _Job, why: str) -> None:
        if job.stopped is not None or job.status is not None:
            return
        job.stopped = why
        killpg(job.pid, signal.SIGTERM)
        job.kill_at = time.monotonic() + self.opts.grace

    def stop_all(self, why: str = "shutdown") -> None:
        """Stop every running command (SIGTERM, SIGKILL after the grace period)."""
        for job in list(self.jobs.values()):
            self._kill(job, why)

    def _beat(self, due: list[_Held]) -> None:
        """Extend the leases of ``due`` (one call per queue); stop the commands of those
        lost, and drop lost items held ahead."""
        running = {id(j.held): j for j in self.jobs.values()}
        for wq in self.queues:
            mine = [h for h in due if h.wq is wq]
            if not mine:
                continue
            try:
                outcomes = self._extend(wq, mine)
            except Exception as err:
                if not transient(err):
                    raise
                self.outage.failed(err)  # tried again when the server is back
                return
            next_beat = time.monotonic() + self.heartbeat
            for held, out in zip(mine, outcomes, strict=True):
                held.next_beat = next_beat
                if out.outcome == "extended":
                    if out.lease_expires_at is not None:
                        held.expires = out.lease_expires_at
                    continue
                why = held.lost = "cancelled" if out.outcome == "already_dead" else "lost"
                self.log({"event": "lease", "queue": held.item.queue, "id": held.item.id,
                          "outcome": out.outcome,
                          "note": "cancelled: stopping the command" if why == "cancelled"
                          else "lease lost: another session may run this item"})
                job = running.get(id(held))
                if job is None:  # leased ahead, not started: just let it go
                    if held in self.ahead:
                        self.ahead.remove(held)
                elif why == "cancelled" or not self.opts.keep_running_on_lost_lease:
                    self._kill(job, why)

    def _extend(self, wq: WorkQueue, mine: list[_Held]) -> list[ItemOutcome]:
        """Extend the leases of ``mine``; those that ran out (the server hung, or was out of
        reach) while nobody else took the item are taken back, as the same attempt."""
        outcomes = wq.extend([h.ref for h in mine], lease_seconds=self.lease_seconds)
        ran_out = [n for n, out in enumerate(outcomes) if out.outcome == "lost"]
        if ran_out:
            again = wq.retake([mine[n].item.id for n in ran_out],
                              lease_seconds=self.lease_seconds)
            for n, out in zip(ran_out, again, strict=True):
                outcomes[n] = out
                if out.outcome == "extended":
                    self.log({"event": "lease", "queue": mine[n].item.queue,
                              "id": mine[n].item.id, "outcome": "retaken",
                              "note": "the lease had run out, nobody else took the item: "
                                      "taken back, same attempt"})
        return outcomes
