"""What settling calls reply, made into outcomes: the rows of a reply, the result of an
operation (or of the Unconfirmed or PartlyDone it raises) from its replies, a pipelined
settle's refusals (core/operations/base.py QueueBase.per_batch)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ...errors import PartlyDone, Unconfirmed
from ..codes import Outcome
from ..types import ItemRef

T = TypeVar("T")


@contextlib.contextmanager
def unconfirmed_result(make: Callable[..., T]) -> Iterator[Callable[..., T]]:
    """``with unconfirmed_result(make) as done: return done(raw)``: the operation's result
    made from its raw replies by ``make``; an :class:`Unconfirmed` raised inside gets the
    same made from the replies it carries, in ``result`` (durability: the outcomes the
    server gave, though not confirmed); a :class:`PartlyDone`, made from the replies of the
    calls that ran, for the refs they carried (``make(raw, refs)``)."""
    try:
        yield make
    except Unconfirmed as exc:
        if exc.result is not None:
            exc.result = make(exc.result)
        raise
    except PartlyDone as exc:
        exc.result = make(exc.result, exc.done)
        raise


def coded(items: list[ItemRef], rows: list[Any], names: dict[str, Outcome], number: str,
           ) -> Iterator[tuple[ItemRef, Outcome, int]]:
    """(ref, outcome, number) per item from the rows (``code``, ``number``) of a decoded
    reply."""
    for ref, row in zip(items, rows, strict=True):
        code = row.code
        yield ref, names[code.decode() if isinstance(code, bytes) else code], \
            int(getattr(row, number))


def reply_rows(spec: Any, reply: Any) -> list[Any]:
    """A settling script's reply as one row per id: a string's characters, or a list's rows."""
    return list(reply.decode()) if isinstance(reply, bytes) else spec.decode(reply).rows


def partly_done(spec: Any, group: list[Any], replies: list[Any], done: list[ItemRef],
                out: list[Any], later: list[str]) -> None:
    """Raise :class:`PartlyDone` for a pipeline of calls (``group``: (refs, argv) each) some
    of whose ``replies`` are errors: the others ran, so their rows join ``out`` (the rows
    of the earlier pipelines, for ``done``) and the error names what was not done (with
    ``later``: the ids of the calls not sent)."""
    missed: list[str] = []
    first: Exception | None = None
    for (batch, _), reply in zip(group, replies, strict=True):
        if isinstance(reply, Exception):
            first = first or reply
            missed.extend(ref.id for ref in batch)
        else:
            out.extend(reply_rows(spec, reply))
            done.extend(batch)
    missed += later
    if not done:  # (nothing ran: the server's error as it is)
        raise first  # type: ignore[misc]
    raise refused(first, done, missed, out)  # type: ignore[arg-type]


def refused(first: Exception | str, done: list[Any], missed: list[str],
            result: Any) -> PartlyDone:
    """The :class:`PartlyDone` of a request some of whose calls ran (``done``, their
    outcomes or rows in ``result``) before the server refused one with ``first`` (or its
    text): the others (``missed``) left as they were."""
    detail = first if isinstance(first, str) else (
        str(first).splitlines()[0].rstrip(".") if str(first) else type(first).__name__)
    return PartlyDone(f"server error: {detail}; {len(done)} of the items were done, "
                      f"{len(missed)} not: {shown(missed)}", ids=missed, result=result,
                      done=list(done), reason=detail)


def shown(ids: list[str]) -> str:
    """The first five of ``ids``, and how many more."""
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def not_confirmed(first: Unconfirmed, missed: list[str], result: Any) -> Unconfirmed:
    """The :class:`Unconfirmed` of a request cut into calls, ``first`` the first call not
    confirmed, ``missed`` the items of every such call; ``result``: every call's outcomes."""
    return Unconfirmed(f"{str(first).rstrip('.')}; its items: {shown(missed)}",
                       ids=missed, reply=first.reply, result=result)
