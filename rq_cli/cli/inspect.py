"""Read-only commands: ``stats``, ``peek``, ``queues``."""

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from ..core.reports import PeekedItem, Stats
from ..errors import NothingToDo, UsageError
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


class StatsFormat(str, Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


DiscoverOpt = Annotated[bool, typer.Option(
    "--discover", help="Also find queues on the servers by SCAN (read-only).")]


def stats(
    ctx: typer.Context,
    queues: OptQueuesArg = None,
    discover: DiscoverOpt = False,
    watch: Annotated[bool, typer.Option(
        "--watch", "-w", help="A live dashboard, redrawn every --interval until Ctrl-C (exit "
                              "0); JSON lines per queue per interval when stdout is not a "
                              "terminal.")] = False,
    interval: Annotated[float, typer.Option(
        "--interval", min=0.1, max=86400, metavar="SECONDS",
        help="Seconds between refreshes of --watch.")] = 2.0,
    iterations: Annotated[int | None, typer.Option(
        "--iterations", min=1, metavar="N", show_default=False,
        help="Stop --watch after N refreshes (default: run until Ctrl-C).")] = None,
    fmt: Annotated[StatsFormat | None, typer.Option(
        "--format", show_default=False,
        help="table, json (lines), or prometheus (text exposition, for node_exporter's "
             "textfile collector). Default: a table on a terminal, else JSON lines.")] = None,
    check: Annotated[bool, typer.Option(
        "--check", help="Print one line per threshold breached and exit 5 if any is, else "
                        "print nothing and exit 0 (for cron and Nagios-style agents). "
                        "Thresholds: the --max-* options, else max_pending, max_age, max_dead, "
                        "max_abandoned of the config.")] = False,
    max_pending: Annotated[int | None, typer.Option(
        "--max-pending", min=0, metavar="N", show_default=False,
        help="--check: at most N pending items.")] = None,
    max_age: Annotated[float | None, typer.Option(
        "--max-age", min=0, metavar="SECONDS", show_default=False,
        help="--check: the oldest pending item at most this old.")] = None,
    max_dead: Annotated[int | None, typer.Option(
        "--max-dead", min=0, metavar="N", show_default=False,
        help="--check: at most N dead-lettered items.")] = None,
    max_abandoned: Annotated[int | None, typer.Option(
        "--max-abandoned", min=0, metavar="N", show_default=False,
        help="--check: at most N abandoned leases (lease run out, not yet cleaned).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show counts per queue: pending, leased, abandoned, delayed, dead, age of the oldest.

    Example: rq-cli stats emails --watch
    """
    st = state(ctx)
    if fmt is StatsFormat.json:
        as_json = True
    out = st.output(as_json)
    if fmt is StatsFormat.table:
        out.json = False
    prometheus = fmt is StatsFormat.prometheus
    limits = (max_pending, max_age, max_dead, max_abandoned)
    if watch or check or prometheus or any(limit is not None for limit in limits):
        from ..metrics import Thresholds
        from . import monitor

        thresholds = Thresholds(pending=max_pending, age=max_age, dead=max_dead,
                                abandoned=max_abandoned)
        monitor.check_modes(watch=watch, check=check, prometheus=prometheus,
                            limits=thresholds)
        targets = stats_targets(st, queues or [], discover)
        if watch:
            from .watch import watch as live

            live(st, out, targets, interval=interval, iterations=iterations)
        else:
            monitor.run(st, out, targets, check=check, limits=thresholds,
                        prometheus=prometheus)
        return
    targets = stats_targets(st, queues or [], discover)
    rows = [stats_row(t.name, t.queue.stats()) for t in targets]
    out.rows(rows, STATS_COLUMNS)


def stats_row(name: str, s: Stats) -> dict[str, Any]:
    return {"queue": name, "prefix": s.queue, "pending": s.pending,
            "processing": s.processing, "leased": s.leased, "abandoned": s.abandoned,
            "delayed": s.delayed, "due": s.due, "dead": s.dead,
            "oldest_pending_age_s": s.oldest_pending_age_s, "paused": s.paused,
            "counters": s.counters}


class Target(NamedTuple):
    """A queue to read: its name (as given, configured or discovered), the queue, its server."""

    name: str
    queue: "WorkQueue"
    url: str


def stats_targets(st: State, names: list[str], discover: bool) -> list[Target]:
    """Named queues; else the configured ones; plus (or, with none configured) discovered."""
    targets = []
    for name in (names or list(st.config.queues)):
        spec = st.spec(name)
        targets.append(Target(name, st.queue(name), spec.url))
    if discover or not targets:
        seen = {(id(t.queue.client), t.queue.prefix) for t in targets}
        for url, password in st.servers():
            client = st.client(url, password)
            from ..core.discover import discover_queues as find

            for prefix in find(client):
                if (id(client), prefix) not in seen:
                    seen.add((id(client), prefix))
                    targets.append(Target(prefix, st.raw_queue(prefix, url, password), url))
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
    item_id: Annotated[str | None, typer.Option(
        "--id", metavar="ID", show_default=False,
        help="Show this one item, in whatever state it is (not with --state, --count or "
             "--from).")] = None,
    raw: RawOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Show items without changing anything.

    Example: rq-cli peek emails --state dead -n 20
    """
    st = state(ctx)
    out = st.output(as_json)
    if item_id is not None:
        given = [f"--{name}" for name, param in (("state", "item_state"), ("count", "count"),
                                                 ("from", "end"))
                 if getattr(ctx.get_parameter_source(param), "name", "") == "COMMANDLINE"]
        if given:
            raise UsageError(f"--id shows one item in any state: not with {', '.join(given)}")
        item = st.queue(queue).item(item_id)
        if item is None:
            raise NothingToDo(f"{queue} has no item {item_id!r}, live or dead")
        if raw:
            out.raw([item.data] if item.data is not None else [])
        else:
            out.rows([peek_row(item)], _peek_columns(item.state, one=True))
        return
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


def _peek_columns(item_state: str, one: bool = False) -> list[Column]:
    cols = [Column("id"), *([Column("state")] if one else []), Column("data", kind="data"),
            Column("attempts", kind="number"), Column("enqueued_at", "enqueued", kind="time")]
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
