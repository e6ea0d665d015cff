"""``rq-cli errors``: dead and retrying items grouped by their error (rq_cli.core.errgroups)."""

from enum import Enum
from typing import Annotated

import typer

from ..core.codes import ItemState
from ..errors import Interrupted, UsageError
from ..ops.filters import make_filter
from ..output.render import Column
from ..output.shapes import group_row
from .common import JsonOpt, QueueArg, state
from .filtered import ErrorOpt, MatchOpt, MinAttemptsOpt, OlderThanOpt, ReasonOpt

GROUP_COLUMNS = [
    Column("count", kind="number"), Column("state", drop=0), Column("key"),
    Column("error", kind="words", drop=0), Column("last_at", "last", kind="time", drop=2),
    Column("sample_id", "sample", drop=3),
]


class GroupChoice(str, Enum):
    """Which items ``errors`` groups."""

    dead = ItemState.DEAD.value
    retrying = "retrying"
    all = "all"


def errors(
    ctx: typer.Context,
    queue: QueueArg,
    which: Annotated[GroupChoice, typer.Option(
        "--state", "-s", help="dead (dead-lettered), retrying (live items that failed and "
                              "wait for another attempt), or all.")] = GroupChoice.all,
    match: MatchOpt = None,
    error: ErrorOpt = None,
    reason: ReasonOpt = None,
    older_than: OlderThanOpt = None,
    min_attempts: MinAttemptsOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Group dead and retrying items by their error (numbers, ids, addresses, durations
    made alike), the largest group first; act on one with --error-group KEY.

    Example: rq-cli errors emails --state dead
    """
    from ..core.errgroups import GROUP_STATES, group_errors

    flt = make_filter(match, error, reason, older_than, min_attempts)  # before connecting
    states = GROUP_STATES if which is GroupChoice.all else (which.value,)
    if reason and which is GroupChoice.retrying:
        raise UsageError("--reason filters dead items (the dead-letter reason): not with "
                         "--state retrying")
    if reason:
        states = (ItemState.DEAD.value,)  # (a dead-letter reason filters dead items only)
    st = state(ctx)
    out = st.output(as_json)
    wq = st.queue(queue)
    with out.progress(f"errors {queue}", unit="items read") as bar:
        try:
            report = group_errors(wq, flt, states, progress=bar.advance)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: errors {queue}: nothing was changed") from None
    if not report.groups and not out.json:
        out.message(f"rq-cli: no {' or '.join(states)} items with errors"
                    f"{' matching the filter' if flt else ''} in {queue}")
        return
    out.rows([group_row(queue, g) for g in report.groups], GROUP_COLUMNS)
    if flt is not None and report.not_json:
        out.message(f"rq-cli: errors {queue}: {report.not_json} payloads not JSON (never "
                    "match --match)")
