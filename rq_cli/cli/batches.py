"""``rq-cli batch`` and ``rq-cli wait``: a batch's counts, and waiting until it is done
(docs/batches.md; the engine's side is core/operations/batchops.py)."""

from typing import Annotated, Any

import typer

from ..core.operations import batchops
from ..errors import BatchFailed, NothingToDo, TimedOut, UsageError
from ..output.render import Column, Output
from ..output.shapes import peek_row
from .common import JsonOpt, QueueArg, state

BatchArg = Annotated[str, typer.Argument(
    help="The batch's name (as given to push --batch).", show_default=False, metavar="NAME")]


def batch(
    ctx: typer.Context,
    queue: QueueArg,
    name: BatchArg,
    forget: Annotated[bool, typer.Option(
        "--forget", help="Drop the batch's record now (its items are left as they are).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show a batch's counts: total, pending, processing, delayed, completed, dead, done.

    Exit 3 if the queue has no such batch.

    Example: rq-cli batch emails newsletter-42
    """
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    row = batchops.read(wq, name, queue)
    if row is None:
        raise NothingToDo(f"no batch {name!r} in {queue}")
    if forget:
        batchops.forget(wq, name)
        out.message(f"rq-cli: forgot batch {name!r} of {queue} "
                    f"({row['completed']} completed, {row['dead']} dead of {row['total']})")
        return
    out.record(row, title=f"batch {name} of {queue}")


def wait(
    ctx: typer.Context,
    queue: QueueArg,
    name: BatchArg,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0, metavar="SECONDS",
        help="Give up after this long (exit 75). Default: wait for ever.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Wait until every item of a batch is completed or dead, then print its line.

    Exit 0 if every item completed, 5 if any is dead, 75 on --timeout, 3 if there is no
    such batch. Woken by the step that finishes the batch, not by polling; a progress bar
    on a terminal.

    Example: rq-cli wait emails newsletter-42 --timeout 3600
    """
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    with out.progress(f"wait {queue} {name}", total=None) as bar:
        def shown(row: dict[str, Any]) -> None:
            finished = row["completed"] + row["dead"]
            bar.set(finished, f"wait {queue} {name}: {finished}/{row['total']} finished, "
                              f"{row['dead']} dead")

        row = batchops.wait(wq, name, timeout, shown, queue)
    if row is None:
        raise NothingToDo(f"no batch {name!r} in {queue}")
    out.record(row, title=f"batch {name} of {queue}")
    if not row["done"]:
        raise TimedOut(f"wait: batch {name!r} of {queue} not done after {timeout:g} s: "
                       f"{row['completed'] + row['dead']} of {row['total']} items finished")
    if row["dead"]:
        raise BatchFailed(f"wait: batch {name!r} of {queue} done: {row['dead']} of "
                          f"{row['total']} items dead (rq-cli peek {queue} --state dead)")


RESULT_COLUMNS = [Column("id"), Column("result", kind="words", drop=0)]


def results(
    ctx: typer.Context,
    queue: QueueArg,
    name: BatchArg,
    as_json: JsonOpt = False,
) -> None:
    """Print the results of a batch's completed items: one {"id", "result"} line each.

    A result that is JSON is printed as JSON, any other as a string. Only items completed
    with a result have one (complete --result, work --result stdout). Exit 3 if the queue
    has no such batch.

    Example: rq-cli results thumbs album-7 --json
    """
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    if batchops.read(wq, name, queue) is None:
        raise NothingToDo(f"no batch {name!r} in {queue}")
    with out.stream(RESULT_COLUMNS) as rows:
        page: list[dict[str, Any]] = []
        for item_id, value in batchops.results(wq, name):
            page.append({"id": item_id, "result": result_value(value)})
            if len(page) >= 1000:
                rows.add(page)
                page = []
        rows.add(page)


def result_value(value: bytes) -> Any:
    """A stored result as printed: its JSON value, or else its text."""
    import json

    try:
        return json.loads(value)
    except ValueError:
        return value.decode("utf-8", "replace")


def peek_batch(out: Output, queue: str, wq: Any, batch: str, item_state: str, count: int,
               raw: bool, other: bool, columns: list[Column]) -> None:
    """``peek --batch NAME``: up to ``count`` of the batch's items in ``item_state``, each
    read as ``peek --id`` reads it (``other``: a filter or --tenant was given too)."""
    if other or item_state == "all":
        raise UsageError("--batch shows the batch's items in one --state (pending, "
                         "processing, delayed or dead), not with a filter or --tenant")
    if batchops.read(wq, batch, queue) is None:
        raise NothingToDo(f"no batch {batch!r} in {queue}")
    found = [part.item(item_id) for part, item_id in
             batchops.items(wq, batch, item_state, count)]
    shown = [item for item in found if item is not None and item.state == item_state]
    if raw:
        out.raw([item.data for item in shown if item.data is not None])
    else:
        out.rows([peek_row(item) for item in shown], columns)
