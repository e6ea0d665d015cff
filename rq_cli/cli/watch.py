"""``rq-cli stats --watch``: a live dashboard of queues, or JSON lines when piped.

Every ``--interval`` seconds each queue's stats are read (one round trip per queue); rates
per second come from the counters' increase since the previous read of that queue. On a
terminal a rich ``Live`` view is redrawn in place, fitted to the screen: names and numbers
never wrap (columns that do not fit are dropped, rates first, and named under the table);
rows beyond the screen's height are counted ("N more queues"), error rows always stay in
view with their reasons, ``--sort`` orders the rows. Otherwise one JSON line per queue per
interval. A queue that cannot be read is an error row, and its rates start afresh once it
is back. Ctrl-C ends the watch with exit 0."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.contract.counts import RUNNING, WATCHED, column_kind
from ..ops.polling import Poller, sort_rows
from ..output.jsonlines import json_line
from ..output.render import Column, Output, human
from ..output.tables import draw_table, fit_table

if TYPE_CHECKING:
    from ..ops.targets import Target
    from .common import State

#: the dashboard's columns (core/contract/counts.py: the counts it shows, the counters whose rates
#: it shows); on a narrow terminal the rates go first (dead/s, fail/s, ...)
DASHBOARD_COLUMNS = [
    Column("queue"),
    *(Column(c.name, c.watch or "", kind=column_kind(c), drop=c.watch_drop) for c in WATCHED),
    *(Column(f"rate_{r.counter.value}", f"{r.rate}/s", kind="rate", drop=r.rate_drop)
      for r in RUNNING if r.rate),
]


def watch(st: State, out: Output, targets: Sequence[Target], *, interval: float,
          iterations: int | None = None, sort: str = "given") -> None:
    """Refresh every ``interval`` seconds, ``iterations`` times or until Ctrl-C."""
    poller = Poller(st, targets)
    live = None if out.json else _Dashboard(out, interval)
    done = 0
    next_at = time.monotonic()
    try:
        while True:
            rows = sort_rows(poller.poll(), sort)
            if live is None:
                out.lines(json_line(row) for row in rows)
            else:
                live.show(rows)
            done += 1
            if iterations is not None and done >= iterations:
                break
            next_at += interval
            pause = next_at - time.monotonic()
            if pause < 0:  # a slow read: start the next interval from now
                next_at, pause = time.monotonic(), 0.0
            time.sleep(pause)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends: exit 0
    finally:
        if live is not None:
            live.close()


class _Dashboard:
    """The rich Live view; rich is imported only here."""

    def __init__(self, out: Output, interval: float) -> None:
        from rich.live import Live

        self.interval = interval
        self.console = out.console()
        self.live = Live(console=self.console, auto_refresh=False, transient=False,
                         redirect_stdout=False, redirect_stderr=False,
                         vertical_overflow="crop")
        # Keystrokes are not echoed meanwhile: the terminal's "^C" (or any key typed) would
        # move the cursor off the view, and the last redraw would land one line lower.
        self.echo = _EchoOff()
        self.live.start()

    def show(self, rows: list[dict[str, Any]]) -> None:
        width, height = self.console.size  # (read each time: the terminal may be resized)
        self.live.update(dashboard(rows, self.interval, width=width, height=height),
                         refresh=True)

    def close(self) -> None:
        try:
            self.live.stop()
        finally:
            self.echo.restore()


class _EchoOff:
    """Turn off the echo of the controlling terminal on stdin (if it is one) until restore."""

    def __init__(self) -> None:
        self.saved: list[Any] | None = None
        try:
            import termios

            self.fd = sys.stdin.fileno()
            self.saved = termios.tcgetattr(self.fd)
            quiet = termios.tcgetattr(self.fd)
            quiet[3] &= ~termios.ECHO
            termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        except (ImportError, OSError, ValueError, AttributeError):  # not a terminal
            self.saved = None

    def restore(self) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
            self.saved = None


def cell(row: dict[str, Any], column: Column) -> str:
    if column.kind == "rate":
        value = (row.get("rates") or {}).get(column.key[len("rate_"):])
        if value is None:
            return "-"
        return f"{value:.1f}" if value < 1000 else f"{value:.0f}"
    return human(row.get(column.key), column.kind)


def dashboard(rows: list[dict[str, Any]], interval: float, now: float | None = None, *,
              width: int = 80, height: int = 24) -> Any:
    """The dashboard for ``rows`` (from :class:`Poller`, in ``--sort`` order), fitted to a
    terminal of ``width`` x ``height``: a title, the table (columns that do not fit dropped,
    rates first), as many rows as the screen holds -- error rows always among them -- and
    under it "N more queues", the errors' reasons, the paused queues and what was dropped."""
    from rich.console import Console, Group
    from rich.text import Text

    stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if now is None else now))
    title = Text(f"rq-cli stats --watch · every {interval:g}s · {stamp} · Ctrl-C quits",
                 style="bold", no_wrap=True, overflow="ellipsis")
    notes = _error_notes(rows)
    paused = [human(row["queue"]) for row in rows if row.get("paused")]
    if paused:
        notes.append(Text(f"paused: {', '.join(paused)}", style="yellow"))
    if not rows:
        notes.append(Text("no queues: name some, configure some, or push to one"))
    cells = [[cell(row, col) if "error" not in row else
              ("error" if col.key == "pending" else "-") for col in DASHBOARD_COLUMNS]
             for row in rows]
    cells = [[human(row["queue"]), *line[1:]] for row, line in zip(rows, cells, strict=True)]
    layout = fit_table(cells, DASHBOARD_COLUMNS, width)
    if layout.dropped:
        names = ", ".join(col.title for col in layout.dropped)
        notes.append(Text(f"not shown at {width} columns: {names} (--json, a wider terminal)",
                          style="dim"))
    measure = Console(width=width)
    note_lines = sum(len(note.wrap(measure, width)) for note in notes)
    # the title, the header and its rule, the notes, a last line kept free for the cursor
    room = max(1, height - 4 - note_lines)
    shown = list(range(len(rows)))
    more = Text("")
    if len(rows) > room:
        errors = [n for n in shown if "error" in rows[n]]
        others = [n for n in shown if "error" not in rows[n]]
        keep = room - 1  # one line says how many more
        shown = sorted(errors[:keep] + others[:max(0, keep - len(errors))])
        hidden = len(rows) - len(shown)
        more = Text(f"… {hidden} more queue{'s' if hidden != 1 else ''} (--sort orders them; "
                    f"a taller terminal shows more)", style="dim", no_wrap=True,
                    overflow="ellipsis")
    keep_cols = [DASHBOARD_COLUMNS.index(col) for col in layout.columns]
    table = draw_table([[cells[n][k] for k in keep_cols] for n in shown], layout, None, True,
                       styles=[_style(rows[n]) for n in shown])
    parts: list[Any] = [title, table]
    if more.plain:
        parts.append(more)
    return Group(*parts, *notes)


def _style(row: dict[str, Any]) -> str:
    if "error" in row:
        return "bold red"
    if row.get("abandoned"):
        return "red"
    return "yellow" if row.get("paused") else ""


def _error_notes(rows: list[dict[str, Any]]) -> list[Any]:
    """One line per distinct error, naming its queues (a server down: all of its queues)."""
    from rich.text import Text

    by_error: dict[str, list[str]] = {}
    for row in rows:
        if "error" in row:
            by_error.setdefault(human(row["error"]), []).append(human(row["queue"]))
    notes = []
    for error, names in by_error.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notes.append(Text(f"{shown}: {error}", style="red"))
    return notes
