"""The guard: the small process forked at a worker's start that stops the worker's commands
if the worker is killed, finding them by their environment in /proc."""

from __future__ import annotations

import contextlib
import os
import signal
import time

#: The environment variable naming the worker's session (the guard finds commands by it).
SESSION_ENV = "RQ_WORKER_SESSION"


def killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, sig)


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
