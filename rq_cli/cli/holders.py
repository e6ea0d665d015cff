"""``rq-cli holders``: which sessions (host, pid) hold a queue's items, live or abandoned."""

from typing import Annotated

import typer

from ..output.render import Column
from ..output.shapes import holder_row
from .common import JsonOpt, QueuesArg, state

HOLDER_COLUMNS = [
    Column("queue"), Column("host", drop=2), Column("pid", kind="number", drop=2),
    Column("items", kind="number", drop=0), Column("abandoned", kind="number", drop=0),
    Column("oldest_id", "oldest lease"),
    Column("nearest_deadline", "nearest deadline", kind="time"),
    Column("session", drop=0),
]


def holders(
    ctx: typer.Context,
    queues: QueuesArg,
    with_ids: Annotated[bool, typer.Option(
        "--ids", help="List every item id each session holds (JSON: the ids field).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the sessions holding leases, live and abandoned: host, pid, items, deadlines.

    Example: rq-cli holders emails
    """
    st = state(ctx)
    out = st.output(as_json)
    columns = [*HOLDER_COLUMNS, Column("ids", kind="words", drop=0)] if with_ids else HOLDER_COLUMNS
    rows = [holder_row(name, h, with_ids) for name in queues
            for h in st.queue(name).holders()]
    if not rows and not out.json:
        out.message(f"rq-cli: no items in processing in {', '.join(queues)}")
        return
    out.rows(rows, columns)
