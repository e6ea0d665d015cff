"""Repair and housekeeping: ``clean``, ``requeue-dead``, ``purge``, ``pause``, ``resume``.

``clean`` only recovers, so it never asks (it is made for cron); ``purge`` destroys, so it
asks on a terminal and otherwise needs ``--yes``. Both offer ``--dry-run``.
"""

import functools
from typing import Annotated, Any

import typer

from ..core.codes import STATES, ItemState, PurgeChoice
from ..core.reports import PurgeReport
from ..core.types import QueueOptions
from ..errors import Interrupted, NothingToDo, UsageError
from ..ops.filters import make_filter
from ..output.progress import Progress
from ..output.render import Column
from ..output.shapes import clean_row, purge_row, requeue_row
from . import reading
from .common import (
    DryRunOpt,
    Failures,
    IdsArg,
    JsonOpt,
    OptQueuesArg,
    QueueArg,
    State,
    complete_queue,
    state,
)
from .filtered import (
    ErrorGroupOpt,
    ErrorOpt,
    MatchOpt,
    MinAttemptsOpt,
    OlderThanOpt,
    RateOpt,
    ReasonOpt,
    SummaryOpt,
    check_group_found,
    dry_run_title,
    run_moves,
    skipped_note,
)

CLEAN_COLUMNS = [Column("queue")] + [Column(k, kind="number") for k in (
    "recovered", "dropped", "dead", "suspects", "promoted", "pruned", "scanned")] + [
    Column("dry_run", "dry run", drop=2), Column("error", kind="words", optional=True, drop=0)]
REQUEUE_COLUMNS = [Column("queue"), Column("to")] + [
    Column(k, kind="number") for k in ("requeued", "skipped", "missing")] + [
    Column("dry_run", "dry run", drop=2)]
PURGE_COLUMNS = [Column("queue")] + [Column(k, kind="number") for k in (
    "pending", "processing", "delayed", "dead", "strays", "total")] + [
    Column("dry_run", "dry run", drop=2)]
SecondsOpt = float | None


def clean(
    ctx: typer.Context,
    queues: OptQueuesArg = None,
    deep: Annotated[bool, typer.Option(
        "--deep", help="Also find stray items (data with no list entry) by SCAN: O(N).")
    ] = False,
    grace: Annotated[SecondsOpt, typer.Option(
        "--grace", min=0, metavar="SECONDS", show_default=False,
        help="Re-queue a lease-less item only once seen lease-less this long "
             f"(default: the queue's grace_seconds, {QueueOptions.grace_seconds:g}).")] = None,
    every: Annotated[bool, typer.Option(
        "--all", help="Clean every queue of the config file (for cron).")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Print only the queues where items were recovered or "
                              "dead-lettered, and errors (for cron, which mails output).")
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Recover abandoned items: re-queue expired leases, drop ghosts, dead-letter the spent.

    Example: rq-cli clean --all --deep
    """
    st = state(ctx)
    out = st.output(as_json)
    if not queues and not every:
        raise UsageError("name the queues to clean, or use --all for every queue of the config "
                         "file (or, with none configured, every queue found on the server)")
    failed = Failures("clean")
    errors: list[dict[str, Any]] = []
    # --all: the configured queues, or with none configured those found on the server
    targets = [(name, st.queue(name)) for name in queues or []]
    if every:
        named = {(id(wq.client), wq.prefix) for _, wq in targets}
        targets += [(name, wq) for name, wq in st.targets([], False, failed, errors)
                    if (id(wq.client), wq.prefix) not in named]
    with out.stream(CLEAN_COLUMNS) as rows:
        rows.add(errors)
        for name, wq in targets:
            with out.progress(f"clean {name}", unit="keys scanned" if deep else "") as bar:
                def run(w: Any = wq, b: Progress = bar) -> Any:
                    return w.clean(deep=deep, grace_seconds=grace, dry_run=dry_run,
                                   progress=b.advance if deep else None,
                                   wait=functools.partial(_wait_grace, b))
                report, error = failed.run(st.url_of(wq.client), run, wq)
            row = clean_row(name, report) if report else {"queue": name, "error": error}
            if not quiet or _needs_a_human(row):
                rows.add([row])
    failed.check()


def _needs_a_human(row: dict[str, Any]) -> bool:
    """clean --quiet prints a queue's line only when items were recovered or dead-lettered,
    or it failed (an error)."""
    return bool(row.get("recovered") or row.get("dead") or row.get("error"))


def _wait_grace(bar: Progress, suspects: int, seconds: float) -> None:
    """clean's second look: what it waits for, and how long is left (on a terminal)."""
    items = "item" if suspects == 1 else "items"
    bar.wait(seconds, f"grace period for {suspects} lease-less {items}")


def requeue_dead(
    ctx: typer.Context,
    queue: QueueArg,
    ids: IdsArg = None,
    every: Annotated[bool, typer.Option("--all", help="Every dead item.")] = False,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=0, metavar="N",
        help="Only the N oldest dead items (with a filter: at most N items).")] = None,
    older_than: Annotated[SecondsOpt, typer.Option(
        "--older-than", min=0, metavar="SECONDS",
        help="Only items dead for longer than this.")] = None,
    match: MatchOpt = None,
    error: ErrorOpt = None,
    error_group: ErrorGroupOpt = None,
    reason: ReasonOpt = None,
    min_attempts: MinAttemptsOpt = None,
    rate: RateOpt = None,
    to: Annotated[str | None, typer.Option(
        "--to", metavar="QUEUE", autocompletion=complete_queue,
        help="Into this queue (same server; plain or sharded) instead.")] = None,
    summary: SummaryOpt = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Move dead-lettered items back into the queue, all or those matching a filter.

    Example: rq-cli requeue-dead emails --match "user == 'u-7'" --error timeout --rate 100
    """
    flt = make_filter(match, error, reason, older_than, min_attempts,
                      error_group)  # before connecting
    has_filter = any(x is not None for x in (match, error, min_attempts, error_group)) or \
        bool(reason)
    filtered = has_filter or rate is not None or summary  # (--rate, --summary: how, not which)
    st = state(ctx)
    out = st.output(as_json)
    chosen = _dead_ids(st, ids)
    if chosen is not None and (every or limit is not None or older_than is not None
                               or filtered):
        raise UsageError("give ids, or --all/--limit/--older-than/a filter, not both")
    if chosen is None and not (every or limit is not None or older_than is not None
                               or has_filter):
        raise UsageError("say which dead items: ids, '-' to read them from stdin, --all, "
                         "--limit N, --older-than SECONDS or a filter (--match ...)")
    wq = st.queue(queue)
    target = st.queue(to) if to is not None else None
    if filtered:  # scanned page by page: a JSON line per item moved
        done = run_moves(out, queue, wq, ItemState.DEAD.value, flt, action="requeue",
                         verb="requeued", to_name=to or queue, to=target, limit=limit,
                         rate=rate, dry_run=dry_run, summary=summary, label="requeue-dead")
        check_group_found(flt, done, queue)
        return
    with out.progress(f"requeue-dead {queue}", unit="requeued") as bar:
        try:
            report = wq.requeue_dead(chosen, limit=limit, older_than=older_than, to=target,
                                     dry_run=dry_run, progress=bar.advance)
        except KeyboardInterrupt:
            items = "item" if bar.done == 1 else "items"
            raise Interrupted(f"interrupted: requeue-dead {queue}: {bar.done:,} {items} "
                              f"requeued (and perhaps the batch under way); run it again to "
                              f"requeue the rest") from None
    out.rows([requeue_row(queue, to or queue, report)], REQUEUE_COLUMNS,
             title=dry_run_title("requeued") if dry_run else None)
    if chosen and not dry_run and (report.skipped or report.missing):
        _named_not_moved(queue, to, len(chosen), report.skipped, report.missing)
    if chosen is None and report.skipped:  # (named ids: exit 3, said just above)
        out.message(skipped_note("requeue-dead", queue, to or queue, report.skipped,
                                 report.skipped_ids))


def _named_not_moved(queue: str, to: str | None, named: int, skipped: int,
                     missing: int) -> None:
    """Exit 3 (the rule of the manual's "Exit codes"): an id named that was not moved."""
    parts = []
    if missing == named:
        parts.append(f"none of the {named} ids is a dead item of {queue}")
    elif missing:
        parts.append(f"{missing} of the {named} ids {'is' if missing == 1 else 'are'} not a "
                     f"dead item of {queue}")
    if skipped:
        one = skipped == 1
        parts.append(f"{skipped} of the {named} ids {'is' if one else 'are'} dead but a live "
                     f"item of {to or queue} has the same id, so "
                     f"{'it stays' if one else 'they stay'} dead (complete or purge the live "
                     f"item, or requeue with --to)")
    raise NothingToDo("; ".join(parts))


def _dead_ids(st: State, ids: list[str] | None) -> list[str] | None:
    """Ids from arguments, or from stdin with an explicit '-' (never implicitly: this command
    runs from cron, where stdin is not a terminal and no ids means --all/--limit)."""
    if not ids:
        return None
    if ids == ["-"]:
        return [ref.id for _, ref in reading.read_refs(reading.stdin_binary())]
    if "-" in ids:
        raise UsageError("'-' (read stdin) cannot be mixed with ids")
    return [reading.check_input_id(i) for i in ids]


def purge(
    ctx: typer.Context,
    queue: QueueArg,
    which: Annotated[PurgeChoice, typer.Option(
        "--state", "-s", help="Which items to delete; all = every key of the queue.")
    ] = PurgeChoice.PENDING,
    match: MatchOpt = None,
    error: ErrorOpt = None,
    error_group: ErrorGroupOpt = None,
    reason: ReasonOpt = None,
    older_than: OlderThanOpt = None,
    min_attempts: MinAttemptsOpt = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=0, metavar="N", help="Delete at most N items (filtered runs).")
    ] = None,
    rate: RateOpt = None,
    summary: SummaryOpt = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Do not ask (needed when stdin is not a terminal).")] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete items (pending ones unless --state says otherwise), all or those matching a
    filter; asks first.

    Example: rq-cli purge emails --state dead --reason expired --yes
    """
    flt = make_filter(match, error, reason, older_than, min_attempts,
                      error_group)  # before connecting
    filtered = flt is not None or limit is not None or rate is not None or summary
    if filtered and which is PurgeChoice.ALL:
        raise UsageError("a filter, --limit, --rate or --summary needs one --state "
                         "(pending, processing, delayed or dead), not all")
    if flt is not None:
        flt.check_state(which.value)
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    if not (yes or dry_run) and not st.terminal.stdin_isatty():
        raise UsageError(f"refusing to purge {queue} without --yes: stdin is not a terminal to "
                         f"confirm on (--dry-run shows what would go)")
    if filtered:
        item_state: Any = which.value
        if not yes and not dry_run:
            counted = run_moves(out, queue, wq, item_state, flt, action="purge",
                                verb="purged", limit=limit, dry_run=True,
                                label="purge (counting)", quiet=True)
            check_group_found(flt, counted, queue)
            group = f" of error group {error_group}" if error_group else ""
            if not counted.matched or not typer.confirm(
                    f"Delete the {counted.matched} matching {which.value} items{group} of "
                    f"queue {queue}?", default=False, err=True):
                raise NothingToDo(f"purge of {queue} cancelled: nothing deleted")
        done = run_moves(out, queue, wq, item_state, flt, action="purge", verb="purged",
                         limit=limit, rate=rate, dry_run=dry_run, summary=summary,
                         label="purge")
        check_group_found(flt, done, queue)
        return
    total = None
    if not yes and not dry_run:
        preview = wq.purge(which.value, dry_run=True)
        total = preview.total
        if total and not _confirm(st, queue, which.value, preview):
            raise NothingToDo(f"purge of {queue} cancelled: nothing deleted")
        if not total:
            report = preview
            report.dry_run = False
            out.rows([purge_row(queue, report)], PURGE_COLUMNS)
            return
    if total is None and not dry_run and st.terminal.stderr_isatty():
        total = _purge_size(wq, which.value)  # (the bar's total; strays are not counted)
    with out.progress(f"purge {queue}", total=total) as bar:
        try:
            report = wq.purge(which.value, dry_run=dry_run, progress=bar.advance)
        except KeyboardInterrupt:
            items = "item" if bar.done == 1 else "items"
            raise Interrupted(f"interrupted: purge {queue}: {bar.done:,} {items} deleted "
                              f"(and perhaps the batch under way); run it again to delete the "
                              f"rest") from None
    out.rows([purge_row(queue, report)], PURGE_COLUMNS)


def _purge_size(wq: Any, which: str) -> int:
    """How many items ``purge --state which`` will delete, strays aside (O(1) counts)."""
    stats = wq.stats()
    states = STATES if which == PurgeChoice.ALL else (which,)
    return sum(int(getattr(stats, s)) for s in states)


def _confirm(st: State, queue: str, which: str, preview: PurgeReport) -> bool:
    counts = ", ".join(f"{getattr(preview, k)} {k}" for k in (*STATES, "strays")
                       if getattr(preview, k))
    items = "item" if preview.total == 1 else "items"
    return typer.confirm(f"Delete {preview.total} {items} of queue {queue} ({counts})?",
                         default=False, err=True)


def pause(
    ctx: typer.Context,
    queue: QueueArg,
    create: Annotated[bool, typer.Option(
        "--create", help="Pause a queue that does not exist yet (no key of it on the server, "
                         "not in the config), before its first push.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop handing out items from a queue (rq-cli leases nothing) until resumed.

    Example: rq-cli pause emails
    """
    st = state(ctx)
    wq = st.queue(queue)
    configured = not st.raw_prefix and queue in st.config.queues
    if not (create or configured or wq.exists()):
        raise NothingToDo(f"no queue {queue!r}: no key of it on the server and not in the "
                          f"config (a typo?); --create pauses it before its first push")
    wq.pause()
    st.output(as_json).record({"queue": queue, "paused": True})


def resume(ctx: typer.Context, queue: QueueArg, as_json: JsonOpt = False) -> None:
    """Hand out items from a paused queue again.

    Example: rq-cli resume emails
    """
    st = state(ctx)
    st.queue(queue).resume()
    st.output(as_json).record({"queue": queue, "paused": False})
