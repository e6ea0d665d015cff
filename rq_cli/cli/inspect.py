"""Read-only commands: ``stats``, ``peek``, ``queues``."""

import contextlib
import functools
from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from ..connection.connect import mask_url
from ..core.codes import STATES, ItemState, PurgeChoice
from ..core.contract.counts import BY_NAME, COUNTS, SORTS, column_kind
from ..core.contract.fields import PEEK, carried
from ..errors import Interrupted, NothingToDo, UsageError
from ..ops.filters import make_filter
from ..ops.targets import Target
from ..output.render import Column, Output, RowStream
from ..output.shapes import peek_row, stats_row, tenant_rows
from .common import (
    End,
    Failures,
    JsonOpt,
    OptQueuesArg,
    QueueArg,
    RawOpt,
    State,
    state,
)
from .filtered import (
    ErrorGroupOpt,
    ErrorOpt,
    MatchOpt,
    MinAttemptsOpt,
    OlderThanOpt,
    ReasonOpt,
    state_size,
)

if TYPE_CHECKING:
    from ..core.codes import State as StateName
    from ..core.filtering import ItemFilter
    from ..core.queue import WorkQueue

STATS_COLUMNS = [
    Column("queue"),
    *(Column(c.name, c.heading or "", kind=column_kind(c), drop=c.drop) for c in COUNTS),
    Column("error", kind="words", optional=True, drop=0),
]
TENANT_COLUMNS = [Column("queue"), Column("tenant"), Column("pending", kind="number"),
                  Column("error", kind="words", optional=True, drop=0)]
QUEUES_COLUMNS = [Column("queue"), Column("prefix", drop=2), Column("url"),
                  Column("configured"), Column("discovered"),
                  Column("error", kind="words", optional=True, drop=0)]


class StatsFormat(str, Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


#: ``--sort``'s choices (core/contract/counts.py: the counts marked ``sort``)
StatsSort = Enum("StatsSort", {key: key for key in SORTS}, type=str)  # type: ignore[misc]
AS_GIVEN = StatsSort("given")


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
        "--check", help="Print one line per threshold breached and exit 5 if any is (a "
                        "queue that cannot be read: a line with its error, exit 6), else "
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
    sort: Annotated[StatsSort, typer.Option(
        "--sort", help="Order of the rows: given (as named), name, or the largest first: "
                       f"{', '.join(SORTS[2:-1])} (age: of the oldest pending item); errors "
                       "puts queues that cannot be read first. --watch keeps error rows in "
                       "view whatever the order.")] = AS_GIVEN,
    by_tenant: Annotated[bool, typer.Option(
        "--by-tenant", help="One row per tenant with pending items (fair queues): queue, "
                            "tenant (null: items pushed without --tenant), pending.")] = False,
    per_shard: Annotated[bool, typer.Option(
        "--shards", help="Sharded queues: also a row per shard (QUEUE/PREFIX), a shard whose "
                         "server is down a row with its error (JSON lines always carry the "
                         "breakdown in a 'shards' field).")] = False,
    history: Annotated[bool, typer.Option(
        "--history", help="The named queues' history instead: a JSON line per minute (per "
                          "hour past 7 days) with how much pushed, completed, failed and "
                          "dead grew in it.")] = False,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="DURATION", show_default=False,
        help="--history: this far back (90s, 15m, 24h, 7d; at most 90d). Default: 1h.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show counts per queue: pending, leased, abandoned, delayed, dead, age of the oldest.

    Example: rq-cli stats emails --watch
    """
    prometheus = fmt is StatsFormat.prometheus
    refuse_idle_flags(ctx, watch=watch, check=check, prometheus=prometheus,
                      by_tenant=by_tenant)
    if since is not None and not history:
        raise UsageError("--since goes with --history")
    if history and (watch or check or prometheus or by_tenant):
        raise UsageError("--history is shown alone: not with --watch, --check, --format "
                         "prometheus or --by-tenant")
    st = state(ctx)
    if fmt is StatsFormat.json:
        as_json = True
    out = st.output(as_json)
    if fmt is StatsFormat.table:
        out.json = False
    if history:
        from .history import print_history

        print_history(st, out, queues or [], since)
        return
    limits = (max_pending, max_age, max_dead, max_abandoned)
    if watch or check or prometheus or any(limit is not None for limit in limits):
        from ..output.metrics import Thresholds
        from . import monitor

        thresholds = Thresholds.from_config({
            "max_pending": max_pending, "max_age": max_age, "max_dead": max_dead,
            "max_abandoned": max_abandoned})
        monitor.check_modes(watch=watch, check=check, prometheus=prometheus,
                            limits=thresholds)
        if sort.value != "given" and not watch:
            raise UsageError("--sort orders the rows of a table, JSON lines or --watch: not "
                             "with --check or --format prometheus")
        if watch:
            from .watch import watch as live

            live(st, out, stats_targets(st, queues or [], discover), interval=interval,
                 iterations=iterations, sort=sort.value)
            return
        # a server whose queues cannot be listed is reported, not the end of the run
        unlisted: list[dict[str, Any]] = []
        targets = stats_targets(st, queues or [], discover, Failures("stats"), unlisted)
        monitor.run(st, out, targets, check=check, limits=thresholds, prometheus=prometheus,
                    unlisted=unlisted)
        return
    failed = Failures("stats")
    rows: list[dict[str, Any]] = []
    read: dict[str, Any] = {}  # the servers that answered: url -> client
    if by_tenant:
        for t in stats_targets(st, queues or [], discover, failed, rows):
            found, error = failed.run(t.url, functools.partial(t.queue.stats, by_tenant=True),
                                      t.queue)
            if found is None:
                rows.append({"queue": t.name, "error": error})
                continue
            rows.extend(tenant_rows(t.name, found))
        out.rows(_sorted(rows, sort), TENANT_COLUMNS)
        failed.check()
        return
    for t in stats_targets(st, queues or [], discover, failed, rows):
        found, error = failed.run(t.url, t.queue.stats, t.queue)
        rows.append(stats_row(t.name, found) if found else {"queue": t.name, "error": error})
        if hasattr(t.queue, "shard_stats"):  # a sharded queue: its shards, even when one
            from ..output.shapes import shard_rows  # is down (its row then carries the error)

            parts, _ = failed.run(t.url, t.queue.shard_stats, t.queue)
            shards = shard_rows(parts) if parts else []
            if shards:  # (on the error row too: which shard is down, what the others hold)
                rows[-1]["shards"] = shards
            if per_shard and not out.json:
                rows.extend({**r, "queue": f"{t.name}/{r['prefix']}"} for r in shards)
        if found:
            read.setdefault(t.url, t.queue.client)
        if found and not found.exists:
            from .monitor import absent

            out.message(f"rq-cli: warning: {absent(t.name, t.url, st, t.queue)}")
        if found and found.other_generation:
            out.message(f"rq-cli: warning: queue {t.name} (layout {t.queue.options.layout}) "
                        f"shows {found.other_generation} keys: a {found.other_generation} peer "
                        "shares it, and its cleaner may hand out again items rq-cli holds; set "
                        'layout = "compat"')
    rows = _sorted(rows, sort)
    # a sparse column (tenants, limits) only where a queue has it
    shown = {c.name for c in COUNTS if not c.sparse or any(row.get(c.name) for row in rows)}
    out.rows(rows, [c for c in STATS_COLUMNS if c.key in shown or c.key not in BY_NAME])
    if not out.json:  # a terminal: say when the server itself can lose work
        from .doctor import warn_risks

        warn_risks(out, read)
    failed.check()


def refuse_idle_flags(ctx: typer.Context, *, watch: bool, check: bool, prometheus: bool,
                      by_tenant: bool) -> None:
    """Refuse flags that would do nothing in the combination given (exit 2)."""
    given = {name for name in ("iterations", "interval")
             if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"}
    if given and not watch:
        raise UsageError(f"--{sorted(given)[0]} goes with --watch")
    if by_tenant and (watch or check or prometheus):
        mode = "--watch" if watch else "--check" if check else "--format prometheus"
        raise UsageError(f"--by-tenant is not shown by {mode}: use it alone (rq-cli stats "
                         "QUEUE --by-tenant)")


def _sorted(rows: list[dict[str, Any]], sort: Any) -> list[dict[str, Any]]:
    from ..ops.polling import sort_rows  # (the same order as the live view's, the console's)

    return sort_rows(rows, sort.value)




def stats_targets(st: State, names: list[str], discover: bool,
                  failed: Failures | None = None,
                  rows: list[dict[str, Any]] | None = None) -> list[Target]:
    """Named queues; else the configured ones; plus (or, with none configured) discovered
    (:meth:`State.targets`: a server that cannot be searched is an error row in ``rows``)."""
    return [Target(name, wq, st.url_of(wq.client))
            for name, wq in st.targets(names, discover, failed, rows)]


def peek(
    ctx: typer.Context,
    queue: QueueArg,
    item_state: Annotated[PurgeChoice, typer.Option(
        "--state", "-s", help="Which items to show; all = pending, processing, delayed, "
                              "then dead (to copy a queue).")] = PurgeChoice.PENDING,
    count: Annotated[int, typer.Option(
        "--count", "-n", metavar="N", min=0, max=1_000_000, help="How many items (in all).")] = 10,
    end: Annotated[End, typer.Option(
        "--from", help="head: the next to be leased (pending), the oldest lease "
                       "(processing), the soonest due (delayed), the oldest death (dead); "
                       "tail: the other end.")] = End.head,
    match: MatchOpt = None,
    error: ErrorOpt = None,
    reason: ReasonOpt = None,
    older_than: OlderThanOpt = None,
    min_attempts: MinAttemptsOpt = None,
    error_group: ErrorGroupOpt = None,
    item_id: Annotated[str | None, typer.Option(
        "--id", metavar="ID", show_default=False,
        help="Show this one item, in whatever state it is (not with --state, --count or "
             "--from).")] = None,
    raw: RawOpt = False,
    tenant: Annotated[str | None, typer.Option(
        "--tenant", metavar="TENANT",
        help="Show the pending items of this tenant's sub-queue (fair queues).")] = None,
    batch: Annotated[str | None, typer.Option(
        "--batch", metavar="NAME",
        help="Show only the items of this batch in --state (in no particular order): "
             "--state dead shows what failed.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show items without changing anything; with a filter, the first COUNT that match.

    Example: rq-cli peek emails --state dead -n 20 --match "user == 'u-7'"
    """
    flt = make_filter(match, error, reason, older_than, min_attempts,
                      error_group)  # before connecting
    if flt is not None and item_id is None:
        if item_state is PurgeChoice.ALL:
            raise UsageError("a filter reads one state: give --state pending, processing, "
                             "delayed or dead")
        flt.check_state(item_state.value)
    st = state(ctx)
    out = st.output(as_json)
    if item_id is not None:
        given = [f"--{name}" for name, param in (("state", "item_state"), ("count", "count"),
                                                 ("from", "end"), ("tenant", "tenant"))
                 if getattr(ctx.get_parameter_source(param), "name", "") == "COMMANDLINE"]
        if flt is not None:
            given.append("a filter (--match, --error, --reason, --older-than, --min-attempts, "
                         "--error-group)")
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
    if tenant is not None and item_state is not PurgeChoice.PENDING:
        raise UsageError("--tenant shows pending items only (a tenant's sub-queue)")
    wq = st.queue(queue)
    if batch is not None:
        from .batches import peek_batch

        peek_batch(out, queue, wq, batch, item_state.value, count, raw,
                   flt is not None or tenant is not None, _peek_columns(item_state.value))
        return
    if flt is not None:
        peek_matching(out, queue, wq, cast("StateName", item_state.value), flt, count=count,
                      from_end=end.value, raw=raw, tenant=tenant)
        return
    states = cast("list[StateName]", [s for s in STATES
                              if item_state is PurgeChoice.ALL or s == item_state.value])
    with out.stream(_peek_columns(item_state.value)) as rows, _shown_on_interrupt(queue, rows):
        left = count
        for name in states:  # page by page: memory stays flat for a million items
            left = _peek_one(out, rows, wq, name, tenant, left, end.value, raw)
            if name == ItemState.PENDING.value and tenant is None and left > 0:
                # fair queues: then each tenant's sub-queue, in turn order
                for other in wq.tenants()[1]:
                    left = _peek_one(out, rows, wq, name, other, left, end.value, raw)
                    if left <= 0:
                        break


@contextlib.contextmanager
def _shown_on_interrupt(queue: str, rows: RowStream) -> Iterator[None]:
    """Ctrl-C ends a peek at once (exit 130), saying how many items it showed: the rows
    waiting for their page are drawn first (a page at most, never the whole state)."""
    try:
        yield
    except KeyboardInterrupt:
        rows.close()
        items = "item" if rows.shown == 1 else "items"
        raise Interrupted(f"interrupted: peek {queue}: {rows.shown:,} {items} shown") from None


def _peek_one(out: Output, rows: Any, wq: "WorkQueue", item_state: "StateName",
              tenant: str | None, left: int, from_end: str, raw: bool) -> int:
    """Print up to ``left`` items of one state (of one tenant's sub-queue, for pending);
    returns how many more are wanted."""
    for page in wq.peek_pages(item_state, count=left, from_end=from_end, tenant=tenant):
        left -= len(page)
        if raw:
            out.raw(i.data for i in page if i.data is not None)
            rows.shown += len(page)
        else:
            rows.add([peek_row(i) for i in page])
    return left


def peek_matching(out: Output, queue: str, wq: "WorkQueue", item_state: "StateName",
                  flt: "ItemFilter", *, count: int, from_end: str, raw: bool,
                  tenant: str | None = None) -> None:
    """``peek`` with a filter: the first ``count`` matching items, read page by page (of
    ``tenant``'s sub-queue only, if given); the counts (scanned, matched, not JSON) on
    stderr."""
    from ..core.filtering import FilterReport, scan

    report = FilterReport(queue=queue, state=item_state, action="peek")
    total = state_size(wq, item_state) if out.terminal.stderr_isatty() else None
    with out.progress(f"peek {queue}", total=total, unit=f"{item_state} scanned") as bar, \
            out.stream(_peek_columns(item_state)) as rows, _shown_on_interrupt(queue, rows):
        for step in scan(wq, item_state, flt, report, action="peek", limit=count,
                         from_end=from_end, tenant=tenant):
            if raw:
                out.raw(i.data for i in step.items if i.data is not None)
                rows.shown += len(step.items)
            elif step.items:
                rows.add([peek_row(i) for i in step.items])
            bar.set(report.scanned)
    text = f"{report.matched} matched of {report.scanned} {item_state} scanned"
    if report.not_json:
        text += f", {report.not_json} not JSON (never match --match)"
    out.message(f"rq-cli: peek {queue}: {text}")


def _peek_columns(item_state: str, one: bool = False) -> list[Column]:
    # the per-item fields with a column (core/contract/fields.py): those always there lead, the
    # others follow the state's own columns (left out when no row has one, if optional or --state
    # all)
    declared = [f for f in carried(PEEK) if f.column]
    cols = [Column("id"), *([Column("state", drop=0)] if one or item_state == "all" else []),
            Column("data", kind="data", drop=0),
            Column("attempts", kind="number", drop=2),
            *(Column(f.name, f.column or "", kind=f.column_kind, drop=f.drop)
              for f in declared if f.always)]
    extra = {
        "processing": [Column("lease_session", "held by", drop=0),
                       Column("lease_expires_at", "lease until", kind="time"),
                       Column("abandoned", drop=2)],
        "delayed": [Column("due_at", "due", kind="time")],
        "dead": [Column("dead_at", "died", kind="time"), Column("dead_reason", "reason")],
        "all": [Column("lease_expires_at", "lease until", kind="time", optional=True),
                Column("due_at", "due", kind="time", optional=True),
                Column("dead_at", "died", kind="time", optional=True),
                Column("dead_reason", "reason", optional=True)],
    }
    return [*cols, *extra.get(item_state, []),
            *(Column(f.name, f.column or "", kind=f.column_kind, drop=f.drop,
                     optional=f.column_optional or item_state == "all")
              for f in declared if not f.always)]


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
        from ..core.fleet.discover import discover_queues as find

        for server in st.servers():
            url = server.url
            client = st.server_client(server)
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
