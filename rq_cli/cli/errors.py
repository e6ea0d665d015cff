"""``rq-cli errors``: dead and retrying items grouped by their error (rq_cli.core.errgroups)."""

import time
from enum import Enum
from functools import partial
from typing import Annotated, Any

import typer

from ..core.codes import ItemState
from ..errors import Interrupted, UsageError
from ..ops.filters import make_filter
from ..output.render import Column
from ..output.shapes import group_row
from .common import Failures, JsonOpt, OptQueuesArg, state
from .filtered import ErrorOpt, MatchOpt, MinAttemptsOpt, OlderThanOpt, ReasonOpt

#: The table: each group's pattern gets the width (its sample error is in the JSON lines): the
#: last death is an age ("3m05s": ago), the sample id cut to SHORT_ID characters (a
#: 32-character id and a clock time left an error ~33 columns at 120); a queue column when
#: the rows are of several queues.
GROUP_COLUMNS = [
    Column("count", kind="number"), Column("state", drop=0), Column("key"),
    Column("pattern", kind="words", drop=0), Column("last_ago", "last", kind="age", drop=2),
    Column("sample_id", "sample", drop=3),
]
QUEUE_COLUMN = Column("queue")
#: Characters of a sample id the table shows (then "…"): enough to tell items apart and to
#: find one (the JSON lines carry the whole id).
SHORT_ID = 8


class GroupChoice(str, Enum):
    """Which items ``errors`` groups."""

    dead = ItemState.DEAD.value
    retrying = "retrying"
    all = "all"


def errors(
    ctx: typer.Context,
    queues: OptQueuesArg = None,
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
    made alike), the largest group first; act on one with --error-group KEY. With no
    queue, every configured queue (as stats).

    Example: rq-cli errors emails --state dead
    """
    from ..core.errgroups import GROUP_STATES, group_errors
    from .inspect import stats_targets

    flt = make_filter(match, error, reason, older_than, min_attempts)  # before connecting
    states = GROUP_STATES if which is GroupChoice.all else (which.value,)
    if reason and which is GroupChoice.retrying:
        raise UsageError("--reason filters dead items (the dead-letter reason): not with "
                         "--state retrying")
    if reason:
        states = (ItemState.DEAD.value,)  # (a dead-letter reason filters dead items only)
    st = state(ctx)
    out = st.output(as_json)
    failed = Failures("errors")
    rows: list[dict[str, Any]] = []
    names = []
    for t in stats_targets(st, queues or [], False):
        names.append(t.name)
        with out.progress(f"errors {t.name}", unit="items read") as bar:
            try:
                report, _ = failed.run(t.url, partial(group_errors, t.queue, flt, states,
                                                      progress=bar.advance), t.queue)
            except KeyboardInterrupt:
                raise Interrupted(f"interrupted: errors {t.name}: nothing was changed") from None
        if report is None:
            continue
        rows.extend(group_row(t.name, g) for g in report.groups)
        if flt is not None and report.not_json:
            out.message(f"rq-cli: errors {t.name}: {report.not_json} payloads not JSON (never "
                        "match --match)")
    if not rows and not out.json:
        out.message(f"rq-cli: no {' or '.join(states)} items with errors"
                    f"{' matching the filter' if flt else ''} in {', '.join(names)}")
    elif out.json:
        out.rows(rows, GROUP_COLUMNS)
    else:
        several = len({row["queue"] for row in rows}) > 1
        now = time.time()
        out.rows([{**row, "sample_id": short_id(row["sample_id"]),
                   "last_ago": None if row["last_at"] is None else max(0.0, now - row["last_at"])}
                  for row in rows], [QUEUE_COLUMN, *GROUP_COLUMNS] if several else GROUP_COLUMNS)
    failed.check()


def short_id(item_id: str) -> str:
    """An id cut to SHORT_ID characters and "…" when longer (the table's sample)."""
    return item_id if len(item_id) <= SHORT_ID + 1 else item_id[:SHORT_ID] + "…"
