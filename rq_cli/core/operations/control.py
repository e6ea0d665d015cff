"""Asking a worker to drain or stop, from a console (``rq-cli dash``, ``rq-cli web``).

A console writes what it asks of worker session ``S`` on queue ``P`` to the control key
``P:control:<digest of S>`` (:meth:`Keys.control`: a string, JSON ``{"ask", "by", "at",
"session", "id"}``, expiring after ``CONTROL_TTL`` seconds, so the ask of a worker that died
meanwhile does not linger). ``rq-cli work`` reads its key on every queue it works every
``CONTROL_EVERY`` seconds (one GET a queue, a command the manual's ACL rule already allows:
no round trip per item; the key is left to expire, and a value it has seen is not acted on
twice, so an ask written between a read and a delete cannot be lost), logs who asked and
then drains (finishes the items it holds, takes no new ones,
exits 0: a first SIGTERM) or stops (stops its commands and puts their items back at once:
a second SIGTERM). The key lives under the queue's prefix, so on a cluster it is in the
queue's slot, on the server the worker reads that queue from.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..codes import Ask
from ..contract.keys import Keys
from ..contract.limits import CONTROL_TTL


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
                        "session": session, "id": os.urandom(4).hex()})  # (each ask new)
    queue.client.set(Keys(queue.prefix).control(session), value, ex=ttl)


def take_asks(queues: Sequence[Any], session: str,
              seen: dict[str, bytes] | None = None) -> Asked | None:
    """The new asks to worker ``session`` on ``queues`` (WorkQueue or ShardedQueue): one
    GET per queue; ``seen`` (key -> the value last read, kept by the caller) leaves out
    what was read before. Of several, a stop before a drain. None: none new."""
    seen = {} if seen is None else seen
    found: list[Asked] = []
    for wq in queues:
        key = Keys(wq.prefix).control(session)
        raw = wq.client.get(key)
        if raw is None or seen.get(key) == raw:
            continue
        seen[key] = raw
        try:
            got = json.loads(raw)
            found.append(Asked(Ask(got["ask"]), str(got.get("by") or "?"),
                               float(got.get("at") or 0.0)))
        except (ValueError, KeyError, TypeError):
            continue  # not an ask rq-cli wrote: ignored (and gone)
    found.sort(key=lambda a: a.ask != Ask.STOP)
    return found[0] if found else None
