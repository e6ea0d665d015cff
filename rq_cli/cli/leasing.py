"""The worker's commands: ``lease``, ``complete``, ``fail``, ``extend``.

``complete``/``fail``/``extend`` read ids from arguments, or from stdin the plain ids or the
JSON lines ``lease`` printed (their ``id``, ``session`` and ``queue``), so
``rq-cli lease q | worker | rq-cli complete q -`` works. A JSON line's ``queue`` field names
the queue it came from (lines of ``lease a b`` complete where they were leased); QUEUE is
used for lines without one.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.contract.fields import LEASE, carried
from ..core.contract.limits import MAX_COUNT
from ..core.types import ItemOutcome, ItemRef
from ..errors import BadInputError, HeldBack, NothingToDo, UsageError
from ..output.render import Column
from ..output.shapes import lease_row
from . import reading
from .common import (
    IdsArg,
    JsonOpt,
    LeaseOpt,
    Order,
    QueueArg,
    QueuesArg,
    State,
    check_outcomes,
    outcome_rows,
    read_stdin,
    state,
)

LEASE_COLUMNS = [Column("queue", drop=2), Column("id"), Column("data", kind="data", drop=0),
                 Column("attempt", kind="number", drop=3),
                 Column("lease_expires_at", "lease until", kind="time"),
                 Column("session", drop=0),
                 # the per-item fields lease carries that have a column (core/contract/fields.py)
                 *(Column(f.name, f.column or "", kind=f.column_kind, drop=f.drop,
                          optional=f.column_optional) for f in carried(LEASE) if f.column)]
#: lease --at-most-once: the items were completed as they were taken (no lease)
TAKEN_COLUMNS = [*LEASE_COLUMNS[:4], *LEASE_COLUMNS[6:]]
OUTCOME_COLUMNS = [Column("queue"), Column("id"), Column("outcome"),
                   Column("retry_at", "retry at", kind="time", optional=True),
                   Column("lease_expires_at", "lease until", kind="time", optional=True)]
REF_BATCH = 1000

if TYPE_CHECKING:
    from ..core.queue import WorkQueue


def lease(
    ctx: typer.Context,
    queues: QueuesArg,
    lease_seconds: LeaseOpt = None,
    count: Annotated[int, typer.Option(
        "--count", "-n", metavar="N", min=1, max=MAX_COUNT,
        help="Lease up to N items (returns as soon as it has at least one).")] = 1,
    wait: Annotated[float, typer.Option(
        "--wait", min=0, metavar="SECONDS",
        help="Wait up to this long for an item (0: do not wait); held back by the queue's "
             "limits, exactly until they allow one (else exit 75).")] = 0.0,
    order: Annotated[Order, typer.Option(
        "--order", help="With several queues: strict (the first non-empty queue in the order "
                        "given) or fair (a random order each time).")] = Order.strict,
    at_most_once: Annotated[bool, typer.Option(
        "--at-most-once", help="Lease and complete in one step: the job never runs twice "
                               "(if the worker dies, it is gone).")] = False,
    raw: Annotated[bool, typer.Option(
        "--raw", help="Print only each item's data, one per line.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Lease items to work on, printing one JSON line per item.

    Example: rq-cli lease emails --count 10 --wait 30
    """
    st = state(ctx)
    out = st.output(as_json)
    from ..core.queue import lease_many

    wqs = st.queues(queues)
    items = lease_many(wqs, count, lease_seconds=lease_seconds, wait=wait, order=order.value,
                       at_most_once=at_most_once)
    names = {wq.prefix: name for wq, name in reversed(list(zip(wqs, queues, strict=True)))}
    for wq, name in zip(wqs, queues, strict=True):  # a sharded queue's items: its name
        names.update({i.queue: name for i in items
                      if i.queue not in names and getattr(wq, "owner", lambda _: None)(i.queue)})
    if not items:
        _refuse_sharded_prefix(st, wqs, queues)
        _held_back(wqs, queues)
        paused = [name for wq, name in zip(wqs, queues, strict=True) if wq.is_paused()]
        if len(paused) == len(queues):
            raise NothingToDo(f"{', '.join(paused)} {'is' if len(paused) == 1 else 'are'} "
                              f"paused: nothing is leased until 'rq-cli resume'")
        also = f"; paused: {', '.join(paused)}" if paused else ""
        delayed = _delayed(wqs, queues)
        why = (f"nothing due: {delayed}; any other item is leased" if delayed else
               "empty, or every item is leased")
        raise NothingToDo(f"nothing to lease from {', '.join(queues)}"
                          f"{f' within {wait:g} s' if wait else ''} ({why}{also})")
    if raw:
        out.raw(item.data for item in items)
        return
    if at_most_once:  # completed as they were taken: no lease to show
        out.rows([lease_row(names.get(i.queue, i.queue), i, lease=False) for i in items],
                 TAKEN_COLUMNS)
        return
    out.rows([lease_row(names.get(i.queue, i.queue), i) for i in items], LEASE_COLUMNS)


def _refuse_sharded_prefix(st: State, wqs: "list[WorkQueue]", names: list[str]) -> None:
    """Nothing was leased: a usage error (2) where a queue is a sharded queue's base prefix
    read as a plain queue (its items are in its shards)."""
    from .shardnote import sharded_note

    for wq, name in zip(wqs, names, strict=True):
        note = sharded_note(st, name, wq)
        if note is not None:
            raise UsageError(f"nothing to lease from {name}: {note}")


def _held_back(wqs: "list[WorkQueue]", names: list[str]) -> None:
    """Nothing was leased: exit 75 (try again later) where the queues' limits held the lease
    back, saying when the next lease can succeed (the manual's "Limits")."""
    from ..output.render import human_time

    held: list[tuple[str, tuple[str, float]]] = [
        (name, h) for wq, name in zip(wqs, names, strict=True)
        if (h := getattr(wq, "held_back", None)) is not None]
    if not held:
        return
    parts = []
    for name, (by, at) in held:
        parts.append(f"{name}: its rate is spent, the next lease can succeed at "
                     f"{human_time(at)}" if by == "rate" else
                     f"{name}: its in-flight cap is reached, a place frees when a lease ends "
                     f"(at the latest {human_time(at)})")
    raise HeldBack(f"the queue's limits held the lease back ({'; '.join(parts)})")


def _delayed(wqs: "list[WorkQueue]", names: list[str]) -> str:
    """What the queues hold delayed, and when the next falls due ("" for nothing delayed):
    ``3 items delayed, the next due 12:04:05 (in 42s)``, per queue when there are several."""
    import time

    from ..output.render import human_time

    parts = []
    for wq, name in zip(wqs, names, strict=True):
        n, due_in = wq.next_due()
        if n:
            when = human_time(time.time() + (due_in or 0))
            text = f"1 item delayed, due {when}" if n == 1 else \
                f"{n:,} items delayed, the next due {when}"
            parts.append(text if len(wqs) == 1 else f"{name}: {text}")
    return "; ".join(parts)


def complete(ctx: typer.Context, queue: QueueArg, ids: IdsArg = None,
             result: Annotated[str | None, typer.Option(
                 "--result", metavar="JSON",
                 help="The items' result (JSON, at most 64 KiB), kept for batch items: "
                      "rq-cli results prints it. A stdin line's own \"result\" wins.")
             ] = None,
             as_json: JsonOpt = False) -> None:
    """Mark leased items done, deleting them.

    Example: rq-cli lease q | my-worker | rq-cli complete q -
    """
    given = None if result is None else reading.check_result(result)
    _act(ctx, queue, ids, as_json, "complete", lambda wq, refs: wq.complete(
        refs if given is None else
        [r if r.result is not None else ItemRef(r.id, r.session, given) for r in refs]))


def fail(
    ctx: typer.Context,
    queue: QueueArg,
    ids: IdsArg = None,
    error: Annotated[str | None, typer.Option(
        "--error", metavar="TEXT",
        help="Why it failed; kept with the item (peek shows it).")] = None,
    retry_in: Annotated[float | None, typer.Option(
        "--retry-in", min=0, metavar="SECONDS",
        help="Retry after this long (default: the queue's exponential backoff).")] = None,
    dead: Annotated[bool, typer.Option(
        "--dead", help="Dead-letter now, without retrying.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Give leased items back, to be retried later or dead-lettered.

    Example: rq-cli fail emails 3f2a9c --error "smtp timeout" --retry-in 60
    """
    if dead and retry_in is not None:
        raise UsageError("--retry-in and --dead cannot be used together")
    _act(ctx, queue, ids, as_json, "fail",
         lambda wq, refs: wq.fail(refs, error=error, retry_in=retry_in, dead=dead))


def extend(ctx: typer.Context, queue: QueueArg, ids: IdsArg = None,
           lease_seconds: LeaseOpt = None, as_json: JsonOpt = False) -> None:
    """Push out the lease deadline of items still being worked on.

    Example: rq-cli extend emails 3f2a9c --lease 600
    """
    _act(ctx, queue, ids, as_json, "extend",
         lambda wq, refs: wq.extend(refs, lease_seconds=lease_seconds))


def _act(ctx: typer.Context, queue: str, ids: list[str] | None, as_json: bool, verb: str,
         call: Callable[[Any, list[ItemRef]], list[ItemOutcome]]) -> None:
    """Run ``call`` over the refs in batches, print every outcome, then raise the exit code."""
    st = state(ctx)
    out = st.output(as_json)
    outcomes: list[ItemOutcome] = []
    with out.stream(OUTCOME_COLUMNS) as rows:
        try:
            for name, refs in _ref_batches(st, queue, ids):
                done = call(st.queue(name), refs)
                rows.add(outcome_rows(name, done))
                outcomes.extend(done)
        except BadInputError as exc:  # a bad stdin line: say what was done before it
            ok = sum(1 for o in outcomes if o.ok)
            raise BadInputError(f"{exc}; {verb}: {ok:,} item{'' if ok == 1 else 's'} "
                                f"{_DONE[verb]} before it (each outcome is on stdout), "
                                f"nothing after it") from None
    if not outcomes and read_stdin(ids, st.terminal):  # `rq-cli lease q | ... -`, nothing leased
        raise NothingToDo(f"nothing to {verb}: no ids on stdin")
    if not outcomes:
        raise UsageError(f"no ids to {verb}: give ids, or '-' to read them from stdin")
    check_outcomes(outcomes, verb)


_DONE = {"complete": "completed", "fail": "failed", "extend": "extended"}


def _ref_batches(st: State, queue: str, ids: list[str] | None
                 ) -> Iterator[tuple[str, list[ItemRef]]]:
    """(queue name, refs) batches. On a bad stdin line, the batches before it come first."""
    if not read_stdin(ids, st.terminal):
        try:
            yield queue, [ItemRef(reading.check_input_id(i)) for i in ids or []]
        except BadInputError as exc:
            raise BadInputError(f"bad id argument: {exc}") from None
        return
    pending: dict[str, list[ItemRef]] = {}
    size = 0
    error: BadInputError | None = None
    try:
        for name, ref in reading.read_refs(reading.stdin_binary()):
            pending.setdefault(name or queue, []).append(ref)
            size += 1
            if size >= REF_BATCH:
                yield from pending.items()
                pending, size = {}, 0
    except BadInputError as exc:
        error = exc
    yield from pending.items()
    if error is not None:
        raise error
