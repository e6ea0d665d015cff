"""Asking a worker to drain or stop, from a console (``rq-cli dash``, ``rq-cli web``).

A console writes what it asks of worker session ``S`` on queue ``P`` to the control key
``P:control:<digest of S>`` (:meth:`Keys.control`: a string, JSON ``{"ask", "by", "at",
"session"}``, expiring after ``CONTROL_TTL`` seconds, so the ask of a worker that died
meanwhile does not linger). ``rq-cli work`` reads its key on every queue it works every
``CONTROL_EVERY`` seconds with GETDEL (read and consumed in one call: no round trip per
item), logs who asked and then drains (finishes the items it holds, takes no new ones,
exits 0: a first SIGTERM) or stops (stops its commands and puts their items back at once:
a second SIGTERM). The key lives under the queue's prefix, so on a cluster it is in the
queue's slot, on the server the worker reads that queue from.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .codes import Ask
from .keys import Keys
from .limits import CONTROL_TTL


@dataclass(frozen=True)
class Asked:
    """An ask a worker found: what, who asked (``user@host``), when (epoch seconds)."""

    ask: Ask
    by: str
    at: float


def ask_worker(queue: Any, session: str, ask: Ask, by: str, *,
               ttl: int = CONTROL_TTL) -> None:
    """Ask worker ``session`` (as the holders of ``queue`` name it) to ``ask``, as ``by``
    (``user@host``): one SET with a TTL. A later ask replaces an earlier one not yet read."""
    value = json.dumps({"ask": ask.value, "by": by, "at": round(time.time(), 3),
                        "session": session})
    queue.client.set(Keys(queue.prefix).control(session), value, ex=ttl)


def take_asks(queues: Sequence[Any], session: str) -> Asked | None:
    """The asks to worker ``session`` on ``queues`` (WorkQueue or ShardedQueue), read and
    deleted (one GETDEL per queue); of several, a stop before a drain. None: none."""
    found: list[Asked] = []
    for wq in queues:
        raw = wq.client.getdel(Keys(wq.prefix).control(session))
        if raw is None:
            continue
        try:
            got = json.loads(raw)
            found.append(Asked(Ask(got["ask"]), str(got.get("by") or "?"),
                               float(got.get("at") or 0.0)))
        except (ValueError, KeyError, TypeError):
            continue  # not an ask rq-cli wrote: ignored (and gone)
    found.sort(key=lambda a: a.ask != Ask.STOP)
    return found[0] if found else None
