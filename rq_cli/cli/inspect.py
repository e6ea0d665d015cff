"""Read-only commands: ``stats``, ``peek``, ``queues``."""

import functools
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from ..connect import mask_url
from ..core.queue import STATES
from ..core.reports import PeekedItem, Stats
from ..render import Column
from .common import (
    End,
    Failures,
    JsonOpt,
    OptQueuesArg,
    PurgeChoice,
    QueueArg,
    RawOpt,
    state,
)

if TYPE_CHECKING:
    from ..core.types import State

STATS_COLUMNS = [
    Column("queue"), Column("pending", kind="number"), Column("processing", kind="number"),
    Column("leased", kind="number"), Column("abandoned", kind="number"),
    Column("delayed", kind="number"), Column("due", kind="number"),
    Column("dead", kind="number"), Column("oldest_pending_age_s", "oldest", kind="age"),
    Column("paused"), Column("error", optional=True),
]
QUEUES_COLUMNS = [Column("queue"), Column("prefix"), Column("url"), Column("configured"),
                  Column("discovered"), Column("error", optional=True)]
DiscoverOpt = Annotated[bool, typer.Option(
    "--discover", help="Also find queues on the servers by SCAN (read-only).")]


def stats(ctx: typer.Context, queues: OptQueuesArg = None, discover: DiscoverOpt = False,
          as_json: JsonOpt = False) -> None:
    """Show counts per queue: pending, leased, abandoned, delayed, dead, age of the oldest.

    Example: rq-cli stats emails
    """
    st = state(ctx)
    out = st.output(as_json)
    failed = Failures("stats")
    rows: list[dict[str, Any]] = []
    for name, wq in st.targets(queues or [], discover, failed, rows):
        found, error = failed.run(st.url_of(wq.client), wq.stats)
        rows.append(_stats_row(name, found) if found else {"queue": name, "error": error})
    out.rows(rows, STATS_COLUMNS)
    failed.check()


def _stats_row(name: str, s: Stats) -> dict[str, Any]:
    return {"queue": name, "prefix": s.queue, "pending": s.pending,
            "processing": s.processing, "leased": s.leased, "abandoned": s.abandoned,
            "delayed": s.delayed, "due": s.due, "dead": s.dead,
            "oldest_pending_age_s": s.oldest_pending_age_s, "paused": s.paused,
            "counters": s.counters}


def peek(
    ctx: typer.Context,
    queue: QueueArg,
    item_state: Annotated[PurgeChoice, typer.Option(
        "--state", "-s", help="Which items to show; all = pending, processing, delayed, "
                              "then dead (to copy a queue).")] = PurgeChoice.pending,
    count: Annotated[int, typer.Option(
        "--count", "-n", min=0, max=1_000_000, help="How many items (in all).")] = 10,
    end: Annotated[End, typer.Option(
        "--from", help="head: the next to be leased (pending), the oldest lease "
                       "(processing), the soonest due (delayed), the oldest death (dead); "
                       "tail: the other end.")] = End.head,
    raw: RawOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show items without changing anything.

    Example: rq-cli peek emails --state dead -n 20
    """
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    states = cast("list[State]", [s for s in STATES
                                  if item_state is PurgeChoice.all or s == item_state.value])
    with out.stream(_peek_columns(item_state.value)) as rows:
        left = count
        for name in states:  # page by page: memory stays flat for a million items
            for page in wq.peek_pages(name, count=left, from_end=end.value):
                left -= len(page)
                if raw:
                    out.raw(i.data for i in page if i.data is not None)
                else:
                    rows.add([peek_row(i) for i in page])


def peek_row(item: PeekedItem) -> dict[str, Any]:
    """id, state, data, attempts, enqueued_at always; the other fields when they are set."""
    row: dict[str, Any] = {"id": item.id, "state": item.state, "data": item.data,
                           "attempts": item.attempts, "enqueued_at": item.enqueued_at}
    for key in ("lease_session", "lease_expires_at", "due_at", "dead_at", "dead_reason",
                "error"):
        value = getattr(item, key)
        if value is not None:
            row[key] = value
    if item.abandoned:
        row["abandoned"] = True
    return row


def _peek_columns(item_state: str) -> list[Column]:
    cols = [Column("id"), Column("data", kind="data"), Column("attempts", kind="number"),
            Column("enqueued_at", "enqueued", kind="time")]
    extra = {
        "processing": [Column("lease_session", "held by"),
                       Column("lease_expires_at", "lease until", kind="time"),
                       Column("abandoned")],
        "delayed": [Column("due_at", "due", kind="time"), Column("error")],
        "dead": [Column("dead_at", "died", kind="time"), Column("dead_reason", "reason"),
                 Column("error")],
        "all": [Column("lease_expires_at", "lease until", kind="time", optional=True),
                Column("due_at", "due", kind="time", optional=True),
                Column("dead_at", "died", kind="time", optional=True),
                Column("dead_reason", "reason", optional=True),
                Column("error", optional=True)],
    }
    if item_state == "all":
        cols.insert(1, Column("state"))
    return cols + extra.get(item_state, [Column("error")])


def queues(
    ctx: typer.Context,
    discover: Annotated[bool, typer.Option(
        "--discover/--no-discover", help="Also find queues on the servers by SCAN.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """List the configured queues, and the queues found on their servers.

    Example: rq-cli queues --no-discover
    """
    st = state(ctx)
    out = st.output(as_json)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for name in st.config.queues:
        spec = st.spec(name)
        rows[(spec.url, spec.prefix)] = {"queue": name, "prefix": spec.prefix,
                                         "url": mask_url(spec.url), "configured": True,
                                         "discovered": False}
    failed = Failures("queues")
    if discover:
        from ..core.discover import discover_queues as find

        for url, password in st.servers():
            client = st.client(url, password)
            found, error = failed.run(url, functools.partial(find, client))
            if error is not None:
                rows[(url, "")] = {"queue": None, "prefix": None, "url": mask_url(url),
                                   "configured": False, "discovered": False, "error": error}
            for prefix in found or []:
                row = rows.setdefault((url, prefix), {
                    "queue": prefix, "prefix": prefix, "url": mask_url(url),
                    "configured": False, "discovered": True})
                row["discovered"] = True
    out.rows(list(rows.values()), QUEUES_COLUMNS)
    failed.check()
