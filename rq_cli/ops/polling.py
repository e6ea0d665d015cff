"""Each queue's stats read in turn, with the rates since the read before: what ``stats
--watch``, ``--check``, ``--format prometheus`` and the console's overview show, and
their order (:func:`sort_rows`). A queue that cannot be read is the one-line reason (secrets
scrubbed), not the end of the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.contract.counts import COUNTS
from ..core.fleet.many import stats_each
from ..errors import RqError
from ..output.metrics import rates
from ..output.shapes import watch_row
from .scrub import Secrets, scrub

if TYPE_CHECKING:
    from ..core.reports import Stats
    from .targets import Target


def read_stats(st: Secrets | None, target: Target) -> Stats | str:
    """The queue's stats, or the one-line reason they could not be read (URLs masked)."""
    try:
        return target.queue.stats()
    except Exception as exc:  # a server gone, a key of the wrong type: shown, not fatal
        return failed(st, target, exc)


def failed(st: Secrets | None, target: Target, exc: Exception) -> str:
    """The one-line reason ``exc`` (reading ``target``) gives, URLs masked; raised again
    when it is not the server's doing (a bug)."""
    err: BaseException | None = exc
    if not isinstance(exc, RqError):
        from ..connection.connect import translate_error

        err = translate_error(exc, target.url, read_only=True)  # (it only reads)
    if err is None:
        raise exc  # not the server's doing: a bug
    return " ".join(scrub(str(err), st).split())


class Poller:
    """Reads the targets' stats, and the rates since the previous read of each."""

    def __init__(self, st: Secrets | None, targets: Sequence[Target]) -> None:
        self.st, self.targets = st, targets
        self.previous: dict[int, tuple[float, dict[str, int]]] = {}

    def poll(self) -> list[dict[str, Any]]:
        """Every target's row: the stats of the queues on one server read in one pipeline
        (core/fleet/many.py), so 200 queues cost a round trip, not 200."""
        rows = []
        read = stats_each([t.queue for t in self.targets])
        at, now = time.monotonic(), round(time.time(), 3)
        for i, target in enumerate(self.targets):
            reply = read[i]
            got = failed(self.st, target, reply) if isinstance(reply, Exception) else reply
            if isinstance(got, str):
                self.previous.pop(i, None)  # rates start afresh once it is back
                rows.append(watch_row(target.name, target.queue.prefix, now, got, None))
                continue
            before = self.previous.get(i)
            per_s = (None if before is None else
                     {k: round(v, 3) for k, v in
                      rates(before[1], got.counters, at - before[0]).items()})
            self.previous[i] = (at, got.counters)
            rows.append(watch_row(target.name, target.queue.prefix, now, got, per_s))
        return rows


def sort_rows(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """``rows`` (of stats, the watch, the console's overview) in the order of ``--sort``
    (core/contract/counts.py ``SORTS``): as given, by name, errors first, or a count's, the largest
    first (errors first)."""
    if key == "given":
        return rows
    if key == "name":
        return sorted(rows, key=lambda row: str(row.get("queue")))
    if key == "errors":
        return sorted(rows, key=lambda row: "error" not in row)
    field = next(c.name for c in COUNTS if c.sort and c.short == key)
    return sorted(rows, key=lambda row: ("error" not in row, -(row.get(field) or 0)))
