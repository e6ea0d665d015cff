"""A worker's ``--name``: held by one live worker at a time (``rq-cli work --name``).

A named worker's session reads ``<host>:<pid>:<name>``; on start it takes back the items its
previous run on this host still held (``reclaim``). A second worker started with the name of
a live one must not: both would run the same items at once. So a name is held:

- on this host, by an exclusive lock (``flock``) on a file named after it, in
  ``/run/user/<uid>/rq-cli`` (else ``/tmp/rq-cli-<uid>``), taken at start and held for the
  worker's life: the kernel lets it go when the worker ends, however it ends (SIGKILL too),
  so a restart after a crash takes the name at once;
- and on the server, where a session of this host with the name holds leases, by that
  session's process, while it is alive (another user's worker, or one that lost its lock
  file): :func:`live_holders`.

A held name is refused (:class:`NameInUse`, exit 75) unless the caller waits for it.
This module imports neither Typer nor rich.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..core.queue import WorkQueue
from ..core.sharding.sharded import physical
from ..errors import NameInUse, UsageError

#: Seconds between looks at the name's holder while waiting for it (``--wait-for-name``).
WAIT_POLL = 0.2


def lock_dir() -> Path:
    """Where name locks live: private to this user (mode 0700), at a fixed place (not read
    from the environment, so a worker under systemd and one from a shell agree):
    ``/run/user/UID/rq-cli``, else ``/tmp/rq-cli-UID``."""
    uid = os.getuid()
    run = Path(f"/run/user/{uid}")
    base = run / "rq-cli" if run.is_dir() and os.access(run, os.W_OK) else \
        Path(tempfile.gettempdir() if os.name != "posix" else "/tmp") / f"rq-cli-{uid}"
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = base.lstat()
    if st.st_uid != uid or not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o077:
        raise UsageError(f"{base} is not a private directory of this user: remove it, or "
                         f"run the worker without --name")
    return base


def process_alive(pid: int) -> bool:
    """True when ``pid`` is a live process of this host (not this one, not a zombie: a
    worker killed and not yet reaped by its parent is dead)."""
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: alive
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust the pid
    return status.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def session_of(name: str, host: str) -> Callable[[str], bool]:
    """True for a session of ``name`` on ``host`` (``<host>:<pid>:<name>``)."""
    def matches(session: str) -> bool:
        parts = session.split(":")
        return len(parts) >= 3 and parts[0] == host and parts[-1] == name
    return matches


def live_holders(queues: Sequence[WorkQueue], name: str, host: str) -> list[int]:
    """Pids of live processes of this host whose session of ``name`` holds leases in
    ``queues`` (P:holders, read with HSCAN, a page per call)."""
    mine = session_of(name, host)
    pids: set[int] = set()
    for wq in physical(queues):
        for _, value in wq.client.hscan_iter(wq.keys.holders, count=1000):
            session = value.decode("utf-8", "replace")
            if mine(session):
                with contextlib.suppress(ValueError):
                    pids.add(int(session.split(":")[1]))
    return sorted(p for p in pids if process_alive(p))


def dead_session_of(name: str, host: str) -> Callable[[str], bool]:
    """``reclaim``'s choice: sessions of ``name`` on ``host`` whose process has ended."""
    mine = session_of(name, host)

    def dead(session: str) -> bool:
        if not mine(session):
            return False
        try:
            return not process_alive(int(session.split(":")[1]))
        except ValueError:
            return False
    return dead


class NameLock:
    """The name's lock file, held open (and locked) for the worker's life."""

    def __init__(self, name: str) -> None:
        self.name = name
        try:
            self.path = lock_dir() / f"worker-{quote(name, safe='')}.lock"
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise UsageError(f"cannot hold --name {name}: {err.strerror}: "
                             f"{err.filename}") from None

    def holder(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            return os.pread(self.fd, 64, 0).decode().strip() or "?"
        return "?"

    def take(self, wait: bool) -> bool:
        """Lock it; False when another process holds it (and ``wait`` is false)."""
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def hold_name(name: str, host: str, queues: Sequence[WorkQueue], wait: bool,
              log: Callable[[dict[str, Any]], None]) -> NameLock:
    """Take ``name`` for this worker, or raise NameInUse (``wait``: wait until it is free,
    saying so once)."""
    lock = NameLock(name)
    told = False

    def refuse_or_tell(holder: str) -> None:
        nonlocal told
        if not wait:
            lock.close()
            raise NameInUse(f"--name {name} is held by a live worker ({holder} on {host}); "
                            f"stop it, choose another name, or add --wait-for-name")
        if not told:
            told = True
            log({"event": "waiting_for_name", "name": name, "holder": holder})

    if not lock.take(False):
        refuse_or_tell(f"pid {lock.holder()}")
        lock.take(True)
    while pids := live_holders(queues, name, host):
        refuse_or_tell(f"pid {pids[0]}")
        time.sleep(WAIT_POLL)
    return lock
