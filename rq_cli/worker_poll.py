"""The worker's event loop helpers and its guard process (``rq-cli work``, rq_cli/worker.py).

:class:`Poller` waits for many fds at once (epoll, or poll); :class:`Stream` copies a
command's output through; :func:`guard` is the small process forked at a worker's start that
stops the worker's commands if the worker is killed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import time
from dataclasses import dataclass
from typing import IO, Any

#: The environment variable naming the worker's session (the guard finds commands by it).
SESSION_ENV = "RQ_WORKER_SESSION"
#: Bytes of a command's stderr kept as the item's error.
ERROR_TAIL = 2000
#: Bytes read or written per system call.
CHUNK = 65536


class Poller:
    """Wait for fds to be readable (or writable): epoll where there is one, else poll. Each
    fd carries the ``(kind, what)`` pair that ``wait`` hands back for it."""

    def __init__(self) -> None:
        self._epoll = select.epoll() if hasattr(select, "epoll") else None
        self._poll = select.poll() if self._epoll is None else None
        self._data: dict[int, tuple[str, Any]] = {}

    def register(self, fd: int, write: bool, data: tuple[str, Any]) -> None:
        mask = select.POLLOUT if write else select.POLLIN
        if self._epoll is not None:
            self._epoll.register(fd, mask)
        else:
            assert self._poll is not None
            self._poll.register(fd, mask)
        self._data[fd] = data

    def has(self, fd: int) -> bool:
        return fd in self._data

    def unregister(self, fd: int) -> None:
        if self._data.pop(fd, None) is None:
            return
        if self._epoll is not None:
            self._epoll.unregister(fd)
        else:
            assert self._poll is not None
            self._poll.unregister(fd)

    def wait(self, timeout: float) -> list[tuple[str, Any]]:
        """The data of the fds ready within ``timeout`` seconds (hang-ups and errors count as
        ready: the read or write that follows tells)."""
        if self._epoll is not None:
            ready = self._epoll.poll(timeout)
        else:
            assert self._poll is not None
            ready = self._poll.poll(math.ceil(timeout * 1000))
        data = self._data
        return [data[fd] for fd, _ in ready if fd in data]

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()


def killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, sig)


def drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def guard(life_r: int, session: str, grace: float) -> None:
    """The guard process: wait for the worker to exit; if it did not say goodbye (it was
    killed), stop every process that carries its session in its environment."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the worker decides; the guard only cleans up
    # hold nothing of the worker's: not its output pipes (a reader waits for their end),
    # not its server connection
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, life_r)
    os.closerange(life_r + 1, 65536)
    try:
        said = os.read(life_r, 1)
    except OSError:
        said = b""
    if said:
        return  # a normal exit
    marker = f"{SESSION_ENV}={session}".encode()
    left = signal_marked(marker, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = signal_marked(marker, 0)
    if left:
        signal_marked(marker, signal.SIGKILL)


def signal_marked(marker: bytes, sig: int) -> int:
    """Send ``sig`` (0: none, just count) to the processes whose environment holds
    ``marker``; returns how many there were."""
    found = 0
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found += 1
            if sig:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
    return found


@dataclass
class Stream:
    """A pipe from a command: copied through, line by line with a tag when ``tag``."""

    fd: int
    dst: IO[bytes]
    tag: bytes
    tail: bytearray | None  # stderr: the last ERROR_TAIL bytes, for the error
    partial: bytes = b""

    def copy(self, sel: Poller) -> bool:
        """Copy what the pipe has now; returns False at its end (closed then)."""
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self.close(sel)
                return False
            if self.tail is not None:
                self.tail += chunk
                del self.tail[:-ERROR_TAIL]
            if not self.tag:
                self._write(chunk)
                continue
            lines = (self.partial + chunk).split(b"\n")
            self.partial = lines.pop()
            if lines:
                self._write(b"".join(self.tag + line + b"\n" for line in lines))
        return False

    def close(self, sel: Poller) -> None:
        """Stop copying (the last partial line goes out, tagged, with a newline)."""
        if self.fd < 0:
            return
        if self.partial:
            self._write(self.tag + self.partial + b"\n")
            self.partial = b""
        sel.unregister(self.fd)
        os.close(self.fd)
        self.fd = -1

    def _write(self, data: bytes) -> None:
        try:
            self.dst.write(data)
            self.dst.flush()
        except (OSError, ValueError):
            pass


def log_line(entry: dict[str, Any], as_json: bool) -> str:
    """One log line: JSON, or ``key=value`` words for a person."""
    if as_json:
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
    return " ".join(f"{k}={v}" for k, v in entry.items())
