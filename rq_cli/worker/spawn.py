"""The worker's commands: started with ``posix_spawn``, fed their item's data, stopped,
reaped and settled."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from .guard import killpg
from .leasing import Leasing
from .model import (
    EXIT_SPIN,
    SIGDEF,
    Held,
    Job,
)
from .streams import CHUNK, Stream, output_tag


class Spawning(Leasing):
    """The worker, able to run commands."""

    def _start_ahead(self) -> None:
        while self.ahead and self._room() > 0 and self.signals < 2 and not self.outage.down:
            self._start(self.ahead.popleft())

    def _start(self, held: Held) -> None:
        item = held.item
        if held.reclaimed:
            self.log({"event": "reclaimed", "queue": held.queue, "id": item.id,
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
        capture = self.opts.result == "stdout"
        if self.prefix_output or capture:
            out_r, out_w = os.pipe()
            mine.append(out_r)
            theirs.append(out_w)
            actions.append((os.POSIX_SPAWN_DUP2, out_w, 1))
        now = time.monotonic()
        try:
            pid = os.posix_spawn(self.path, self.command, env, file_actions=actions,
                                 setpgroup=0, setsigdef=SIGDEF)
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
        tag = output_tag(item.id) if self.prefix_output else b""
        job = Job(held, pid, pidfd, now, now + self.opts.timeout if self.opts.timeout else None,
                   [], in_w, memoryview(item.data), stderr_tail=bytearray())
        err_stream = Stream(err_r, self.err, tag, job.stderr_tail,
                            as_log=self._stderr_event(held) if self.opts.stderr_as_log else None)
        job.streams.append(err_stream)
        if out_r is not None:
            job.result = bytearray() if capture else None
            job.streams.append(Stream(out_r, self.out, tag, None, keep=job.result))
        self.jobs[pid] = job
        for stream in job.streams:
            os.set_blocking(stream.fd, False)
            self.sel.register(stream.fd, False, ("out", (job, stream)))
        if pidfd is not None:
            self.sel.register(pidfd, False, ("exit", job))
        os.set_blocking(in_w, False)
        self._feed(job)

    def _feed(self, job: Job) -> None:
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

    def _close_stdin(self, job: Job) -> None:
        if job.stdin is None:
            return
        if self.sel.has(job.stdin):
            self.sel.unregister(job.stdin)
        os.close(job.stdin)
        job.stdin = None

    def _exiting(self, job: Job) -> None:
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

    def _reap(self, job: Job) -> None:
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

    def _stderr_event(self, held: Held) -> Callable[[bytes], None]:
        """A command's stderr line as a log event (a JSON log stays JSON lines)."""
        def event(line: bytes) -> None:
            self.log({"event": "stderr", "queue": held.queue, "id": held.item.id,
                      "line": line.decode("utf-8", "backslashreplace")})
        return event

    def _kill(self, job: Job, why: str) -> None:
        if job.stopped is not None or job.status is not None:
            return
        job.stopped = why
        killpg(job.pid, signal.SIGTERM)
        job.kill_at = time.monotonic() + self.opts.grace

    def stop_all(self, why: str = "shutdown") -> None:
        """Stop every running command (SIGTERM, SIGKILL after the grace period)."""
        for job in list(self.jobs.values()):
            self._kill(job, why)
