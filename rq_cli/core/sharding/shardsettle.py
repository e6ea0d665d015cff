"""What a sharded queue's settling call (complete, fail, extend, cancel, release, retake)
says when some shards answered and one refused, or did not confirm: the outcomes of every
shard that ran, whatever another did (:class:`~rq_cli.errors.PartlyDone`,
:class:`~rq_cli.errors.Unconfirmed`), as one queue's call says them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ...errors import PartlyDone, Unconfirmed
from ..operations.settled import not_confirmed, refused
from ..types import ItemOutcome, ItemRef

if TYPE_CHECKING:
    from ..queue import WorkQueue

Op = Callable[["WorkQueue", list[ItemRef]], list[ItemOutcome]]


class Settling:
    """The shards' calls of one settling request: :meth:`run` each, then :meth:`result`."""

    def __init__(self) -> None:
        self.first: Exception | None = None  # (the first refusal)
        self.missed: list[str] = []  # (the ids not done)
        self.unconfirmed: Unconfirmed | None = None
        self.unsure: list[str] = []  # (the ids done but not confirmed)

    def run(self, op: Op, q: WorkQueue, refs: Sequence[ItemRef],
            where: list[int]) -> list[tuple[int, ItemOutcome]]:
        """(index, outcome) of each of ``refs[where]`` that ``op`` settled on ``q``; a refusal
        or a write not confirmed is kept for :meth:`result`, and the other shards go on."""
        from redis.exceptions import ResponseError

        part = [refs[n] for n in where]
        try:
            return list(zip(where, op(q, part), strict=True))
        except Unconfirmed as exc:  # made: its outcomes count
            if not isinstance(exc.result, list) or len(exc.result) != len(part):
                raise
            self.unconfirmed = self.unconfirmed or exc
            self.unsure += exc.ids
            return list(zip(where, exc.result, strict=True))
        except PartlyDone as exc:  # some calls ran: their outcomes, in the order given
            self.first = self.first or exc
            self.missed += exc.ids
            outcomes = iter(exc.result if isinstance(exc.result, list) else [])
            done, nxt = [], next(outcomes, None)
            for n, ref in zip(where, part, strict=True):
                if nxt is not None and nxt.id == ref.id:
                    done.append((n, nxt))
                    nxt = next(outcomes, None)
            return done
        except ResponseError as exc:  # refused whole: none of this shard's items done
            self.first = self.first or exc
            self.missed += [ref.id for ref in part]
            return []

    def result(self, done: list[ItemOutcome]) -> list[ItemOutcome]:
        """``done``, the outcomes of every id settled; or, where a shard refused,
        :class:`PartlyDone` with them (the server's error as it is if none was done);
        or :class:`Unconfirmed` with them, where a write was not confirmed."""
        if self.first is not None:
            missed = set(self.missed)  # (refused by a draining shard: not "missing")
            done = [o for o in done if o.id not in missed]
            if not done:
                raise self.first
            reason = self.first.reason if isinstance(self.first, PartlyDone) else self.first
            raise refused(reason, done, self.missed, done)
        if self.unconfirmed is not None:
            raise not_confirmed(self.unconfirmed, self.unsure, done)
        return done
