"""``rq-cli cancel``: dead-letter items now, even while a worker runs them."""

from typing import Annotated

import typer

from ..core.codes import Outcome
from ..errors import NothingToDo
from ..output.render import Column
from ..output.shapes import outcome_row
from .common import JsonOpt, QueueArg, state

CANCEL_COLUMNS = [Column("queue"), Column("id"), Column("outcome")]


def cancel(
    ctx: typer.Context,
    queue: QueueArg,
    ids: Annotated[list[str], typer.Argument(help="Ids of the items to cancel.",
                                             show_default=False, metavar="ID...")],
    error: Annotated[str | None, typer.Option(
        "--error", metavar="TEXT", show_default=False,
        help="Text kept with the dead letter.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Dead-letter items now (reason cancelled), even while a worker runs them.

    Example: rq-cli cancel emails 0b1c2d3e
    """
    st = state(ctx)
    out = st.output(as_json)
    outcomes = st.queue(queue).cancel(ids, error=error)
    out.rows([outcome_row(queue, o) for o in outcomes], CANCEL_COLUMNS)
    missing = [o.id for o in outcomes if o.outcome != Outcome.DEAD]
    if missing:  # any id named that was not cancelled: 3 (the manual's "Exit codes")
        some = (f"none of the {len(outcomes)} ids is a live item" if len(missing) == len(outcomes)
                else f"{len(missing)} of the {len(outcomes)} ids "
                     f"{'is not a live item' if len(missing) == 1 else 'are not live items'}")
        raise NothingToDo(f"{some} of {queue} (already completed, dead, or never pushed)")
