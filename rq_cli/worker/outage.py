"""The worker's view of its server: up, or in an outage it rides out (``rq-cli work``).

A worker is a long-running service. When a call to the server fails because the server
cannot be reached (refused, reset, timed out, still loading its data after a restart, a
read-only replica after a failover), the worker does not exit: :class:`Outage` notes the
outage (one ``unreachable`` log line), and the worker keeps its running commands going,
holds what they settle, and tries the server again after a capped exponential backoff with
jitter (:data:`FIRST_RETRY` doubling up to :data:`MAX_RETRY` seconds). When the server
answers again, one ``outage`` line says when it started, when it ended and how long it
lasted; the worker then re-checks its leases and records what was held.

Errors that waiting cannot fix (authentication, permissions, a key of the wrong type) are
not outages: they end the worker as before. ``--max-outage SECONDS`` bounds the wait: past
it, the worker drains and exits 69.

This module imports neither Typer nor rich, nor redis-py (errors are told by class name).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

#: First wait before trying the server again, seconds; it doubles on each failed try...
FIRST_RETRY = 0.1
#: ... up to this (then a random 50-100% of it: workers of a fleet do not come back in step).
MAX_RETRY = 5.0

#: redis-py's errors of a server that may answer again: it cannot be reached, the connection
#: broke or timed out, it is loading its data (restart), it became a replica (failover), a
#: cluster is re-arranging its slots.
_TRANSIENT = frozenset({"ConnectionError", "TimeoutError", "BusyLoadingError", "ReadOnlyError",
                        "ClusterDownError", "TryAgainError", "MasterNotFoundError",
                        "SlaveNotFoundError", "MasterDownError"})
#: ConnectionError's subclasses that waiting does not fix.
_PERMANENT = frozenset({"AuthenticationError", "AuthenticationWrongNumberOfArgsError",
                        "AuthorizationError"})


def transient(err: BaseException) -> bool:
    """True when ``err`` (a redis-py error) means the server may answer again later."""
    names = {cls.__name__ for cls in type(err).__mro__}
    return bool(names & _TRANSIENT) and not names & _PERMANENT


class Outage:
    """Whether the server is reachable, and when to try it again.

    ``log`` takes the worker's log entries; ``describe`` turns an error into one line with
    no secrets in it; ``max_outage`` (seconds, None: forever) is how long to wait.
    """

    def __init__(self, log: Callable[[dict[str, Any]], None],
                 describe: Callable[[BaseException], str], max_outage: float | None) -> None:
        self.log = log
        self.describe = describe
        self.max_outage = max_outage
        self.since: float | None = None  # monotonic: when the outage began
        self.started_at = 0.0  # epoch seconds, for the log
        self.tries = 0
        self.next_try = 0.0  # monotonic
        self.error = ""
        self._probe: threading.Thread | None = None
        self._probe_error: BaseException | None = None

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, err: BaseException) -> None:
        """A call failed with the transient ``err``: start the outage, or go on with it, and
        choose when to try again."""
        now = time.monotonic()
        if self.since is None:
            self.since, self.started_at, self.tries = now, time.time(), 0
            self.error = self.describe(err)
            self.log({"event": "unreachable", "error": self.error,
                      "note": "the server cannot be reached: running commands go on; "
                              "trying again with backoff"})
        self.tries += 1
        delay = min(MAX_RETRY, FIRST_RETRY * 2 ** min(self.tries - 1, 30))
        self.next_try = now + random.uniform(delay / 2, delay)

    def ended(self) -> None:
        """The server answered: log the outage (start, end, how long), if there was one."""
        if self.since is None:
            return
        now = time.time()
        self.log({"event": "outage", "start": round(self.started_at, 3), "end": round(now, 3),
                  "duration_s": round(time.monotonic() - self.since, 3), "tries": self.tries,
                  "error": self.error})
        self.since = None

    def due(self) -> bool:
        """True when the server may be tried now (always, when it is not down)."""
        return self.since is None or time.monotonic() >= self.next_try

    def over(self) -> bool:
        """True once the outage has lasted longer than ``max_outage``."""
        return (self.since is not None and self.max_outage is not None
                and time.monotonic() - self.since >= self.max_outage)

    def lasted(self) -> float:
        return 0.0 if self.since is None else time.monotonic() - self.since

    def probe(self, ping: Callable[[], None], wake_fd: int) -> bool:
        """True once the server has answered ``ping`` (the outage is over: call
        :meth:`ended`). The ping runs in a thread of its own, once a try is due, so a hung
        server does not hold up the worker's loop; the thread writes a byte to ``wake_fd``
        when it is done. False while there is no answer yet."""
        if self._probe is not None:
            if self._probe.is_alive():
                return False
            self._probe.join()
            self._probe = None
            err, self._probe_error = self._probe_error, None
            if err is None:
                return True
            if not transient(err):
                raise err
            self.failed(err)
            return False
        if self.due():
            def run() -> None:
                try:
                    ping()
                except BaseException as err:  # handed to the loop, raised there
                    self._probe_error = err
                with contextlib.suppress(OSError):
                    os.write(wake_fd, b"\0")

            self._probe = threading.Thread(target=run, name="rq-cli-probe", daemon=True)
            self._probe.start()
        return False

    def wait(self) -> float:
        """Seconds until the next try is due (0 when not down); while a try is under way,
        until its answer wakes the loop."""
        if self.since is None:
            return 0.0
        if self._probe is not None:
            return 0.0 if not self._probe.is_alive() else 1.0
        return max(self.next_try - time.monotonic(), 0.0)


def give_back_orphans(queues: Sequence[Any], session: str, known: set[str],
                      log: Callable[[dict[str, Any]], None]) -> None:
    """After an outage: give back (``release``: not run, so the attempt too) the items that
    the server says ``session`` holds (P:holders, read with HSCAN) and the worker does not
    know (``known``): leased by a call whose reply the outage cut off. Call it only while
    none of the worker's lease calls is in flight."""
    want = session.encode()
    from ..core.sharding.sharded import physical
    from .model import queue_of

    for wq in physical(queues):
        try:
            orphans = [field.decode("utf-8", "surrogateescape")
                       for field, value in wq.client.hscan_iter(wq.keys.holders, count=1000)
                       if value == want]
        except Exception as err:
            if not transient(err):
                raise
            continue  # a shard whose server is down: its leases there run out, items return
        orphans = [i for i in orphans if i not in known]
        for out in wq.release(orphans) if orphans else []:
            log({"event": "orphan", "queue": queue_of(wq, wq.prefix), "id": out.id,
                 "outcome": out.outcome, "note": "leased by a call the outage cut off: given "
                                                 "back"})
