"""``rq-cli dedup``: the ids a queue's de-dup window remembers, and forgetting them."""

from typing import Annotated

import typer

from ..errors import NothingToDo, UsageError
from ..output.render import Column
from .common import JsonOpt, QueueArg, state

DEDUP_COLUMNS = [Column("id"), Column("forgotten_at", "forgotten at", kind="time"),
                 Column("remaining_s", "remaining", kind="age")]


def dedup(
    ctx: typer.Context,
    queue: QueueArg,
    ids: Annotated[list[str] | None, typer.Argument(
        help="With --clear: the ids to forget.", show_default=False, metavar="ID")] = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Forget the given ids: push accepts them again.")] = False,
    count: Annotated[int, typer.Option(
        "--count", "-n", metavar="N", min=0, max=1_000_000,
        help="List at most this many ids.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List the recently completed ids that push refuses (the de-dup window), or forget some.

    Example: rq-cli dedup emails --clear 9f2e0c...
    """
    st = state(ctx)
    out = st.output(as_json)
    if clear and not ids:
        raise UsageError("--clear needs the ids to forget")
    if ids and not clear:
        raise UsageError("ids are only taken with --clear (to forget them)")
    wq = st.queue(queue)
    if clear:
        forgotten = wq.clear_dedup(ids or [])
        out.record({"queue": queue, "cleared": forgotten})
        named = len(set(ids or []))
        if forgotten < named:  # any id named that was not there: 3 (the manual's "Exit codes")
            unknown = named - forgotten
            some = (f"none of the {named} ids is" if unknown == named else
                    f"{unknown} of the {named} ids {'is' if unknown == 1 else 'are'} not")
            raise NothingToDo(f"{some} remembered by the de-dup window of {queue}")
        return
    window, total, remembered = wq.dedup_ids(count)
    shown = f" ({len(remembered)} shown)" if len(remembered) < total else ""
    out.message(f"rq-cli: dedup {queue}: window "
                f"{'not set' if window is None else f'{window:g} s'}, "
                f"{total} ids remembered{shown}")
    out.rows([{"id": i, "forgotten_at": at, "remaining_s": left}
              for i, at, left in remembered], DEDUP_COLUMNS)
