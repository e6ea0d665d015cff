"""The shell worker behind ``rq-cli work``: lease items, run a command per item, settle.

Built on WorkQueue's public API only. One main thread leases, starts commands, heartbeats
and settles outcomes; a small thread per running command waits for it to exit (and copies
its stderr through, keeping the tail as the error) and reports to the main thread through a
queue, so the loop wakes as soon as a command ends. Waiting for work blocks on the server
(``lease(wait=...)``: BLMOVE), it never polls.

Outcomes: exit 0 completes the item; ``DEAD_EXIT`` dead-letters it at once (a permanent
failure); any other exit, a signal or ``--timeout`` fails it (retried with the queue's
backoff; dead-lettered at ``max_attempts``), with the tail of its stderr (or ``timeout``) as
the error. Leases are extended in the background at a third of the lease time; a lease lost
anyway (another session holds it, or the item was cancelled) stops the command unless
``keep_running_on_lost_lease``.

Signals: the first SIGTERM/SIGINT stops leasing and lets running commands finish; a second
stops them (SIGTERM to their process group, SIGKILL after the grace period) and puts their
items straight back in line (``fail`` with no delay, counted as a failure), instead of
waiting for their leases to run out. Commands run in their own process group, so a Ctrl-C
on the terminal reaches the worker, not them.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import json
import os
import queue as queuemod
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .core.queue import WorkQueue, lease_many
from .core.types import ItemRef, LeasedItem

#: The command's exit code that dead-letters its item at once (a permanent failure; 100 is
#: free in sysexits and in the shells' own codes).
DEAD_EXIT = 100
#: Bytes of a command's stderr kept as the item's error.
ERROR_TAIL = 2000
#: Longest blocking wait for work per call, seconds (signals are noticed within it).
WAIT_CHUNK = 1.0
#: Blocking wait for work while commands run and a slot is free: a command that ends
#: meanwhile is settled at most this late.
BUSY_WAIT = 0.1


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


@dataclass
class _Job:
    item: LeasedItem
    wq: WorkQueue
    proc: subprocess.Popen[bytes]
    started: float
    deadline: float | None
    stderr_tail: bytearray = field(default_factory=bytearray)
    stopped: str | None = None  # why the worker stopped it: timeout, lost, cancelled, shutdown


@dataclass
class WorkerStats:
    completed: int = 0
    failed: int = 0
    dead: int = 0
    returned: int = 0

    @property
    def handled(self) -> int:
        return self.completed + self.failed + self.dead + self.returned


class Worker:
    """Run ``command`` for items of ``queues`` (WorkQueues sharing one session)."""

    def __init__(self, queues: Sequence[WorkQueue], command: Sequence[str],
                 options: WorkerOptions, log: Callable[[dict[str, Any]], None],
                 stdout: IO[bytes] | None = None, stderr: IO[bytes] | None = None) -> None:
        self.queues = list(queues)
        self.command = list(command)
        self.opts = options
        self.log = log
        self.out = stdout or sys.stdout.buffer
        self.err = stderr or sys.stderr.buffer
        self.jobs: dict[tuple[str, str], _Job] = {}
        self.done: queuemod.Queue[tuple[str, str]] = queuemod.Queue()
        self.stats = WorkerStats()
        self.signals = 0
        self.signal_names: list[str] = []
        self._signals_logged = 0
        self.leased = 0
        self._write_lock = threading.Lock()
        lease = self.queues[0].options.lease_seconds if options.lease_seconds is None \
            else options.lease_seconds
        self.lease_seconds = lease
        self.heartbeat = options.heartbeat or max(lease / 3, 0.05)

    # -- signals -------------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: Any) -> None:
        # Only note it: the main loop logs and acts (a handler that wrote to stderr could
        # interrupt a write of the main thread to the same stream).
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

    # -- main loop -----------------------------------------------------------------------
    def run(self, reclaim: Callable[[str], bool] | None = None) -> WorkerStats:
        """Work until stopped (signals, ``max_items``, ``idle_exit``); returns the tallies."""
        if reclaim is not None:
            for wq in self.queues:
                for item in wq.reclaim(reclaim, lease_seconds=self.lease_seconds):
                    self.leased += 1
                    self._start(wq, item, reclaimed=True)
        idle_since = time.monotonic()
        next_beat = time.monotonic() + self.heartbeat
        finished: list[tuple[WorkQueue, ItemRef]] = []
        while True:
            self._note_signals()
            if self.signals >= 2:
                self.stop_all("shutdown")
            finished += self._settle_finished(block=False)
            want = self._room()
            if want and self.signals == 0:
                # nothing running: block on the server for work; commands running: block
                # briefly, so that one ending is settled soon (a blocking wait, not a poll)
                got = self._lease(want, finished,
                                  wait=self._wait_for() if not self.jobs else BUSY_WAIT)
                finished = []
                if got:
                    idle_since = time.monotonic()
                elif not self.jobs and self._idle_over(idle_since):
                    break
            elif finished:
                self._complete(finished)
                finished = []
            if not self.jobs and (self.signals or self._quota_done()):
                break
            now = time.monotonic()
            if self.jobs and now >= next_beat:
                self._beat()
                next_beat = now + self.heartbeat
            self._enforce_timeouts()
            if self.jobs and not self._room():
                wake = min([next_beat] + [j.deadline for j in self.jobs.values()
                                          if j.deadline is not None and j.stopped is None])
                finished += self._settle_finished(
                    block=True, timeout=min(max(wake - time.monotonic(), 0.01), WAIT_CHUNK))
        if finished:
            self._complete(finished)
        return self.stats

    def _room(self) -> int:
        room = self.opts.concurrency - len(self.jobs)
        if self.opts.max_items is not None:
            room = min(room, self.opts.max_items - self.leased)
        return max(room, 0)

    def _quota_done(self) -> bool:
        return self.opts.max_items is not None and self.leased >= self.opts.max_items

    def _idle_over(self, since: float) -> bool:
        return self.opts.idle_exit is not None and time.monotonic() - since >= self.opts.idle_exit

    # -- leasing and settling ----------------------------------------------------------------
    def _lease(self, want: int, finished: list[tuple[WorkQueue, ItemRef]], wait: float,
               ) -> int:
        """Complete ``finished`` and lease up to ``want``: one round trip with one queue."""
        items: list[LeasedItem]
        if len(self.queues) == 1 and len(finished) <= 1000:
            wq = self.queues[0]
            outcomes, items = wq.complete_and_lease([ref for _, ref in finished], want,
                                                    lease_seconds=self.lease_seconds)
            self._note_completions(finished, [o.outcome for o in outcomes])
            if not items and wait > 0 and not self.done.qsize():
                items = wq.lease(want, lease_seconds=self.lease_seconds, wait=wait)
        else:
            self._complete(finished)
            items = lease_many(self.queues, want, lease_seconds=self.lease_seconds,
                               wait=0.0 if self.done.qsize() else wait,
                               order=self.opts.order)
        by_prefix = {wq.prefix: wq for wq in self.queues}
        for item in items:
            self.leased += 1
            self._start(by_prefix[item.queue], item)
        return len(items)

    def _wait_for(self) -> float:
        return WAIT_CHUNK if self.opts.idle_exit is None else min(WAIT_CHUNK,
                                                                  max(self.opts.idle_exit, 0.01))

    def _complete(self, finished: list[tuple[WorkQueue, ItemRef]]) -> None:
        for wq in self.queues:
            refs = [ref for q, ref in finished if q is wq]
            if refs:
                outcomes = wq.complete(refs)
                self._note_completions([(wq, r) for r in refs], [o.outcome for o in outcomes])

    def _note_completions(self, finished: list[tuple[WorkQueue, ItemRef]],
                          outcomes: list[str]) -> None:
        for (_, ref), outcome in zip(finished, outcomes, strict=True):
            if outcome != "completed":
                self.log({"event": "complete", "id": ref.id, "outcome": outcome,
                          "note": "the item was not completed: its lease was lost"})

    def _settle_finished(self, block: bool, timeout: float = 0.0,
                         ) -> list[tuple[WorkQueue, ItemRef]]:
        """Settle every command that has exited; returns the items to complete."""
        to_complete: list[tuple[WorkQueue, ItemRef]] = []
        try:
            key = self.done.get(timeout=timeout) if block else self.done.get_nowait()
        except queuemod.Empty:
            return to_complete
        while True:
            job = self.jobs.pop(key)
            ref = self._settle(job)
            if ref is not None:
                to_complete.append((job.wq, ref))
            try:
                key = self.done.get_nowait()
            except queuemod.Empty:
                return to_complete

    def _settle(self, job: _Job) -> ItemRef | None:
        """Fail or dead-letter ``job``'s item; returns its ref when it is to be completed."""
        code = job.proc.returncode
        item, wq = job.item, job.wq
        ref = ItemRef(item.id, item.session)
        entry: dict[str, Any] = {"queue": item.queue, "id": item.id, "attempt": item.attempt,
                                 "exit_code": code,
                                 "duration_s": round(time.monotonic() - job.started, 3)}
        if job.stopped in ("lost", "cancelled"):
            entry["outcome"] = job.stopped  # someone else owns the item now: touch nothing
        elif job.stopped == "shutdown":
            wq.fail([ref], error="worker stopped", retry_in=0)
            self.stats.returned += 1
            entry["outcome"] = "returned"
        elif code == 0 and job.stopped is None:
            self.stats.completed += 1
            entry["outcome"] = "completed"
            self.log(entry)
            return ref
        elif code == DEAD_EXIT and job.stopped is None:
            wq.fail([ref], error=self._error(job, code), dead=True)
            self.stats.dead += 1
            entry["outcome"] = "dead"
        else:
            (out,) = wq.fail([ref], error=self._error(job, code))
            if out.outcome == "dead":
                self.stats.dead += 1
            else:
                self.stats.failed += 1
            entry["outcome"] = "timeout" if job.stopped == "timeout" else out.outcome
        self.log(entry)
        return None

    @staticmethod
    def _error(job: _Job, code: int | None) -> str:
        if job.stopped == "timeout":
            return "timeout"
        tail = bytes(job.stderr_tail).decode("utf-8", "replace").strip()
        what = f"exit code {code}" if code is not None and code >= 0 else \
            f"killed by signal {-(code or 0)}"
        return f"{what}: {tail}" if tail else what

    # -- commands --------------------------------------------------------------------------
    def _start(self, wq: WorkQueue, item: LeasedItem, reclaimed: bool = False) -> None:
        env = dict(os.environ, RQ_QUEUE=item.queue, RQ_ITEM_ID=item.id,
                   RQ_ATTEMPT=str(item.attempt),
                   RQ_LEASE_EXPIRES_AT=f"{item.lease_expires_at:.3f}")
        prefix = self.opts.concurrency > 1
        proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE if prefix else None,
                                stderr=subprocess.PIPE, env=env, start_new_session=True,
                                preexec_fn=_die_with_parent)
        now = time.monotonic()
        job = _Job(item, wq, proc, now, now + self.opts.timeout if self.opts.timeout else None)
        key = (item.queue, item.id)
        self.jobs[key] = job
        if reclaimed:
            self.log({"event": "reclaimed", "queue": item.queue, "id": item.id,
                      "attempt": item.attempt})
        threading.Thread(target=self._feed, args=(proc, item.data), daemon=True).start()
        threading.Thread(target=self._watch, args=(key, job, prefix), daemon=True).start()

    @staticmethod
    def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:  # the command exited without reading its input: fine
            pass

    def _watch(self, key: tuple[str, str], job: _Job, prefix: bool) -> None:
        """Copy the command's output through (prefixed with the id when running several),
        keep its stderr's tail, wait for it to exit, then tell the main loop."""
        tag = f"[{job.item.id}] ".encode() if prefix else b""
        readers = []
        if job.proc.stdout is not None:
            readers.append(threading.Thread(target=self._copy,
                                            args=(job.proc.stdout, self.out, tag, None)))
        assert job.proc.stderr is not None
        readers.append(threading.Thread(target=self._copy,
                                        args=(job.proc.stderr, self.err, tag, job.stderr_tail)))
        for t in readers:
            t.daemon = True
            t.start()
        job.proc.wait()
        for t in readers:
            t.join(5)
        self.done.put(key)

    def _copy(self, src: IO[bytes], dst: IO[bytes], tag: bytes, tail: bytearray | None,
              ) -> None:
        for line in iter(src.readline, b""):
            if tail is not None:
                tail += line
                del tail[:-ERROR_TAIL]
            with self._write_lock:
                try:
                    dst.write(tag + line if tag else line)
                    dst.flush()
                except (OSError, ValueError):
                    pass
        src.close()

    def _kill(self, job: _Job, why: str) -> None:
        if job.stopped is not None or job.proc.poll() is not None:
            return
        job.stopped = why
        with _suppress_lookup():
            os.killpg(job.proc.pid, signal.SIGTERM)
        threading.Thread(target=self._kill_later, args=(job,), daemon=True).start()

    def _kill_later(self, job: _Job) -> None:
        try:
            job.proc.wait(self.opts.grace)
        except subprocess.TimeoutExpired:
            with _suppress_lookup():
                os.killpg(job.proc.pid, signal.SIGKILL)

    def stop_all(self, why: str = "shutdown") -> None:
        """Stop every running command (SIGTERM, SIGKILL after the grace period)."""
        for job in list(self.jobs.values()):
            self._kill(job, why)

    def _enforce_timeouts(self) -> None:
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.deadline is not None and now >= job.deadline:
                self._kill(job, "timeout")

    def _beat(self) -> None:
        """Extend the leases of running items (one call per queue); stop those lost."""
        for wq in self.queues:
            running = [j for j in self.jobs.values() if j.wq is wq and j.stopped is None]
            if not running:
                continue
            refs = [ItemRef(j.item.id, j.item.session) for j in running]
            for job, out in zip(running, wq.extend(refs, lease_seconds=self.lease_seconds),
                                strict=True):
                if out.outcome == "extended":
                    continue
                why = "cancelled" if out.outcome == "already_dead" else "lost"
                self.log({"event": "lease", "queue": job.item.queue, "id": job.item.id,
                          "outcome": out.outcome,
                          "note": "cancelled: stopping the command" if why == "cancelled"
                          else "lease lost: another session may run this item"})
                if why == "cancelled" or not self.opts.keep_running_on_lost_lease:
                    self._kill(job, why)


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, be killed (SIGKILL) when the worker dies, so a
    worker killed with SIGKILL leaves no command running unseen (its item comes back once
    the lease runs out, or at once to a restart with the same --name). Elsewhere: nothing."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _suppress_lookup:
    """Ignore a process group that is already gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, (ProcessLookupError, PermissionError))


def log_line(entry: dict[str, Any], as_json: bool) -> str:
    """One log line: JSON, or ``key=value`` words for a person."""
    if as_json:
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
    return " ".join(f"{k}={v}" for k, v in entry.items())
