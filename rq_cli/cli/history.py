"""``stats --history``: a queue's history as JSON lines (rq_cli.core.history), and the
``--since DURATION`` it reads."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.contract.keys import HISTORY_FIELDS
from ..errors import UsageError
from ..output.render import Column
from ..output.shapes import history_row

if TYPE_CHECKING:
    from ..output.render import Output
    from .common import State

HISTORY_COLUMNS = [Column("queue"), Column("at", kind="time"),
                   Column("seconds", kind="number", drop=2)] + [
    Column(k, kind="number", drop=0) for k in HISTORY_FIELDS]
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw]?)")  # (ASCII digits: \d takes any script's)
#: The history shown without --since.
DEFAULT_SINCE = "1h"


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``15m``, ``24h``, ``7d``, ``2w`` or ``1h30m``; UsageError
    (exit 2) for anything else."""
    spaced = text.strip().lower()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(spaced):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2) or "s"]
        pos = m.end()
    if not spaced or pos != len(spaced) or total <= 0:
        raise UsageError(f"--since {text!r} is not a duration: say 90s, 15m, 24h, 7d or 1h30m")
    return total


def print_history(st: State, out: Output, names: list[str], since: str | None) -> None:
    """A line per bucket of each named queue's history over ``since``."""
    from ..core.history import check_since, read_history

    seconds = check_since(parse_duration(DEFAULT_SINCE if since is None else since))
    if not names:
        raise UsageError("--history reads the history of the queues named: rq-cli stats QUEUE "
                         "--history")
    rows: list[dict[str, Any]] = []
    for name in names:
        rows.extend(history_row(name, b) for b in read_history(st.queue(name), seconds))
    if not rows and not out.json:
        out.message(f"rq-cli: no history yet for {', '.join(names)}: it starts with the first "
                    "snapshot, taken by the queue's first push, lease, complete or fail of "
                    "a minute, `rq-cli clean` or a worker")
        return
    out.rows(rows, HISTORY_COLUMNS)
