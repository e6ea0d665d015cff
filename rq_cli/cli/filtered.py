"""The filter options that ``peek``, ``requeue-dead`` and ``purge`` share (their flags are
rq_cli/ops/filters.py's, with the filter they make), and
the loop that runs a filtered scan (:func:`rq_cli.core.filtering.scan`) for them: a JSON line
per item moved, a progress bar on a terminal, the counts at the end, and on Ctrl-C what was
done so far (each step is finished and printed before the interrupt is taken).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import Interrupted, NothingToDo
from ..ops.filters import FLAG_OF
from ..output.jsonlines import json_line
from ..output.render import Column, Output
from ..output.shapes import moved_row, summary_row
from .signals import interrupt_deferred, interruptible_sleep

if TYPE_CHECKING:  # (rq_cli.core.filtering is loaded when a filter is used: stats stays light)
    from ..core.codes import State
    from ..core.filtering import Action, FilterReport, ItemFilter
    from ..core.queue import WorkQueue

MatchOpt = Annotated[str | None, typer.Option(
    FLAG_OF["match"], metavar="EXPR", show_default=False,
    help="Only items whose JSON payload makes this JMESPath expression truthy, e.g. "
         "\"user == 'u-7'\" (a payload that is not JSON never matches).")]
ErrorOpt = Annotated[str | None, typer.Option(
    FLAG_OF["error"], metavar="REGEX", show_default=False,
    help="Only items whose last error matches this regular expression.")]
ReasonOpt = Annotated[list[str] | None, typer.Option(
    FLAG_OF["reasons"], metavar="REASON", show_default=False,
    help="Only dead items with this dead-letter reason (max_attempts, expired, failed, "
         "cancelled, ...); repeat for several.")]
OlderThanOpt = Annotated[float | None, typer.Option(
    FLAG_OF["older_than"], min=0, metavar="SECONDS", show_default=False,
    help="Only items dead (dead items) or first pushed (the others) longer ago than this.")]
MinAttemptsOpt = Annotated[int | None, typer.Option(
    FLAG_OF["min_attempts"], min=0, metavar="N", show_default=False,
    help="Only items leased at least N times.")]
ErrorGroupOpt = Annotated[str | None, typer.Option(
    "--error-group", metavar="KEY", show_default=False,
    help="Only items whose last error is in this error group (its key, as `rq-cli errors "
         "QUEUE` prints it); requeue-dead and purge exit 3 if no item is.")]
RateOpt = Annotated[float | None, typer.Option(
    FLAG_OF["rate"], min=0.001, metavar="N", show_default=False,
    help="Move at most N items per second (filtered runs).")]
SummaryOpt = Annotated[bool, typer.Option(
    "--summary", help="Print one line of counts instead of one line per item moved "
                      "(filtered runs).")]

def summary_columns(verb: str) -> list[Column]:
    """The table of the counts (``verb``: requeued or purged)."""
    return [Column("queue"), Column("state", drop=0)] + [
        Column(k, kind="number", drop=0 if k in ("matched", verb) else 1)
        for k in ("scanned", "matched", "not_json", verb, "skipped", "changed")] + [
        Column("dry_run", "dry run", drop=2), Column("sample", kind="words", drop=0)]


def check_group_found(flt: ItemFilter | None, report: FilterReport, queue: str) -> None:
    """Exit 3 when ``--error-group`` matched no item (a key from another queue, a group
    already handled, or a typo): nothing was touched."""
    if flt is None or flt.error_group is None or report.matched:
        return
    others = flt.match is not None or flt.error is not None or bool(flt.reasons) or \
        flt.older_than is not None or flt.min_attempts is not None
    raise NothingToDo(f"no {report.state} item of {queue} matches error group "
                      f"{flt.error_group}{' and the other filters' if others else ''}: "
                      f"nothing changed; `rq-cli errors {queue}` lists the groups")


def describe(report: FilterReport, verb: str) -> str:
    """The counts in words, for stderr."""
    text = (f"{report.done} {verb} of {report.matched} matched; {report.scanned} "
            f"{report.state} scanned")
    if report.not_json:
        text += f", {report.not_json} not JSON (never match --match)"
    if report.skipped:
        text += f", {report.skipped} skipped (a live item has the id)"
    if report.changed:
        text += f", {report.changed} left alone (no longer {report.state})"
    return text


def dry_run_title(verb: str) -> str:
    """The title of a dry run's table: said above it whatever the width (its ``dry run``
    column is the first a narrow terminal drops)."""
    return f"dry run: nothing was {verb}"


def skipped_note(label: str, queue: str, to: str, skipped: int, ids: list[str]) -> str:
    """The stderr line for dead items that stay dead because a live item of ``to`` has
    their id (a peer pushed it again since it died), naming the first few."""
    from ..core.contract.limits import FILTER_SAMPLE
    from ..output.render import human

    one = skipped == 1
    named = human(ids[:FILTER_SAMPLE])
    if skipped > len(ids[:FILTER_SAMPLE]):
        named += f" and {skipped - len(ids[:FILTER_SAMPLE]):,} more"
    return (f"rq-cli: {label} {queue}: {skipped:,} dead {'item stays' if one else 'items stay'}"
            f" dead: a live item of {to} has the same id (pushed again since it died; "
            f"complete or purge the live item, or requeue with --to): {named}")


def run_moves(out: Output, queue: str, wq: WorkQueue, state: State, flt: ItemFilter | None, *,
              action: Action, verb: str, to_name: str | None = None,
              to: WorkQueue | None = None, limit: int | None = None,
              rate: float | None = None, dry_run: bool = False, summary: bool = False,
              label: str, quiet: bool = False) -> FilterReport:
    """Requeue or purge the matching items of ``state``: a JSON line per item moved (unless
    ``summary``, a dry run or a terminal), then the counts (stdout for a dry run, with
    ``--summary`` or on a terminal; else one line on stderr). ``quiet``: print nothing but
    the progress bar (purge's count before it asks)."""
    from ..core.filtering import FilterReport, ItemFilter, scan

    report = FilterReport(queue=queue, state=state, action=action)
    flt = flt or ItemFilter()
    per_item = out.json and not summary and not dry_run
    steps = scan(wq, state, flt, report, action=action, to=to, limit=limit, rate=rate,
                 dry_run=dry_run, sleep=interruptible_sleep)
    total = state_size(wq, state) if out.terminal.stderr_isatty() else None
    with out.progress(f"{label} {queue}", total=total, unit=f"{state} scanned") as bar:
        try:
            while True:
                with interrupt_deferred():  # a step moved is a step printed
                    step = next(steps, None)
                    if step is None:
                        break
                    if per_item and step.ids:
                        out.lines(json_line(moved_row(queue, state, verb, i, to_name))
                                  for i in step.ids)
                bar.set(report.scanned, f"{label} {queue}: {report.done} {verb}")
        except KeyboardInterrupt:  # ONE line: what was done, and how to go on (exit 130)
            raise Interrupted(f"interrupted: {label} {queue}: {describe(report, verb)}; "
                              f"run it again to go on (nothing is moved twice)") from None
    if quiet:
        return report
    if per_item:
        out.message(f"rq-cli: {label} {queue}: {describe(report, verb)}")
    else:
        out.rows([summary_row(report, verb, to_name)], summary_columns(verb),
                 title=dry_run_title(verb) if dry_run else None)
    if report.skipped:
        out.message(skipped_note(label, queue, to_name or queue, report.skipped,
                                 report.skipped_ids))
    return report


def state_size(wq: WorkQueue, state: str) -> int | None:
    """How many items ``state`` holds (the progress bar's total)."""
    return int(getattr(wq.stats(), state))
