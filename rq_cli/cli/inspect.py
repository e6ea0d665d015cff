"""Read-only commands: ``stats``, ``peek``, ``queues``."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core.reports import PeekedItem, Stats
from ..render import Column
from .common import End, JsonOpt, OptQueuesArg, QueueArg, RawOpt, State, StateChoice, state

if TYPE_CHECKING:
    from ..core.queue import WorkQueue

STATS_COLUMNS = [
    Column("queue"), Column("pending", kind="number"), Column("processing", kind="number"),
    Column("leased", kind="number"), Column("abandoned", kind="number"),
    Column("delayed", kind="number"), Column("due", kind="number"),
    Column("dead", kind="number"), Column("oldest_pending_age_s", "oldest", kind="age"),
    Column("paused"),
]
QUEUES_COLUMNS = [Column("queue"), Column("prefix"), Column("url"), Column("configured"),
                  Column("discovered")]
DiscoverOpt = Annotated[bool, typer.Option(
    "--discover", help="Also find queues on the servers by SCAN (read-only).")]


def stats(ctx: typer.Context, queues: OptQueuesArg = None, discover: DiscoverOpt = False,
          as_json: JsonOpt = False) -> None:
    """Show counts per queue: pending, leased, abandoned, delayed, dead, age of the oldest.

    Example: rq-cli stats emails
    """
    st = state(ctx)
    out = st.output(as_json)
    targets = _targets(st, queues or [], discover)
    rows = [_stats_row(name, wq.stats()) for name, wq in targets]
    out.rows(rows, STATS_COLUMNS)


def _stats_row(name: str, s: Stats) -> dict[str, Any]:
    return {"queue": name, "prefix": s.queue, "pending": s.pending,
            "processing": s.processing, "leased": s.leased, "abandoned": s.abandoned,
            "delayed": s.delayed, "due": s.due, "dead": s.dead,
            "oldest_pending_age_s": s.oldest_pending_age_s, "paused": s.paused,
            "counters": s.counters}


def _targets(st: State, names: list[str], discover: bool) -> list[tuple[str, "WorkQueue"]]:
    """Named queues; else the configured ones; plus (or, with none configured) discovered."""
    targets = [(name, st.queue(name)) for name in (names or list(st.config.queues))]
    if discover or not targets:
        seen = {(id(wq.client), wq.prefix) for _, wq in targets}
        for url, password in st.servers():
            client = st.client(url, password)
            from ..core.discover import discover_queues as find

            for prefix in find(client):
                if (id(client), prefix) not in seen:
                    seen.add((id(client), prefix))
                    targets.append((prefix, st.raw_queue(prefix, url, password)))
    return targets


def peek(
    ctx: typer.Context,
    queue: QueueArg,
    item_state: Annotated[StateChoice, typer.Option(
        "--state", "-s", help="Which items to show.")] = StateChoice.pending,
    count: Annotated[int, typer.Option(
        "--count", "-n", min=0, max=1_000_000, help="How many items.")] = 10,
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
    items = st.queue(queue).peek(item_state.value, count=count, from_end=end.value)
    if raw:
        out.raw(i.data for i in items if i.data is not None)
        return
    out.rows([peek_row(i) for i in items], _peek_columns(item_state.value))


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
        "delayed": [Column("due_at", "due", kind="time")],
        "dead": [Column("dead_at", "died", kind="time"), Column("dead_reason", "reason"),
                 Column("error")],
    }
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
    from ..connect import mask_url

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for name in st.config.queues:
        spec = st.spec(name)
        rows[(spec.url, spec.prefix)] = {"queue": name, "prefix": spec.prefix,
                                         "url": mask_url(spec.url), "configured": True,
                                         "discovered": False}
    if discover:
        from ..core.discover import discover_queues as find

        for url, password in st.servers():
            for prefix in find(st.client(url, password)):
                row = rows.setdefault((url, prefix), {
                    "queue": prefix, "prefix": prefix, "url": mask_url(url),
                    "configured": False, "discovered": True})
                row["discovered"] = True
    out.rows(list(rows.values()), QUEUES_COLUMNS)
