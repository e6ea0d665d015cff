"""The worker's settings, tallies and records of the items it holds, and its constants."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.queue import WorkQueue
from ..core.types import ItemRef, LeasedItem
from ..errors import UsageError
from .streams import Stream

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
SIGDEF = tuple(s for s in (getattr(signal, "SIGPIPE", None), getattr(signal, "SIGXFSZ", None))
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
    stderr_as_log: bool = False  # the commands' stderr lines as log events (a JSON log)
    result: str | None = None  # "stdout": a command's stdout is its item's result (batches)


@dataclass
class Held:
    """An item this worker holds the lease of: leased ahead, or running."""

    wq: WorkQueue
    item: LeasedItem
    expires: float  # epoch seconds
    next_beat: float  # monotonic: extend the lease from then on
    reclaimed: bool = False
    lost: str | None = None  # "lost" or "cancelled": someone else owns the item now
    entry: dict[str, Any] | None = None  # exited 0: its log line, once the server has answered
    result: bytes | None = None  # work --result stdout: what the command printed (bounded)

    @property
    def ref(self) -> ItemRef:
        return ItemRef(self.item.id, self.item.session, self.result)

    @property
    def queue(self) -> str:
        """The queue its log lines name: a sharded queue's own prefix for an item of one of
        its shards (``RQ_QUEUE`` stays the shard's prefix, a queue a peer can work)."""
        return queue_of(self.wq, self.item.queue)


def queue_of(wq: WorkQueue, prefix: str) -> str:
    """What a log line names for ``prefix`` of ``wq``: its sharded queue's prefix where
    ``wq`` is a shard of one, else ``prefix``."""
    return wq.shard_of or prefix


@dataclass
class Job:
    held: Held
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
    result: bytearray | None = None  # work --result stdout: its stdout, RESULT_MAX + 1 at most


@dataclass
class WorkerStats:
    completed: int = 0
    failed: int = 0
    dead: int = 0
    returned: int = 0
    lost: int = 0  # settled by someone else: lease lost, cancelled, or the complete refused



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
