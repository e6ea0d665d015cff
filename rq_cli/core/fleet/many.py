"""One script over many queues in one round trip per server: what an overview of hundreds
of queues reads (``rq-cli web``, ``rq-cli dash``, ``stats --watch``).

The queues on one (non-cluster) connection send their script calls in one pipeline; the
others (a sharded queue, a cluster) are called one by one. A queue's failure (a key of the
wrong type, its server gone) is its own result, an exception, never the others' end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..contract.limits import PIPELINE_QUEUES
from ..contract.specs import SPECS
from ..contract.util import is_cluster
from ..queue import WorkQueue

if TYPE_CHECKING:
    from ..reports import Stats



def run_each(queues: Sequence[Any], name: str, one: Callable[[Any], Any],
             now_ms: int | None = None) -> list[Any]:
    """Script ``name`` (no arguments but the head) on each of ``queues``: its raw reply, or
    the exception it raised. ``one(queue)``: the call for a queue that is not
    :func:`pipelined` (its result, or exception, taken as it is)."""
    out: list[Any] = [None] * len(queues)
    groups: dict[int, list[int]] = {}
    for i, q in enumerate(queues):
        if pipelined(q):
            groups.setdefault(id(q.client), []).append(i)
        else:
            out[i] = _caught(one, q)
    for members in groups.values():
        for at in range(0, len(members), PIPELINE_QUEUES):
            part = members[at:at + PIPELINE_QUEUES]
            for i, reply in zip(part, _pipelined([queues[i] for i in part], name, now_ms),
                                strict=True):
                out[i] = reply
    return out


def pipelined(q: Any) -> bool:
    """Whether :func:`run_each` sends ``q``'s call in its server's pipeline: a plain queue
    (not sharded, not on a cluster, not waiting for replicas)."""
    return isinstance(q, WorkQueue) and not is_cluster(q.client) and q.confirmer is None


def _caught(fn: Callable[[Any], Any], q: Any) -> Any:
    try:
        return fn(q)
    except Exception as exc:
        return exc


def _pipelined(queues: list[WorkQueue], name: str, now_ms: int | None) -> list[Any]:
    """The replies of ``name`` on ``queues`` (one client), in one pipeline (Caller.run_all)."""
    spec = SPECS[name]
    try:
        return queues[0].caller.run_all(name, [(q.script_keys, spec.argv(q.script_head(now_ms),
                                                                         {}, ()))
                                               for q in queues])
    except Exception as exc:  # the connection: every queue's failure
        return [exc] * len(queues)


def stats_each(queues: Sequence[Any], now_ms: int | None = None) -> list[Stats | Exception]:
    """Each queue's stats (or the exception reading them raised), one round trip per server."""
    replies = run_each(queues, "stats", lambda q: q.stats(now_ms=now_ms), now_ms)
    out: list[Stats | Exception] = []
    for q, reply in zip(queues, replies, strict=True):
        if isinstance(reply, Exception) or not pipelined(q):
            out.append(reply)
        else:
            out.append(_caught(q.stats_of, reply))
    return out
