"""The audit trail: every repair of a queue made from the CLI or a console (requeue, purge,
cancel, pause, resume, reshard, limits), recorded per queue, bounded (docs/DESIGN.md, "The
audit trail"; the manual's ``rq-cli audit``).

Each entry is one JSON object in ``P:audit`` (keys.py :meth:`Keys.audit`), a list, newest
first, kept to AUDIT_KEPT entries: ``at`` (when, epoch s), ``action`` (one of
AUDIT_ACTIONS), ``command`` (the command line it equals, passwords masked), ``count`` (how
many items, or queues or shards, it changed), and where it came from (:class:`By`:
``host``, ``user``, ``token``: the label of the token a console was asked with, ``via``:
cli, web or dash). A sharded queue keeps its trail under its base prefix.

How an entry is made: the caller opens a :func:`trail` around a repair (the CLI: around each
command, its queue bound by the first one it opens, :func:`bind`; a console: around each
action, with its command line and its :class:`By`); the core repair calls
:func:`note` what they changed as they change it, script call by script call; when the
trail closes, what was noted is written in one transaction (LPUSH + LTRIM, one key, one
round trip), also when the repair stopped half-way (an error, Ctrl-C: what was done is
recorded, ``failed`` true). A repair made with no trail open (the library, a worker) records
nothing. :func:`record` writes one entry directly: the public way for a repair that has no
core call to note in (``limit``). This module imports neither Typer nor rich.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...errors import ParameterError
from ..contract.keys import Keys
from ..contract.limits import AUDIT_KEPT

#: What an entry's ``action`` may be: the repairs recorded.
AUDIT_ACTIONS = ("requeue", "purge", "cancel", "pause", "resume", "reshard", "limits")
#: Where a repair was asked from (an entry's ``via``).
VIAS = ("cli", "web", "dash")


@dataclass(frozen=True)
class By:
    """Where a repair came from: the host and user that asked (a web console: the
    browser's address and the user name it authenticated with), the label of the token it
    was let in with (None: none), and the tool."""

    host: str
    user: str | None
    token: str | None = None
    via: str = "cli"


def local_by(via: str = "cli") -> By:
    """This machine and its user (the CLI, the terminal console)."""
    import getpass

    try:
        user: str | None = getpass.getuser()
    except Exception:  # (no user name in the environment or the password database)
        user = None
    return By(socket.gethostname(), user, None, via)


class Home(NamedTuple):
    """Where a trail is kept, for a caller that has no queue object (``reshard``)."""

    client: Any
    prefix: str


@dataclass
class _Trail:
    queue: Any  #: a WorkQueue, a ShardedQueue or a Home: its client and prefix; None: unbound
    command: str | Callable[[], str]  #: (a callable: made only if something is recorded)
    by: By | Callable[[], By]
    counts: dict[str, int] = field(default_factory=dict)


_open: ContextVar[_Trail | None] = ContextVar("rq_cli_audit_trail", default=None)


def note(action: str, count: int) -> None:
    """What a repair changed (``count`` of ``action``): added to the open trail's entry;
    nothing without one. Called by the core repair calls after each script call."""
    t = _open.get()
    if t is not None and count > 0:
        t.counts[action] = t.counts.get(action, 0) + count


def bind(queue: Any) -> None:
    """Make ``queue`` the open trail's queue if it has none yet (the CLI: the first queue a
    command opens is the one it names; ``requeue-dead --to`` opens its source first)."""
    t = _open.get()
    if t is not None and t.queue is None:
        t.queue = queue


@contextmanager
def trail(queue: Any, command: str | Callable[[], str], by: By | Callable[[], By],
          warn: Callable[[str], None] | None = None) -> Iterator[None]:
    """Record the repairs made inside it as entries of ``queue``'s trail (one per action
    noted), written when it closes, also on an error. ``command`` and ``by`` may be
    callables, called only when there is something to record (a command that repairs
    nothing pays nothing). A write that fails is said through ``warn`` (the repair is done:
    its error, if any, is the one raised)."""
    t = _Trail(queue, command, by)
    token = _open.set(t)
    failed = True
    try:
        yield
        failed = False
    finally:
        _open.reset(token)
        if t.counts and t.queue is not None:
            _write(t, failed, warn)


def _write(t: _Trail, failed: bool, warn: Callable[[str], None] | None) -> None:
    command = t.command() if callable(t.command) else t.command
    by = t.by() if callable(t.by) else t.by
    for action, count in t.counts.items():
        try:
            record(t.queue, action, command, count, by, failed=failed)
        except Exception as exc:
            if warn is not None:
                warn(f"the audit trail of {t.queue.prefix} was not written "
                     f"({type(exc).__name__}): {action} of {count}")


def entry(action: str, command: str, count: int, by: By, *, failed: bool = False,
          at: float | None = None) -> dict[str, Any]:
    """One entry, as stored and as ``rq-cli audit`` prints it."""
    if action not in AUDIT_ACTIONS:
        raise ParameterError("action", f"must be one of {', '.join(AUDIT_ACTIONS)}")
    out: dict[str, Any] = {
        "at": round(time.time() if at is None else at, 3), "action": action,
        "command": command, "count": count, "host": by.host, "user": by.user,
        "token": by.token, "via": by.via}
    if failed:
        out["failed"] = True
    return out


def record(queue: Any, action: str, command: str, count: int, by: By, *,
           failed: bool = False) -> None:
    """Add one entry to ``queue``'s trail (a WorkQueue or a ShardedQueue: its prefix), the
    oldest past AUDIT_KEPT dropped: one transaction of LPUSH and LTRIM."""
    line = json.dumps(entry(action, command, count, by, failed=failed),
                      separators=(",", ":"), ensure_ascii=False)
    key = Keys(queue.prefix).audit
    pipe = queue.client.pipeline(transaction=True)
    pipe.lpush(key, line).ltrim(key, 0, AUDIT_KEPT - 1)
    pipe.execute()


def read_audit(queue: Any, limit: int = AUDIT_KEPT) -> list[dict[str, Any]]:
    """The newest ``limit`` entries of ``queue``'s trail, newest first (one LRANGE of at
    most AUDIT_KEPT). An entry that is not one (another client's) is given as
    ``{"unreadable": <its text>}``."""
    if not 1 <= limit <= AUDIT_KEPT:
        raise ParameterError("limit", f"must be between 1 and {AUDIT_KEPT} (the entries kept)")
    out = []
    for raw in queue.client.lrange(Keys(queue.prefix).audit, 0, limit - 1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        out.append(value if _readable(value) else {"unreadable": text})
    return out


def _readable(value: Any) -> bool:
    """Whether ``value`` is an entry as :func:`entry` makes them (another client's JSON
    may be anything)."""
    return isinstance(value, dict) and type(value.get("at")) in (int, float) and \
        type(value.get("count")) is int and all(
            isinstance(value.get(k), str) for k in ("action", "command", "host", "via"))
